package apitest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/sqlite"
)

// TestEmbedded runs the suite on the embedded default: SQLite and the
// in-process hold table, on a fake clock.
func TestEmbedded(t *testing.T) {
	Run(t, func(t *testing.T) *Stack {
		clock := NewClock(time.Now())
		store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "test.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		q := store.Queue()
		q.PollInterval = 10 * time.Millisecond
		return NewStack(t, Parts{
			Store: store, Holds: inmem.NewHolds(clock.Now), Leases: inmem.NewLeases(clock.Now),
			Now: clock.Now, Advance: clock.Advance, Queue: q, Log: q,
		})
	})
}
