package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/redis"
	"github.com/boxoffice/boxoffice/snowflake"
	"github.com/boxoffice/boxoffice/sqlite"
)

// The HTTP benchmarks share one client set-up so that their ratios compare
// the server side only. Run them together:
//
//	go test ./apitest -run '^$' -bench 'Bare|Reserve|SeatMap' -benchtime 3s

// benchParallelism is b.SetParallelism's argument for the HTTP benchmarks:
// 16 goroutines per core (32 in flight on two cores) unless
// BOXOFFICE_BENCH_PARALLELISM says otherwise; a flash sale has thousands of
// requests in flight, so the queue's front door is also measured at 128
// (256 in flight), the bare handler beside it.
func benchParallelism() int {
	if n, err := strconv.Atoi(os.Getenv("BOXOFFICE_BENCH_PARALLELISM")); err == nil && n > 0 {
		return n
	}
	return 16
}

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 512}}
}

// postReserve sends one reserve of seat of event ev, as the user of token.
func postReserve(b *testing.B, hc *http.Client, s *Stack, token, ev, seat string) *http.Response {
	body := fmt.Sprintf(`{"event_id":"%s","seat_ids":["%s"],"idempotency_key":"k"}`, ev, seat)
	req, _ := http.NewRequest("POST", s.URL+"/bookings/reserve", bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	return resp
}

func benchDo(b *testing.B, hc *http.Client, req *http.Request, want int) {
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("status %d, want %d", resp.StatusCode, want)
	}
}

// BenchmarkBareHandler is the machine's ceiling: a net/http handler that
// writes a 100-byte JSON answer to a POST, through the same client.
func BenchmarkBareHandler(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 84)
	answer := []byte(`{"booking_id":"1","held_until":"2026-01-01T00:00:00Z","payment_url":"/b/1/confirm","pad":"` + string(body[:10]) + `"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = w.Write(answer)
	}))
	defer srv.Close()
	hc := benchClient()
	b.SetParallelism(benchParallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", srv.URL+"/bookings/reserve", bytes.NewReader(body))
			benchDo(b, hc, req, 201)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func benchStack(b *testing.B) *Stack {
	store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	q := store.Queue()
	return NewStack(b, Parts{Store: store, Holds: inmem.NewHolds(nil), Leases: inmem.NewLeases(nil), Queue: q, Log: q})
}

// BenchmarkReserveHTTP is the whole direct-sale reserve on the embedded
// default: auth, decode, idempotency look-up and lease, the all-or-nothing
// hold, the booking and its idempotency record written in one SQLite
// transaction. Every op holds a fresh seat for a fresh-enough user.
func BenchmarkReserveHTTP(b *testing.B) {
	s := benchStack(b)
	const perEvent = 20_000
	nEvents := b.N/perEvent + 1
	events := make([]string, nEvents)
	for i := range events {
		events[i] = s.newEvent(b, eventBody(s, section{"S", "t", 1000, 20, 1000}))
	}
	tokens := make([]string, b.N/8+1)
	for i := range tokens {
		tokens[i] = s.Token(b, fmt.Sprintf("bench-%d", i), "")
	}
	hc := benchClient()
	var seq atomic.Int64
	b.SetParallelism(benchParallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1) - 1
			ev := events[i/perEvent]
			n := i % perEvent
			seat := boxoffice.SeatID("S", boxoffice.RowLabel(int(n/1000)+1), int(n%1000)+1)
			body := fmt.Sprintf(`{"event_id":"%s","seat_ids":["%s"],"idempotency_key":"k%d"}`, ev, seat, i)
			req, _ := http.NewRequest("POST", s.URL+"/bookings/reserve", bytes.NewBufferString(body))
			req.Header.Set("Authorization", "Bearer "+tokens[i/8])
			benchDo(b, hc, req, 201)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkSeatMapGET serves the cached seat map of a 24,000-seat event
// (the demo arena's size), gzipped, as a CDN miss would fetch it.
func BenchmarkSeatMapGET(b *testing.B) {
	s := benchStack(b)
	var secs []section
	for i := range 20 {
		secs = append(secs, section{fmt.Sprintf("S%d", i), "t", 1000, 30, 40})
	}
	ev := s.newEvent(b, eventBody(s, secs...))
	hc := benchClient()
	get := func() *http.Request {
		req, _ := http.NewRequest("GET", s.URL+"/events/"+ev+"/seats", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		return req
	}
	benchDo(b, hc, get(), 200) // build the snapshot
	b.SetParallelism(benchParallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			benchDo(b, hc, get(), 200)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkReserve is the direct-sale reserve over HTTP, embedded and in
// the production shape (PostgreSQL with a pool of 32, Redis holds and
// leases), at low contention (Random: a different seat of a 70,000-seat
// event per request) and at flash-sale contention (Hot: every request on
// one of 10 seats, so all but the first ten are refused with 409), each
// request from a fresh user; and ForUpdate, the production shape with
// seats held by row locks in PostgreSQL instead of Redis. Run beside the
// bare handler, 64 in flight:
//
//	BOXOFFICE_BENCH_PARALLELISM=32 go test ./apitest -run '^$' -bench 'BareHandler|Reserve/' -benchtime 20000x
func BenchmarkReserve(b *testing.B) {
	shapes := []struct {
		name  string
		stack func(b *testing.B) *Stack
	}{
		{"Embedded", benchStack},
		{"Production", productionBenchStack},
		// Production over two shards (postgres.Sharded, two schemas of the
		// same server, 16 connections each): what routing by event and id
		// and the idempotency look-up on every shard cost a reserve.
		{"Sharded", func(b *testing.B) *Stack {
			admin, pgURL, client := benchServers(b)
			prefix := redisPrefix(b, client, "apitest-bench:")
			var stores []*postgres.Store
			for range 2 {
				stores = append(stores, openSchemaStore(b, admin, withQuery(b, pgURL, "pool_max_conns", "16"), "reservebench_"))
			}
			sh, err := postgres.NewSharded(ctx, stores, postgres.ShardedConfig{})
			if err != nil {
				b.Fatal(err)
			}
			gen, err := snowflake.New(int(time.Now().UnixNano()%postgres.ShardNodes), nil)
			if err != nil {
				b.Fatal(err)
			}
			return NewStack(b, Parts{Store: sh, IDs: postgres.ShardedIDs{IDs: gen, Store: sh},
				Holds: redis.NewHolds(client, prefix), Leases: redis.NewLeases(client, prefix), HoldTTL: 10 * time.Minute})
		}},
		// The same reserve with the lock layer in PostgreSQL: the seats'
		// rows locked with SELECT ... FOR UPDATE (postgres.Holds), the
		// classic pessimistic strategy, everything else as Production.
		{"ForUpdate", func(b *testing.B) *Stack {
			admin, pgURL, client := benchServers(b)
			prefix := redisPrefix(b, client, "apitest-bench:")
			store := openSchemaStore(b, admin, withQuery(b, pgURL, "pool_max_conns", "32"), "reservebench_")
			return NewStack(b, Parts{Store: store, Holds: store.Holds(), Leases: redis.NewLeases(client, prefix),
				HoldTTL: 10 * time.Minute})
		}},
	}
	for _, shape := range shapes {
		for _, load := range []string{"Random", "Hot"} {
			b.Run(shape.name+"/"+load, func(b *testing.B) { runReserveBench(b, shape.stack(b), load) })
		}
	}
}

// productionBenchStack is the production shape of the HTTP benchmarks:
// PostgreSQL with a pool of 32, Redis holds and leases.
func productionBenchStack(b *testing.B) *Stack {
	admin, pgURL, client := benchServers(b)
	prefix := redisPrefix(b, client, "apitest-bench:")
	store := openSchemaStore(b, admin, withQuery(b, pgURL, "pool_max_conns", "32"), "reservebench_")
	return NewStack(b, Parts{Store: store, Holds: redis.NewHolds(client, prefix), Leases: redis.NewLeases(client, prefix),
		HoldTTL: 10 * time.Minute})
}

func runReserveBench(b *testing.B, s *Stack, load string) {
	ev := s.newEvent(b, eventBody(s, section{"S", "t", 1000, 70, 1000}))
	tokens := make([]string, b.N)
	for i := range tokens {
		tokens[i] = s.Token(b, fmt.Sprintf("reserve-bench-%d", i), "")
	}
	hc := benchClient()
	var seq, granted atomic.Int64
	b.SetParallelism(benchParallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1) - 1
			n := (i * 7919) % 70_000 // a permutation: no seat asked twice
			if load == "Hot" {
				n = i % 10
			}
			seat := boxoffice.SeatID("S", boxoffice.RowLabel(int(n/1000)+1), int(n%1000)+1)
			resp := postReserve(b, hc, s, tokens[i], ev, seat)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusCreated:
				granted.Add(1)
			case http.StatusConflict:
			default:
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(granted.Load())/b.Elapsed().Seconds(), "holds/s")
}

// withQuery sets a query parameter of a URL.
func withQuery(tb testing.TB, u, key, value string) string {
	tb.Helper()
	p, err := url.Parse(u)
	if err != nil {
		tb.Fatal(err)
	}
	q := p.Query()
	q.Set(key, value)
	p.RawQuery = q.Encode()
	return p.String()
}

// BenchmarkConfirm is the payment confirm over HTTP, embedded and in the
// production shape: each op pays for a pending booking of its own (one
// seat, a fresh user), reserved before the timer starts. Besides the rate
// it reports the round trip's median and 99th percentile, which a confirm
// feels through every sequential call to the stores. Run beside the bare
// handler, 64 in flight:
//
//	BOXOFFICE_BENCH_PARALLELISM=32 go test ./apitest -run '^$' -bench 'BareHandler|Confirm/' -benchtime 20000x
func BenchmarkConfirm(b *testing.B) {
	b.Run("Embedded", func(b *testing.B) { runConfirmBench(b, benchStack(b)) })
	b.Run("Production", func(b *testing.B) { runConfirmBench(b, productionBenchStack(b)) })
}

func runConfirmBench(b *testing.B, s *Stack) {
	ev := s.newEvent(b, eventBody(s, section{"S", "t", 1000, 70, 1000}))
	if b.N > 70_000 {
		b.Fatalf("at most 70,000 confirms (one per seat), not %d", b.N)
	}
	tokens, bookings := make([]string, b.N), make([]string, b.N)
	hc := benchClient()
	var seq atomic.Int64
	reserve := func() {
		for i := seq.Add(1) - 1; i < int64(b.N); i = seq.Add(1) - 1 {
			tokens[i] = s.Token(b, fmt.Sprintf("confirm-bench-%d", i), "")
			seat := boxoffice.SeatID("S", boxoffice.RowLabel(int(i/1000)+1), int(i%1000)+1)
			resp := postReserve(b, hc, s, tokens[i], ev, seat)
			var res struct {
				BookingID string `json:"booking_id"`
			}
			err := json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || err != nil {
				b.Errorf("reserve: status %d, %v", resp.StatusCode, err)
				return
			}
			bookings[i] = res.BookingID
		}
	}
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(reserve)
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}

	took := make([]time.Duration, b.N)
	seq.Store(0)
	b.SetParallelism(benchParallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1) - 1
			body := fmt.Sprintf(`{"payment_token":"tok_visa","idempotency_key":"c%d"}`, i)
			req, _ := http.NewRequest("POST", s.URL+"/bookings/"+bookings[i]+"/confirm", bytes.NewBufferString(body))
			req.Header.Set("Authorization", "Bearer "+tokens[i])
			start := time.Now()
			benchDo(b, hc, req, http.StatusOK)
			took[i] = time.Since(start)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
