package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
)

// SeedSteadyBookings is the seed's steady state, bookings per second on
// average: 100,000 events a day of 5,000 seats each on average.
const SeedSteadyBookings = 5800

// SteadyResult is everything a steady drill measured.
type SteadyResult struct {
	Config  SteadyConfig
	Shape   string
	Started time.Time
	// Events created, seats per event and in all, the venue's sections
	// and price tiers in quality order.
	Events, SeatsPerEvent, Seats, Sections int
	Tiers                                  []string
	// Created is how long creating the events took, SetUp all of the
	// set-up (the maps warmed, the tokens issued); Load the load itself,
	// Drained how long the bookings under way at its end took to finish.
	Created, SetUp, Load, Drained time.Duration

	Ceilings  Ceilings
	Intervals []SteadyInterval
	// Flat compares the last third of the intervals with the first;
	// FlatOK is false when there were too few intervals.
	Flat   Flatness
	FlatOK bool

	// Totals over the load (the bookings finished after it included).
	Flows, Bookings, Reserves, Reads, Requests int64
	Ops                                        [NumOps]OpTotal
	// Ends tallies how each booking ended, Looks what each look at an
	// event's map found.
	Ends, Looks map[string]int
	// TopShare is the share of the draws the 1, 10 and 100 most popular
	// events get from the Zipf law (before sold-out events are skipped).
	TopShare [3]float64

	Audit SteadyAudit
}

// OpTotal is one kind of operation over the whole load.
type OpTotal struct {
	N             int64
	P50, P95, P99 float64
	Answers       map[string]int
}

// SteadyAudit is what the store says about every event at the end.
type SteadyAudit struct {
	Events int
	// Seats with two valid tickets; seats two bookings claimed at once;
	// confirmed bookings with fewer valid tickets than seats.
	Oversold, DoubleHeld, MissingTickets int
	// Paid bookings (confirm 200) and of them those the store does not
	// have as confirmed, not counting the ones the drill cancelled.
	Paid, PaidLost int
	// Cancellations sent, answered 200, and of those the bookings the
	// store still has as confirmed.
	CancelsSent, Cancelled, CancelLost int
	// Valid tickets in all; bookings by status, all events together.
	Sold     int
	Bookings map[string]int
	// Findings names the first few events with something wrong.
	Findings []string
}

// Failed returns nil when the audit found nothing wrong, else what it
// found: a seat sold twice or claimed twice, a paid booking lost or
// missing tickets, a cancellation answered 200 that did not happen.
// Latency and memory never fail a steady drill: they are reported.
func (r *SteadyResult) Failed() error {
	a := r.Audit
	var errs []string
	add := func(n int, what string) {
		if n > 0 {
			errs = append(errs, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(a.Oversold, "seats oversold (two valid tickets)")
	add(a.DoubleHeld, "seats claimed by two bookings at once")
	add(a.MissingTickets, "confirmed bookings missing tickets")
	add(a.PaidLost, "paid bookings (confirm 200) not confirmed in the store")
	add(a.CancelLost, "cancellations answered 200 whose booking is still confirmed")
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

// audit reads every event's verdict from the store, eight events at a
// time.
func (r *steadyRunner) audit(ctx context.Context, res *SteadyResult) error {
	a := &res.Audit
	a.Bookings = map[string]int{}
	st := r.t.Audit
	var mu sync.Mutex
	if r.t.Progress != nil {
		fmt.Fprintf(r.t.Progress, "steady: auditing %d events in the store\n", len(r.events))
	}
	err := r.each(ctx, len(r.events), func(i int) error {
		ev := r.events[i]
		var (
			confirmed                  map[string]bool
			bookings                   map[string]int
			err                        error
			oversold, double, missing  int
			sold                       int
			paid, tried, cancelled     []boxoffice.ID
			paidLost, cancelLost, sent int
		)
		if oversold, err = st.Oversold(ctx, ev.eid); err != nil {
			return err
		}
		if double, err = st.DoubleHeld(ctx, ev.eid); err != nil {
			return err
		}
		if missing, err = st.MissingTickets(ctx, ev.eid); err != nil {
			return err
		}
		if sold, _, err = st.Sold(ctx, ev.eid); err != nil {
			return err
		}
		if bookings, err = st.Bookings(ctx, ev.eid); err != nil {
			return err
		}
		if confirmed, err = st.Confirmed(ctx, ev.eid); err != nil {
			return err
		}
		ev.mu.Lock()
		paid, tried, cancelled = ev.paid, ev.cancelTried, ev.cancelled
		ev.mu.Unlock()
		triedSet := make(map[boxoffice.ID]bool, len(tried))
		for _, id := range tried {
			triedSet[id] = true
		}
		sent = len(tried)
		for _, id := range paid {
			if !confirmed[id.String()] && !triedSet[id] {
				paidLost++
			}
		}
		for _, id := range cancelled {
			if confirmed[id.String()] {
				cancelLost++
			}
		}
		mu.Lock()
		defer mu.Unlock()
		a.Events++
		a.Oversold += oversold
		a.DoubleHeld += double
		a.MissingTickets += missing
		a.Sold += sold
		a.Paid += len(paid)
		a.PaidLost += paidLost
		a.CancelsSent += sent
		a.Cancelled += len(cancelled)
		a.CancelLost += cancelLost
		for k, v := range bookings {
			a.Bookings[k] += v
		}
		if oversold+double+missing+paidLost+cancelLost > 0 && len(a.Findings) < 10 {
			a.Findings = append(a.Findings, fmt.Sprintf("event %s: oversold %d, claimed twice %d, missing tickets %d, paid lost %d, cancellations lost %d",
				ev.id, oversold, double, missing, paidLost, cancelLost))
		}
		return nil
	})
	return err
}

// results fills the totals.
func (r *steadyRunner) results(res *SteadyResult) {
	res.Flows, res.Bookings, res.Reserves = r.flows.Load(), r.bookings.Load(), r.reserves.Load()
	res.Reads, res.Requests = r.reads.Load(), r.requests.Load()
	for op := range NumOps {
		o := &r.ops[op]
		o.mu.Lock()
		res.Ops[op] = OpTotal{N: o.total.n, P50: o.total.quantile(50), P95: o.total.quantile(95), P99: o.total.quantile(99),
			Answers: r.answers[op].snapshot()}
		o.mu.Unlock()
	}
	res.Ends, res.Looks = r.ends.snapshot(), r.looks.snapshot()
	res.TopShare = [3]float64{r.pick.top(1), r.pick.top(10), r.pick.top(100)}
	res.Flat, res.FlatOK = Flat(res.Intervals)
}

// Means are the rates per second over the intervals after the warm-up
// (all of them when there is only one), weighted by their length.
func (r *SteadyResult) Means() (bookings, reserves, reads, requests float64) {
	ins := r.Intervals
	if len(ins) > 1 {
		ins = ins[1:]
	}
	var t float64
	for _, in := range ins {
		s := in.Span.Seconds()
		t += s
		bookings += in.Bookings * s
		reserves += in.Reserves * s
		reads += in.Reads * s
		requests += in.Requests * s
	}
	if t == 0 {
		return 0, 0, 0, 0
	}
	return bookings / t, reserves / t, reads / t, requests / t
}

// Best is the best interval's bookings per second.
func (r *SteadyResult) Best() float64 {
	best := 0.0
	for _, in := range r.Intervals {
		best = max(best, in.Bookings)
	}
	return best
}

// WriteSteadyReport writes the steady drill's report as markdown.
func WriteSteadyReport(w io.Writer, r *SteadyResult) {
	c := r.Config
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# boxoffice steady drill, %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	p("Target: %s.\n\n", r.Shape)
	p("%s direct-sale events on sale at once, each of %s seats in %d sections (tiers %s; %s seats in all), ticket limit %d, refundable until %d h before the show; created over HTTP in %s (set-up %s, every map read once). ",
		num(r.Events), num(r.SeatsPerEvent), r.Sections, strings.Join(r.Tiers, ", "), num(r.Seats), c.TicketLimit, c.RefundCutoffHours, dur(r.Created), dur(r.SetUp))
	p("Popularity: Zipf, exponent %g: the most popular event draws %.1f%% of the bookings, the top 10 %.1f%%, the top 100 %.1f%% (an event whose map shows nothing available is skipped for %s). ",
		c.Zipf, 100*r.TopShare[0], 100*r.TopShare[1], 100*r.TopShare[2], dur(soldOutPause))
	rate := "as fast as they complete"
	if c.Rate > 0 {
		rate = fmt.Sprintf("at most %s started per second", num(int(c.Rate)))
	}
	p("Mix: %d bookings under way at once, %s, by %s users; each reads the map %g times (the last read is the one seats are picked from; when it shows nothing that fits, one more read of another event's, up to %d events), then holds 1-4 seats, %.0f%% named from the map, %.0f%% best available in a section (up to %d reserves, the next after seat_taken); "+
		"of the holds %.0f%% are paid (tok_visa), %.0f%% released, %.0f%% left to expire; %.0f%% of the paid bookings are cancelled %s after payment. ",
		c.Conns, rate, num(c.Users), c.MapReads, maxLooks, 100*(1-c.BestShare), 100*c.BestShare, c.Attempts,
		100*c.ConfirmShare, 100*c.ReleaseShare, 100*(1-c.ConfirmShare-c.ReleaseShare), 100*c.CancelShare, dur(c.CancelAfter))
	p("Load %s (the bookings under way at its end finished %s later), sampled every %s, %s timeout and %d retries with the same key, seed %d.\n\n",
		dur(r.Load), dur(r.Drained), dur(c.Interval), dur(c.Timeout), c.Retries, c.Seed)

	a := r.Audit
	verdict := "PASS (nothing oversold, nothing lost)"
	if err := r.Failed(); err != nil {
		verdict = "FAIL: " + err.Error()
	}
	p("## Verdict: %s\n\n", verdict)
	p("Read from the store directly, not through the API, for each of the %s events.\n\n", num(a.Events))
	p("| check | found | must be |\n| --- | ---: | ---: |\n")
	p("| seats with two valid tickets (oversold) | %s | 0 |\n", num(a.Oversold))
	p("| seats claimed by two bookings at once | %s | 0 |\n", num(a.DoubleHeld))
	p("| paid bookings (confirm 200) not confirmed in the store, of %s paid | %s | 0 |\n", num(a.Paid), num(a.PaidLost))
	p("| cancellations answered 200 whose booking is still confirmed, of %s | %s | 0 |\n", num(a.Cancelled), num(a.CancelLost))
	p("| confirmed bookings missing tickets | %s | 0 |\n\n", num(a.MissingTickets))
	if len(a.Findings) > 0 {
		p("First findings: %s.\n\n", strings.Join(a.Findings, "; "))
	}

	ce := r.Ceilings
	p("## This machine's ceilings, same run\n\n| building block | per second |\n| --- | ---: |\n")
	if ce.Bare > 0 {
		p("| bare `net/http` handler, ~100-byte JSON, the drill's client, %d connections, %s | %s |\n", ce.Conns, dur(ce.BareTime), num(int(ce.Bare)))
	} else {
		p("| bare `net/http` handler | not measured |\n")
	}
	if ce.RedisHow != "" {
		p("| Redis `SET NX PX`: %s | %s |\n", ce.RedisHow, num(int(ce.Redis)))
	} else {
		p("| Redis | not in play (embedded holds) |\n")
	}
	p("\n")

	bk, rs, rd, rq := r.Means()
	p("## Throughput (mean over the intervals after the first)\n\n")
	p("| | per second | ratio to the bare handler | ratio to Redis `SET NX PX` |\n| --- | ---: | ---: | ---: |\n")
	p("| bookings paid (confirm 200) | %s | %s | %s |\n", num(int(math.Round(bk))), ratio3(bk, ce.Bare), ratio3(bk, ce.Redis))
	p("| bookings paid, best interval | %s | %s | %s |\n", num(int(math.Round(r.Best()))), ratio3(r.Best(), ce.Bare), ratio3(r.Best(), ce.Redis))
	p("| holds (reserve 201) | %s | %s | %s |\n", num(int(math.Round(rs))), ratio3(rs, ce.Bare), ratio3(rs, ce.Redis))
	p("| seat-map reads served (200 and 304) | %s | %s | |\n", num(int(math.Round(rd))), ratio3(rd, ce.Bare))
	p("| HTTP answers of every kind | %s | %s | |\n", num(int(math.Round(rq))), ratio3(rq, ce.Bare))
	p("| the seed's steady state, bookings (100,000 events a day, 5,000 seats each) | %s | | |\n", num(SeedSteadyBookings))
	if bk > 0 {
		p("| nodes like this one for the seed's average, at this rate | %.1f | | |\n", SeedSteadyBookings/bk)
	}
	p("\n")

	p("## Flat over time\n\n")
	if !r.FlatOK {
		p("Too few intervals to compare.\n\n")
	} else {
		f := r.Flat
		p("The last third of the intervals (%s) against the first third (%s), after the first interval as a warm-up. Latency: the median of the intervals' p99; the rest: means.\n\n",
			span(r.Intervals, f.Last), span(r.Intervals, f.First))
		p("| | first third | last third | last / first |\n| --- | ---: | ---: | ---: |\n")
		p("| bookings paid per second | %s | %s | %s |\n", num(int(math.Round(f.Bookings.First))), num(int(math.Round(f.Bookings.Last))), ratioOrNA(f.Bookings.Ratio))
		for op := range NumOps {
			x := f.P99[op]
			p("| p99 %s | %s | %s | %s |\n", op, secs(x.First), secs(x.Last), ratioOrNA(x.Ratio))
		}
		p("| server heap in use | %s | %s | %s |\n", mbf(f.Heap.First), mbf(f.Heap.Last), ratioOrNA(f.Heap.Ratio))
		p("| server resident set | %s | %s | %s |\n\n", mbf(f.RSS.First), mbf(f.RSS.Last), ratioOrNA(f.RSS.Ratio))
	}

	p("## Latency over the whole load\n\nEach operation from its send to its last answer (retries with the same key included).\n\n")
	p("| operation | completed | p50 | p95 | p99 |\n| --- | ---: | ---: | ---: | ---: |\n")
	for op := range NumOps {
		o := r.Ops[op]
		p("| %s | %s | %s | %s | %s |\n", op, num(int(o.N)), secs(o.P50), secs(o.P95), secs(o.P99))
	}
	p("\n")
	for op := range NumOps {
		tally(w, op.String()+" answer", r.Ops[op].Answers)
	}
	tally(w, "how a booking ended", r.Ends)
	tally(w, "a look at an event's map found", r.Looks)

	p("## Store at the end\n\n| | figure |\n| --- | ---: |\n")
	p("| tickets valid / seats on sale | %s / %s (%.1f%%) |\n", num(a.Sold), num(r.Seats), 100*float64(a.Sold)/float64(max(r.Seats, 1)))
	p("| cancellations sent / answered 200 | %s / %s |\n\n", num(a.CancelsSent), num(a.Cancelled))
	tally(w, "booking status (store)", a.Bookings)

	p("## Intervals\n\n")
	p("| t | bookings/s | holds/s | map reads/s | p99 map read | p99 reserve | p99 confirm | p99 release | p99 cancel | heap MB | RSS MB |\n")
	p("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, in := range r.Intervals {
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", strconv.FormatFloat(in.At.Seconds(), 'f', 0, 64)+"s",
			num(int(math.Round(in.Bookings))), num(int(math.Round(in.Reserves))), num(int(math.Round(in.Reads))),
			secs(in.Ops[OpMap].P99), secs(in.Ops[OpReserve].P99), secs(in.Ops[OpConfirm].P99), secs(in.Ops[OpRelease].P99), secs(in.Ops[OpCancel].P99),
			mbNum(in.Mem.HeapInuse), mbNum(in.Mem.RSS))
	}
	p("\n")
	if r.Shape != "" && strings.Contains(r.Shape, "in this process") {
		p("The server runs in the load generator's process: its heap and resident set include the generator's, which holds a constant few MB (user tokens, fixed-size latency histograms, the ids of paid bookings for the audit).\n")
	}
}

// span names the intervals [lo, hi) by their times.
func span(ins []SteadyInterval, r [2]int) string {
	if r[0] >= r[1] || r[1] > len(ins) {
		return "none"
	}
	from := ins[r[0]].At - ins[r[0]].Span
	return fmt.Sprintf("%.0f-%.0f s", from.Seconds(), ins[r[1]-1].At.Seconds())
}

func ratio3(x, ceiling float64) string {
	if ceiling <= 0 {
		return "n/a"
	}
	return strconv.FormatFloat(x/ceiling, 'f', 3, 64)
}

func ratioOrNA(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

func mbf(b float64) string {
	if math.IsNaN(b) {
		return "n/a"
	}
	return mb(int64(b))
}

func mbNum(b int64) string {
	if b <= 0 {
		return "n/a"
	}
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 0, 64)
}
