package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/auth"
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// productionEnv gives a test its own PostgreSQL schema on the machine's
// server, or skips (fails when CI=true) if it is unreachable.
func productionEnv(t *testing.T) (pgURL, redisURL string, db *pgx.Conn) {
	t.Helper()
	base := envOr("BOXOFFICE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	redisURL = envOr("BOXOFFICE_TEST_REDIS", "redis://127.0.0.1:6379/0")
	ctx := context.Background()
	db, err := pgx.Connect(ctx, base)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL unreachable and CI=true: %v", err)
		}
		t.Skipf("PostgreSQL unreachable: %v", err)
	}
	schema := fmt.Sprintf("mp_%d", time.Now().UnixNano())
	if _, err := db.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		db.Close(context.Background())
	})
	if _, err := db.Exec(ctx, "SET search_path TO "+schema); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), redisURL, db
}

// TestThreeProcessesSellEachSeatOnce runs three boxoffice processes on one
// PostgreSQL and one Redis, storms a few hot seats through all three, and
// audits the database: no seat has two valid tickets, every 200 confirm has
// its tickets, and the processes took distinct Snowflake node ids.
func TestThreeProcessesSellEachSeatOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	pgURL, redisURL, db := productionEnv(t)
	secret := strings.Repeat("m", 40)
	env := []string{"BOXOFFICE_AUTH_SECRET=" + secret}
	args := []string{"--postgres", pgURL, "--redis", redisURL}
	first := startServerEnv(t, t.TempDir(), env, args...)
	servers := []*server{first,
		startServerEnv(t, t.TempDir(), env, append(args, "--demo=true")...),
		startServerEnv(t, t.TempDir(), env, append(args, "--demo=true")...)}
	for _, s := range servers[1:] {
		if s.event != first.event {
			t.Fatalf("processes see different demo events: %s and %s", first.event, s.event)
		}
	}
	a, _ := auth.New([]byte(secret), nil)
	// One booking through each process, so each node id shows in the table.
	probe, _ := a.Issue("node-probe", "", time.Hour)
	for i, s := range servers {
		if st, b := s.call(t, "POST", "/bookings/reserve", probe, map[string]any{"event_id": first.event, "seat_ids": []string{fmt.Sprintf("U212-A-%d", i+1)}, "idempotency_key": fmt.Sprintf("probe-%d", i)}); st != 201 {
			t.Fatalf("probe reserve on process %d: %d %s", i, st, b)
		}
	}
	hot := []string{"Floor-A-1", "Floor-A-2", "Floor-A-3", "Floor-A-4", "BoxA-A-1", "BoxA-A-2"}
	var mu sync.Mutex
	confirmed := map[string]int{} // booking → seats
	var wg sync.WaitGroup
	for u := range 30 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(u), 3))
			tok, _ := a.Issue(fmt.Sprintf("mp-%d", u), "", time.Hour)
			for i := range 8 {
				s := servers[rng.IntN(len(servers))]
				perm := rng.Perm(len(hot))
				seats := []string{hot[perm[0]], hot[perm[1]]}[:1+rng.IntN(2)]
				st, b := s.call(t, "POST", "/bookings/reserve", tok, map[string]any{"event_id": first.event, "seat_ids": seats, "idempotency_key": fmt.Sprintf("r%d-%d", u, i)})
				if st != 201 {
					if st != 409 && st != 422 {
						t.Errorf("reserve: %d %s", st, b)
					}
					continue
				}
				var r struct {
					BookingID string `json:"booking_id"`
				}
				_ = json.Unmarshal(b, &r)
				// Confirm through another process than the one that reserved.
				other := servers[rng.IntN(len(servers))]
				st, b = other.call(t, "POST", "/bookings/"+r.BookingID+"/confirm", tok, map[string]any{"payment_token": "tok_visa"}, "Idempotency-Key", fmt.Sprintf("c%d-%d", u, i))
				switch {
				case st == 200:
					mu.Lock()
					confirmed[r.BookingID] = len(seats)
					mu.Unlock()
				case st >= 500:
					t.Errorf("confirm: %d %s", st, b)
				default:
					other.call(t, "DELETE", "/bookings/"+r.BookingID, tok, nil)
				}
				if rng.IntN(2) == 0 {
					other.call(t, "DELETE", "/bookings/"+r.BookingID, tok, nil)
				}
			}
		})
	}
	wg.Wait()
	ctx := context.Background()
	var dups int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM (SELECT seat_id FROM tickets WHERE status = 'valid' GROUP BY event_id, seat_id HAVING count(*) > 1) d`).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if dups != 0 {
		t.Fatalf("%d seats have two valid tickets", dups)
	}
	want := 0
	for _, n := range confirmed {
		want += n
	}
	var got int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM tickets WHERE status = 'valid'`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != want || got == 0 {
		t.Errorf("%d valid tickets, confirms answered 200 for %d seats", got, want)
	}
	nodes := map[int64]bool{}
	rows, err := db.Query(ctx, `SELECT id FROM bookings`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		nodes[id>>12&1023] = true
	}
	t.Logf("valid tickets %d, confirmed seats %d, bookings on %d node ids", got, want, len(nodes))
	if len(nodes) != 3 {
		t.Errorf("bookings carry %d distinct node ids across three processes, want 3", len(nodes))
	}
}
