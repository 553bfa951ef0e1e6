// Package wait is the pause of the retry and poll loops: a sleep that a
// context cuts short.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done, and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
