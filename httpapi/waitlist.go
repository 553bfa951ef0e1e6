package httpapi

import (
	"context"
	"net/http"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sale"
)

type joinRequest struct {
	Section        string `json:"section"`
	PriceTier      string `json:"price_tier"`
	Quantity       *int   `json:"quantity"` // absent: 1; present, at least 1
	IdempotencyKey string `json:"idempotency_key"`
}

func (s *Server) joinWaitlist(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "event_id")
	if err != nil {
		return err
	}
	var q joinRequest
	if err := decodeJSON(w, r, &q); err != nil {
		return err
	}
	key, err := idempotencyKey(q.IdempotencyKey, r.Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	quantity := 1
	if q.Quantity != nil {
		if quantity = *q.Quantity; quantity < 1 {
			return boxoffice.Errorf(boxoffice.EINVALID, "quantity must be at least 1")
		}
	}
	v, err := s.svc.JoinWaitlist(r.Context(), u, sale.JoinRequest{EventID: id, Section: q.Section, PriceTier: q.PriceTier,
		Quantity: quantity, IdempotencyKey: key})
	if err != nil {
		return err
	}
	if v.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", v.StatusURL)
	writeJSON(w, http.StatusCreated, waitlistOf(v))
	return nil
}

func (s *Server) getWaitlistEntry(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "entry_id")
	if err != nil {
		return err
	}
	v, err := s.svc.WaitlistEntry(r.Context(), u, id)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "private, no-store")
	writeJSON(w, http.StatusOK, waitlistOf(v))
	return nil
}

func (s *Server) leaveWaitlist(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "entry_id")
	if err != nil {
		return err
	}
	v, err := s.svc.LeaveWaitlist(r.Context(), u, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, waitlistOf(v))
	return nil
}

func (s *Server) myWaitlist(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	vs, err := s.svc.MyWaitlist(r.Context(), u)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "private, no-store")
	writeJSON(w, http.StatusOK, map[string]any{"entries": waitlistsOf(vs)})
	return nil
}

// waitlistEvents streams a waitlist entry as Server-Sent Events, the same
// live channel as the queue's: a "status" event whenever it changes (its
// place, an offer, the offer's end), until it is no longer live.
func (s *Server) waitlistEvents(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "entry_id")
	if err != nil {
		return err
	}
	return s.stream(w, r, u, id, func(ctx context.Context) (any, bool, error) {
		v, err := s.svc.WaitlistEntry(ctx, u, id)
		if err != nil {
			return nil, false, err
		}
		return waitlistOf(v), !sale.WaitlistLive(v), nil
	})
}
