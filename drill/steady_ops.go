package drill

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
)

// Op is a kind of operation of the steady drill, for its latencies.
type Op int

const (
	// OpMap is a seat-map read (the full map or the compact view).
	OpMap Op = iota
	OpReserve
	OpConfirm
	OpRelease
	OpCancel
	NumOps
)

func (o Op) String() string {
	return [...]string{"map read", "reserve", "confirm", "release", "cancel"}[o]
}

// call is one operation through the bookings' client (retries with the
// same key included), timed and tallied.
func (r *steadyRunner) call(ctx context.Context, op Op, method, path, token string, body any, key string) answer {
	start := time.Now()
	a := r.c.call(ctx, method, path, token, body, key)
	if a.Status == 0 && ctx.Err() != nil {
		return a // the drill was interrupted: not the server's answer
	}
	r.ops[op].add(time.Since(start))
	r.answers[op].add(a.label())
	return a
}

// maxLooks is how many events a booking looks at before giving up: one
// whose map shows nothing that fits sends the user to another, as a
// shopper goes to the next show.
const maxLooks = 3

// flow is one booking: look at an event's map (MapReads times in all),
// pick seats from it (or look at another event when nothing fits),
// reserve, then pay, release or walk away.
func (r *steadyRunner) flow(ctx context.Context, rng *mrand.Rand, key string) {
	r.flows.Add(1)
	tok := r.tokens[rng.IntN(len(r.tokens))]
	party := steadyParty(rng.Float64())
	best := rng.Float64() < r.cfg.BestShare
	reads := int(r.cfg.MapReads)
	if rng.Float64() < r.cfg.MapReads-float64(reads) {
		reads++
	}
	for look := range maxLooks {
		ev := r.pickEvent(rng)
		// Browsing first: the reads beyond the one the seats are picked
		// from (on the first event looked at).
		for i := range reads - 1 {
			if look > 0 {
				break
			}
			path := "/seats"
			if i%2 == 1 {
				path = "/availability"
			}
			if _, ok := r.readMap(ctx, ev, path, false); !ok {
				r.ends.add("seat map unreadable")
				return
			}
		}
		if r.book(ctx, rng, ev, tok, party, best, key) {
			return
		}
	}
	r.ends.add(fmt.Sprintf("nothing that fits on the maps of %d events", maxLooks))
}

// book picks seats from a fresh read of ev's map and reserves them, up to
// Attempts times; false when the map showed nothing that fits (the user
// looks elsewhere).
func (r *steadyRunner) book(ctx context.Context, rng *mrand.Rand, ev *steadyEvent, tok string, party int, best bool, key string) bool {
	var tried map[int]bool
	for attempt := 1; attempt <= r.cfg.Attempts; attempt++ {
		view, ok := r.readMap(ctx, ev, "/availability", true)
		if !ok {
			r.ends.add("seat map unreadable")
			return true
		}
		body := map[string]any{"event_id": ev.id}
		if best {
			sec := view.PickSection(rng, party)
			if sec == "" {
				r.noRoom(ev, view)
				return false
			}
			body["best_available"] = map[string]any{"quantity": party, "section": sec}
		} else {
			seats, idx := view.Pick(rng, party, tried)
			if seats == nil {
				r.noRoom(ev, view)
				return false
			}
			if tried == nil {
				tried = map[int]bool{}
			}
			for _, i := range idx {
				tried[i] = true
			}
			body["seat_ids"] = seats
		}
		r.looks.add("seats picked")
		a := r.call(ctx, OpReserve, http.MethodPost, "/bookings/reserve", tok, body, key+"-"+ev.id+"-r"+strconv.Itoa(attempt))
		if a.Status == http.StatusCreated {
			var held struct {
				BookingID boxoffice.ID `json:"booking_id"`
			}
			if err := json.Unmarshal(a.Body, &held); err != nil || held.BookingID == 0 {
				r.ends.add("unreadable 201")
				return true
			}
			r.reserves.Add(1)
			r.held(ctx, rng, ev, tok, held.BookingID, key)
			return true
		}
		if a.Code == boxoffice.ESEATTAKEN && attempt < r.cfg.Attempts {
			continue // someone was faster: a fresh look, other seats
		}
		r.ends.add("reserve refused: " + a.label())
		return true
	}
	return true
}

// noRoom notes a look at a map that showed nothing to ask for; a map
// showing nothing available at all sends the next bookings elsewhere for
// a while.
func (r *steadyRunner) noRoom(ev *steadyEvent, v *View) {
	v.mu.RLock()
	avail := 0
	for _, n := range v.avail {
		avail += n
	}
	v.mu.RUnlock()
	if avail == 0 {
		ev.skipUntil.Store(time.Now().Add(soldOutPause).UnixNano())
		r.looks.add("sold out (nothing available)")
		return
	}
	r.looks.add("nothing that fits the party")
}

// held is what the user does with a hold: pay, release it, or leave it to
// expire.
func (r *steadyRunner) held(ctx context.Context, rng *mrand.Rand, ev *steadyEvent, tok string, id boxoffice.ID, key string) {
	path := "/bookings/" + id.String()
	switch p := rng.Float64(); {
	case p < r.cfg.ConfirmShare:
		a := r.call(ctx, OpConfirm, http.MethodPost, path+"/confirm", tok, map[string]string{"payment_token": "tok_visa"}, key+"-pay")
		if a.Status != http.StatusOK {
			r.ends.add("confirm failed: " + a.label())
			return
		}
		r.bookings.Add(1)
		ev.mu.Lock()
		ev.paid = append(ev.paid, id)
		ev.mu.Unlock()
		r.ends.add("paid")
		if rng.Float64() < r.cfg.CancelShare {
			r.cancels.push(cancelJob{ev: ev, id: id, token: tok, key: key + "-cancel", due: time.Now().Add(r.cfg.CancelAfter)})
		}
	case p < r.cfg.ConfirmShare+r.cfg.ReleaseShare:
		a := r.call(ctx, OpRelease, http.MethodDelete, path, tok, nil, "")
		if a.Status != http.StatusOK {
			r.ends.add("release failed: " + a.label())
			return
		}
		r.ends.add("released")
	default:
		r.ends.add("held, walked away (the hold expires)")
	}
}

// cancel cancels a paid booking for a refund.
func (r *steadyRunner) cancel(ctx context.Context, j cancelJob) {
	j.ev.mu.Lock()
	j.ev.cancelTried = append(j.ev.cancelTried, j.id) // before: its outcome may stay unknown
	j.ev.mu.Unlock()
	a := r.call(ctx, OpCancel, http.MethodPost, "/bookings/"+j.id.String()+"/cancel", j.token, nil, j.key)
	if a.Status == http.StatusOK {
		j.ev.mu.Lock()
		j.ev.cancelled = append(j.ev.cancelled, j.id)
		j.ev.mu.Unlock()
	}
}

// readMap reads one of the event's seat maps as a page does (gzip for
// the full map, If-None-Match with the tag last seen), timed and counted.
// With pick it reads the compact view in full and returns it as a View
// over the venue's layout.
func (r *steadyRunner) readMap(ctx context.Context, ev *steadyEvent, path string, pick bool) (*View, bool) {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, r.c.base+"/events/"+ev.id+path, nil)
	if err != nil {
		return nil, false
	}
	ev.mu.Lock()
	tag := ev.availTag
	if path == "/seats" {
		tag = ev.seatsTag
		req.Header.Set("Accept-Encoding", "gzip")
	}
	ev.mu.Unlock()
	if tag != "" && !pick {
		req.Header.Set("If-None-Match", tag)
	}
	start := time.Now()
	resp, err := r.c.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			r.ops[OpMap].add(time.Since(start))
			r.answers[OpMap].add(answer{Err: err}.label())
		}
		return nil, false
	}
	var body []byte
	if pick && resp.StatusCode == http.StatusOK {
		body, err = io.ReadAll(resp.Body)
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	resp.Body.Close()
	took := time.Since(start)
	r.requests.Add(1)
	r.ops[OpMap].add(took)
	if err != nil {
		r.answers[OpMap].add(answer{Err: err}.label())
		return nil, false
	}
	r.answers[OpMap].add(strconv.Itoa(resp.StatusCode))
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotModified {
		return nil, false
	}
	r.reads.Add(1)
	if etag := resp.Header.Get("ETag"); etag != "" && resp.StatusCode == http.StatusOK {
		ev.mu.Lock()
		if path == "/seats" {
			ev.seatsTag = etag
		} else {
			ev.availTag = etag
		}
		ev.mu.Unlock()
	}
	if !pick {
		return nil, true
	}
	v := &View{layout: r.layout}
	if _, err := v.Update(body, resp.Header.Get("ETag"), start); err != nil {
		r.answers[OpMap].add("unreadable compact view")
		return nil, false
	}
	return v, true
}

// cancelJob is a paid booking to cancel when due.
type cancelJob struct {
	ev    *steadyEvent
	id    boxoffice.ID
	token string
	key   string
	due   time.Time
}

// cancelQueue holds the cancellations to come, in due order (they are
// all due the same time after their payment).
type cancelQueue struct {
	mu   sync.Mutex
	jobs []cancelJob
	head int
}

func (q *cancelQueue) push(j cancelJob) {
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	q.mu.Unlock()
}

// pop returns the first job if it is due at now.
func (q *cancelQueue) pop(now time.Time) (cancelJob, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head >= len(q.jobs) || q.jobs[q.head].due.After(now) {
		return cancelJob{}, false
	}
	j := q.jobs[q.head]
	q.jobs[q.head] = cancelJob{}
	q.head++
	if q.head > 1024 && q.head*2 > len(q.jobs) {
		q.jobs = append(q.jobs[:0], q.jobs[q.head:]...)
		q.head = 0
	}
	return j, true
}
