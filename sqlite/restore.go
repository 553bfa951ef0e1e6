package sqlite

import (
	"context"
	"time"

	"github.com/boxoffice/boxoffice"
)

// LiveHolds returns the holds of the pending bookings whose hold runs past
// now. The embedded default keeps holds in memory; after a crash the
// process gives these back to its hold table (inmem.Holds.Restore) before
// it serves, so a held seat stays held, by the same owner under the same
// fence, across kill -9.
func (s *Store) LiveHolds(ctx context.Context, now time.Time) ([]boxoffice.Hold, error) {
	var out []boxoffice.Hold
	err := s.readTx(ctx, func(ctx context.Context, tx *txn) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM bookings WHERE status = 'pending' AND held_until > ?`, millis(now))
		if err != nil {
			return err
		}
		ids, err := collect(rows, func(sc scanner) (boxoffice.ID, error) {
			var id boxoffice.ID
			return id, sc.Scan(&id)
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			b, err := loadBooking(ctx, tx, id)
			if err != nil {
				return err
			}
			out = append(out, boxoffice.Hold{EventID: b.EventID, SeatIDs: b.SeatIDs, Owner: b.ID, Fence: b.Fence, ExpiresAt: b.HeldUntil})
		}
		return nil
	})
	return out, translate(err, "database")
}
