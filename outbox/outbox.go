// Package outbox relays booking events from the store's outbox to a
// Publisher (Kafka in production, the log in the embedded mode).
//
// The stores write each event in the same transaction as the change it
// reports (see boxoffice.BookingStore), so an event exists exactly when its
// change was committed. The Relay then publishes them at least once: it
// marks a batch published only after Publish returned nil, so a crash or an
// error between the two publishes the batch again. Consumers de-duplicate
// by OutboxEvent.ID (docs/events.md).
//
// Several processes may run a Relay on one database: each batch is
// published under the lease "outbox-relay", so one relay publishes at a
// time and the events go out in seq order. A relay that dies holding the
// lease delays the others by the lease's TTL, nothing more.
package outbox

import (
	"context"
	"log/slog"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/wait"
)

// Publisher sends events to their consumers.
type Publisher interface {
	// Publish returns nil only once every event is durably published. When
	// it fails, any of them may have been published already: the relay
	// publishes the whole batch again, so consumers see those twice.
	Publish(ctx context.Context, events []boxoffice.OutboxEvent) error
}

// LeaseKey is the lease a relay holds while it publishes a batch.
const LeaseKey = "outbox-relay"

// Defaults of the Relay's fields.
const (
	DefaultBatchSize = 500
	DefaultInterval  = 200 * time.Millisecond
	DefaultLeaseTTL  = 30 * time.Second
)

const (
	// Retention is how long a published event stays in the outbox, for
	// a look at what went out, before the relay purges it.
	Retention = 24 * time.Hour
	// purgeEvery is how often Run purges.
	purgeEvery = time.Hour
	// maxBackoff bounds the pause after failed batches.
	maxBackoff = 5 * time.Second
)

// Relay publishes the store's pending events. Set the fields before Run;
// Store, Publisher and Leases are required.
type Relay struct {
	Store     boxoffice.OutboxStore
	Publisher Publisher
	// Leases elects the one relay that publishes (see LeaseKey); every
	// relay on a database must use the same lease store.
	Leases boxoffice.Leases
	// Log receives failures (warn) and purges (debug); nil is
	// slog.Default().
	Log *slog.Logger
	// Now stamps MarkPublished and dates the purge; nil is time.Now.
	Now func() time.Time
	// BatchSize bounds the events of one Publish; 0 is DefaultBatchSize.
	BatchSize int
	// Interval is the pause between looks at an idle outbox, and the
	// first pause after a failure; 0 is DefaultInterval.
	Interval time.Duration
	// DropPublished deletes each batch from the outbox once it is
	// published (Store.DeletePublished) instead of marking it and purging
	// it a day later: for a publisher that keeps the events itself, such
	// as a Kafka topic, where the outbox's last day would be a second
	// copy. Marking costs the database several times the writes.
	DropPublished bool
	// LeaseTTL is how long a batch may take: the relay abandons a batch
	// (unmarked, so it is published again) before its lease runs out, so
	// the relay that takes the lease next never publishes beside it. 0 is
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// Run publishes pending events until ctx ends: a batch after another while
// they are full, then every Interval. After a failed batch it logs and
// waits, twice as long after each failure in a row, up to 5 s. Once an hour
// (and at start) it purges the events published more than Retention ago.
// It returns nil when ctx ends, EINVALID if a required field is missing.
func (r *Relay) Run(ctx context.Context) error {
	if err := r.check(); err != nil {
		return err
	}
	var (
		failures  int
		lastPurge time.Time // zero: purge at once
	)
	for {
		if now := r.now(); now.Sub(lastPurge) >= purgeEvery {
			r.purge(ctx, now)
			lastPurge = now
		}
		n, err := r.RunOnce(ctx)
		pause := r.interval()
		switch {
		case ctx.Err() != nil:
			return nil
		case boxoffice.ErrorCode(err) == boxoffice.EIDEMINFLIGHT:
			// Another relay is publishing: look again later. Not a
			// failure of this one.
		case err != nil:
			failures++
			pause = backoff(r.interval(), failures)
			r.log().LogAttrs(ctx, slog.LevelWarn, "outbox relay: batch failed, will retry",
				slog.Any("err", err), slog.Int("failures", failures), slog.Duration("retry_in", pause))
		default:
			if failures > 0 {
				r.log().LogAttrs(ctx, slog.LevelInfo, "outbox relay: publishing again", slog.Int("failures", failures))
				failures = 0
			}
			if n == r.batchSize() {
				continue // a full batch: more may be waiting
			}
		}
		if wait.Sleep(ctx, pause) != nil {
			return nil
		}
	}
}

// RunOnce publishes one batch of pending events under the lease and marks
// it published (deletes it, with DropPublished). It returns how many
// events it published: 0 with a nil error when none was pending; 0 with an
// EIDEMINFLIGHT error when another relay holds the lease; 0 with an
// EUNAVAILABLE error when Publish failed (the batch stays pending). An
// error from MarkPublished (DeletePublished) leaves the batch pending too,
// although it was published: it is published again.
func (r *Relay) RunOnce(ctx context.Context) (int, error) {
	if err := r.check(); err != nil {
		return 0, err
	}
	ttl := r.leaseTTL()
	release, err := r.Leases.TryLease(ctx, LeaseKey, ttl)
	if err != nil {
		return 0, err
	}
	defer release()
	// Leave a fifth of the lease as a margin for the clocks of this
	// process and of the lease store.
	ctx, cancel := context.WithTimeout(ctx, ttl-ttl/5)
	defer cancel()

	evs, err := r.Store.PendingOutbox(ctx, r.batchSize())
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	if err := r.Publisher.Publish(ctx, evs); err != nil {
		// Wrapped so that no code the publisher's error carries (such as
		// EIDEMINFLIGHT) is mistaken for the relay's own.
		return 0, boxoffice.Unavailable("event publishing", err)
	}
	seqs := make([]int64, len(evs))
	for i, ev := range evs {
		seqs[i] = ev.Seq
	}
	if r.DropPublished {
		err = r.Store.DeletePublished(ctx, seqs)
	} else {
		err = r.Store.MarkPublished(ctx, seqs, r.now())
	}
	if err != nil {
		return 0, err
	}
	return len(evs), nil
}

// Drain publishes batches until none is pending and returns how many events
// it published. It stops at the first error, EIDEMINFLIGHT included
// (another relay is at work). The embedded mode calls it at shutdown, with
// the writes stopped, so the last events are not left for the next start.
func (r *Relay) Drain(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := r.RunOnce(ctx)
		total += n
		if err != nil || n < r.batchSize() {
			return total, err
		}
	}
}

// purge deletes the events published more than Retention before now. A
// failure is logged; the next purge tries again.
func (r *Relay) purge(ctx context.Context, now time.Time) {
	n, err := r.Store.PurgeOutbox(ctx, now.Add(-Retention))
	switch {
	case err != nil && ctx.Err() == nil:
		r.log().LogAttrs(ctx, slog.LevelWarn, "outbox relay: purge failed", slog.Any("err", err))
	case n > 0:
		r.log().LogAttrs(ctx, slog.LevelDebug, "outbox relay: purged published events", slog.Int("events", n))
	}
}

// backoff is the pause after the given number of failed batches in a row:
// interval doubled for each, at most maxBackoff.
func backoff(interval time.Duration, failures int) time.Duration {
	d := interval
	for range failures {
		if d >= maxBackoff/2 {
			return maxBackoff
		}
		d *= 2
	}
	return d
}

func (r *Relay) check() error {
	if r.Store == nil || r.Publisher == nil || r.Leases == nil {
		return boxoffice.Errorf(boxoffice.EINVALID, "outbox relay: Store, Publisher and Leases are required")
	}
	return nil
}

func (r *Relay) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Relay) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

func (r *Relay) batchSize() int {
	if r.BatchSize > 0 {
		return r.BatchSize
	}
	return DefaultBatchSize
}

func (r *Relay) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return DefaultInterval
}

func (r *Relay) leaseTTL() time.Duration {
	if r.LeaseTTL > 0 {
		return r.LeaseTTL
	}
	return DefaultLeaseTTL
}
