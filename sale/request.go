package sale

import (
	"context"

	"github.com/boxoffice/boxoffice"
)

// Reservation is the answer to a reserve request: the seats held at once
// (Held: a direct sale, or a resale purchase), or a place in the
// flash-sale queue (Queued). Exactly one is set.
type Reservation struct {
	Held   *ReserveResult
	Queued *QueueTicket
}

// Request answers a reserve request the way its event sells: the primary
// sale of a queued event goes through the queue (Queue.Enqueue), a resale
// purchase and every direct sale are held at once (Bookings.Reserve). The
// decision is made here, once; Reserve still refuses a queued event's
// primary sale (ECONFLICT) to any caller that goes round it.
func (s *Service) Request(ctx context.Context, u boxoffice.User, req ReserveRequest) (Reservation, error) {
	if req.ListingID == 0 {
		// An unknown event falls through to Reserve, which says so.
		if queued, err := s.Queue.Queued(ctx, req.EventID); err == nil && queued {
			t, err := s.Enqueue(ctx, u, req)
			return Reservation{Queued: t}, err
		}
	}
	res, err := s.Reserve(ctx, u, req)
	return Reservation{Held: res}, err
}
