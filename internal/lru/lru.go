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

// Cache holds at most its maxEntries most recently used entries. Create
// it with New.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	order *list.List          // of *entry[K, V], most recently used first
	items map[K]*list.Element // key → its element in order
}

type entry[K comparable, V any] struct {
	key K
	val V
}

// New returns a cache of at most maxEntries entries; maxEntries must be
// at least 1.
func New[K comparable, V any](maxEntries int) *Cache[K, V] {
	if maxEntries < 1 {
		panic(fmt.Sprintf("lru: maxEntries %d < 1", maxEntries))
	}
	return &Cache[K, V]{max: maxEntries, order: list.New(), items: make(map[K]*list.Element)}
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
// makes one entry too many, the least recently used goes. It reports
// whether an entry was evicted.
func (c *Cache[K, V]) Add(key K, val V) (evicted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*entry[K, V]).val = val
		c.order.MoveToFront(el)
		return false
	}
	c.items[key] = c.order.PushFront(&entry[K, V]{key, val})
	if c.order.Len() <= c.max {
		return false
	}
	oldest := c.order.Back()
	c.order.Remove(oldest)
	delete(c.items, oldest.Value.(*entry[K, V]).key)
	return true
}

// Remove drops key; it reports whether it was there.
func (c *Cache[K, V]) Remove(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if ok {
		c.order.Remove(el)
		delete(c.items, key)
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
