package httpapi

import (
	"net/http"

	"github.com/boxoffice/boxoffice"
)

func (s *Server) myTickets(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	ts, err := s.svc.MyTickets(r.Context(), u)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "private, no-store")
	writeJSON(w, http.StatusOK, map[string]any{"tickets": myTicketsOf(ts)})
	return nil
}

func (s *Server) getTicket(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "ticket_id")
	if err != nil {
		return err
	}
	t, err := s.svc.Ticket(r.Context(), u, id)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "private, no-store")
	writeJSON(w, http.StatusOK, myTicketOf(&t))
	return nil
}

type checkInRequest struct {
	Code string `json:"code"`
	// EventID, when given, refuses a ticket of another event without
	// using it up: a door checks its own event's tickets.
	EventID boxoffice.ID `json:"event_id"`
}

// checkIn admits a ticket at the venue. It needs no idempotency key: a
// repeat is answered 409 already-checked-in, which a door treats as such.
func (s *Server) checkIn(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	var q checkInRequest
	if err := decodeJSON(w, r, &q); err != nil {
		return err
	}
	t, err := s.svc.CheckIn(r.Context(), u, q.EventID, q.Code)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, myTicketOf(&t))
	return nil
}
