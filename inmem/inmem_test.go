package inmem

import (
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/holdtest"
)

func TestContract(t *testing.T) {
	holdtest.Run(t, func(t *testing.T) holdtest.Harness {
		clock := newFakeClock()
		return holdtest.Harness{
			Holds:   NewHolds(clock.Now),
			Leases:  NewLeases(clock.Now),
			Advance: clock.Advance,
		}
	})
}

// The table passes the contract on the real clock too, as it runs in
// production, with Advance sleeping as it does against Redis.
func TestContractRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps through TTLs")
	}
	holdtest.Run(t, func(t *testing.T) holdtest.Harness {
		return holdtest.Harness{
			Holds:   NewHolds(nil),
			Leases:  NewLeases(nil),
			Advance: time.Sleep,
		}
	})
}

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
