package drill

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/internal/numfmt"
)

// QueueSeries is the queue per second: its depth at the end of each
// second and the requests served during it, from the queue state's
// counters.
func (r *Result) QueueSeries() (depth, drained []float64) {
	n := len(r.Admitted)
	depth, drained = make([]float64, n), make([]float64, n)
	var last QueueSample
	j := 0
	for i := range n {
		prev := last.Served
		for j < len(r.Queue) && r.Queue[j].At < time.Duration(i+1)*time.Second {
			last = r.Queue[j]
			j++
		}
		depth[i], drained[i] = float64(last.Depth()), float64(last.Served-prev)
	}
	return depth, drained
}

// Drained returns when the queue was first empty again after its peak,
// from the opening, and false if it never was.
func (r *Result) Drained() (time.Duration, bool) {
	peak, at := int64(0), -1
	for i, q := range r.Queue {
		if q.Depth() > peak {
			peak, at = q.Depth(), i
		}
	}
	if at < 0 {
		return 0, false
	}
	for _, q := range r.Queue[at:] {
		if q.Depth() == 0 {
			return q.At - r.OpensAt, true
		}
	}
	return 0, false
}

// firstLast returns the first and last second with a non-zero value.
func firstLast(v []float64) (int, int) {
	first, last := -1, -1
	for i, x := range v {
		if x > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last
}

// meanOver is the mean of v over [first, last].
func meanOver(v []float64, first, last int) float64 {
	if first < 0 || last < first {
		return 0
	}
	s := 0.0
	for _, x := range v[first : last+1] {
		s += x
	}
	return s / float64(last-first+1)
}

// busyDrain is the mean drain rate over the seconds that began with
// requests in the queue: the pace of the workers when they had work.
func busyDrain(depth, drained []float64) float64 {
	n, s := 0, 0.0
	for i := 1; i < len(depth); i++ {
		if depth[i-1] > 0 {
			n++
			s += drained[i]
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// WriteReport writes the drill's report as markdown.
func WriteReport(w io.Writer, r *Result, chart string) {
	c := r.Config
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# boxoffice drill, %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	p("Target: %s.\n\n", r.Shape)
	p("Event %s: %s seats in %d sections of up to %s (tiers %s), the sale opening %s after its creation. ",
		r.EventID, num(r.Seats), r.Sections, num(c.SectionSize), strings.Join(r.Tiers, ", "), dur(r.OpensAt))
	p("%s users planned, %s arrived: %.0f%% in the waiting room before the opening, a burst at it (95%% within %s), %.0f%% over %s after it; "+
		"%.0f%% abandon after the 202, %.0f%% never pay, up to %d requests each (after a seat_taken rejection); 1-6 seats side by side, %.0f%% named from the public map, %.0f%% best available in a section. ",
		num(c.Users), num(r.Arrived), 100*c.PreShare, dur(c.Burst), 100*c.TailShare, dur(c.TailSpan()),
		100*c.AbandonShare, 100*c.NoPayShare, c.Attempts, 100*(1-c.BestShare), 100*c.BestShare)
	p("Load capped at %s (it stopped at %s), %d connections, %s timeout and %d retries with the same key, polls at most %s/s, %d seat-map readers, %d users on the live stream, seed %d.\n\n",
		dur(c.Duration), dur(r.LoadEnded), c.Conns, dur(c.Timeout), c.Retries, num(int(c.PollRate)), c.Readers, c.SSE, c.Seed)
	if chart != "" {
		p("Chart: `%s`.\n\n", chart)
	}

	a := r.Audit
	p("## Verdict: %s\n\n", verdict(r))
	p("Read from the store and the queue state directly, not through the API.\n\n")
	p("| check | found | must be |\n| --- | ---: | ---: |\n")
	p("| seats with two valid tickets (oversold) | %s | 0 |\n", num(a.Oversold))
	p("| seats claimed by two bookings at once | %s | 0 |\n", num(a.DoubleHeld))
	p("| requests with a 202 and no outcome (lost), of %s checked | %s | 0 |\n", num(a.Checked), num(a.Lost))
	p("| requests the queue counts as not served (admitted + waiting - served) | %s | 0 |\n", num(int(a.Unserved)))
	p("| paid bookings (confirm 200) not confirmed in the store | %s | 0 |\n", num(a.PaidLost))
	p("| confirmed bookings missing tickets | %s | 0 |\n\n", num(a.MissingTickets))
	p("Queue at the audit: %s (admitted %s, served %s, waiting %s).", a.SettleNote, num(int(a.Progress.Admitted)), num(int(a.Progress.Served)), num(int(a.Progress.Waiting)))
	if len(a.LostIDs) > 0 {
		p(" Lost, first few: %s.", strings.Join(a.LostIDs, ", "))
	}
	p("\n\n")

	ce := r.Ceilings
	p("## This machine's ceilings, same run\n\n| building block | per second |\n| --- | ---: |\n")
	if ce.Bare > 0 {
		p("| bare `net/http` handler, ~100-byte JSON, the drill's client, %d connections, %s | %s |\n", ce.Conns, dur(ce.BareTime), num(int(ce.Bare)))
	}
	if ce.RedisHow != "" {
		p("| Redis `SET NX PX`: %s | %s |\n", ce.RedisHow, num(int(ce.Redis)))
	} else {
		p("| Redis | not in play (embedded holds) |\n")
	}
	p("\n")

	peak, best5 := Peak(r.Admitted, 5)
	p("## Front door\n\n| | figure | ratio to the bare handler |\n| --- | ---: | ---: |\n")
	p("| admitted (202) per second, peak 1 s | %s | %s |\n", num(int(peak)), ratio(peak, ce.Bare))
	p("| admitted per second, best 5 s | %s | %s |\n", num(int(best5)), ratio(best5, ce.Bare))
	p("| time to 202 from the click, p50 / p95 / p99 | %s | |\n", pcts(r.To202))
	p("| of which waiting for a connection of the load generator, p50 / p95 / p99 | %s | |\n", pcts(r.SendLag))
	p("| one attempt's round trip, p50 / p95 / p99 | %s | |\n", pcts(r.Service))
	p("| of them a reserve's, p50 / p95 / p99 | %s | |\n", pcts(r.ReserveService))
	p("| of them a poll's, p50 / p95 / p99 | %s | |\n", pcts(r.PollService))
	p("| of them a confirm's, p50 / p95 / p99 | %s | |\n", pcts(r.ConfirmService))
	p("| requests admitted (of them in the waiting room before the opening) | %s (%s) | |\n", num(r.Requests), num(r.Prequeued))
	p("| retries with the same idempotency key | %s | |\n\n", num(int(r.Retries)))
	tally(w, "reserve answer", r.Answers)

	depth, drained := r.QueueSeries()
	peakDepth, _ := Peak(depth, 1)
	peakDrain, best5Drain := Peak(drained, 5)
	busy := busyDrain(depth, drained)
	p("## Queue\n\n| | figure |\n| --- | ---: |\n")
	p("| peak depth | %s |\n", num(int(peakDepth)))
	p("| drained per second: peak 1 s / best 5 s / mean while the queue held requests | %s / %s / %s |\n", num(int(peakDrain)), num(int(best5Drain)), num(int(busy)))
	if ce.Redis > 0 {
		p("| mean drain while busy, as a share of Redis `SET NX PX` | %s |\n", ratio(busy, ce.Redis))
	}
	if at, ok := r.Drained(); ok {
		p("| queue empty again, after the opening | %s |\n", dur(at))
	} else {
		p("| queue empty again | not within the drill |\n")
	}
	p("| time to outcome (click or opening to the outcome in the queue state), p50 / p95 / p99 | %s |\n", pcts(r.ToOutcome))
	p("| time until the user learned it by polling, p50 / p95 / p99 (%s requests) | %s |\n", num(len(r.Learned)), pcts(r.Learned))
	pollPeak, _ := Peak(r.Polls, 1)
	pf, pl := firstLast(r.Polls)
	p("| polls per second, mean / peak (budget --poll-rate %s) | %s / %s |\n", num(int(c.PollRate)), num(int(meanOver(r.Polls, pf, pl))), num(int(pollPeak)))
	p("| a poll's delay past when its page meant to ask, p50 / p95 / p99 | %s |\n", pcts(r.PollLag))
	p("| live stream: outcome to its event, p50 / p95 / p99 (%s requests) | %s |\n", num(len(r.Push)), pcts(r.Push))
	p("| queued requests first answered without an estimate | %s |\n\n", num(int(r.NoEstimate)))

	wa := r.Wait
	p("Predicted vs actual wait: each request's first estimate while queued (the 202's, or the first poll's after the opening draw) against the time from that answer to its outcome in the queue state. ")
	p("%s requests: median absolute error %s, median error %s (negative: it took longer than promised), %.0f%% within 25%% + 2 s.\n\n",
		num(wa.N), secs(wa.MedianAbsError), secs(wa.MedianError), 100*wa.Within)
	if len(wa.Bins) > 0 {
		p("| predicted | requests | median predicted | median actual |\n| --- | ---: | ---: | ---: |\n")
		for _, b := range wa.Bins {
			hi := strconv.FormatFloat(b.Hi, 'f', -1, 64) + " s"
			if math.IsInf(b.Hi, 1) {
				hi = "…"
			}
			p("| %g s – %s | %s | %s | %s |\n", b.Lo, hi, num(b.N), secs(b.MedianPredicted), secs(b.MedianActual))
		}
		p("\n")
	}
	tally(w, "poll error", r.PollErrors)

	p("## Sale\n\n| | figure |\n| --- | ---: |\n")
	if r.SoldOut >= 0 {
		p("| sold out on the public map (no seat available), after the opening | %s |\n", dur(r.SoldOut))
	} else {
		p("| sold out on the public map | never during the drill |\n")
	}
	p("| tickets sold / seats | %s / %s (%.1f%%) |\n", num(a.Sold), num(r.Seats), 100*float64(a.Sold)/float64(max(r.Seats, 1)))
	if !a.LastTicket.IsZero() {
		p("| last ticket issued, after the opening | %s |\n", dur(a.LastTicket.Sub(r.Opened)))
	}
	p("| confirm, from the pay click to the answer, p50 / p95 / p99 | %s |\n\n", pcts(r.ConfirmTime))
	tally(w, "booking status (store)", a.Bookings)
	tally(w, "outcome learned (status reason)", r.Outcomes)
	tally(w, "confirm answer", r.Confirms)
	tally(w, "how a visit ended", r.Ends)

	reads := make([]float64, len(r.Reads200))
	var n200, n304 float64
	for i := range reads {
		reads[i] = r.Reads200[i] + r.Reads304[i]
		n200 += r.Reads200[i]
		n304 += r.Reads304[i]
	}
	rf, rl := firstLast(reads)
	rl = min(rl, int(r.LoadEnded/time.Second))
	rmean := meanOver(reads, rf, rl)
	rpeak, _ := Peak(reads, 1)
	p("## Seat map meanwhile\n\n| | figure | ratio to the bare handler |\n| --- | ---: | ---: |\n")
	p("| reads served per second (200 and 304), mean while the load ran | %s | %s |\n", num(int(rmean)), ratio(rmean, ce.Bare))
	p("| reads served per second, peak 1 s | %s | %s |\n", num(int(rpeak)), ratio(rpeak, ce.Bare))
	p("| share answered 304 Not Modified | %.1f%% | |\n\n", 100*n304/max(n200+n304, 1))

	p("## Timeline (every 5 s from the event's creation; the sale opens at %s)\n\n", dur(r.OpensAt))
	p("| t | clicks/s | 202/s | refused/s | queue depth | drained/s | confirms/s | map reads/s |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for i := 0; i < len(r.Admitted); i += 5 {
		j := min(i+5, len(r.Admitted))
		avg := func(v []float64) string { return num(int(math.Round(meanOver(v, i, j-1)))) }
		p("| %ds | %s | %s | %s | %s | %s | %s | %s |\n", i, avg(r.Arrivals), avg(r.Admitted), avg(r.Refused),
			num(int(depth[j-1])), avg(drained), avg(r.Confirmed), avg(reads))
	}
	p("\n")
}

func verdict(r *Result) string {
	if err := r.Failed(); err != nil {
		return "FAIL: " + err.Error()
	}
	return "PASS (nothing oversold, nobody lost)"
}

// tally writes a two-column table of counts, largest first.
func tally(w io.Writer, what string, m map[string]int) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	fmt.Fprintf(w, "| %s | count |\n| --- | ---: |\n", what)
	for _, k := range keys {
		fmt.Fprintf(w, "| %s | %s |\n", strings.TrimSpace(k), num(m[k]))
	}
	fmt.Fprintln(w)
}

// num formats an integer with thousands separators.
func num(n int) string { return numfmt.Thousands(n) }

func ratio(x, ceiling float64) string {
	if ceiling <= 0 {
		return "n/a"
	}
	return strconv.FormatFloat(x/ceiling, 'f', 2, 64)
}

func secs(s float64) string {
	switch {
	case math.IsNaN(s):
		return "n/a"
	case math.Abs(s) < 1:
		return strconv.FormatFloat(s*1000, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(s, 'f', 1, 64) + " s"
}

func pcts(sorted []float64) string {
	if len(sorted) == 0 {
		return "n/a"
	}
	return secs(Percentile(sorted, 50)) + " / " + secs(Percentile(sorted, 95)) + " / " + secs(Percentile(sorted, 99))
}

func dur(d time.Duration) string {
	return secs(d.Seconds())
}
