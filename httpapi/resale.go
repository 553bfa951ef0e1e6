package httpapi

import (
	"net/http"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sale"
)

type listRequest struct {
	PriceCents     int64  `json:"price_cents"`
	IdempotencyKey string `json:"idempotency_key"`
}

func (s *Server) listTicket(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "ticket_id")
	if err != nil {
		return err
	}
	var q listRequest
	if err := decodeJSON(w, r, &q); err != nil {
		return err
	}
	key, err := idempotencyKey(q.IdempotencyKey, r.Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	l, err := s.svc.ListTicket(r.Context(), u, sale.ListRequest{TicketID: id, PriceCents: q.PriceCents, IdempotencyKey: key})
	if err != nil {
		return err
	}
	if l.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", "/listings/"+l.ListingID.String())
	writeJSON(w, http.StatusCreated, listingOf(l))
	return nil
}

func (s *Server) getListing(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "listing_id")
	if err != nil {
		return err
	}
	l, err := s.svc.Listing(r.Context(), u, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, listingOf(l))
	return nil
}

func (s *Server) withdrawListing(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "listing_id")
	if err != nil {
		return err
	}
	l, err := s.svc.WithdrawListing(r.Context(), u, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, listingOf(l))
	return nil
}

func (s *Server) eventListings(w http.ResponseWriter, r *http.Request, _ boxoffice.User) error {
	id, err := pathID(r, "event_id")
	if err != nil {
		return err
	}
	ls, err := s.svc.EventListings(r.Context(), id)
	if err != nil {
		return err
	}
	// Short-lived like the seat map: the market moves.
	w.Header().Set("Cache-Control", "public, max-age=5")
	writeJSON(w, http.StatusOK, map[string]any{"event_id": id, "listings": listingsOf(ls)})
	return nil
}

func (s *Server) myListings(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	ls, err := s.svc.MyListings(r.Context(), u)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "private, no-store")
	writeJSON(w, http.StatusOK, map[string]any{"listings": listingsOf(ls)})
	return nil
}

func (s *Server) myPayouts(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	ps, err := s.svc.MyPayouts(r.Context(), u)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "private, no-store")
	writeJSON(w, http.StatusOK, map[string]any{"payouts": payoutsOf(ps)})
	return nil
}
