package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/layout"
	"github.com/boxoffice/boxoffice/seatmap"
)

// A store that is down or does not answer in time is a 503 with
// Retry-After and the unavailable problem, never a 500; what is shown
// never includes the cause.
func TestStoreFailuresAre503WithRetryAfter(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	tests := []struct {
		name string
		ctx  context.Context // the request's; nil for a live one
		err  error
	}{
		{"Unavailable", nil, boxoffice.Unavailable("database", fmt.Errorf("receive: %w", io.ErrUnexpectedEOF))},
		{"StoreDeadline", nil, fmt.Errorf("sold seats: %w", context.DeadlineExceeded)},
		{"StoreDeadlineAsInternal", nil, &boxoffice.Error{Code: boxoffice.EINTERNAL, Message: "internal error",
			Err: fmt.Errorf("query: %w", context.DeadlineExceeded)}},
		{"StoreContextCancelledByTheServer", nil, fmt.Errorf("query: %w", context.Canceled)},
		// A deadline on the request is the server's, not a client gone:
		// the client is still there and is told when to come back.
		{"RequestDeadline", expired, fmt.Errorf("query: %w", context.DeadlineExceeded)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/events/1/seats", nil)
			if tt.ctx != nil {
				req = req.WithContext(tt.ctx)
			}
			rec := httptest.NewRecorder()
			writeError(rec, req, slog.New(slog.DiscardHandler), tt.err)
			wantUnavailable(t, rec.Result(), rec.Body.String())
			for _, leak := range []string{"EOF", "deadline", "canceled", "query"} {
				if strings.Contains(rec.Body.String(), leak) {
					t.Errorf("the answer shows the cause (%q): %s", leak, rec.Body)
				}
			}
		})
	}
}

// An unknown error or a panic is a 500 that shows nothing of its cause.
func TestInternalErrorsShowNothing(t *testing.T) {
	const secret = "password=hunter2 host=10.1.2.3"
	for name, err := range map[string]error{
		"Unknown":          errors.New("pgx: " + secret),
		"InternalWithText": &boxoffice.Error{Code: boxoffice.EINTERNAL, Message: secret},
		"UnknownCode":      &boxoffice.Error{Code: "no_such_code", Message: secret},
	} {
		rec := httptest.NewRecorder()
		writeError(rec, httptest.NewRequest("GET", "/x", nil), slog.New(slog.DiscardHandler), err)
		if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "hunter2") {
			t.Errorf("%s: %d %s, want a 500 without the cause", name, rec.Code, rec.Body)
		}
	}
	s := &Server{log: slog.New(slog.DiscardHandler)}
	h := s.recoverer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(secret) }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "hunter2") ||
		rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Errorf("panic: %d %v %s, want a problem+json 500 without the cause", rec.Code, rec.Header(), rec.Body)
	}
}

// The seat map and the live streams answer a store outage as every other
// route does: 503, Retry-After, the unavailable problem. A stream already
// open says "unavailable" in an error event and keeps going.
func TestSeatMapAndStreamsUnavailable(t *testing.T) {
	lay := fakeLayout{layout.Of(&boxoffice.Event{ID: 1, Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 100, Rows: 1, SeatsPerRow: 1}}})}
	var storeErr atomic.Pointer[error]
	setErr := func(err error) { storeErr.Store(&err) }
	store := fakeSold{err: func() error { return *storeErr.Load() }}
	s := &Server{log: slog.New(slog.DiscardHandler), hub: newHub(),
		seats: seatmap.New(lay, store, inmem.NewHolds(nil), time.Second, nil)}
	read := func(context.Context) (any, bool, error) {
		if err := *storeErr.Load(); err != nil {
			return nil, false, err
		}
		return map[string]string{"status": "queued"}, false, nil
	}
	mux := http.NewServeMux()
	for _, rt := range []Route{
		{"GET", "/events/{event_id}/seats", public, s.getSeats},
		{"GET", "/events/{event_id}/availability", public, s.getAvailability},
		{"GET", "/queue/{request_id}/events", public, func(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
			return s.stream(w, r, u, 1, read)
		}},
	} {
		mux.Handle(rt.Method+" "+rt.Pattern, s.wrap(rt))
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for name, err := range map[string]error{
		"Unavailable":      boxoffice.Unavailable("database", io.ErrUnexpectedEOF), // postgres, after translate
		"DeadlineExceeded": fmt.Errorf("sold seats: %w", context.DeadlineExceeded), // a store that passes its context's end through
	} {
		setErr(err)
		for _, path := range []string{"/events/1/seats", "/events/1/availability", "/queue/1/events"} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Run(name+strings.ReplaceAll(path, "/", "_"), func(t *testing.T) { wantUnavailable(t, resp, string(body)) })
		}
	}

	// A stream that is open when the store fails: an error event with the
	// code, then the stream goes on.
	defer func(d time.Duration) { streamPoll = d }(streamPoll)
	streamPoll = 20 * time.Millisecond
	setErr(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/queue/1/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	setErr(boxoffice.Unavailable("the queue state", io.ErrUnexpectedEOF))
	var got strings.Builder
	buf := make([]byte, 512)
	for !strings.Contains(got.String(), "event: error") {
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("stream ended before an error event: %v; got %q", err, got.String())
		}
	}
	if !strings.Contains(got.String(), `"code":"unavailable"`) {
		t.Errorf("the stream's error event: %q, want code unavailable", got.String())
	}
}

func wantUnavailable(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503: %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After: %v", resp.Header)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p Problem
	if err := json.Unmarshal([]byte(body), &p); err != nil || p.Code != boxoffice.EUNAVAILABLE || p.Status != 503 {
		t.Errorf("problem %+v (%v), want code %s: %s", p, err, boxoffice.EUNAVAILABLE, body)
	}
}

type fakeLayout struct{ l *layout.Layout }

func (f fakeLayout) Layout(context.Context, boxoffice.ID) (*layout.Layout, error) { return f.l, nil }

type fakeSold struct{ err func() error }

func (f fakeSold) SoldSeats(context.Context, boxoffice.ID) ([]string, error) { return nil, f.err() }
func (f fakeSold) EventListings(context.Context, boxoffice.ID) ([]boxoffice.Listing, error) {
	return nil, f.err()
}
