package drill

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice/redis"
)

// Ceilings are the machine's own limits, measured in the same run as the
// drill so that its rates can be read as ratios: on two shared cores the
// absolute figures move with everything else running.
type Ceilings struct {
	// Bare is requests/s of a net/http handler that answers a POST with
	// ~100 bytes of JSON and does nothing else, on loopback, driven by the
	// drill's own client at its own concurrency (Conns) for BareTime.
	Bare     float64
	Conns    int
	BareTime time.Duration
	// Redis is SET NX PX operations/s on the target's Redis (0: no Redis
	// in play); RedisHow says how it was measured.
	Redis    float64
	RedisHow string
}

func measureCeilings(ctx context.Context, cfg Config, t Target, progress io.Writer) (Ceilings, error) {
	c := Ceilings{Conns: cfg.Conns, BareTime: cfg.Ceiling}
	if cfg.Ceiling > 0 {
		n, err := measureBare(ctx, cfg.Conns, cfg.Ceiling)
		if err != nil {
			return c, fmt.Errorf("drill: bare handler ceiling: %w", err)
		}
		c.Bare = n
		if progress != nil {
			fmt.Fprintf(progress, "drill: ceiling: bare net/http handler %.0f req/s (%d conns, %s)\n", n, cfg.Conns, cfg.Ceiling)
		}
	}
	if t.RedisAddr != "" {
		var err error
		if c.Redis, c.RedisHow, err = measureRedis(ctx, t.RedisAddr); err != nil {
			c.RedisHow = "not measured: " + err.Error()
		}
		if progress != nil {
			fmt.Fprintf(progress, "drill: ceiling: Redis SET NX PX %.0f/s (%s)\n", c.Redis, c.RedisHow)
		}
	}
	return c, nil
}

// bareBody is about the size of a 202's body.
var bareBody = []byte(`{"request_id":"123456789012345678","status":"queued","queue_position":12345,"estimated_wait_seconds":4.2}`)

// measureBare hammers a bare handler on loopback with conns goroutines of
// the drill's client for d and returns the answers per second.
func measureBare(ctx context.Context, conns int, d time.Duration) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(bareBody)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	c := &client{base: "http://" + ln.Addr().String(), hc: &http.Client{Transport: newTransport(conns)}, timeout: 5 * time.Second}
	defer c.hc.CloseIdleConnections()
	body := []byte(`{"event_id":"123456789012345678","seat_ids":["S01-A-1","S01-A-2"],"idempotency_key":"drill-r1"}`)
	// A warm-up (a fifth of d, at most a second) opens the connections
	// first: the drill's own connections are warm when the crowd comes.
	warm := min(d/5, time.Second)
	ctx, cancel := context.WithTimeout(ctx, warm+d)
	defer cancel()
	var (
		n       atomic.Int64
		wg      sync.WaitGroup
		counted atomic.Bool
	)
	for range conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				if a := c.once(ctx, http.MethodPost, "/bookings/reserve", "token", body, ""); a.Status == http.StatusAccepted && counted.Load() {
					n.Add(1)
				}
			}
		})
	}
	time.Sleep(warm)
	start := time.Now()
	counted.Store(true)
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

// redisBenchRE finds the rate in redis-benchmark's quiet output, e.g.
// "SET ...: 88028.17 requests per second, p50=0.279 msec".
var redisBenchRE = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?) requests per second`)

// redisBenchArgs is the reference measurement of docs/benchmarks.md:
// SET NX PX on random keys, 50 clients, unpipelined. The keys expire after
// a minute, so the drill leaves nothing behind in a shared Redis.
var redisBenchArgs = []string{"-q", "-n", "100000", "-c", "50", "-r", "100000",
	"SET", "boxoffice-drill:__rand_int__", "v", "NX", "PX", "60000"}

// measureRedis runs redis-benchmark against addr when it is on PATH, else
// the same SET NX PX from 50 goroutines of a Go client (rueidis, which
// pipelines concurrent calls by itself: not the same figure, and the
// report says so).
func measureRedis(ctx context.Context, addr string) (float64, string, error) {
	host, port, pass, cluster, err := redisHostPort(addr)
	if err != nil {
		return 0, "", err
	}
	if path, err := exec.LookPath("redis-benchmark"); err == nil {
		args := append([]string{"-h", host, "-p", port}, redisBenchArgs...)
		if cluster {
			args = append([]string{"--cluster"}, args...)
		}
		if pass != "" {
			args = append([]string{"-a", pass, "--no-auth-warning"}, args...)
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, args...).Output()
		if err != nil {
			return 0, "", fmt.Errorf("redis-benchmark: %w", err)
		}
		var rate float64
		for _, line := range strings.FieldsFunc(string(out), func(r rune) bool { return r == '\r' || r == '\n' }) {
			if m := redisBenchRE.FindStringSubmatch(line); m != nil {
				rate, _ = strconv.ParseFloat(m[1], 64)
			}
		}
		if rate == 0 {
			return 0, "", fmt.Errorf("redis-benchmark: no rate in %q", bytes.TrimSpace(out))
		}
		shown := append([]string{"redis-benchmark"}, redisBenchArgs...)
		return rate, strings.Join(shown, " "), nil
	}
	rate, err := goSetNX(ctx, addr, 100_000, 50)
	return rate, "redis-benchmark not on PATH: SET NX PX 60000 from 50 goroutines of a Go client (rueidis, auto-pipelined)", err
}

// redisHostPort takes the first node of a boxoffice Redis address
// ("redis://[user:pass@]host:port/db", "host:port", or a comma-separated
// cluster list).
func redisHostPort(addr string) (host, port, pass string, cluster bool, err error) {
	parts := strings.Split(addr, ",")
	first := strings.TrimSpace(parts[0])
	if !strings.Contains(first, "://") {
		first = "redis://" + first
	}
	u, err := url.Parse(first)
	if err != nil {
		return "", "", "", false, err
	}
	host, port = u.Hostname(), u.Port()
	if port == "" {
		port = "6379"
	}
	if p, ok := u.User.Password(); ok {
		pass = p
	}
	return host, port, pass, len(parts) > 1, nil
}

func goSetNX(ctx context.Context, addr string, ops, clients int) (float64, error) {
	rc, err := redis.Dial(addr)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1)
				if i > int64(ops) {
					return
				}
				cmd := rc.B().Set().Key("boxoffice-drill:" + strconv.FormatInt(i, 10)).Value("v").Nx().PxMilliseconds(60000).Build()
				// A nil reply is NX refusing an existing key: still an op.
				if err := rc.Do(ctx, cmd).Error(); err != nil && !rueidis.IsRedisNil(err) {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(ops) / time.Since(start).Seconds(), nil
}
