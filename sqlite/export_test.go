package sqlite

import (
	"context"
	"math"

	"github.com/boxoffice/boxoffice"
)

// SetDrawChunk makes q's draws write n requests a transaction and call
// after (if not nil) after each chunk: its error stops the draw there, as
// a crash would.
func (q *Queue) SetDrawChunk(n int, after func(chunk int) error) {
	q.drawChunk, q.afterChunk = n, after
}

// Next reads up to n requests of the log after the place after, as a
// consumer does.
func (q *Queue) Next(ctx context.Context, after int64, n int) ([]*boxoffice.QueuedRequest, int64, error) {
	return q.next(ctx, after, math.MaxInt64, n)
}
