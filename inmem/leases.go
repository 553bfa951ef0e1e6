package inmem

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/boxoffice/boxoffice"
)

// Leases is the in-process boxoffice.Leases: a striped map of key → lease,
// each lease stamped with a token so that a release func frees only the
// lease it was handed with (the same check-and-delete as the Redis
// implementation).
//
// Released leases are deleted at once; a lease whose holder never released
// it is free after its ttl and reclaimed by Sweep (or Run). The table holds
// only leases in flight, so Sweep scans it.
//
// The zero value is not usable; call NewLeases.
type Leases struct {
	now   func() time.Time
	base  time.Time
	seed  maphash.Seed
	token atomic.Uint64

	stripes [stripeCount]leaseStripe
}

var _ boxoffice.ManyLeases = (*Leases)(nil)

type lease struct {
	token   uint64
	expires int64 // nanoseconds since Leases.base
}

type leaseState struct {
	mu     sync.Mutex
	leases map[string]lease
}

type leaseStripe struct {
	leaseState
	_ [64 - unsafe.Sizeof(leaseState{})%64]byte
}

// NewLeases returns an empty lease table on the clock now (nil means
// time.Now).
func NewLeases(now func() time.Time) *Leases {
	if now == nil {
		now = time.Now
	}
	return &Leases{now: now, base: now(), seed: maphash.MakeSeed()}
}

// TryLease takes the lease on key for ttl, or returns EIDEMINFLIGHT if
// someone holds it. An empty key or a ttl that is not positive is EINVALID. The release
// func may be called any number of times; it frees the lease only while it
// is still this one.
func (l *Leases) TryLease(_ context.Context, key string, ttl time.Duration) (func(), error) {
	if key == "" {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "lease key is empty")
	}
	if ttl <= 0 {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "a lease needs a positive ttl")
	}
	st := &l.stripes[maphash.String(l.seed, key)%stripeCount]
	t := l.since()
	st.mu.Lock()
	if cur, ok := st.leases[key]; ok && cur.expires > t {
		st.mu.Unlock()
		return nil, boxoffice.Errorf(boxoffice.EIDEMINFLIGHT, "a request with this key is in flight")
	}
	token := l.token.Add(1)
	if st.leases == nil {
		st.leases = make(map[string]lease)
	}
	st.leases[key] = lease{token: token, expires: t + int64(ttl)}
	st.mu.Unlock()

	return func() {
		st.mu.Lock()
		if cur, ok := st.leases[key]; ok && cur.token == token {
			delete(st.leases, key)
		}
		st.mu.Unlock()
	}, nil
}

// TryLeaseMany takes the leases on keys one after the other (each is a map
// write); see boxoffice.ManyLeases.
func (l *Leases) TryLeaseMany(ctx context.Context, keys []string, ttl time.Duration) (func(), []error) {
	errs := make([]error, len(keys))
	var releases []func()
	for i, key := range keys {
		var release func()
		if release, errs[i] = l.TryLease(ctx, key, ttl); errs[i] == nil {
			releases = append(releases, release)
		}
	}
	return func() {
		for _, release := range releases {
			release()
		}
	}, errs
}

// Sweep deletes the leases that expired and returns how many.
func (l *Leases) Sweep() int {
	t := l.since()
	n := 0
	for i := range l.stripes {
		st := &l.stripes[i]
		st.mu.Lock()
		for k, cur := range st.leases {
			if cur.expires <= t {
				delete(st.leases, k)
				n++
			}
		}
		st.mu.Unlock()
	}
	return n
}

// Run sweeps every interval (a second if it is not positive) until ctx is
// done.
func (l *Leases) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			l.Sweep()
		}
	}
}

func (l *Leases) since() int64 { return int64(l.now().Sub(l.base)) }
