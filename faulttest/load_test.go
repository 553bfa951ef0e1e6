package faulttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/auth"
)

// finalLost: after healing, a 202'd request that reads 404 this long is
// taken as lost rather than read again until the deadline.
const finalLost = 5 * time.Second

// clientTimeout bounds every request of the workload: a request that gets
// no answer within it is a hang (or a stopped process).
const clientTimeout = 10 * time.Second

// event is one sale the workload drives.
type event struct {
	ID       string
	Kind     string // direct, queued, delayed
	Cycle    int
	OpensAt  time.Time
	Sections []section
}

type section struct {
	Name   string
	Rows   int
	PerRow int
}

func (e *event) capacity() int {
	n := 0
	for _, s := range e.Sections {
		n += s.Rows * s.PerRow
	}
	return n
}

// rec is one HTTP exchange of the workload, as the client saw it.
type rec struct {
	Op         string // reserve, confirm, release, status, final
	Kind       string // the event's kind
	API        int
	User       string
	Key        string // idempotency key (reserve, confirm)
	Event      string
	Booking    string // the booking a confirm or release is about
	Attempt    int
	Replay     bool // a deliberate repeat of an answered request
	Start, End time.Time
	Status     int    // 0: no answer (network error or timeout)
	NetErr     string // the transport error
	Timeout    bool
	RetryAfter bool
	Replayed   bool // Idempotent-Replayed: true
	Code       string
	// What the answer said.
	EventID   string
	BookingID string
	RequestID string
	QStatus   string
	Reason    string
	Tickets   []string
	Body      string // kept for 5xx and unexpected answers
}

// answer is the union of the JSON bodies the workload reads.
type answer struct {
	EventID   string          `json:"event_id"`
	BookingID string          `json:"booking_id"`
	RequestID string          `json:"request_id"`
	Status    json.RawMessage `json:"status"` // a queue status (string) or a problem's (number)
	Reason    string          `json:"reason"`
	Code      string          `json:"code"`
	SeatIDs   []string        `json:"seat_ids"`
	Tickets   []struct {
		TicketID string `json:"ticket_id"`
	} `json:"tickets"`
}

type user struct {
	idx    int
	name   string
	tok    string
	rng    *rand.Rand
	keys   int
	joined map[int]bool // delayed sales joined, by cycle
}

func (u *user) key(prefix string) string {
	u.keys++
	return fmt.Sprintf("%s-%s-%d", prefix, u.name, u.keys)
}

// load drives the workload and records every answer.
type load struct {
	apis    []string
	client  *http.Client
	auth    *auth.Authenticator
	events  []*event // by cycle: direct, queued, delayed
	t0      time.Time
	cycle   time.Duration
	cycles  int
	stop    chan struct{}
	stopped atomic.Bool

	mu   sync.Mutex
	recs []*rec
	// owners of the 202'd requests, for the final reads
	queued map[string]*user
	users  map[string]*user
}

func newLoad(apis []string, a *auth.Authenticator) *load {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
	}
	return &load{apis: apis, auth: a, client: &http.Client{Timeout: clientTimeout, Transport: tr},
		stop: make(chan struct{}), queued: map[string]*user{}, users: map[string]*user{}}
}

// call makes one request and records it.
func (l *load) call(api int, op, kind, method, path, tok, key string, body any) *rec {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	r := &rec{Op: op, Kind: kind, API: api, Key: key, Start: time.Now()}
	req, _ := http.NewRequest(method, l.apis[api]+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		r.End = time.Now()
		r.NetErr = err.Error()
		var ne net.Error
		if ok := asNetErr(err, &ne); ok && ne.Timeout() {
			r.Timeout = true
		}
		return r
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.End = time.Now()
	r.Status = resp.StatusCode
	r.RetryAfter = resp.Header.Get("Retry-After") != ""
	r.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	var a answer
	_ = json.Unmarshal(b, &a)
	r.EventID, r.BookingID, r.RequestID, r.Reason, r.Code = a.EventID, a.BookingID, a.RequestID, a.Reason, a.Code
	if len(a.Status) > 0 && a.Status[0] == '"' {
		_ = json.Unmarshal(a.Status, &r.QStatus)
	}
	for _, t := range a.Tickets {
		r.Tickets = append(r.Tickets, t.TicketID)
	}
	if r.Status >= 500 || r.Status == 0 || (r.Status >= 400 && r.Code == "") {
		r.Body = truncate(strings.TrimSpace(string(b)), 300)
	}
	return r
}

func asNetErr(err error, ne *net.Error) bool {
	for e := err; e != nil; {
		if n, ok := e.(net.Error); ok {
			*ne = n
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

func (l *load) add(r *rec) {
	l.mu.Lock()
	l.recs = append(l.recs, r)
	if r.Op == "reserve" && r.Status == http.StatusAccepted && r.RequestID != "" && l.queued[r.RequestID] == nil {
		l.queued[r.RequestID] = l.users[r.User] // every 202'd id is read at the end
	}
	l.mu.Unlock()
}

func (l *load) records() []*rec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*rec(nil), l.recs...)
}

// retryable answers are tried again with the same idempotency key: no
// answer at all, 503, 429, and 409 for a request still in flight.
func retryable(r *rec) bool {
	return r.Status == 0 || r.Status == http.StatusServiceUnavailable || r.Status == http.StatusTooManyRequests ||
		(r.Status == http.StatusConflict && r.Code == "idempotency_in_flight")
}

// send makes a state-changing request, retrying it with the same key (on
// the other API after a network error) while the answer says to.
func (l *load) send(u *user, op string, ev *event, booking, method, path, key string, body any) *rec {
	api := u.rng.IntN(len(l.apis))
	var r *rec
	for attempt := 0; attempt < 8; attempt++ {
		r = l.call(api, op, ev.Kind, method, path, u.tok, key, body)
		r.User, r.Event, r.Booking, r.Attempt = u.name, ev.ID, booking, attempt
		l.add(r)
		if !retryable(r) || l.stopped.Load() {
			return r
		}
		wait := 300 * time.Millisecond
		if r.RetryAfter {
			wait = 2 * time.Second
		}
		if r.Status == 0 {
			api = (api + 1) % len(l.apis)
			wait = 200 * time.Millisecond
		}
		l.sleep(wait + time.Duration(u.rng.IntN(200))*time.Millisecond)
	}
	return r
}

// sleep waits d or until the load stops.
func (l *load) sleep(d time.Duration) {
	select {
	case <-l.stop:
	case <-time.After(d):
	}
}

// current is the cycle whose events the workload drives now.
func (l *load) current() int {
	c := int(time.Since(l.t0) / l.cycle)
	return max(0, min(c, l.cycles-1))
}

func (l *load) eventOf(cycle int, kind string) *event {
	for _, e := range l.events {
		if e.Cycle == cycle && e.Kind == kind {
			return e
		}
	}
	return nil
}

// run drives n users until stop is closed.
func (l *load) run(n int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := range n {
		name := fmt.Sprintf("fan-%d", i)
		tok, _ := l.auth.Issue(name, "", 6*time.Hour)
		u := &user{idx: i, name: name, tok: tok, rng: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano()))), joined: map[int]bool{}}
		l.mu.Lock()
		l.users[name] = u
		l.mu.Unlock()
		wg.Go(func() {
			// Spread the first requests over a second.
			l.sleep(time.Duration(u.rng.IntN(1000)) * time.Millisecond)
			for !l.stopped.Load() {
				l.act(u)
				l.sleep(time.Duration(50+u.rng.IntN(200)) * time.Millisecond)
			}
		})
	}
	return &wg
}

// act is one turn of a user: a reserve, its outcome, and then a confirm,
// a declined card, a release or nothing (the hold runs out).
func (l *load) act(u *user) {
	c := l.current()
	delayed := l.eventOf(c, "delayed")
	var ev *event
	switch {
	case delayed != nil && time.Now().Before(delayed.OpensAt) && u.idx%3 == 0 && !u.joined[c]:
		ev = delayed // into the pre-queue, once per cycle
		u.joined[c] = true
	case delayed != nil && !time.Now().Before(delayed.OpensAt) && u.rng.IntN(10) == 0:
		ev = delayed
	case u.rng.IntN(100) < 55:
		ev = l.eventOf(c, "direct")
	default:
		ev = l.eventOf(c, "queued")
	}
	body := map[string]any{"event_id": ev.ID}
	switch x := u.rng.IntN(100); {
	case x < 10:
		best := map[string]any{"quantity": 1 + u.rng.IntN(3)}
		if u.rng.IntN(2) == 0 {
			best["section"] = ev.Sections[u.rng.IntN(len(ev.Sections))].Name
		}
		body["best_available"] = best
	case x < 20 && len(ev.Sections) > 1:
		// Two sections in one hold: one script per section.
		a, b := ev.Sections[0], ev.Sections[1+u.rng.IntN(len(ev.Sections)-1)]
		body["seat_ids"] = []string{
			boxoffice.SeatID(a.Name, boxoffice.RowLabel(1+u.rng.IntN(a.Rows)), 1+u.rng.IntN(a.PerRow)),
			boxoffice.SeatID(b.Name, boxoffice.RowLabel(1+u.rng.IntN(b.Rows)), 1+u.rng.IntN(b.PerRow)),
		}
	default:
		s := ev.Sections[u.rng.IntN(len(ev.Sections))]
		n := 1 + u.rng.IntN(3)
		row, first := boxoffice.RowLabel(1+u.rng.IntN(s.Rows)), 1+u.rng.IntN(s.PerRow-n+1)
		var seats []string
		for k := range n {
			seats = append(seats, boxoffice.SeatID(s.Name, row, first+k))
		}
		body["seat_ids"] = seats
	}
	key := u.key("r")
	r := l.send(u, "reserve", ev, "", http.MethodPost, "/bookings/reserve", key, body)
	var booking string
	switch r.Status {
	case http.StatusCreated:
		booking = r.BookingID
	case http.StatusAccepted:
		booking = l.poll(u, ev, r.RequestID)
	default:
		return
	}
	if u.rng.IntN(10) == 0 && !l.stopped.Load() {
		// The same request again: the same answer, not a second booking.
		rr := l.call(u.rng.IntN(len(l.apis)), "reserve", ev.Kind, http.MethodPost, "/bookings/reserve", u.tok, key, body)
		rr.User, rr.Event, rr.Replay = u.name, ev.ID, true
		l.add(rr)
	}
	if booking == "" || l.stopped.Load() {
		return
	}
	switch x := u.rng.IntN(100); {
	case x < 65:
		l.confirm(u, ev, booking, "tok_visa")
	case x < 80:
		if r := l.confirm(u, ev, booking, "tok_chargeDeclined"); r.Status == http.StatusPaymentRequired && u.rng.IntN(2) == 0 {
			l.confirm(u, ev, booking, "tok_visa") // another card, a new key
		} else {
			l.release(u, ev, booking)
		}
	case x < 95:
		l.release(u, ev, booking)
	default:
		// walk away: the hold runs out
	}
}

func (l *load) confirm(u *user, ev *event, booking, token string) *rec {
	key := u.key("c")
	body := map[string]any{"payment_token": token}
	path := "/bookings/" + booking + "/confirm"
	r := l.send(u, "confirm", ev, booking, http.MethodPost, path, key, body)
	if r.Status == http.StatusOK && u.rng.IntN(10) == 0 {
		rr := l.call(u.rng.IntN(len(l.apis)), "confirm", ev.Kind, http.MethodPost, path, u.tok, key, body)
		rr.User, rr.Event, rr.Booking, rr.Replay = u.name, ev.ID, booking, true
		l.add(rr)
	}
	return r
}

func (l *load) release(u *user, ev *event, booking string) {
	l.send(u, "release", ev, booking, http.MethodDelete, "/bookings/"+booking, "", nil)
}

// poll follows a queued request until its outcome and returns the booking
// it was given ("" if rejected, lost or the load stopped). A request
// answered 404 for ten seconds on end is given up as lost.
func (l *load) poll(u *user, ev *event, id string) string {
	var since404 time.Time
	for !l.stopped.Load() {
		r := l.call(u.rng.IntN(len(l.apis)), "status", ev.Kind, http.MethodGet, "/queue/"+id, u.tok, "", nil)
		r.User, r.Event, r.RequestID = u.name, ev.ID, id
		l.add(r)
		switch {
		case r.Status == http.StatusOK && r.QStatus == "held":
			return r.BookingID
		case r.Status == http.StatusOK && r.QStatus == "rejected":
			return ""
		case r.Status == http.StatusNotFound:
			if since404.IsZero() {
				since404 = time.Now()
			} else if time.Since(since404) > 10*time.Second {
				return ""
			}
		case r.Status == http.StatusOK:
			since404 = time.Time{} // a network error or a 503 says nothing either way
		}
		wait := 500 * time.Millisecond
		if r.QStatus == "waiting" {
			wait = time.Second
		}
		l.sleep(wait + time.Duration(u.rng.IntN(200))*time.Millisecond)
	}
	return ""
}

// finalReads reads every 202'd request as its owner, in rounds, until it
// is final, lost (404 for finalLost on end) or the deadline passes, and
// keeps the last answer of each.
func (l *load) finalReads(deadline time.Time) map[string]*rec {
	l.mu.Lock()
	owners := make(map[string]*user, len(l.queued))
	for id, u := range l.queued {
		owners[id] = u
	}
	l.mu.Unlock()
	out := make(map[string]*rec, len(owners))
	first404 := map[string]time.Time{}
	pending := keys(owners)
	for round := 0; len(pending) > 0; round++ {
		var mu sync.Mutex
		var next []string
		work := make(chan string)
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for id := range work {
					u := owners[id]
					r := l.call((w+round)%len(l.apis), "final", "", http.MethodGet, "/queue/"+id, u.tok, "", nil)
					r.User, r.RequestID = u.name, id
					mu.Lock()
					out[id] = r
					switch {
					case r.Status == http.StatusOK && (r.QStatus == "held" || r.QStatus == "rejected"):
					case r.Status == http.StatusNotFound:
						if first404[id].IsZero() {
							first404[id] = r.Start
						}
						if r.Start.Sub(first404[id]) < finalLost {
							next = append(next, id)
						}
					default:
						delete(first404, id)
						next = append(next, id)
					}
					mu.Unlock()
				}
			})
		}
		for _, id := range pending {
			work <- id
		}
		close(work)
		wg.Wait()
		pending = next
		if time.Now().After(deadline) {
			break
		}
		if len(pending) > 0 {
			time.Sleep(500 * time.Millisecond)
		}
	}
	return out
}

// createEvents makes the events of every cycle through the first API.
func (l *load) createEvents(admin string, cycles int, cycle time.Duration) error {
	now := time.Now().UTC()
	for c := range cycles {
		specs := []*event{
			{Kind: "direct", Cycle: c, OpensAt: now.Add(-time.Hour),
				Sections: []section{{"A", 10, 25}, {"B", 10, 25}, {"C", 10, 25}}},
			{Kind: "queued", Cycle: c, OpensAt: now.Add(-time.Minute),
				Sections: []section{{"A", 10, 25}, {"B", 10, 25}}},
			{Kind: "delayed", Cycle: c, OpensAt: l.t0.Add(time.Duration(c)*cycle + delayedOpens),
				Sections: []section{{"A", 8, 25}}},
		}
		for _, e := range specs {
			mode := "direct"
			if e.Kind != "direct" {
				mode = "queued"
			}
			var secs []map[string]any
			for _, s := range e.Sections {
				secs = append(secs, map[string]any{"name": s.Name, "price_tier": "t" + s.Name, "price_cents": 1000 + 500*len(secs),
					"rows": s.Rows, "seats_per_row": s.PerRow})
			}
			body := map[string]any{"name": fmt.Sprintf("Fault %s %d", e.Kind, c), "venue": "Loopback Hall", "sale_mode": mode,
				"starts_at": now.Add(72 * time.Hour).Format(time.RFC3339), "sale_opens_at": e.OpensAt.UTC().Format(time.RFC3339Nano),
				"ticket_limit": 12, "sections": secs}
			var r *rec
			for try := 0; try < 5; try++ {
				r = l.call(0, "create", e.Kind, http.MethodPost, "/events", admin, "", body)
				if r.Status == http.StatusCreated {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if r.Status != http.StatusCreated {
				return fmt.Errorf("create %s event: %d %s %s", e.Kind, r.Status, r.NetErr, r.Body)
			}
			e.ID = r.EventID
			l.events = append(l.events, e)
		}
	}
	return nil
}

// getJSON GETs url and returns the status and body.
func getJSON(c *http.Client, url, tok string) (int, []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// counts renders a map of counts as "k=v k=v" in key order.
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + strconv.Itoa(m[k]))
	}
	return b.String()
}
