package sale

import (
	"context"

	"github.com/boxoffice/boxoffice"
)

// Draw returns the public record of a queued event's pre-queue draw: the
// commitment from the start, the seed and the order once drawn (never
// before: the seed would tell the order). ENOTFOUND for an event that sells
// directly, or one created before draws were committed to and not drawn
// yet.
func (s *Queue) Draw(ctx context.Context, eventID boxoffice.ID) (*boxoffice.Draw, error) {
	l, err := s.Layout(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if l.Event.SaleMode != boxoffice.SaleQueued {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "event %d sells directly: it has no queue draw", eventID)
	}
	d, err := s.store.Draw(ctx, eventID)
	if err != nil {
		return nil, err
	}
	d.Commitment = boxoffice.DrawCommitment(d.Seed)
	if !d.Drawn() {
		return &boxoffice.Draw{EventID: d.EventID, CommittedAt: d.CommittedAt, Commitment: d.Commitment}, nil
	}
	return d, nil
}
