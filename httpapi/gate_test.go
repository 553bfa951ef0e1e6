package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// blockingEvents is a UseCases whose Event calls wait until released,
// telling entered of each call as it comes in.
type blockingEvents struct {
	UseCases
	entered chan boxoffice.ID
	release chan struct{}
}

func (b *blockingEvents) Event(ctx context.Context, id boxoffice.ID) (*boxoffice.Event, error) {
	b.entered <- id
	<-b.release
	return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no event %d", id)
}

// With InFlight set, no more requests than it are in the handlers at once;
// the others enter in the order they came as places free up, and health
// probes are answered meanwhile.
func TestInFlightBound(t *testing.T) {
	uc := &blockingEvents{entered: make(chan boxoffice.ID, 16), release: make(chan struct{})}
	s := New(uc, nil, nil, slog.New(slog.DiscardHandler))
	s.SetLimits(Limits{InFlight: 2})
	srv := httptest.NewServer(s)
	defer srv.Close()
	var wg sync.WaitGroup
	defer func() { close(uc.release); wg.Wait() }() // before the server closes
	get := func(id int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(fmt.Sprintf("%s/events/%d", srv.URL, id))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("event %d: %d", id, resp.StatusCode)
			}
		}()
	}
	// Two requests fill the handlers; each later one is sent once the one
	// before it waits at the bound.
	get(1)
	get(2)
	in := map[boxoffice.ID]bool{<-uc.entered: true, <-uc.entered: true}
	if !in[1] || !in[2] {
		t.Fatalf("first in: %v", in)
	}
	for id := 3; id <= 5; id++ {
		get(id)
		uc.waitQueued(t, s, id-2)
	}
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz with the handlers full: %d", resp.StatusCode)
	}
	select {
	case id := <-uc.entered:
		t.Fatalf("event %d entered past the bound", id)
	default:
	}
	for want := boxoffice.ID(3); want <= 5; want++ {
		uc.release <- struct{}{}
		if got := <-uc.entered; got != want {
			t.Errorf("entered %d, want %d (arrival order)", got, want)
		}
	}
}

// waitQueued waits until n requests wait at s's bound, and fails the test
// if one enters the handlers instead.
func (b *blockingEvents) waitQueued(t *testing.T, s *Server, n int) {
	t.Helper()
	for s.Waiting() < n {
		select {
		case id := <-b.entered:
			t.Fatalf("event %d entered past the bound", id)
		case <-time.After(time.Millisecond): // bounded by the test binary's timeout
		}
	}
}
