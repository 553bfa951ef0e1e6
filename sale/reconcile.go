package sale

import (
	"context"
	"time"

	"github.com/boxoffice/boxoffice"
)

// ReconcileReport says what one reconciler pass did.
type ReconcileReport struct {
	Expired  int
	Captured int
	Refunded int
	Purged   int // idempotency records
	// PurgedRequests are queued requests decided more than QueueRetention
	// ago (Deps.QueuePurge).
	PurgedRequests int
}

// QueueRetention is how long a decided queued request is kept where the
// queue's entries do not expire by themselves: as long as production's
// entries live in Redis (redis.QueueState.TTL), so a status stays readable,
// and a key replays, equally long in both.
const QueueRetention = 24 * time.Hour

// purgeChunk bounds the requests one purge statement deletes: each is a
// write transaction of its own on the embedded store's one writer, which
// the front door shares.
const purgeChunk = 1000

// Reconcile runs one pass of the background clean-up:
//   - pending bookings whose hold ran out more than PendingGrace ago are
//     marked expired (the returns pass does it at once where it runs; this
//     catches what it missed), their seats returned;
//   - payments still authorized a minute after their booking was confirmed
//     (a crash between commit and capture) are captured;
//   - refunds owed for cancelled bookings (a crash or a gateway failure
//     after the cancel) are made;
//   - expired idempotency records are purged, and queued requests decided
//     more than QueueRetention ago where the queue keeps them.
//
// Every step is safe to repeat and to run in several processes at once.
func (s *Upkeep) Reconcile(ctx context.Context) (ReconcileReport, error) {
	var r ReconcileReport
	now := s.now()
	for {
		bs, err := s.store.ExpireBookings(ctx, now.Add(-s.cfg.PendingGrace), 500)
		if err != nil {
			return r, err
		}
		r.Expired += len(bs)
		if len(bs) < 500 {
			break
		}
	}
	ps, err := s.store.UncapturedPayments(ctx, now.Add(-time.Minute), 500)
	if err != nil {
		return r, err
	}
	for _, p := range ps {
		if err := s.payments.Capture(ctx, p.AuthID); err != nil {
			s.log.WarnContext(ctx, "reconciler capture", "booking", p.BookingID, "err", err)
			continue
		}
		if err := s.store.MarkCaptured(ctx, p.EventID, p.BookingID); err != nil {
			return r, err
		}
		r.Captured++
	}
	if r.Expired > 0 {
		s.kickReturns()
	}
	due, err := s.store.RefundsDue(ctx, 500)
	if err != nil {
		return r, err
	}
	for _, p := range due {
		if err := s.tickets.refund(ctx, p); err != nil {
			s.log.WarnContext(ctx, "reconciler refund", "booking", p.BookingID, "err", err)
			continue
		}
		r.Refunded++
	}
	n, err := s.store.PurgeIdempotency(ctx, now)
	r.Purged = n
	if err != nil || s.queuePurge == nil {
		return r, err
	}
	for {
		n, err := s.queuePurge.PurgeDecided(ctx, now.Add(-QueueRetention), purgeChunk)
		r.PurgedRequests += n
		if err != nil || n < purgeChunk {
			return r, err
		}
	}
}

// RunReconciler calls Reconcile every interval until ctx ends.
func (s *Upkeep) RunReconciler(ctx context.Context, interval time.Duration) {
	every(ctx, interval, nil, func() {
		r, err := s.Reconcile(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "reconciler pass failed", "err", err)
		}
		if r.Expired+r.Captured+r.Refunded+r.PurgedRequests > 0 {
			s.log.InfoContext(ctx, "reconciler", "expired", r.Expired, "captured", r.Captured, "refunded", r.Refunded,
				"purged", r.Purged, "purged_requests", r.PurgedRequests)
		}
	})
}

// every calls fn every interval, and at once on a kick, until ctx ends:
// the loop of the background passes.
func every(ctx context.Context, interval time.Duration, kick <-chan struct{}, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		fn()
	}
}

// Ready reports whether the stores answer.
func (s *Upkeep) Ready(ctx context.Context) error {
	if err := s.store.Ping(ctx); err != nil {
		return boxoffice.Unavailable("the database", err)
	}
	if err := s.holds.Ping(ctx); err != nil {
		return boxoffice.Unavailable("the lock store", err)
	}
	return nil
}
