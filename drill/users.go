package drill

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/boxoffice/boxoffice"
)

// user is a planned user while the drill runs. A user has at most one
// action under way at a time (a reserve, a poll, a confirm or a stream),
// handed from one goroutine to the next through the scheduler, so its
// fields need no lock of their own.
type user struct {
	plan    User
	sub     string
	token   string
	rng     *rand.Rand
	attempt int
	tried   map[int]bool // layout indexes asked for before
	arrived bool
	done    atomic.Bool
}

// request is one reserve that got its 202: what the user saw of it, and,
// after the audit, what the store says.
type request struct {
	u          *user
	key        string
	seats      []string
	due        time.Time // the click: latencies count from here
	admittedAt time.Time
	id         string
	prequeue   bool // answered "waiting": admitted before the opening
	sse        bool

	// The first estimate seen while queued, and when.
	hasEst bool
	est    float64
	estAt  time.Time
	ahead  int64 // requests ahead of it then, as the answer said
	// What the user learned, and when.
	learnedAt time.Time
	status    string
	reason    string
	booking   string

	// From the audit.
	final      bool
	finishedAt time.Time
}

// exec runs one job.
func (r *runner) exec(ctx context.Context, j *job) {
	switch j.kind {
	case jobReserve:
		r.reserve(ctx, j)
	case jobPoll:
		r.poll(ctx, j)
	case jobConfirm:
		r.confirm(ctx, j)
	}
}

// reserve asks for seats picked from the (stale) view, as the user clicks.
func (r *runner) reserve(ctx context.Context, j *job) {
	u := j.u
	if !u.arrived {
		u.arrived = true
		r.arrivals.add(j.due, 1)
		tok, err := r.t.Token(u.sub, "")
		if err != nil {
			r.end(u, "no token: "+err.Error())
			return
		}
		u.token = tok
	}
	body, seats, ok := r.choose(u)
	if !ok {
		r.end(u, "found nothing left on the map")
		return
	}
	u.attempt++
	req := &request{u: u, key: fmt.Sprintf("drill-r%d", u.attempt), seats: seats, due: j.due, sse: u.plan.SSE}
	body["event_id"], body["idempotency_key"] = r.eventID, req.key
	sent := time.Now()
	r.sent.add(sent, 1)
	r.sendLag.add(sent.Sub(j.due))
	a := r.c.call(ctx, http.MethodPost, "/bookings/reserve", u.token, body, "")
	now := time.Now()
	if a.Status != http.StatusAccepted && ctx.Err() != nil {
		return // cut off by --duration: counted at the end
	}
	r.retries.Add(int64(a.Tries - 1))
	r.answers.add(a.label())
	if a.Status != http.StatusAccepted {
		r.refused.add(now, 1)
		r.end(u, "refused at the front door: "+a.label())
		return
	}
	var t ticketJSON
	if err := json.Unmarshal(a.Body, &t); err != nil || t.RequestID == "" {
		r.end(u, "unreadable 202")
		return
	}
	req.id, req.admittedAt = t.RequestID, now
	req.prequeue = t.Status == string(boxoffice.QueueWaiting)
	r.admitted.add(now, 1)
	r.to202.add(now.Sub(j.due))
	r.note(req, t, now)
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()

	switch {
	case t.final():
		r.outcome(req, t, now)
	case u.plan.Behaviour == Abandons:
		r.end(u, "abandoned after the 202")
	case u.plan.SSE:
		r.streams.Go(func() { r.listen(ctx, req) })
	default:
		r.sched.push(&job{due: now.Add(pollDelay(u.rng, t)), kind: jobPoll, u: u, r: req})
	}
}

// choose is what the user asks for: adjacent seats picked from the view
// (remembered, so as not to ask for them again), or the best seats side by
// side in a section the view shows room in. It reports false when the view
// shows nothing that fits.
func (r *runner) choose(u *user) (map[string]any, []string, bool) {
	if u.plan.Best {
		sec := r.view.PickSection(u.rng, u.plan.Party)
		if sec == "" {
			return nil, nil, false
		}
		return map[string]any{"best_available": map[string]any{"quantity": u.plan.Party, "section": sec}}, nil, true
	}
	seats, idx := r.view.Pick(u.rng, u.plan.Party, u.tried)
	if seats == nil {
		return nil, nil, false
	}
	if u.tried == nil {
		u.tried = map[int]bool{}
	}
	for _, i := range idx {
		u.tried[i] = true
	}
	return map[string]any{"seat_ids": seats}, seats, true
}

// note records the first estimate of a queued request.
func (r *runner) note(req *request, t ticketJSON, at time.Time) {
	if req.hasEst || t.Status != string(boxoffice.QueueQueued) {
		return
	}
	if t.Wait == nil {
		if req.estAt.IsZero() {
			r.noEstimate.Add(1)
			req.estAt = at // counted once
		}
		return
	}
	req.hasEst, req.est, req.estAt, req.ahead = true, *t.Wait, at, t.Ahead
}

// pollDelay is when a waiting page asks again: after half the estimated
// wait, so that it asks more often as its turn nears, but at least every
// 30 s and at most every 2 s (the Retry-After), with jitter so the crowd
// does not poll in waves. Before the opening the estimate is the time to
// it, so the page asks again just after the draw.
func pollDelay(rng *rand.Rand, t ticketJSON) time.Duration {
	half := 1.0
	if t.Wait != nil {
		half = *t.Wait / 2
		if t.Status == string(boxoffice.QueueWaiting) {
			half = *t.Wait
		}
	}
	d := min(max(half, 2), 30) * (0.8 + 0.4*rng.Float64())
	return time.Duration(d * float64(time.Second))
}

func (r *runner) poll(ctx context.Context, j *job) {
	req := j.r
	r.pollLag.add(time.Since(j.want))
	a := r.c.once(ctx, http.MethodGet, "/queue/"+req.id, req.u.token, nil, "")
	now := time.Now()
	r.polls.add(now, 1)
	var t ticketJSON
	if a.Status != http.StatusOK || json.Unmarshal(a.Body, &t) != nil {
		if ctx.Err() != nil {
			return
		}
		r.pollErrors.add(a.label())
		r.sched.push(&job{due: now.Add(2 * time.Second), kind: jobPoll, u: req.u, r: req})
		return
	}
	r.note(req, t, now)
	if t.final() {
		r.outcome(req, t, now)
		return
	}
	r.sched.push(&job{due: now.Add(pollDelay(req.u.rng, t)), kind: jobPoll, u: req.u, r: req})
}

// listen follows a request on the live stream (Server-Sent Events) until
// its outcome; if the stream ends first, the user falls back to polling.
func (r *runner) listen(ctx context.Context, req *request) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, streamURL(r.c.base, "/queue/"+req.id+"/events", req.u.token), nil)
	if err != nil {
		return
	}
	hreq.Header.Set("Accept", "text/event-stream")
	resp, err := r.sse.Do(hreq)
	got := false
	if err == nil {
		_ = scanSSE(resp.Body, func(data []byte) bool {
			var t ticketJSON
			if json.Unmarshal(data, &t) != nil {
				return true
			}
			now := time.Now()
			r.note(req, t, now)
			if t.final() {
				got = true
				r.outcome(req, t, now)
				return false
			}
			return true
		})
		resp.Body.Close()
	}
	if !got && ctx.Err() == nil {
		req.sse = false // the rest is polled: its learned time is a poll's
		r.sched.push(&job{due: time.Now(), kind: jobPoll, u: req.u, r: req})
	}
}

// outcome is what the user does on learning where the request ended.
func (r *runner) outcome(req *request, t ticketJSON, at time.Time) {
	req.learnedAt, req.status, req.reason, req.booking = at, t.Status, t.Reason, t.BookingID
	u := req.u
	r.outcomes.add(t.Status + " " + t.Reason)
	switch {
	case t.Status == string(boxoffice.QueueHeld) && u.plan.Behaviour == Pays:
		r.sched.push(&job{due: at.Add(think(u.rng, r.cfg.ThinkMin, r.cfg.ThinkMax)), kind: jobConfirm, u: u, r: req})
	case t.Status == string(boxoffice.QueueHeld):
		r.end(u, "held, never paid (the hold expires)")
	case t.Reason == boxoffice.ESEATTAKEN && u.attempt < r.cfg.Attempts:
		// Someone was faster: look at the map again and try other seats.
		r.sched.push(&job{due: at.Add(think(u.rng, time.Second, 3*time.Second)), kind: jobReserve, u: u})
	default:
		r.end(u, "rejected ("+t.Reason+"), gave up")
	}
}

func (r *runner) confirm(ctx context.Context, j *job) {
	req := j.r
	a := r.c.call(ctx, http.MethodPost, "/bookings/"+req.booking+"/confirm", req.u.token,
		map[string]string{"payment_token": "tok_visa"}, "drill-pay-"+req.key)
	now := time.Now()
	if ctx.Err() != nil && a.Status == 0 {
		return
	}
	r.confirms.add(a.label())
	r.retries.Add(int64(a.Tries - 1))
	r.confirmTime.add(now.Sub(j.due))
	if a.Status == http.StatusOK {
		r.confirmed.add(now, 1)
		r.mu.Lock()
		r.paid = append(r.paid, req.booking)
		r.mu.Unlock()
		r.end(req.u, "paid")
		return
	}
	r.end(req.u, "confirm failed: "+a.label())
}

// end marks a user done, once.
func (r *runner) end(u *user, how string) {
	if !u.done.CompareAndSwap(false, true) {
		return
	}
	r.ends.add(how)
	if r.active.Add(-1) == 0 {
		r.allDoneOnce.Do(func() { close(r.allDone) })
	}
}
