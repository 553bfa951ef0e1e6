package httpapi

import (
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/boxoffice/boxoffice"
)

// Limits are the front door's rate limits. A zero rate turns a limit off.
//
// Per user: the state-changing requests (POST, DELETE) of one signed-in
// user, whatever address they come from; polling (GET) is not limited, the
// caches absorb it. Per address: every request from one remote address,
// off by default, since a whole campus or a load test may share one
// address. Each process keeps its own buckets: behind a balancer over n
// processes a user gets up to n times the rate, which is what a front-door
// limit needs (stopping a script from hammering reserve), not an exact
// fleet-wide quota.
type Limits struct {
	PerUser      rate.Limit
	UserBurst    int
	PerAddress   rate.Limit
	AddressBurst int
}

// SetLimits turns on the rate limits; call it before serving.
func (s *Server) SetLimits(l Limits) {
	if l.PerUser > 0 {
		s.users = newLimiters(l.PerUser, max(l.UserBurst, 1))
	}
	if l.PerAddress > 0 {
		s.addrs = newLimiters(l.PerAddress, max(l.AddressBurst, 1))
	}
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
	if s.users != nil && u.ID != "" && r.Method != http.MethodGet && r.Method != http.MethodHead {
		if ok, wait := s.users.allow(u.ID); !ok {
			return rateLimited(wait, "too many requests; slow down")
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
