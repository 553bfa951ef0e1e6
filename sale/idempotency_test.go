package sale

import (
	"errors"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

// spyCodec records what it is asked and answers with fixed bytes.
type spyCodec struct {
	encoded, decoded []boxoffice.Outcome
}

func (c *spyCodec) Encode(outcome boxoffice.Outcome, v any) ([]byte, error) {
	c.encoded = append(c.encoded, outcome)
	return []byte("spy"), nil
}

func (c *spyCodec) Decode(outcome boxoffice.Outcome, b []byte, out any) error {
	c.decoded = append(c.decoded, outcome)
	if string(b) != "spy" {
		return errors.New("not mine")
	}
	out.(*CreatedListing).ListingID = 77
	return nil
}

// TestRecordsUseTheAnswerCodec: record and replay go through the codec
// the service was given, with the record's outcome.
func TestRecordsUseTheAnswerCodec(t *testing.T) {
	now := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	spy := &spyCodec{}
	s := New(Deps{Now: func() time.Time { return now }, Answers: spy}, Config{})
	rec, err := s.core.record("u1", "k", "h", boxoffice.OutcomeListed, CreatedListing{ListingID: 77})
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Body) != "spy" || rec.Outcome != boxoffice.OutcomeListed {
		t.Errorf("record body %q outcome %q", rec.Body, rec.Outcome)
	}
	var got CreatedListing
	if err := s.core.replayRecord(rec, "h", &got); err != nil || got.ListingID != 77 {
		t.Errorf("replay: %+v, %v", got, err)
	}
	rec.Outcome = "" // a record of before outcomes were kept
	if err := s.core.replayRecord(rec, "h", &got); err != nil {
		t.Error(err)
	}
	want := []boxoffice.Outcome{boxoffice.OutcomeListed, boxoffice.OutcomeListed, ""}
	if diff := cmp.Diff(want, append(spy.encoded, spy.decoded...)); diff != "" {
		t.Errorf("outcomes the codec saw (-want +got):\n%s", diff)
	}
	rec.Body = []byte("garbage")
	if err := s.core.replayRecord(rec, "h", &got); boxoffice.ErrorCode(err) != boxoffice.EINTERNAL {
		t.Errorf("an unreadable body: %v, want EINTERNAL", err)
	}
}

// TestDefaultAnswerCodec: a service given no codec still replays every
// answer it records.
func TestDefaultAnswerCodec(t *testing.T) {
	now := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	s := New(Deps{Now: func() time.Time { return now }}, Config{})
	check := func(outcome boxoffice.Outcome, v any, out any, want any) {
		t.Helper()
		rec, err := s.core.record("u1", "k", "h", outcome, v)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.core.replayRecord(rec, "h", out); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("%s: replayed (-want +got):\n%s", outcome, diff)
		}
	}
	res := &ReserveResult{BookingID: 1, HeldUntil: now.Add(10 * time.Minute), PaymentURL: PaymentURL(1), SeatIDs: []string{"A-1"}}
	check(boxoffice.OutcomeHeld, res, &ReserveResult{}, res)
	conf := &Confirmation{BookingID: 1, ConfirmationCode: "BX-ABCDE", AmountCents: 4500,
		Tickets: []TicketView{{TicketID: 2, EventID: 3, BookingID: 1, SeatID: "A-1", Code: "C", Status: "valid"}}}
	check(boxoffice.OutcomeConfirmed, conf, &Confirmation{}, conf)
	none := &Confirmation{BookingID: 1, ConfirmationCode: "BX-ABCDE", Tickets: []TicketView{}}
	check(boxoffice.OutcomeConfirmed, none, &Confirmation{}, none)
	canc := &Cancellation{BookingID: 1, Status: "cancelled", RefundCents: 4500, RefundStatus: "pending"}
	check(boxoffice.OutcomeCancelled, canc, &Cancellation{}, canc)
	check(boxoffice.OutcomeListed, CreatedListing{ListingID: 77}, &CreatedListing{}, &CreatedListing{ListingID: 77})
	check(boxoffice.OutcomeJoined, CreatedEntry{EntryID: 88}, &CreatedEntry{}, &CreatedEntry{EntryID: 88})
}
