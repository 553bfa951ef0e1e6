package httpapi

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/boxoffice/boxoffice"
)

// Limits are the front door's rate limits. A zero rate turns a limit off.
//
// Per user: the state-changing requests (POST, DELETE) of one signed-in
// user, whatever address they come from; and, apart and more generously,
// the user's reads (GET), so that a script cannot poll without end. Per
// address: every request from one remote address,
// off by default, since a whole campus or a load test may share one
// address. Each process keeps its own buckets: behind a balancer over n
// processes a user gets up to n times the rate, which is what a front-door
// limit needs (stopping a script from hammering reserve), not an exact
// fleet-wide quota.
type Limits struct {
	PerUser      rate.Limit
	UserBurst    int
	ReadsPerUser rate.Limit // burst: 4 times the rate
	PerAddress   rate.Limit
	AddressBurst int
	// Streams caps the live status streams (SSE) of this process, and
	// StreamsPerUser those of one user; past either the answer is 429.
	// Zero: DefaultStreams, DefaultStreamsPerUser.
	Streams, StreamsPerUser int
	// InFlight bounds the requests in the handlers at once (live streams
	// aside); the others wait their turn in arrival order. Zero: no bound.
	InFlight int
}

// DefaultInFlight is serve's bound on the requests in the handlers at
// once: 16 per core.
func DefaultInFlight() int { return 16 * runtime.GOMAXPROCS(0) }

// Stream caps by default.
const (
	DefaultStreams        = 10_000
	DefaultStreamsPerUser = 4
)

// SetLimits turns on the rate limits; call it before serving.
func (s *Server) SetLimits(l Limits) {
	if l.PerUser > 0 {
		s.users = newLimiters(l.PerUser, max(l.UserBurst, 1))
	}
	if l.ReadsPerUser > 0 {
		s.reads = newLimiters(l.ReadsPerUser, max(int(math.Ceil(float64(l.ReadsPerUser)*4)), 1))
	}
	if l.PerAddress > 0 {
		s.addrs = newLimiters(l.PerAddress, max(l.AddressBurst, 1))
	}
	if l.Streams > 0 {
		s.streams.max = l.Streams
	}
	if l.StreamsPerUser > 0 {
		s.streams.perUser = l.StreamsPerUser
	}
	if l.InFlight > 0 {
		s.gate = make(chan struct{}, l.InFlight)
	}
}

// LiveStreams is how many live status streams (SSE) this server has open.
func (s *Server) LiveStreams() int {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	return s.streams.total
}

// Waiting is how many requests wait for a place in the handlers
// (Limits.InFlight).
func (s *Server) Waiting() int { return int(s.waiting.Load()) }

// streamCount counts the live streams of this process, by user.
type streamCount struct {
	mu           sync.Mutex
	max, perUser int
	total        int
	byUser       map[string]int
}

// open takes a stream slot for user, or says why not.
func (c *streamCount) open(user string) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	limit, perUser := c.max, c.perUser
	if limit <= 0 {
		limit = DefaultStreams
	}
	if perUser <= 0 {
		perUser = DefaultStreamsPerUser
	}
	if c.total >= limit {
		return nil, rateLimited(5*time.Second, "this server has as many live streams as it serves; poll the status instead, or retry shortly")
	}
	if c.byUser[user] >= perUser {
		return nil, rateLimited(5*time.Second, fmt.Sprintf("you have %d live streams open already; close one, or poll the status", perUser))
	}
	if c.byUser == nil {
		c.byUser = map[string]int{}
	}
	c.total++
	c.byUser[user]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.total--
		if c.byUser[user]--; c.byUser[user] <= 0 {
			delete(c.byUser, user)
		}
	}, nil
}

// limiters is a token bucket per key, forgotten after a while idle.
type limiters struct {
	rate  rate.Limit
	burst int

	mu    sync.Mutex
	keys  map[string]*bucket
	swept time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// idleAfter is how long an unused bucket is kept: by then it is full
// again, so forgetting it changes nothing.
const idleAfter = 5 * time.Minute

func newLimiters(r rate.Limit, burst int) *limiters {
	return &limiters{rate: r, burst: burst, keys: map[string]*bucket{}, swept: time.Now()}
}

// allow takes a token for key; when there is none it returns how long to
// wait for one.
func (l *limiters) allow(key string) (bool, time.Duration) {
	now := time.Now()
	l.mu.Lock()
	if now.Sub(l.swept) > idleAfter {
		for k, b := range l.keys {
			if now.Sub(b.seen) > idleAfter {
				delete(l.keys, k)
			}
		}
		l.swept = now
	}
	b := l.keys[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(l.rate, l.burst)}
		l.keys[key] = b
	}
	b.seen = now
	l.mu.Unlock()
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused request costs no token
		return false, d
	}
	return true, 0
}

// limit applies the front door's limits to one request of u.
func (s *Server) limit(r *http.Request, u boxoffice.User) error {
	if s.addrs != nil {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if ok, wait := s.addrs.allow(host); !ok {
			return rateLimited(wait, "too many requests from this address")
		}
	}
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	if s.users != nil && u.ID != "" && !read {
		if ok, wait := s.users.allow(u.ID); !ok {
			return rateLimited(wait, "too many requests; slow down")
		}
	}
	if s.reads != nil && u.ID != "" && read {
		if ok, wait := s.reads.allow(u.ID); !ok {
			return rateLimited(wait, "too many reads; slow down")
		}
	}
	return nil
}

// rateLimitedError is an ERATELIMITED error that knows how long the
// client should wait.
type rateLimitedError struct {
	err  *boxoffice.Error
	wait time.Duration
}

func (e *rateLimitedError) Error() string { return e.err.Error() }
func (e *rateLimitedError) Unwrap() error { return e.err }

func rateLimited(wait time.Duration, msg string) error {
	return &rateLimitedError{err: boxoffice.Errorf(boxoffice.ERATELIMITED, "%s", msg), wait: wait}
}

// retryAfterSeconds rounds a wait up to whole seconds, at least one.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
