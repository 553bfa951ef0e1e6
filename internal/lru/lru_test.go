package lru

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func keys(c *Cache[int, string]) []int {
	var ks []int
	c.Range(func(k int, _ string) bool { ks = append(ks, k); return true })
	return ks
}

// The least recently used entry goes first; Get and Add both count as a use.
func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[int, string](3)
	for i := 1; i <= 3; i++ {
		if c.Add(i, fmt.Sprint(i)) {
			t.Fatalf("Add(%d) evicted below the bound", i)
		}
	}
	if v, ok := c.Get(1); !ok || v != "1" {
		t.Fatalf("Get(1) = %q, %v", v, ok)
	}
	// Order now 1, 3, 2: adding 4 evicts 2.
	if !c.Add(4, "4") {
		t.Fatal("Add(4) over the bound evicted nothing")
	}
	if _, ok := c.Get(2); ok {
		t.Fatal("2, the least recently used, is still there")
	}
	if got, want := keys(c), []int{4, 1, 3}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	// Replacing a value is a use and does not evict.
	if c.Add(3, "three") {
		t.Fatal("replacing 3 evicted")
	}
	if v, _ := c.Get(3); v != "three" {
		t.Fatalf("Get(3) = %q after the replace", v)
	}
	c.Add(5, "5") // order 3, 4, 1 → evicts 1
	if got, want := keys(c), []int{5, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if c.Len() != 3 {
		t.Fatalf("Len %d, want 3", c.Len())
	}
	if !c.Remove(3) || c.Remove(3) {
		t.Fatal("Remove(3) twice: want true then false")
	}
	if _, ok := c.Get(3); ok || c.Len() != 2 {
		t.Fatalf("after Remove: Get(3) ok=%v, Len %d", ok, c.Len())
	}
	// Range stops when asked and leaves the order alone.
	n := 0
	c.Range(func(int, string) bool { n++; return false })
	if n != 1 {
		t.Fatalf("Range went on after false: %d calls", n)
	}
	if got, want := keys(c), []int{5, 4}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestBoundOfOne(t *testing.T) {
	c := New[int, string](1)
	c.Add(1, "1")
	c.Add(2, "2")
	if _, ok := c.Get(1); ok || c.Len() != 1 {
		t.Fatalf("a cache of 1 kept 1 after adding 2 (Len %d)", c.Len())
	}
}

func TestNewRefusesNoRoom(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New(0) did not panic")
		}
	}()
	New[int, int](0)
}

// Many goroutines at once (run with -race): the bound holds and the
// entries are consistent.
func TestConcurrentUse(t *testing.T) {
	const bound, workers, ops = 64, 8, 5000
	c := New[int, int](bound)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range ops {
				k := (i*7 + w) % 200
				switch i % 4 {
				case 0, 1:
					c.Add(k, k*10)
				case 2:
					if v, ok := c.Get(k); ok && v != k*10 {
						t.Errorf("Get(%d) = %d", k, v)
					}
				case 3:
					if i%16 == 3 {
						c.Remove(k)
					}
					if n := c.Len(); n > bound {
						t.Errorf("Len %d over the bound %d", n, bound)
					}
				}
			}
		})
	}
	wg.Wait()
	n := 0
	c.Range(func(k, v int) bool {
		n++
		if v != k*10 {
			t.Errorf("entry %d = %d", k, v)
		}
		return true
	})
	if n != c.Len() || n > bound {
		t.Fatalf("Range saw %d entries, Len %d, bound %d", n, c.Len(), bound)
	}
}

// With a byte bound the least recently used go until the rest fit; the
// newest stays even alone over the bound.
func TestByteBound(t *testing.T) {
	c := New[string, []byte](100)
	c.SetMaxBytes(10, func(b []byte) int64 { return int64(len(b)) })
	c.Add("a", make([]byte, 4))
	c.Add("b", make([]byte, 4))
	c.Get("a") // b is now the least recently used
	if evicted := c.Add("c", make([]byte, 4)); !evicted {
		t.Fatal("12 bytes under a bound of 10: nothing evicted")
	}
	if _, ok := c.Get("b"); ok {
		t.Error("b, the least recently used, is still there")
	}
	if c.Len() != 2 || c.Bytes() != 8 {
		t.Errorf("after eviction: %d entries, %d bytes; want 2, 8", c.Len(), c.Bytes())
	}
	c.Add("a", make([]byte, 1)) // a replaced by a lighter value
	if c.Bytes() != 5 {
		t.Errorf("after replacing a: %d bytes, want 5", c.Bytes())
	}
	c.Add("huge", make([]byte, 50))
	if c.Len() != 1 || c.Bytes() != 50 {
		t.Errorf("after one entry over the bound: %d entries, %d bytes; want only it", c.Len(), c.Bytes())
	}
	c.Remove("huge")
	if c.Len() != 0 || c.Bytes() != 0 {
		t.Errorf("after removing it: %d entries, %d bytes", c.Len(), c.Bytes())
	}
}

func TestRemoveIf(t *testing.T) {
	c := New[int, int](10)
	c.SetMaxBytes(1000, func(v int) int64 { return int64(v) })
	for i := range 6 {
		c.Add(i, i)
	}
	if n := c.RemoveIf(func(k, _ int) bool { return k%2 == 0 }); n != 3 {
		t.Fatalf("RemoveIf dropped %d, want 3", n)
	}
	if c.Len() != 3 || c.Bytes() != 1+3+5 {
		t.Errorf("after RemoveIf: %d entries, %d bytes; want 3, 9", c.Len(), c.Bytes())
	}
	for _, k := range []int{0, 2, 4} {
		if _, ok := c.Get(k); ok {
			t.Errorf("%d is still there", k)
		}
	}
}
