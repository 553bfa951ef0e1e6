package postgres

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/internal/wait"
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
			if err := wait.Sleep(ctx, backoff(attempt)); err != nil {
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

// transactBatches is transact for a transaction of batches (pipelined):
// its round trips are the batches fn sends and the one it returns, and
// sent says whether the COMMIT was sent on the last attempt. A unique
// violation met by the returned batch is errBatchRace: a key or an id
// committed by someone else between fn's reads and its writes.
func (s *Store) transactBatches(ctx context.Context, fn func(send sendFunc) (*pgx.Batch, error)) (sent bool, err error) {
	last, stopped := withRetries(ctx, func() error {
		committing, err := s.pipelined(ctx, fn)
		sent = committing
		if committing && pgCode(err) == codeUniqueViolation {
			return errBatchRace
		}
		return err
	})
	if stopped != nil {
		return sent, stopped
	}
	return sent, translate(last)
}

// sendFunc sends a batch on the transaction's connection.
type sendFunc func(b *pgx.Batch) pgx.BatchResults

// pipelined runs a transaction of batches in as many round trips as fn
// sends batches, where transact adds two: its BEGIN travels with the first
// batch fn sends (pgx's Batch.BeginTx), and its COMMIT with the batch fn
// returns (nil: fn wrote nothing, and the transaction is rolled back). On a
// busy machine each round trip waits for the server's backend and then
// this process to be scheduled, so the group commit of reserves (a batch's
// reads, then its writes) uses it.
//
// fn must close the results of each batch it sends before it returns: the
// connection carries one batch at a time. committing is true once the
// COMMIT was sent: if err is then a lost connection, the outcome is
// unknown. A failure before it leaves nothing written.
func (s *Store) pipelined(ctx context.Context, fn func(send sendFunc) (*pgx.Batch, error)) (committing bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer func() {
		// Whatever failed, the connection goes back idle, or closed.
		if conn.Conn().PgConn().TxStatus() != 'I' {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
			if _, err := conn.Exec(rctx, "rollback"); err != nil {
				_ = conn.Conn().Close(rctx)
			}
			cancel()
		}
		conn.Release()
	}()
	begun := false
	begin := func(b *pgx.Batch) *pgx.Batch {
		begun = true
		tb := &pgx.Batch{}
		tb.BeginTx(pgx.TxOptions{})
		tb.QueuedQueries = append(tb.QueuedQueries, b.QueuedQueries...)
		return tb
	}
	send := func(b *pgx.Batch) pgx.BatchResults {
		if begun {
			return conn.SendBatch(ctx, b)
		}
		br := conn.SendBatch(ctx, begin(b))
		// The caller reads its own statements' results: BEGIN's is read
		// here, and a failed BEGIN fails them all.
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return pgx.FailedBatchResults(b, err)
		}
		return br
	}
	last, err := fn(send)
	if err != nil || last == nil {
		return false, err
	}
	if !begun {
		last = begin(last)
	}
	last.Queue("commit")
	return true, conn.SendBatch(ctx, last).Close()
}

// rollbackTimeout bounds the ROLLBACK of a failed pipelined transaction.
const rollbackTimeout = 5 * time.Second
