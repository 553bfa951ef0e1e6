package httpapi

import (
	"net/http"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sale"
)

// reserveRequest is the body of POST /bookings/reserve.
type reserveRequest struct {
	EventID        boxoffice.ID `json:"event_id"`
	SeatIDs        []string     `json:"seat_ids"`
	IdempotencyKey string       `json:"idempotency_key"`
	// ListingID buys a resale listing instead (event_id may then be left
	// out).
	ListingID boxoffice.ID `json:"listing_id"`
	// BestAvailable asks for the best seats side by side instead of
	// seat_ids.
	BestAvailable *boxoffice.BestAvailable `json:"best_available"`
}

// decodeReserve turns a reserve body plus the Idempotency-Key header into
// the service's request. The key may come from either; if both are given
// they must agree.
func decodeReserve(q reserveRequest, header string) (sale.ReserveRequest, error) {
	key, err := idempotencyKey(q.IdempotencyKey, header)
	if err != nil {
		return sale.ReserveRequest{}, err
	}
	if q.EventID == 0 && q.ListingID == 0 {
		return sale.ReserveRequest{}, boxoffice.Errorf(boxoffice.EINVALID, "event_id is required")
	}
	if len(q.SeatIDs) > 100 {
		return sale.ReserveRequest{}, boxoffice.Errorf(boxoffice.ELIMIT, "far too many seats in one request")
	}
	return sale.ReserveRequest{EventID: q.EventID, SeatIDs: q.SeatIDs, IdempotencyKey: key, ListingID: q.ListingID, Best: q.BestAvailable}, nil
}

func idempotencyKey(body, header string) (string, error) {
	if body != "" && header != "" && body != header {
		return "", boxoffice.Errorf(boxoffice.EINVALID, "the Idempotency-Key header and idempotency_key field differ")
	}
	if body != "" {
		return body, nil
	}
	return header, nil
}

func (s *Server) reserve(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	var q reserveRequest
	if err := decodeJSON(w, r, &q); err != nil {
		return err
	}
	req, err := decodeReserve(q, r.Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	rv, err := s.svc.Request(r.Context(), u, req)
	if err != nil {
		return err
	}
	if rv.Queued != nil {
		return s.queued(w, rv.Queued)
	}
	res := rv.Held
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", "/bookings/"+res.BookingID.String())
	j := reserveOf(res)
	writeAppended(w, http.StatusCreated, "application/json", &j)
	return nil
}

type confirmRequest struct {
	PaymentToken   string `json:"payment_token"`
	IdempotencyKey string `json:"idempotency_key"`
}

func (s *Server) confirm(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "booking_id")
	if err != nil {
		return err
	}
	var q confirmRequest
	if err := decodeJSON(w, r, &q); err != nil {
		return err
	}
	key, err := idempotencyKey(q.IdempotencyKey, r.Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	c, err := s.svc.Confirm(r.Context(), u, sale.ConfirmRequest{BookingID: id, PaymentToken: q.PaymentToken, IdempotencyKey: key})
	if err != nil {
		return err
	}
	if c.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusOK, confirmationOf(c))
	return nil
}

func (s *Server) getBooking(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "booking_id")
	if err != nil {
		return err
	}
	b, err := s.svc.Booking(r.Context(), u, id)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "private, no-store")
	writeJSON(w, http.StatusOK, bookingOf(s.svc.View(b)))
	return nil
}

func (s *Server) release(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "booking_id")
	if err != nil {
		return err
	}
	b, err := s.svc.Release(r.Context(), u, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, bookingOf(s.svc.View(b)))
	return nil
}

// keyedRequest is the body of state-changing calls that carry nothing but
// an idempotency key (which may also come as the header). An empty body is
// fine when the header has the key.
type keyedRequest struct {
	IdempotencyKey string `json:"idempotency_key"`
}

func decodeKeyed(w http.ResponseWriter, r *http.Request) (string, error) {
	var q keyedRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &q); err != nil {
			return "", err
		}
	}
	return idempotencyKey(q.IdempotencyKey, r.Header.Get("Idempotency-Key"))
}

func (s *Server) cancelBooking(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "booking_id")
	if err != nil {
		return err
	}
	key, err := decodeKeyed(w, r)
	if err != nil {
		return err
	}
	c, err := s.svc.Cancel(r.Context(), u, sale.CancelRequest{BookingID: id, IdempotencyKey: key})
	if err != nil {
		return err
	}
	if c.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusOK, cancellationOf(c))
	return nil
}
