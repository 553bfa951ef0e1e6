// Package lru is a bounded cache that evicts the least recently used
// entry: O(1) per operation (a map and a doubly linked list) and safe for
// concurrent use. It bounds the in-process caches keyed by event, so that
// memory does not grow with the number of events read while the events in
// use stay.
package lru

import (
	"container/list"
	"fmt"
	"sync"
)

// Cache holds at most its maxEntries most recently used entries and, with
// a byte bound (SetMaxBytes), at most that many bytes of them as its cost
// function counts them. Create it with New.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	order *list.List          // of *entry[K, V], most recently used first
	items map[K]*list.Element // key → its element in order
	// The byte bound: cost counts an entry; bytes is the sum; maxBytes 0
	// means none.
	cost     func(V) int64
	bytes    int64
	maxBytes int64
}

type entry[K comparable, V any] struct {
	key  K
	val  V
	cost int64
}

// New returns a cache of at most maxEntries entries; maxEntries must be
// at least 1.
func New[K comparable, V any](maxEntries int) *Cache[K, V] {
	if maxEntries < 1 {
		panic(fmt.Sprintf("lru: maxEntries %d < 1", maxEntries))
	}
	return &Cache[K, V]{max: maxEntries, order: list.New(), items: make(map[K]*list.Element)}
}

// SetMaxBytes bounds the sum of the entries' costs to maxBytes (0: no
// bound); cost says what an entry weighs. The most recently used entry
// stays even if it alone weighs more: the caller just made it.
func (c *Cache[K, V]) SetMaxBytes(maxBytes int64, cost func(V) int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxBytes, c.cost = maxBytes, cost
	c.bytes = 0
	for el := c.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry[K, V])
		e.cost = c.weigh(e.val)
		c.bytes += e.cost
	}
	c.evict()
}

// Bytes is the sum of the entries' costs (0 without SetMaxBytes).
func (c *Cache[K, V]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

func (c *Cache[K, V]) weigh(v V) int64 {
	if c.cost == nil {
		return 0
	}
	return c.cost(v)
}

// evict drops least recently used entries while a bound is passed,
// keeping the most recently used. It reports whether it dropped any.
func (c *Cache[K, V]) evict() bool {
	evicted := false
	for c.order.Len() > 1 && (c.order.Len() > c.max || c.maxBytes > 0 && c.bytes > c.maxBytes) {
		oldest := c.order.Back()
		e := oldest.Value.(*entry[K, V])
		c.order.Remove(oldest)
		delete(c.items, e.key)
		c.bytes -= e.cost
		evicted = true
	}
	return evicted
}

// Get returns the value of key and makes it the most recently used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry[K, V]).val, true
}

// Add sets key's value and makes it the most recently used; when that
// passes a bound (entries or bytes), the least recently used go. It
// reports whether an entry was evicted.
func (c *Cache[K, V]) Add(key K, val V) (evicted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cost := c.weigh(val)
	if el, ok := c.items[key]; ok {
		e := el.Value.(*entry[K, V])
		c.bytes += cost - e.cost
		e.val, e.cost = val, cost
		c.order.MoveToFront(el)
		return c.evict()
	}
	c.items[key] = c.order.PushFront(&entry[K, V]{key, val, cost})
	c.bytes += cost
	return c.evict()
}

// RemoveIf drops every entry for which drop returns true and says how
// many it dropped. drop must not call the cache.
func (c *Cache[K, V]) RemoveIf(drop func(key K, val V) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for el := c.order.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(*entry[K, V]); drop(e.key, e.val) {
			c.order.Remove(el)
			delete(c.items, e.key)
			c.bytes -= e.cost
			n++
		}
		el = next
	}
	return n
}

// Remove drops key; it reports whether it was there.
func (c *Cache[K, V]) Remove(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if ok {
		c.order.Remove(el)
		delete(c.items, key)
		c.bytes -= el.Value.(*entry[K, V]).cost
	}
	return ok
}

// Len is the number of entries.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Range calls f for each entry, most recently used first, until f returns
// false; it does not change the order. f must not call the cache.
func (c *Cache[K, V]) Range(f func(key K, val V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry[K, V])
		if !f(e.key, e.val) {
			return
		}
	}
}
