package httpapi

import (
	"net/http"

	"github.com/boxoffice/boxoffice"
)

// saleStats is an event's sale at a glance, for the organiser watching it.
type saleStats struct {
	EventID   boxoffice.ID   `json:"event_id"`
	SeatCount int            `json:"seat_count"`
	Seats     map[string]int `json:"seats"` // by status, from the seat map
	// SeatMapBuiltAt says how fresh Seats is (the seat map's TTL).
	SeatMapBuiltAt string      `json:"seat_map_built_at"`
	Queue          *queueStats `json:"queue,omitempty"`
}

type queueStats struct {
	Admitted int64 `json:"admitted"`
	Served   int64 `json:"served"`
	// Depth is how many admitted requests wait for an outcome; Waiting how
	// many sit in the pre-queue before the opening.
	Depth   int64 `json:"depth"`
	Waiting int64 `json:"waiting"`
	// DrainRate is requests served per second (an EWMA over ~3s).
	DrainRate float64 `json:"drain_rate"`
}

// eventStats serves the live numbers of an event's sale (organisers).
func (s *Server) eventStats(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "event_id")
	if err != nil {
		return err
	}
	if !u.InScope(id) {
		// An organiser's token for other events: as if there were none.
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "no event %s", id)
	}
	ev, err := s.svc.Event(r.Context(), id)
	if err != nil {
		return err
	}
	snap, err := s.seats.Get(r.Context(), id)
	if err != nil {
		return err
	}
	out := saleStats{EventID: id, SeatCount: ev.SeatCount(), Seats: snap.Counts, SeatMapBuiltAt: formatTime(snap.BuiltAt)}
	if ev.SaleMode == boxoffice.SaleQueued {
		if p, rate, err := s.svc.QueueRate(r.Context(), id); err == nil {
			out.Queue = &queueStats{Admitted: p.Admitted, Served: p.Served, Depth: max(0, p.Admitted-p.Served),
				Waiting: p.Waiting, DrainRate: rate}
		}
	}
	w.Header().Set("Cache-Control", "private, no-store")
	writeJSON(w, http.StatusOK, out)
	return nil
}
