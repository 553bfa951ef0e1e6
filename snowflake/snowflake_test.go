package snowflake

import (
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

func TestStrictlyIncreasingWhenClockStepsBack(t *testing.T) {
	var mu sync.Mutex
	now := Epoch.Add(time.Hour)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	g, err := New(7, clock)
	if err != nil {
		t.Fatal(err)
	}
	var last boxoffice.ID
	for i := 0; i < 20000; i++ {
		if i == 5000 {
			mu.Lock()
			now = now.Add(-10 * time.Second) // the clock steps back
			mu.Unlock()
		}
		id := g.NextID()
		if id <= last {
			t.Fatalf("id %d after %d: not increasing (i=%d)", id, last, i)
		}
		last = id
		if _, node, _ := Parts(id); node != 7 {
			t.Fatalf("node = %d, want 7", node)
		}
	}
}

func TestUniqueAcrossGoroutinesAndNodes(t *testing.T) {
	seen := sync.Map{}
	var wg sync.WaitGroup
	for node := 0; node < 4; node++ {
		g, _ := New(node, nil)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 5000; i++ {
					id := g.NextID()
					if _, dup := seen.LoadOrStore(id, true); dup {
						t.Errorf("duplicate id %d", id)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
}

func TestParts(t *testing.T) {
	at := Epoch.Add(1234567 * time.Millisecond)
	g, _ := New(MaxNode, func() time.Time { return at })
	g.NextID()
	ts, node, seq := Parts(g.NextID())
	if !ts.Equal(at) || node != MaxNode || seq != 1 {
		t.Fatalf("Parts = %v %d %d, want %v %d 1", ts, node, seq, at, MaxNode)
	}
	if _, err := New(MaxNode+1, nil); err == nil {
		t.Fatal("New accepted a node out of range")
	}
}
