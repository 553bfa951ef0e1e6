package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/auth"
)

// queueClient drives the queue of a running server.
type queueClient struct {
	t      *testing.T
	tokens map[string]string
	issue  func(user string) string
}

func (q *queueClient) token(user string) string {
	if tok, ok := q.tokens[user]; ok {
		return tok
	}
	tok := q.issue(user)
	q.tokens[user] = tok
	return tok
}

type ticket struct {
	RequestID string `json:"request_id"`
	Status    string `json:"status"`
	Position  int64  `json:"queue_position"`
	Reason    string `json:"reason"`
	BookingID string `json:"booking_id"`
}

type queued struct {
	user  string
	seats []string
	t     ticket
}

// createQueuedEvent makes a queued event of rows x 20 seats in section Q.
func createQueuedEvent(t *testing.T, s *server, adminTok string, rows int) string {
	t.Helper()
	now := time.Now().UTC()
	st, b := s.call(t, "POST", "/events", adminTok, map[string]any{
		"name": "Flash", "venue": "Hall", "sale_mode": "queued",
		"starts_at": now.Add(48 * time.Hour).Format(time.RFC3339), "sale_opens_at": now.Add(-time.Minute).Format(time.RFC3339),
		"sections": []map[string]any{{"name": "Q", "price_tier": "t", "price_cents": 1000, "rows": rows, "seats_per_row": 20}},
	})
	if st != http.StatusCreated {
		t.Fatalf("create event: %d %s", st, b)
	}
	var e struct {
		ID string `json:"event_id"`
	}
	_ = json.Unmarshal(b, &e)
	return e.ID
}

// flood sends n queued requests from n users, 1-3 adjacent seats each.
func flood(t *testing.T, s *server, q *queueClient, event string, n, seats int) []queued {
	t.Helper()
	out := make([]queued, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		user := fmt.Sprintf("crowd-%d", i)
		tok := q.token(user)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			start := (i * 7) % (seats - 3)
			var want []string
			for k := range 1 + i%3 {
				want = append(want, fmt.Sprintf("Q-%s-%d", rowLabel(1+(start+k)/20), 1+(start+k)%20))
			}
			st, b := s.call(t, "POST", "/bookings/reserve", tok, map[string]any{"event_id": event, "seat_ids": want, "idempotency_key": "k"})
			if st != http.StatusAccepted {
				t.Errorf("queued reserve: %d %s", st, b)
				return
			}
			var tk ticket
			_ = json.Unmarshal(b, &tk)
			out[i] = queued{user, want, tk}
		})
	}
	wg.Wait()
	return out
}

func rowLabel(n int) string { // boxoffice.RowLabel for the rows used here
	return string(rune('A' + n - 1))
}

// audit waits for every request's outcome and checks the invariants: a
// permutation of positions, no seat held by two requests, every held
// request with its booking.
func audit(t *testing.T, s *server, q *queueClient, reqs []queued, seats int) {
	t.Helper()
	positions := make([]int64, 0, len(reqs))
	owner := map[string]string{}
	held := 0
	for _, r := range reqs {
		positions = append(positions, r.t.Position)
		var tk ticket
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			st, b := s.call(t, "GET", "/queue/"+r.t.RequestID, q.token(r.user), nil)
			if st != http.StatusOK {
				t.Fatalf("status of %s: %d %s", r.t.RequestID, st, b)
			}
			_ = json.Unmarshal(b, &tk)
			if tk.Status == "held" || tk.Status == "rejected" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("request %s never reached an outcome (%s): lost", r.t.RequestID, tk.Status)
			}
		}
		if tk.Status == "held" {
			held++
			for _, seat := range r.seats {
				if prev, dup := owner[seat]; dup {
					t.Fatalf("seat %s held by %s and %s", seat, prev, r.t.RequestID)
				}
				owner[seat] = r.t.RequestID
			}
			st, b := s.call(t, "GET", "/bookings/"+tk.BookingID, q.token(r.user), nil)
			if st != http.StatusOK || tk.BookingID != r.t.RequestID {
				t.Fatalf("booking of held %s: %d %s", r.t.RequestID, st, b)
			}
		} else if tk.Reason != "seat_taken" {
			t.Errorf("rejected for %q", tk.Reason)
		}
	}
	slices.Sort(positions)
	for i, p := range positions {
		if p != int64(i+1) {
			t.Fatalf("positions not a permutation: sorted[%d] = %d", i, p)
		}
	}
	if len(owner) > seats || held == 0 {
		t.Fatalf("%d seats held of %d by %d requests", len(owner), seats, held)
	}
	t.Logf("%d requests: %d held (%d seats of %d), the rest rejected", len(reqs), held, len(owner), seats)
}

// TestEmbeddedQueueSurvivesKillNine: every 202 of the embedded queue
// survives kill -9, before and during the drain, and nothing is doubled.
func TestEmbeddedQueueSurvivesKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	s := startServer(t, dir, "--workers", "0")
	a, err := authenticator("", dir, auth.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := &queueClient{t: t, tokens: map[string]string{}, issue: func(u string) string { tok, _ := a.Issue(u, "", time.Hour); return tok }}
	const rows = 10
	ev := createQueuedEvent(t, s, s.admin, rows)
	reqs := flood(t, s, q, ev, 800, rows*20)

	kill := func(s *server) {
		if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-s.done
	}
	kill(s) // 800 accepted, none served
	s = startServer(t, dir, "--workers", "1")
	time.Sleep(150 * time.Millisecond) // mid-drain
	kill(s)
	s = startServer(t, dir, "--workers", "2")
	audit(t, s, q, reqs, rows*20)
}

// TestHoldsSurviveKillNine: the embedded hold table is in memory; after
// kill -9 the process gives the pending bookings their holds back, so
// another user cannot take a held seat and the holder can still pay.
func TestHoldsSurviveKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	s := startServer(t, dir)
	a, err := authenticator("", dir, auth.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := a.Issue("first", "", time.Hour)
	second, _ := a.Issue("second", "", time.Hour)
	st, b := s.call(t, "POST", "/bookings/reserve", first, map[string]any{"event_id": s.event, "seat_ids": []string{"Floor-C-7"}, "idempotency_key": "h1"})
	if st != http.StatusCreated {
		t.Fatalf("reserve: %d %s", st, b)
	}
	var r struct {
		BookingID string `json:"booking_id"`
	}
	_ = json.Unmarshal(b, &r)
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.done
	s = startServer(t, dir)
	if st, b := s.call(t, "POST", "/bookings/reserve", second, map[string]any{"event_id": s.event, "seat_ids": []string{"Floor-C-7"}, "idempotency_key": "h2"}); st != http.StatusConflict {
		t.Fatalf("another user on a seat held before the crash: %d %s, want 409", st, b)
	}
	if st, b := s.call(t, "POST", "/bookings/"+r.BookingID+"/confirm", first, map[string]any{"payment_token": "tok_visa"}, "Idempotency-Key", "p1"); st != http.StatusOK {
		t.Fatalf("the holder's confirm after the crash: %d %s", st, b)
	}
}
