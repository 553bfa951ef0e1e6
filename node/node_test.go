package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/auth"
	"github.com/boxoffice/boxoffice/node"
)

// TestEmbeddedNode builds the embedded default from options alone, as
// serve does, and drives it over HTTP: an event, a reserve and a pay, the
// browser UI, the metrics behind an organiser's token; then stops it and
// opens the same data again, where the booking is still there.
func TestEmbeddedNode(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, n, base, stop := serveNode(t, node.Options{Data: dir, Metrics: true, API: true, Workers: 1, Upkeep: true})
	if n.Parts().Queue == nil || n.Parts().RequestLog == nil {
		t.Fatal("the embedded node has no queue")
	}
	if n.Parts().QueuePurge == nil {
		t.Error("the embedded node's queue is never purged: its requests would pile up")
	}
	admin, _ := a.Issue("organiser", boxoffice.RoleAdmin, time.Hour)
	fan, _ := a.Issue("fan-1", "", time.Hour)
	ev := newEvent(t, base, admin, "direct", 2)
	var res struct {
		BookingID boxoffice.ID `json:"booking_id"`
	}
	call(t, "POST", base+"/bookings/reserve", fan, "k1", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-1"}}, http.StatusCreated, &res)
	call(t, "POST", base+"/bookings/"+res.BookingID.String()+"/confirm", fan, "k2", map[string]any{"payment_token": "tok_visa"}, http.StatusOK, nil)

	if code := get(t, base+"/app/", ""); code != http.StatusOK {
		t.Errorf("GET /app/: %d, want the browser UI", code)
	}
	if code := get(t, base+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without a token: %d, want 401", code)
	}
	if code := get(t, base+"/metrics", admin); code != http.StatusOK {
		t.Errorf("GET /metrics with an organiser's token: %d, want 200", code)
	}
	stop()

	// The same data directory again: the booking is there, confirmed.
	n2, err := node.New(ctx, node.Options{Data: dir, Auth: a})
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	b, err := n2.Parts().Store.Booking(ctx, res.BookingID)
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != boxoffice.BookingConfirmed {
		t.Errorf("booking after restart: %s, want confirmed", b.Status)
	}
}

// newEvent creates an event on sale now (sale mode direct or queued) of
// one section A of rows rows of 5 seats, and returns its id.
func newEvent(t *testing.T, base, admin, mode string, rows int) boxoffice.ID {
	t.Helper()
	var ev struct {
		ID boxoffice.ID `json:"event_id"`
	}
	call(t, "POST", base+"/events", admin, "", map[string]any{
		"name": "Node test, " + mode, "venue": "Hall", "starts_at": time.Now().Add(48 * time.Hour).Format(time.RFC3339),
		"sale_opens_at": time.Now().Add(-time.Minute).Format(time.RFC3339), "sale_mode": mode,
		"sections": []map[string]any{{"name": "A", "price_tier": "std", "price_cents": 1000, "rows": rows, "seats_per_row": 5}},
	}, http.StatusCreated, &ev)
	return ev.ID
}

// serveNode builds a node from o (with a test authenticator) and serves it
// on a loopback port until stop, which also closes it (and is called at
// the test's end if the test does not).
func serveNode(t *testing.T, o node.Options) (a *auth.Authenticator, n *node.Node, base string, stop func()) {
	t.Helper()
	a, err := auth.New([]byte("node-test-secret-node-test-secret-0123"), nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Auth = a
	n, err = node.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.Close()
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- n.Serve(sctx, ln, 5*time.Second) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("serve: %v", err)
			}
			n.Close()
		})
	}
	t.Cleanup(stop)
	return a, n, "http://" + ln.Addr().String(), stop
}

// TestOptionsRefused: options that cannot make a node are refused before
// anything is opened.
func TestOptionsRefused(t *testing.T) {
	a, err := auth.New([]byte("node-test-secret-node-test-secret-0123"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]node.Options{
		"no authenticator":       {Data: t.TempDir()},
		"no store":               {Auth: a},
		"kafka without redis":    {Auth: a, Postgres: "postgres://nowhere/x", Kafka: "127.0.0.1:1"},
		"kafka without postgres": {Auth: a, Data: t.TempDir(), Redis: "127.0.0.1:1", Kafka: "127.0.0.1:1"},
		"too many queue slots":   {Auth: a, Data: t.TempDir(), QueueSlots: 65},
	} {
		if n, err := node.New(context.Background(), o); err == nil {
			n.Close()
			t.Errorf("%s: no error", name)
		}
	}
}

func call(t *testing.T, method, url, tok, key string, body any, want int, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, strings.TrimSpace(string(got)), want)
	}
	if out != nil {
		if err := json.Unmarshal(got, out); err != nil {
			t.Fatal(err)
		}
	}
}

func get(t *testing.T, url, tok string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
