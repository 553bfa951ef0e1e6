// Package seatmap builds and caches the seat map of an event: every seat
// with available, held, sold or resale (sold, and listed by its owner),
// built from the store's sold seats and active listings plus the lock
// layer's live holds. A snapshot is served for a TTL (default 10s) and
// never after: past half its TTL one caller starts a rebuild in the
// background (single flight) while the others keep serving it, so a busy
// event costs about two rebuilds per TTL however many clients poll it and
// its readers never wait; after a quiet spell the first reader waits for
// the single rebuild instead of getting an old copy. Snapshots carry a
// strong ETag, a gzipped body and their age, so that a CDN in front can
// absorb the reads without keeping them past the TTL.
package seatmap

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/lru"
	"github.com/boxoffice/boxoffice/layout"
)

// Seat statuses: a byte each in a snapshot (the compact view's letter),
// their String in the full map.
const (
	Available = layout.Available
	Held      = layout.Held
	Sold      = layout.Sold
	// Resale: sold, and on the resale market (GET /events/{id}/listings).
	Resale = layout.Resale
)

// Store is the part of the database the seat map reads (boxoffice.Store
// has it).
type Store interface {
	SoldSeats(ctx context.Context, eventID boxoffice.ID) ([]string, error)
	EventListings(ctx context.Context, eventID boxoffice.ID) ([]boxoffice.Listing, error)
}

// Layouts gives the immutable seat layout of an event (layout.Cache).
type Layouts interface {
	Layout(ctx context.Context, eventID boxoffice.ID) (*layout.Layout, error)
}

// Snapshot is one built seat map, ready to serve.
type Snapshot struct {
	EventID boxoffice.ID
	BuiltAt time.Time
	// Statuses is the status of each seat in layout order, a byte each.
	Statuses layout.Statuses
	// JSON and Gzip are the full map; ETag is over JSON.
	JSON, Gzip []byte
	ETag       string
	// Compact is the availability view: run-length encoded letters over
	// the layout order; CompactETag is over it.
	Compact     []byte
	CompactETag string
	// Counts of seats per status.
	Counts map[string]int
	// Degraded is set when the lock layer could not be read: sold seats
	// are right (they come from the database), holds are not shown. Such a
	// snapshot is kept for at most a second.
	Degraded bool
}

// degradedTTL bounds how long a snapshot built without the lock layer is
// served, so the map heals within a second of the lock store's return.
const degradedTTL = time.Second

func (c *Cache) fresh(s *Snapshot) bool { return c.younger(s, c.TTLOf(s)) }

// younger reports whether s is younger than maxAge.
func (c *Cache) younger(s *Snapshot, maxAge time.Duration) bool {
	return c.now().Sub(s.BuiltAt) < maxAge
}

// TTLOf is how long a snapshot is served from its BuiltAt: the TTL, or
// for a degraded one at most a second.
func (c *Cache) TTLOf(s *Snapshot) time.Duration {
	if s.Degraded && c.ttl > degradedTTL {
		return degradedTTL
	}
	return c.ttl
}

// Age is how old a snapshot is now.
func (c *Cache) Age(s *Snapshot) time.Duration { return max(0, c.now().Sub(s.BuiltAt)) }

// Cache builds and caches snapshots.
type Cache struct {
	layouts Layouts
	store   Store
	holds   boxoffice.Holds
	ttl     time.Duration
	now     func() time.Time

	// What the cache keeps per event, for the events used last (a bound
	// of SetMaxEvents); refreshing lasts only while a rebuild runs.
	mu         sync.Mutex
	entries    *lru.Cache[boxoffice.ID, *Snapshot]
	counted    *lru.Cache[boxoffice.ID, *counted]  // fresh reads of statuses (Statuses)
	refreshing map[boxoffice.ID]bool               // a background rebuild is running
	notBefore  *lru.Cache[boxoffice.ID, time.Time] // another node is rebuilding: look again then
	invalidAt  *lru.Cache[boxoffice.ID, time.Time] // shared copies built before are not adopted
	sf         singleflight.Group
	sfFresh    singleflight.Group // fresh reads asked for by Statuses

	maxBytes int64 // SetMaxBytes; 0: none

	shared         Shared           // nil: this node's cache only
	sharedStatuses SharedStatuses   // shared's, when it keeps fresh reads of statuses too
	leases         boxoffice.Leases // the fleet-wide rebuild right, with shared

	builds atomic.Int64 // snapshots built and fresh reads of statuses, for tests
}

// New returns a cache with the given TTL (0 means 10s). now nil means
// time.Now.
func New(layouts Layouts, store Store, holds boxoffice.Holds, ttl time.Duration, now func() time.Time) *Cache {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	if now == nil {
		now = time.Now
	}
	c := &Cache{layouts: layouts, store: store, holds: holds, ttl: ttl, now: now, refreshing: map[boxoffice.ID]bool{}}
	c.SetMaxEvents(DefaultMaxEvents)
	return c
}

// DefaultMaxEvents is how many events a cache keeps unless told otherwise
// (SetMaxEvents).
const DefaultMaxEvents = 1000

// SetMaxEvents bounds what the cache keeps per event (snapshots, fresh
// reads of statuses, rebuild bookkeeping) to the n events used last (n <=
// 0 means DefaultMaxEvents): the least recently used event's go when one
// more is needed, and it is rebuilt when read again. Call it before the
// first Get: it empties the cache.
func (c *Cache) SetMaxEvents(n int) {
	if n <= 0 {
		n = DefaultMaxEvents
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = lru.New[boxoffice.ID, *Snapshot](n)
	c.counted = lru.New[boxoffice.ID, *counted](n)
	c.notBefore = lru.New[boxoffice.ID, time.Time](n)
	c.invalidAt = lru.New[boxoffice.ID, time.Time](n)
	c.setMaxBytes()
}

// SetMaxBytes bounds the bytes the cache keeps in snapshots and fresh
// reads of statuses (0: no bound beyond the events'): the least recently
// used go first, and a hot event's stays. Call it before the first Get.
func (c *Cache) SetMaxBytes(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxBytes = n
	c.setMaxBytes()
}

// setMaxBytes gives the snapshots three quarters of the bound, the fresh
// reads of statuses (a seat's status alone) the rest. The caller holds mu.
func (c *Cache) setMaxBytes() {
	if c.maxBytes <= 0 {
		return
	}
	c.entries.SetMaxBytes(c.maxBytes/4*3, (*Snapshot).Bytes)
	c.counted.SetMaxBytes(c.maxBytes/4, func(k *counted) int64 { return int64(len(k.statuses)) + 64 })
}

// Bytes is what the cache keeps in snapshots and fresh reads of statuses.
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries.Bytes() + c.counted.Bytes()
}

// Bytes is about what s weighs in memory: its bodies, its statuses (a
// byte each) and what a snapshot always has.
func (s *Snapshot) Bytes() int64 {
	return int64(len(s.JSON)+len(s.Gzip)+len(s.Compact)+len(s.ETag)+len(s.CompactETag)+len(s.Statuses)) + 512
}

// Events is how many events the cache keeps something for: the most any
// of its per-event caches holds, never more than the bound.
func (c *Cache) Events() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(c.entries.Len(), c.counted.Len(), c.notBefore.Len(), c.invalidAt.Len())
}

// TTL is how long a snapshot is served.
func (c *Cache) TTL() time.Duration { return c.ttl }

// Recent calls f with each cached snapshot built in the last maxAge: the
// events whose seat maps this process serves now (a snapshot read is
// rebuilt every TTL). f must be quick and must not call the cache.
func (c *Cache) Recent(maxAge time.Duration, f func(s *Snapshot)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries.Range(func(_ boxoffice.ID, s *Snapshot) bool {
		if c.younger(s, maxAge) {
			f(s)
		}
		return true
	})
}

// Builds returns how many snapshots were built so far.
func (c *Cache) Builds() int { return int(c.builds.Load()) }

// Get returns the event's snapshot, younger than its TTL: from the cache
// while it is (past half the TTL a single background rebuild starts, so
// that a busy event's readers do not wait), else from the single rebuild,
// which the caller waits for. A rebuild that fails is the caller's error:
// an older copy is not served.
func (c *Cache) Get(ctx context.Context, eventID boxoffice.ID) (*Snapshot, error) {
	c.mu.Lock()
	snap, _ := c.entries.Get(eventID)
	notBefore, _ := c.notBefore.Get(eventID)
	fresh := snap != nil && c.fresh(snap)
	start := fresh && !c.younger(snap, c.TTLOf(snap)/2) && !c.refreshing[eventID] && !time.Now().Before(notBefore)
	if start {
		c.refreshing[eventID] = true
	}
	c.mu.Unlock()
	if start {
		ahead := c.TTLOf(snap) / 2
		go func() {
			defer func() { c.mu.Lock(); delete(c.refreshing, eventID); c.mu.Unlock() }()
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_, _ = c.rebuild(ctx, eventID, ahead) // a failed rebuild leaves the copy to its TTL
		}()
	}
	if fresh {
		return snap, nil
	}
	return c.rebuild(ctx, eventID, 0)
}

// Statuses returns the event's seat statuses in layout order (sale's best
// available and inventory count from them): the current snapshot, or,
// when it is older than maxAge (> 0), a fresh read of the statuses alone,
// made once however many callers ask at the same time and kept for the
// next ones. A fresh read renders no map: the snapshot that readers get
// keeps its own TTL.
func (c *Cache) Statuses(ctx context.Context, eventID boxoffice.ID, maxAge time.Duration) (layout.Statuses, error) {
	if maxAge <= 0 {
		snap, err := c.Get(ctx, eventID)
		if err != nil {
			return nil, err
		}
		return snap.Statuses, nil
	}
	if st := c.freshStatuses(eventID, maxAge); st != nil {
		return st, nil
	}
	v, err, _ := c.sfFresh.Do(eventID.String(), func() (any, error) {
		if st := c.freshStatuses(eventID, maxAge); st != nil {
			return st, nil // read while this caller waited
		}
		st, release := c.statusesFromShared(ctx, eventID, maxAge)
		defer release()
		if st != nil {
			return st, nil
		}
		c.builds.Add(1)
		r, err := c.read(ctx, eventID)
		if err != nil {
			return nil, err
		}
		c.keepStatuses(eventID, r.at, r.statuses)
		if c.sharedStatuses != nil && !r.degraded {
			// A failed store costs the other nodes a read of their own.
			_ = c.sharedStatuses.StoreStatuses(ctx, eventID, encodeStatuses(eventID, r.at, r.statuses), sharedStatusesTTL)
		}
		return r.statuses, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(layout.Statuses), nil
}

// keepStatuses keeps statuses read at at for the next fresh looks, unless
// newer ones are kept.
func (c *Cache) keepStatuses(eventID boxoffice.ID, at time.Time, st layout.Statuses) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, _ := c.counted.Get(eventID); cur == nil || !cur.at.After(at) {
		c.counted.Add(eventID, &counted{at: at, statuses: st})
	}
}

// Timings of the shared fresh reads of statuses.
const (
	// statusesLease bounds how long one node holds the right to read an
	// event's statuses for the fleet.
	statusesLease = 5 * time.Second
	// statusesWait bounds how long a node waits for another's read
	// before it reads on its own, and statusesPoll how often it looks.
	statusesWait = 250 * time.Millisecond
	statusesPoll = 20 * time.Millisecond
	// sharedStatusesTTL is how long a shared read is kept; whoever loads
	// it checks its age against their own maxAge.
	sharedStatusesTTL = 10 * time.Second
)

// statusesFromShared returns the event's statuses as another node read
// them at most maxAge ago, or takes the fleet-wide right to read them
// (release lets it go). No statuses: this node reads, with the right, or
// on its own when the shared store fails or another node's read is late.
func (c *Cache) statusesFromShared(ctx context.Context, eventID boxoffice.ID, maxAge time.Duration) (layout.Statuses, func()) {
	noop := func() {}
	if c.sharedStatuses == nil {
		return nil, noop
	}
	deadline := time.Now().Add(statusesWait) // real time: it paces calls to the shared store
	for {
		st, ok := c.loadSharedStatuses(ctx, eventID, maxAge)
		if !ok || st != nil {
			return st, noop
		}
		release, err := c.leases.TryLease(ctx, "seatstatus:"+eventID.String(), statusesLease)
		switch {
		case err == nil:
			// The node before may have stored just before it let go.
			if st, ok := c.loadSharedStatuses(ctx, eventID, maxAge); ok && st != nil {
				release()
				return st, noop
			}
			return nil, release
		case boxoffice.ErrorCode(err) != boxoffice.EIDEMINFLIGHT, !time.Now().Before(deadline):
			return nil, noop
		}
		select {
		case <-ctx.Done():
			return nil, noop
		case <-time.After(statusesPoll):
		}
	}
}

// loadSharedStatuses returns the shared statuses when they are at most
// maxAge old and not older than an Invalidate, keeping them; ok is false
// when the shared store failed.
func (c *Cache) loadSharedStatuses(ctx context.Context, eventID boxoffice.ID, maxAge time.Duration) (st layout.Statuses, ok bool) {
	b, err := c.sharedStatuses.LoadStatuses(ctx, eventID)
	if err != nil {
		return nil, false
	}
	at, st, good := decodeStatuses(b, eventID)
	c.mu.Lock()
	invalidAt, _ := c.invalidAt.Get(eventID)
	c.mu.Unlock()
	if !good || !at.After(invalidAt) || c.now().Sub(at) > maxAge {
		return nil, true
	}
	c.keepStatuses(eventID, at, st)
	return st, true
}

// counted is a fresh read of an event's statuses, kept for Statuses.
type counted struct {
	at       time.Time
	statuses layout.Statuses
}

// freshStatuses returns the newest statuses this node has of the event,
// the snapshot's or a fresh read's, when at most maxAge old; else nil.
func (c *Cache) freshStatuses(eventID boxoffice.ID, maxAge time.Duration) layout.Statuses {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var st layout.Statuses
	var at time.Time
	if s, _ := c.entries.Get(eventID); s != nil {
		st, at = s.Statuses, s.BuiltAt
	}
	if r, _ := c.counted.Get(eventID); r != nil && (st == nil || r.at.After(at)) {
		st, at = r.statuses, r.at
	}
	if st == nil || now.Sub(at) > maxAge {
		return nil
	}
	return st
}

// Invalidate drops an event's snapshot so the next Get rebuilds it; shared
// copies built until now are not adopted either.
func (c *Cache) Invalidate(eventID boxoffice.ID) {
	c.mu.Lock()
	c.entries.Remove(eventID)
	c.counted.Remove(eventID)
	c.invalidAt.Add(eventID, c.now())
	c.mu.Unlock()
}

// Timings of the shared cache.
const (
	// rebuildLease bounds how long one node holds the right to rebuild; a
	// node that dies rebuilding holds the others up no longer than this.
	rebuildLease = 30 * time.Second
	// sharedPoll is how often a node whose copy is stale looks at the
	// shared store again while another node rebuilds.
	sharedPoll = 50 * time.Millisecond
)

// rebuild returns a snapshot younger than its TTL, and, with ahead > 0 (a
// refresh ahead of the TTL), younger than ahead: the one in the cache if it
// is, a newer shared one, or a new build; one flight per event at a time.
func (c *Cache) rebuild(ctx context.Context, eventID boxoffice.ID, ahead time.Duration) (*Snapshot, error) {
	return c.flight(ctx, eventID, ahead, true)
}

func (c *Cache) flight(ctx context.Context, eventID boxoffice.ID, ahead time.Duration, retry bool) (*Snapshot, error) {
	v, err, _ := c.sf.Do(eventID.String(), func() (any, error) {
		// Another flight may have finished just before this one started.
		c.mu.Lock()
		cur, _ := c.entries.Get(eventID)
		c.mu.Unlock()
		if cur != nil && c.wanted(cur, ahead) {
			return cur, nil
		}
		if c.shared != nil {
			snap, release, err := c.fromShared(ctx, eventID, cur, ahead)
			if snap != nil || err != nil {
				return snap, err
			}
			defer release()
		}
		snap, err := c.Build(ctx, eventID)
		if err != nil {
			return nil, err
		}
		if c.shared != nil && !snap.Degraded {
			// A failed store costs the other nodes a rebuild, nothing more.
			_ = c.shared.StoreSnapshot(ctx, eventID, encodeSnapshot(snap), 3*c.ttl)
		}
		c.keep(snap)
		return snap, nil
	})
	if err != nil {
		return nil, err
	}
	snap := v.(*Snapshot)
	if ahead == 0 && !c.fresh(snap) && retry {
		// A flight that a refresh ahead started may end on a copy that
		// was still fresh for it (another node rebuilds) and is stale by
		// now for a reader who joined it: that reader goes once more.
		return c.flight(ctx, eventID, 0, false)
	}
	return snap, nil
}

// wanted reports whether s will do for a rebuild that asked for ahead.
func (c *Cache) wanted(s *Snapshot, ahead time.Duration) bool {
	if ahead > 0 {
		return c.younger(s, ahead)
	}
	return c.fresh(s)
}

func (c *Cache) keep(snap *Snapshot) {
	c.mu.Lock()
	if cur, _ := c.entries.Get(snap.EventID); cur == nil || !cur.BuiltAt.After(snap.BuiltAt) {
		c.entries.Add(snap.EventID, snap)
	}
	c.notBefore.Remove(snap.EventID)
	c.mu.Unlock()
}

// fromShared adopts a newer snapshot from the shared store, or takes the
// fleet-wide rebuild lease. A snapshot ends the flight (adopted, or, for a
// refresh ahead, the copy in hand while another node rebuilds); none means
// this node builds, holding the lease until release (or, when the shared
// store is unreachable, on its own).
func (c *Cache) fromShared(ctx context.Context, eventID boxoffice.ID, cur *Snapshot, ahead time.Duration) (*Snapshot, func(), error) {
	noop := func() {}
	deadline := time.Now().Add(rebuildLease) // a wait in real time, whatever clock the cache runs on
	for {
		adopted, err := c.adopt(ctx, eventID, cur)
		if err != nil {
			return nil, noop, nil
		}
		if adopted != nil {
			cur = adopted
			if c.wanted(cur, ahead) {
				return cur, noop, nil
			}
		}
		release, err := c.leases.TryLease(ctx, "seatmap:"+eventID.String(), rebuildLease)
		switch {
		case err == nil:
			// The lease holder may have stored just before it let go.
			if adopted, aerr := c.adopt(ctx, eventID, cur); aerr == nil && adopted != nil && c.wanted(adopted, ahead) {
				release()
				return adopted, noop, nil
			}
			return nil, release, nil
		case boxoffice.ErrorCode(err) != boxoffice.EIDEMINFLIGHT:
			return nil, noop, nil
		}
		// Another node is rebuilding. With a copy still fresh in hand,
		// serve it and look again shortly; without, wait for theirs (or the
		// lease to lapse).
		if cur != nil && c.fresh(cur) {
			c.mu.Lock()
			c.notBefore.Add(eventID, time.Now().Add(sharedPoll)) // real time: it paces calls to the shared store
			c.mu.Unlock()
			return cur, noop, nil
		}
		if !time.Now().Before(deadline) {
			return nil, noop, nil
		}
		select {
		case <-ctx.Done():
			return nil, noop, ctx.Err()
		case <-time.After(sharedPoll):
		}
	}
}

// adopt loads the shared snapshot when it is newer than cur and keeps it;
// it returns nil when there is nothing newer. Only the header is read to
// decide. An error means the shared store failed.
func (c *Cache) adopt(ctx context.Context, eventID boxoffice.ID, cur *Snapshot) (*Snapshot, error) {
	h, err := c.shared.PeekSnapshot(ctx, eventID, headerLen)
	if err != nil {
		return nil, err
	}
	builtAt, ok := peekBuiltAt(h, eventID)
	c.mu.Lock()
	invalidAt, _ := c.invalidAt.Get(eventID)
	c.mu.Unlock()
	if !ok || (cur != nil && !builtAt.After(cur.BuiltAt)) || !builtAt.After(invalidAt) {
		return nil, nil
	}
	b, err := c.shared.LoadSnapshot(ctx, eventID)
	if err != nil {
		return nil, err
	}
	snap, err := decodeSnapshot(b, eventID)
	if err != nil {
		return nil, nil // gone or unreadable: build a new one
	}
	c.keep(snap)
	return snap, nil
}

type seatJSON struct {
	SeatID     string `json:"seat_id"`
	Section    string `json:"section"`
	Row        string `json:"row"`
	Number     int    `json:"number"`
	Status     string `json:"status"`
	PriceTier  string `json:"price_tier"`
	PriceCents int64  `json:"price_cents"`
	// A seat on the resale market: its listing and asking price.
	ListingID        boxoffice.ID `json:"listing_id,omitempty"`
	ResalePriceCents int64        `json:"resale_price_cents,omitempty"`
}

// Build makes a new snapshot without the cache: one read of the sold
// seats, one of the active listings, one batched read of the holds. A
// listed seat a buyer holds shows as held.
func (c *Cache) Build(ctx context.Context, eventID boxoffice.ID) (*Snapshot, error) {
	c.builds.Add(1)
	r, err := c.read(ctx, eventID)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{EventID: eventID, BuiltAt: r.at, Statuses: r.statuses, Counts: r.counts, Degraded: r.degraded}
	out := struct {
		EventID boxoffice.ID `json:"event_id"`
		Seats   []seatJSON   `json:"seats"`
	}{EventID: eventID, Seats: make([]seatJSON, len(r.ids))}
	i := 0 // the layout index of the seat at (section, row, n)
	for _, sec := range r.layout.Sections() {
		for row := 1; row <= sec.Rows; row++ {
			label := boxoffice.RowLabel(row)
			for n := 1; n <= sec.SeatsPerRow; n, i = n+1, i+1 {
				st := r.statuses[i]
				out.Seats[i] = seatJSON{SeatID: r.ids[i], Section: sec.Name, Row: label, Number: n, Status: st.String(), PriceTier: sec.PriceTier, PriceCents: sec.PriceCents}
				if st == Resale {
					l := r.listed[r.ids[i]]
					out.Seats[i].ListingID, out.Seats[i].ResalePriceCents = l.ID, l.PriceCents
				}
			}
		}
	}
	if snap.JSON, err = json.Marshal(out); err != nil {
		return nil, err
	}
	snap.ETag = etag(snap.JSON)
	if snap.Gzip, err = gzipBytes(snap.JSON); err != nil {
		return nil, err
	}
	snap.Compact = compact(eventID, snap.Statuses, snap.Counts)
	snap.CompactETag = etag(snap.Compact)
	return snap, nil
}

// reading is the seats' statuses as read at one moment, before anything is
// rendered.
type reading struct {
	at       time.Time
	layout   *layout.Layout
	ids      []string // the seats' ids in layout order
	statuses layout.Statuses
	counts   map[string]int
	degraded bool
	listed   map[string]*boxoffice.Listing
}

// read reads what a snapshot is made of: the sold seats, the live holds
// (one batched read) and the active listings.
func (c *Cache) read(ctx context.Context, eventID boxoffice.ID) (*reading, error) {
	lay, err := c.layouts.Layout(ctx, eventID)
	if err != nil {
		return nil, err
	}
	at := c.now()
	sold, err := c.store.SoldSeats(ctx, eventID)
	if err != nil {
		return nil, err
	}
	ids := lay.SeatIDs()
	// With the lock store down, reserve fails closed anyway; the map still
	// shows what is sold rather than nothing.
	held, err := c.holds.Held(ctx, eventID, ids)
	degraded := boxoffice.ErrorCode(err) == boxoffice.EUNAVAILABLE
	if err != nil && !degraded {
		return nil, err
	}
	if degraded {
		held = make([]bool, len(ids))
	}
	soldSet := make(map[string]bool, len(sold))
	for _, id := range sold {
		soldSet[id] = true
	}
	listings, err := c.store.EventListings(ctx, eventID)
	if err != nil {
		return nil, err
	}
	listed := make(map[string]*boxoffice.Listing, len(listings))
	for i := range listings {
		listed[listings[i].SeatID] = &listings[i]
	}
	r := &reading{at: at, layout: lay, ids: ids, statuses: make(layout.Statuses, len(ids)), counts: map[string]int{}, degraded: degraded, listed: listed}
	for i, id := range ids {
		st, l := Available, listed[id]
		switch {
		case soldSet[id] && l != nil && !held[i]:
			st = Resale
		case soldSet[id] && l == nil:
			st = Sold
		case held[i]:
			st = Held
		}
		r.statuses[i] = st
		r.counts[st.String()]++
	}
	return r, nil
}

// compact renders the availability view: {"event_id", "seat_count",
// "counts", "runs"} where runs is "<n><letter>..." over the layout order,
// letters a (available), h (held), s (sold), r (resale). A fully available
// 70,000-seat venue is "70000a".
func compact(eventID boxoffice.ID, statuses layout.Statuses, counts map[string]int) []byte {
	var runs []byte
	for i := 0; i < len(statuses); {
		j := i
		for j < len(statuses) && statuses[j] == statuses[i] {
			j++
		}
		runs = strconv.AppendInt(runs, int64(j-i), 10)
		runs = append(runs, byte(statuses[i]))
		i = j
	}
	b, _ := json.Marshal(struct {
		EventID   boxoffice.ID   `json:"event_id"`
		SeatCount int            `json:"seat_count"`
		Counts    map[string]int `json:"counts"`
		Encoding  string         `json:"encoding"`
		Runs      string         `json:"runs"`
	}{eventID, len(statuses), counts, "rle:a=available,h=held,s=sold,r=resale", string(runs)})
	return b
}

// DecodeRuns expands a compact "runs" string into one letter per seat.
func DecodeRuns(runs string) ([]byte, error) {
	var out []byte
	n := 0
	for i := 0; i < len(runs); i++ {
		ch := runs[i]
		switch {
		case ch >= '0' && ch <= '9':
			n = n*10 + int(ch-'0')
			if n > boxoffice.MaxSeatsPerEvent {
				return nil, boxoffice.Errorf(boxoffice.EINVALID, "run too long")
			}
		case ch == 'a' || ch == 'h' || ch == 's' || ch == 'r':
			out = append(out, bytes.Repeat([]byte{ch}, n)...)
			n = 0
		default:
			return nil, boxoffice.Errorf(boxoffice.EINVALID, "bad run letter %q", ch)
		}
	}
	return out, nil
}

func etag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
