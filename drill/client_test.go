package drill

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:8080/", "https://127.0.0.2:443", "http://127.0.0.1:8080/base"} {
		if err := CheckLoopback(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1:8080", "http://example.com", "http://192.168.1.5", "ftp://127.0.0.1", "127.0.0.1:8080", "", "http://127.0.0.1.example.com:80"} {
		if err := CheckLoopback(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestCallRetriesWithTheSameKey: a 503, then a timeout, then the answer:
// every attempt carries the same key and body, as the idempotency
// contract needs.
func TestCallRetriesWithTheSameKey(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []string
		keys   []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies, keys = append(bodies, string(b)), append(keys, r.Header.Get("Idempotency-Key"))
		n := len(bodies)
		mu.Unlock()
		switch n {
		case 1:
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"code":"unavailable"}`)
		case 2:
			time.Sleep(time.Second) // past the client's timeout
		default:
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"request_id":"7","status":"queued"}`)
		}
	}))
	defer srv.Close()
	c := &client{base: srv.URL, hc: srv.Client(), timeout: 400 * time.Millisecond, retries: 4}
	a := c.call(context.Background(), http.MethodPost, "/bookings/reserve", "tok", map[string]any{"idempotency_key": "k1"}, "k1")
	if a.Status != http.StatusAccepted || a.Tries < 3 {
		t.Fatalf("answer %s after %d tries, want 202 after at least 3", a.label(), a.Tries)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range bodies {
		if bodies[i] != bodies[0] || keys[i] != "k1" {
			t.Errorf("attempt %d: body %s key %q, want the first's", i+1, bodies[i], keys[i])
		}
	}
}

func TestCallDoesNotRetryAnAnswer(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"code":"seat_taken"}`)
	}))
	defer srv.Close()
	c := &client{base: srv.URL, hc: srv.Client(), timeout: time.Second, retries: 3}
	a := c.call(context.Background(), http.MethodPost, "/x", "", nil, "k")
	if a.label() != "409 seat_taken" || n != 1 {
		t.Errorf("%s after %d calls, want one 409 seat_taken", a.label(), n)
	}
}

func TestScanSSE(t *testing.T) {
	stream := "retry: 2000\n\nid: 1\nevent: status\ndata: {\"status\":\"queued\"}\n\n: heartbeat\n\nid: 2\nevent: status\ndata: {\"status\":\"held\"}\n\nid: 3\ndata: {\"status\":\"late\"}\n\n"
	var got []string
	err := scanSSE(strings.NewReader(stream), func(data []byte) bool {
		got = append(got, string(data))
		return !strings.Contains(string(data), "held")
	})
	if err != nil || len(got) != 2 || got[1] != `{"status":"held"}` {
		t.Errorf("events %q, %v; want two, ending at held", got, err)
	}
}
