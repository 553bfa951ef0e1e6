package drill

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Result is everything a drill measured: the report and the chart are
// drawn from it.
type Result struct {
	Config  Config
	Shape   string
	Started time.Time
	EventID string
	Seats   int
	// Sections and the price tiers of the venue, in quality order.
	Sections int
	Tiers    []string
	// Offsets from the event's creation (second 0 of every series): the
	// opening, the end of set-up, the end of the load, the audit.
	OpensAt, SetUp, LoadEnded, Ended time.Duration
	// Opened is the opening on the wall clock.
	Opened time.Time

	Ceilings Ceilings

	// Per second from the event's creation: users arriving, reserve
	// requests sent, requests admitted (their first 202), requests refused
	// at the front door (a final non-202 answer), polls, confirms answered
	// 200, seat-map reads answered 200 and 304.
	Arrivals, Sent, Admitted, Refused, Polls, Confirmed, Reads200, Reads304 []float64
	// Queue is the queue state's counters twice a second; Available the
	// available seats each time the public map changed.
	Queue     []QueueSample
	Available []AvailSample
	// SoldOut is when the map first showed no seat available, from the
	// opening; -1 if it never did.
	SoldOut time.Duration

	Arrived   int // users who clicked before --duration ran out
	Requests  int // reserve requests that got a 202
	Prequeued int // of those, admitted to the waiting room before the opening
	Retries   int64
	// NoEstimate counts queued requests whose first answer had no wait
	// estimate yet (no drain rate measured).
	NoEstimate int64
	// Tallies: reserve answers (after retries), outcomes the users
	// learned, confirm answers, how each user's visit ended, poll errors.
	Answers, Outcomes, Confirms, Ends, PollErrors map[string]int

	// Latencies in seconds, sorted. To202 is from the click to the 202
	// (retries and the load generator's own backlog included); Service one
	// attempt's round trip (ReserveService, PollService and
	// ConfirmService: of those kinds alone); SendLag the click to the first attempt's send,
	// the wait for one of the load generator's connections; ToOutcome from the click (or the opening, for
	// those who clicked before it) to the outcome recorded in the queue
	// state; Learned to the poll that brought it; Push from the outcome to
	// its arrival on the live stream; ConfirmTime from the pay click to the
	// confirm's answer;
	// PollLag how late a poll went out, past the time its page meant to
	// ask (the --poll-rate budget, or a load generator behind).
	To202, SendLag, Service, ToOutcome, Learned, Push, ConfirmTime, PollLag []float64
	ReserveService, PollService, ConfirmService                             []float64

	Wait       WaitAccuracy
	WaitPoints []WaitPoint // a sample for the chart
	AllWaits   []WaitPoint // every one, for WriteWaits

	Audit AuditResult
}

// QueueSample is the queue state's counters at At.
type QueueSample struct {
	At                        time.Duration
	Admitted, Served, Waiting int64
}

// Depth is what the queue holds: admitted or waiting, not served.
func (q QueueSample) Depth() int64 { return q.Admitted + q.Waiting - q.Served }

// AvailSample is the public map's available seats at At.
type AvailSample struct {
	At        time.Duration
	Available int
}

// Failed returns nil when the drill found nothing wrong, else what it
// found: any oversold seat, lost request or lost payment fails it, and so
// does a request without an outcome in a queue that was still draining
// when --settle ran out, since then lost cannot be told from slow.
func (r *Result) Failed() error {
	a := r.Audit
	var errs []string
	if a.Oversold > 0 {
		errs = append(errs, fmt.Sprintf("%d seats oversold (two valid tickets)", a.Oversold))
	}
	if a.DoubleHeld > 0 {
		errs = append(errs, fmt.Sprintf("%d seats claimed by two bookings at once", a.DoubleHeld))
	}
	if a.MissingTickets > 0 {
		errs = append(errs, fmt.Sprintf("%d confirmed bookings missing tickets", a.MissingTickets))
	}
	if a.PaidLost > 0 {
		errs = append(errs, fmt.Sprintf("%d paid bookings (confirm 200) not confirmed in the store", a.PaidLost))
	}
	switch {
	case (a.Lost > 0 || a.Unserved > 0) && !a.Settled:
		errs = append(errs, fmt.Sprintf("the queue had not drained (%s): %d requests without an outcome, lost or slow, the drill cannot tell; raise --settle",
			a.SettleNote, max(int64(a.Lost), a.Unserved)))
	case a.Lost > 0 || a.Unserved > 0:
		errs = append(errs, fmt.Sprintf("%d requests lost (a 202 and no outcome; the queue counts %d not served)", a.Lost, a.Unserved))
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

// maxWaitPoints bounds the scatter of the chart.
const maxWaitPoints = 2000

// results turns what the runner saw into the Result.
func (r *runner) results(res *Result) {
	n := int(res.Ended/time.Second) + 1
	res.Arrivals, res.Sent, res.Admitted, res.Refused = r.arrivals.values(n), r.sent.values(n), r.admitted.values(n), r.refused.values(n)
	res.Polls, res.Confirmed, res.Reads200, res.Reads304 = r.polls.values(n), r.confirmed.values(n), r.reads200.values(n), r.reads304.values(n)
	res.Queue, res.Available, res.SoldOut = r.queue, r.avail, r.soldAt
	for _, u := range r.users {
		if u.arrived {
			res.Arrived++
		}
	}
	res.Requests, res.Retries, res.NoEstimate = len(r.reqs), r.retries.Load(), r.noEstimate.Load()
	res.Answers, res.Outcomes, res.Confirms, res.PollErrors = r.answers.snapshot(), r.outcomes.snapshot(), r.confirms.snapshot(), r.pollErrors.snapshot()
	res.Ends = r.ends.snapshot()
	if cut := len(r.users) - sumMap(res.Ends); cut > 0 {
		res.Ends["still under way when the load stopped (--duration), or never arrived"] = cut
	}
	res.To202, res.SendLag, res.Service, res.ConfirmTime, res.PollLag = r.to202.sorted(), r.sendLag.sorted(), r.service.sorted(), r.confirmTime.sorted(), r.pollLag.sorted()
	res.ReserveService, res.PollService, res.ConfirmService = r.reserveService.sorted(), r.pollService.sorted(), r.confirmService.sorted()

	var toOutcome, learned, push []float64
	var points []WaitPoint
	for _, q := range r.reqs {
		if q.prequeue {
			res.Prequeued++
		}
		if !q.final {
			continue
		}
		start := later(q.due, r.open)
		toOutcome = append(toOutcome, max(0, q.finishedAt.Sub(start).Seconds()))
		if !q.learnedAt.IsZero() {
			if q.sse {
				push = append(push, max(0, q.learnedAt.Sub(q.finishedAt).Seconds()))
			} else {
				learned = append(learned, max(0, q.learnedAt.Sub(start).Seconds()))
			}
		}
		if q.hasEst {
			points = append(points, WaitPoint{Predicted: q.est, Actual: max(0, q.finishedAt.Sub(q.estAt).Seconds()),
				At: q.estAt.Sub(r.t0), Ahead: q.ahead})
		}
	}
	slices.Sort(toOutcome)
	slices.Sort(learned)
	slices.Sort(push)
	res.ToOutcome, res.Learned, res.Push = toOutcome, learned, push
	res.Wait = Accuracy(points)
	res.AllWaits = points
	if step := len(points)/maxWaitPoints + 1; step > 1 {
		for i := 0; i < len(points); i += step {
			res.WaitPoints = append(res.WaitPoints, points[i])
		}
	} else {
		res.WaitPoints = points
	}
}

func sumMap(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// WriteWaits writes, as CSV, the opening (kind "open": seconds from the
// event's creation), the queue's counters as sampled ("queue": seconds,
// admitted, served, waiting) and each queued request's first estimate
// ("wait": seconds, the requests ahead, the predicted and the real wait in
// seconds): what the estimator saw and what came of it, to study it
// without a drill per try.
func WriteWaits(w io.Writer, res *Result) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	_ = cw.Write([]string{"kind", "at", "a", "b", "c"})
	_ = cw.Write([]string{"open", f(res.OpensAt.Seconds()), "", "", ""})
	for _, q := range res.Queue {
		_ = cw.Write([]string{"queue", f(q.At.Seconds()), i(q.Admitted), i(q.Served), i(q.Waiting)})
	}
	for _, p := range res.AllWaits {
		_ = cw.Write([]string{"wait", f(p.At.Seconds()), i(p.Ahead), f(p.Predicted), f(p.Actual)})
	}
	cw.Flush()
	return cw.Error()
}
