package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sale"
)

// queued answers a request the flash-sale queue took: 202 with its ticket.
func (s *Server) queued(w http.ResponseWriter, t *sale.QueueTicket) error {
	if t.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", t.StatusURL)
	w.Header().Set("Cache-Control", "private, no-store")
	qt := queueTicketOf(t)
	writeQueueTicket(w, http.StatusAccepted, &qt)
	return nil
}

func (s *Server) queueStatus(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "request_id")
	if err != nil {
		return err
	}
	t, err := s.svc.QueueStatus(r.Context(), u, id)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "private, no-store")
	if t.Status == boxoffice.QueueQueued || t.Status == boxoffice.QueueWaiting {
		w.Header().Set("Retry-After", "2") // a polite polling pace
	}
	qt := queueTicketOf(t)
	writeQueueTicket(w, http.StatusOK, &qt)
	return nil
}

// Stream timings. The heartbeat keeps proxies from closing an idle stream;
// a stream ends after streamMax and the client reconnects (EventSource does
// it by itself, with Last-Event-ID), so no connection lives for ever.
var (
	streamPoll      = time.Second
	streamHeartbeat = 15 * time.Second
	streamMax       = 30 * time.Minute
)

// queueEvents streams a queued request's status as Server-Sent Events:
// "status" events with the same JSON as GET /queue/{id} whenever it
// changes (position, wait, outcome), a comment every heartbeat, and the end
// of the stream after the outcome. A notice from any process (the
// Notifier) sends the outcome at once; between notices the stream reads
// the state every second. Event ids count up across reconnects, from
// Last-Event-ID.
func (s *Server) queueEvents(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "request_id")
	if err != nil {
		return err
	}
	return s.stream(w, r, u, id, func(ctx context.Context) (any, bool, error) {
		t, err := s.svc.QueueStatus(ctx, u, id)
		if err != nil {
			return nil, false, err
		}
		return queueTicketOf(t), t.Status.Final(), nil
	})
}

// stream sends the state of the queued request or waitlist entry id, as
// read, while it changes and until it is final: the live channel of both
// the queue and the waitlist. The first read's error is a problem+json
// answer; later ones are "error" events while the stream keeps trying.
// Each user holds a bounded number of streams (429 past it), and a stream
// ends when the token it was opened with expires (the client reconnects
// with a fresh one).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, u boxoffice.User, id boxoffice.ID, read func(ctx context.Context) (v any, final bool, err error)) error {
	v, final, err := read(r.Context())
	if err != nil {
		return err // before any byte: a problem+json answer
	}
	closeSlot, err := s.streams.open(u.ID)
	if err != nil {
		return err
	}
	defer closeSlot()
	rc := http.NewResponseController(w)
	// The server's WriteTimeout would cut the stream: this handler sets its
	// own deadline for each write instead.
	if err := rc.SetWriteDeadline(time.Time{}); err != nil {
		return boxoffice.Errorf(boxoffice.EINTERNAL, "streaming is not supported here")
	}
	seq, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)

	wake, unsubscribe := s.hub.subscribe(id)
	defer unsubscribe()
	write := func(format string, args ...any) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write("retry: 2000\n\n") {
		return nil
	}
	var last []byte
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if string(b) == string(last) {
			return true
		}
		last = b
		seq++
		return write("id: %d\nevent: status\ndata: %s\n\n", seq, b)
	}
	ctx := r.Context()
	poll := time.NewTicker(streamPoll)
	defer poll.Stop()
	beat := time.NewTicker(streamHeartbeat)
	defer beat.Stop()
	life := streamMax
	if !u.Expires.IsZero() {
		life = min(life, time.Until(u.Expires))
	}
	end := time.NewTimer(life)
	defer end.Stop()
	for {
		if !send(v) || final {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.hub.closing:
			return nil // shutting down: the client reconnects to another process
		case <-end.C:
			return nil
		case <-beat.C:
			if !write(": heartbeat\n\n") {
				return nil
			}
			continue
		case <-wake:
		case <-poll.C:
		}
		next, nextFinal, err := read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// The state is unreachable for now: say so and keep trying.
			if !write("event: error\ndata: {\"code\":%q}\n\n", problemCode(err)) {
				return nil
			}
			continue
		}
		v, final = next, nextFinal
	}
}

// Listen feeds the notices of every process to this server's streams until
// ctx ends.
func (s *Server) Listen(ctx context.Context, n boxoffice.Notifier) error {
	return n.Listen(ctx, func(q boxoffice.QueueNotice) { s.hub.notify(q.RequestID) })
}

// CloseStreams ends every live stream, for a graceful shutdown
// (http.Server.RegisterOnShutdown): Shutdown would otherwise wait for them.
func (s *Server) CloseStreams() { s.hub.closeOnce.Do(func() { close(s.hub.closing) }) }

// hub routes notices to the streams of this process.
type hub struct {
	mu        sync.Mutex
	subs      map[boxoffice.ID]map[chan struct{}]bool
	closing   chan struct{}
	closeOnce sync.Once
}

func newHub() *hub {
	return &hub{subs: map[boxoffice.ID]map[chan struct{}]bool{}, closing: make(chan struct{})}
}

func (h *hub) subscribe(id boxoffice.ID) (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[id] == nil {
		h.subs[id] = map[chan struct{}]bool{}
	}
	h.subs[id][c] = true
	h.mu.Unlock()
	return c, func() {
		h.mu.Lock()
		delete(h.subs[id], c)
		if len(h.subs[id]) == 0 {
			delete(h.subs, id)
		}
		h.mu.Unlock()
	}
}

func (h *hub) notify(id boxoffice.ID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs[id] {
		select {
		case c <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}
