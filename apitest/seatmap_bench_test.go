package apitest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/redis"
	"github.com/boxoffice/boxoffice/sale"
)

// The 70,000-seat seat map (35 sections of 40 rows of 50), as the seed's
// arena: served from the cache against the same bytes from a bare handler,
// and the cost of one rebuild on each store. Run:
//
//	go test ./apitest -run '^$' -bench 'SeatMap70k' -benchtime 3s

func bigEvent(tb testing.TB, s *Stack) (string, boxoffice.ID) {
	var secs []section
	for i := range 35 {
		secs = append(secs, section{fmt.Sprintf("S%02d", i), "t" + strconv.Itoa(i%4), 5000 + int64(i%4)*2500, 40, 50})
	}
	ev := s.newEvent(tb, eventBody(s, secs...))
	id, err := boxoffice.ParseID(ev)
	if err != nil {
		tb.Fatal(err)
	}
	return ev, id
}

// fill sells sold seats and holds held ones (spread over the sections), so
// the map is not one long run of "available".
func fill(tb testing.TB, s *Stack, id boxoffice.ID, sold, held int) {
	l, err := s.Service.Layout(ctx, id)
	if err != nil {
		tb.Fatal(err)
	}
	step := l.Len() / (sold + held)
	for n := 0; n*8 < sold+held; n++ {
		var ids []string
		for k := range 8 {
			ids = append(ids, l.ID((n*8+k)*step))
		}
		u := boxoffice.User{ID: "filler-" + strconv.Itoa(n)}
		res, err := s.Service.Reserve(ctx, u, sale.ReserveRequest{EventID: id, SeatIDs: ids, IdempotencyKey: "fill"})
		if err != nil {
			tb.Fatal(err)
		}
		if n*8 < sold {
			if _, err := s.Service.Confirm(ctx, u, sale.ConfirmRequest{BookingID: res.BookingID, PaymentToken: "tok_visa", IdempotencyKey: "fill-pay"}); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

func BenchmarkSeatMap70k(b *testing.B) {
	s := benchStack(b)
	ev, id := bigEvent(b, s)
	fill(b, s, id, 4000, 2000)
	snap, err := s.Seats.Get(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("70,000 seats: JSON %d bytes, gzip %d bytes, compact %d bytes", len(snap.JSON), len(snap.Gzip), len(snap.Compact))
	// The same bytes and headers, from a handler that does nothing else.
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Encoding", "gzip")
		h.Set("Cache-Control", "public, max-age=10")
		h.Set("ETag", snap.ETag)
		h.Set("Content-Length", strconv.Itoa(len(snap.Gzip)))
		_, _ = w.Write(snap.Gzip)
	}))
	b.Cleanup(bare.Close)
	for _, tc := range []struct{ name, url string }{
		{"Bare", bare.URL + "/events/" + ev + "/seats"},
		{"Cached", s.URL + "/events/" + ev + "/seats"},
		{"Compact", s.URL + "/events/" + ev + "/availability"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			hc := benchClient()
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("GET", tc.url, nil)
					req.Header.Set("Accept-Encoding", "gzip")
					resp, err := hc.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					n, _ := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || n == 0 {
						b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// BenchmarkSeatMap70kRebuild is one full rebuild: the layout, the sold
// seats from the store, the holds of all 70,000 seats in one batched read,
// the JSON, its gzip and the compact view.
func BenchmarkSeatMap70kRebuild(b *testing.B) {
	run := func(b *testing.B, s *Stack) {
		_, id := bigEvent(b, s)
		fill(b, s, id, 4000, 2000)
		b.ResetTimer()
		for b.Loop() {
			if _, err := s.Seats.Build(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/rebuild")
	}
	b.Run("Embedded", func(b *testing.B) { run(b, benchStack(b)) })
	b.Run("Production", func(b *testing.B) {
		admin, pgURL, client := benchServers(b)
		prefix := redisPrefix(b, client, "apitest-bench:")
		store := openSchemaStore(b, admin, pgURL, "apibench_")
		run(b, NewStack(b, Parts{Store: store, Holds: redis.NewHolds(client, prefix), Leases: redis.NewLeases(client, prefix), HoldTTL: 5 * time.Minute}))
	})
}

// benchServers connects to the machine's PostgreSQL and Redis for the
// production benchmarks, or skips.
func benchServers(b *testing.B) (admin *pgx.Conn, pgURL string, client rueidis.Client) {
	pgURL = envOr("BOXOFFICE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	admin, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		b.Skip("PostgreSQL unreachable:", err)
	}
	b.Cleanup(func() { admin.Close(ctx) })
	client, err = redis.Dial(envOr("BOXOFFICE_TEST_REDIS", "redis://127.0.0.1:6379/0"))
	if err != nil {
		b.Skip("Redis unreachable:", err)
	}
	b.Cleanup(client.Close)
	return admin, pgURL, client
}
