package httpapi

import (
	"encoding/json"
	"fmt"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sale"
)

// Answers is the AnswerCodec of package sale that a node gives it
// (sale.Deps.Answers): an idempotency record's body is the API's JSON of
// the answer, the bytes the first request was answered with, so that the
// records of every release (and those written before sale's types lost
// their JSON tags) replay the same. Encode maps sale's result to its wire
// type and marshals it; Decode unmarshals the wire type and maps it back
// into the sale value out points to. Both go by the Go type: a record
// written before outcomes were kept has outcome "".
type Answers struct{}

var _ sale.AnswerCodec = Answers{}

// Encode returns the API's JSON of v: a sale.ReserveResult,
// sale.Confirmation, sale.Cancellation, sale.CreatedListing or
// sale.CreatedEntry, or a pointer to one.
func (Answers) Encode(outcome boxoffice.Outcome, v any) ([]byte, error) {
	var w any
	switch v := v.(type) {
	case *sale.ReserveResult:
		j := reserveOf(v)
		return j.appendJSON(nil), nil
	case sale.ReserveResult:
		j := reserveOf(&v)
		return j.appendJSON(nil), nil
	case *sale.Confirmation:
		w = confirmationOf(v)
	case sale.Confirmation:
		w = confirmationOf(&v)
	case *sale.Cancellation:
		w = cancellationOf(v)
	case sale.Cancellation:
		w = cancellationOf(&v)
	case *sale.CreatedListing:
		w = listedJSON{ListingID: v.ListingID}
	case sale.CreatedListing:
		w = listedJSON{ListingID: v.ListingID}
	case *sale.CreatedEntry:
		w = joinedJSON{EntryID: v.EntryID}
	case sale.CreatedEntry:
		w = joinedJSON{EntryID: v.EntryID}
	default:
		return nil, fmt.Errorf("httpapi: no API answer for a %T (outcome %q)", v, outcome)
	}
	return json.Marshal(w)
}

// Decode reads the API's JSON b into out: a *sale.ReserveResult,
// *sale.Confirmation, *sale.Cancellation, *sale.CreatedListing or
// *sale.CreatedEntry. Fields out has and b lacks are zero.
func (Answers) Decode(outcome boxoffice.Outcome, b []byte, out any) error {
	switch out := out.(type) {
	case *sale.ReserveResult:
		var w reserveJSON
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		*out = w.sale()
	case *sale.Confirmation:
		var w confirmationJSON
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		*out = w.sale()
	case *sale.Cancellation:
		var w cancellationJSON
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		*out = w.sale()
	case *sale.CreatedListing:
		var w listedJSON
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		*out = sale.CreatedListing{ListingID: w.ListingID}
	case *sale.CreatedEntry:
		var w joinedJSON
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		*out = sale.CreatedEntry{EntryID: w.EntryID}
	default:
		return fmt.Errorf("httpapi: no API answer decodes into a %T (outcome %q)", out, outcome)
	}
	return nil
}
