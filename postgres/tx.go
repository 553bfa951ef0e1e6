package postgres

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// Retry policy of transact: a transaction that hits a serialization
// failure or a deadlock is run again, at most maxAttempts times in all,
// after a pause drawn uniformly from [0, min(maxBackoff, baseBackoff·2^n))
// ("full jitter", so that the transactions that collided do not collide
// again in step).
const (
	maxAttempts = 5
	baseBackoff = 2 * time.Millisecond
	maxBackoff  = 100 * time.Millisecond
)

// transact runs fn in a READ COMMITTED transaction and commits it if fn
// returns nil. The correctness of this package rests on explicit row locks
// and constraints, not on the isolation level; deadlocks (40P01) and, were
// a caller to raise the level, serialization failures (40001) are retried
// with bounded, jittered backoff, so fn must be safe to run more than once
// (it must only touch the database through tx). The error is translated
// into the domain vocabulary.
func (s *Store) transact(ctx context.Context, fn func(tx pgx.Tx) error) error {
	last, stopped := withRetries(ctx, func() error { return pgx.BeginFunc(ctx, s.pool, fn) })
	if stopped != nil {
		return stopped
	}
	return translate(last)
}

// withRetries runs fn until it succeeds, fails with an error that is not
// worth retrying (retryable), or has run maxAttempts times, pausing with
// backoff between attempts. It returns fn's last error, and ctx's error
// if a pause was cut short by it (fn then ran fewer times).
func withRetries(ctx context.Context, fn func() error) (last, stopped error) {
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return last, err
			}
		}
		last = fn()
		if last == nil || !retryable(last) {
			break
		}
	}
	return last, nil
}

// backoff is the pause before the given retry (1 for the first retry).
func backoff(retry int) time.Duration {
	ceiling := min(maxBackoff, baseBackoff<<retry)
	return rand.N(ceiling)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
