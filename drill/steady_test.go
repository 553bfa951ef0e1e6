package drill

import (
	"bytes"
	"math"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestZipfPicker: the draws follow k^-s: the head's shares match the law,
// popularity falls with rank, and s = 0 is uniform.
func TestZipfPicker(t *testing.T) {
	const n, draws = 1000, 400_000
	z := newZipfPicker(n, 1.1)
	rng := mrand.New(mrand.NewPCG(1, 2))
	counts := make([]int, n)
	for range draws {
		counts[z.pick(rng)]++
	}
	h := 0.0
	for k := 1; k <= n; k++ {
		h += math.Pow(float64(k), -1.1)
	}
	for k := 1; k <= 5; k++ {
		want := math.Pow(float64(k), -1.1) / h
		got := float64(counts[k-1]) / draws
		if math.Abs(got-want) > 0.05*want {
			t.Errorf("rank %d drawn %.4f of the time, want %.4f", k, got, want)
		}
	}
	if !(counts[0] > counts[1] && counts[1] > counts[3] && counts[3] > counts[15] && counts[15] > counts[255]) {
		t.Errorf("popularity does not fall with rank: %d %d %d %d %d", counts[0], counts[1], counts[3], counts[15], counts[255])
	}
	top10 := 0
	for _, c := range counts[:10] {
		top10 += c
	}
	if got := float64(top10) / draws; math.Abs(got-z.top(10)) > 0.01 {
		t.Errorf("top 10 drawn %.3f of the time, top(10) says %.3f", got, z.top(10))
	}
	if z.top(n) < 0.999999 || z.top(2*n) != z.top(n) || z.top(0) != 0 {
		t.Errorf("top: all %v, beyond %v, none %v", z.top(n), z.top(2*n), z.top(0))
	}
	// The most popular event of 1,000 at s = 1.1 draws about 18%.
	if s := z.top(1); s < 0.17 || s > 0.19 {
		t.Errorf("top(1) = %.3f, want about 0.18", s)
	}

	u := newZipfPicker(10, 0)
	counts = make([]int, 10)
	for range 100_000 {
		counts[u.pick(rng)]++
	}
	for i, c := range counts {
		if c < 9_000 || c > 11_000 {
			t.Errorf("uniform: index %d drawn %d times of 100,000", i, c)
		}
	}
	one := newZipfPicker(1, 1.1)
	for range 100 {
		if i := one.pick(rng); i != 0 {
			t.Fatalf("one event: drew %d", i)
		}
	}
}

func TestHistQuantile(t *testing.T) {
	var h hist
	if !math.IsNaN(h.quantile(50)) {
		t.Error("an empty histogram has a median")
	}
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for _, c := range []struct{ p, want float64 }{{50, 0.5}, {99, 0.99}, {100, 1.0}, {1, 0.01}} {
		if got := h.quantile(c.p); math.Abs(got-c.want) > 0.02*c.want {
			t.Errorf("p%g = %.4f s, want %.3f s within 2%%", c.p, got, c.want)
		}
	}
	var tiny hist
	tiny.add(0)
	tiny.add(time.Hour) // beyond the last bucket: kept there
	if tiny.n != 2 || tiny.counts[0] != 1 || tiny.counts[histBuckets-1] != 1 {
		t.Errorf("out-of-range values not clamped: n %d, first %d, last %d", tiny.n, tiny.counts[0], tiny.counts[histBuckets-1])
	}
}

// steadyInterval makes an interval with every operation's p99 at p99 and
// the memory at heap MB.
func steadyInterval(at int, bookings, p99 float64, heap int64) SteadyInterval {
	in := SteadyInterval{At: time.Duration(at) * 5 * time.Second, Span: 5 * time.Second, Bookings: bookings, Reserves: bookings * 1.25,
		Reads: bookings * 3, Requests: bookings * 6, Mem: Memory{HeapInuse: heap << 20, RSS: 2 * heap << 20}}
	for op := range NumOps {
		in.Ops[op] = OpStat{N: 100, P50: p99 / 4, P99: p99}
	}
	return in
}

func TestFlat(t *testing.T) {
	// A warm-up interval wildly off, then 9 intervals: the first three at
	// 10 ms and 100 MB, the middle ones drifting, the last three at 20 ms
	// (one spike, which the median ignores) and 150 MB.
	ins := []SteadyInterval{steadyInterval(1, 50, 5, 500)}
	for i, p := range []float64{0.010, 0.010, 0.010, 0.012, 0.015, 0.018, 0.020, 0.500, 0.020} {
		heap := int64(100)
		if i >= 6 {
			heap = 150
		}
		ins = append(ins, steadyInterval(i+2, 400, p, heap))
	}
	f, ok := Flat(ins)
	if !ok {
		t.Fatal("not computed")
	}
	if f.First != [2]int{1, 4} || f.Last != [2]int{7, 10} {
		t.Errorf("compared %v with %v, want [1 4] and [7 10]", f.First, f.Last)
	}
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("bookings ratio", f.Bookings.Ratio, 1)
	near("p99 first", f.P99[OpReserve].First, 0.010)
	near("p99 last (median)", f.P99[OpReserve].Last, 0.020)
	near("p99 ratio", f.P99[OpConfirm].Ratio, 2)
	near("heap ratio", f.Heap.Ratio, 1.5)
	near("rss ratio", f.RSS.Ratio, 1.5)

	// An operation never seen in the first third: no ratio, not a zero.
	for i := 1; i < 4; i++ {
		ins[i].Ops[OpCancel] = OpStat{P50: math.NaN(), P99: math.NaN()}
	}
	// Memory not sampled: no ratio.
	for i := range ins {
		ins[i].Mem = Memory{}
	}
	f, _ = Flat(ins)
	if !math.IsNaN(f.P99[OpCancel].Ratio) || !math.IsNaN(f.P99[OpCancel].First) || f.P99[OpCancel].Last != 0.020 {
		t.Errorf("cancel unseen at first: %+v", f.P99[OpCancel])
	}
	if !math.IsNaN(f.Heap.Ratio) || !math.IsNaN(f.RSS.Ratio) {
		t.Errorf("memory unsampled: heap %+v rss %+v", f.Heap, f.RSS)
	}

	// Three intervals: the warm-up and one on either side.
	f, ok = Flat(ins[:3])
	if !ok || f.First != [2]int{1, 2} || f.Last != [2]int{2, 3} {
		t.Errorf("three intervals: ok %v, %v / %v", ok, f.First, f.Last)
	}
	if _, ok := Flat(ins[:2]); ok {
		t.Error("two intervals compared")
	}
}

func TestParseMemoryMetrics(t *testing.T) {
	text := `# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 1.2345678e+07
go_memstats_heap_inuse_bytes_total_not_this 5
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 9.8304e+07
boxoffice_holds_total{event="1"} 3
`
	m, err := ParseMemoryMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if m.HeapInuse != 12345678 || m.RSS != 98304000 {
		t.Errorf("parsed %+v", m)
	}
	if _, err := ParseMemoryMetrics(strings.NewReader("up 1\n")); err == nil {
		t.Error("metrics without memory accepted")
	}
	if _, err := ParseMemoryMetrics(strings.NewReader("process_resident_memory_bytes lots\n")); err == nil {
		t.Error("an unreadable value accepted")
	}
}

func TestSteadyVenue(t *testing.T) {
	for _, c := range []struct{ seats, sections int }{{500, 4}, {5000, 10}, {40, 4}, {70, 1}, {1, 1}, {200_000, 200}} {
		v := SteadyVenue(c.seats, c.sections)
		total, width := 0, 0
		for _, s := range v {
			total += s.Rows * s.SeatsPerRow
			width = s.SeatsPerRow
			if s.SeatsPerRow > seatsPerRow || s.Rows < 1 {
				t.Errorf("%d seats / %d sections: section %+v", c.seats, c.sections, s)
			}
		}
		if len(v) != c.sections || total < c.seats || total >= c.seats+c.sections*width+c.sections {
			t.Errorf("%d seats / %d sections: %d sections, %d seats", c.seats, c.sections, len(v), total)
		}
	}
	if v := SteadyVenue(500, 4); v[0].PriceTier != "premium" || v[3].PriceTier != "bronze" || v[0].Name != "S01" {
		t.Errorf("tiers: %+v", v)
	}
}

func TestSteadyConfigValidate(t *testing.T) {
	if err := DefaultSteadyConfig().Validate(); err != nil {
		t.Fatalf("the default: %v", err)
	}
	for name, mod := range map[string]func(*SteadyConfig){
		"no events":           func(c *SteadyConfig) { c.Events = 0 },
		"too many seats":      func(c *SteadyConfig) { c.Seats = 300_000 },
		"fewer seats":         func(c *SteadyConfig) { c.Seats, c.Sections = 3, 4 },
		"shares over 1":       func(c *SteadyConfig) { c.ConfirmShare, c.ReleaseShare = 0.8, 0.3 },
		"no map read":         func(c *SteadyConfig) { c.MapReads = 0.5 },
		"short":               func(c *SteadyConfig) { c.Duration = 10 * time.Second },
		"limit under a party": func(c *SteadyConfig) { c.TicketLimit = 3 },
		"negative zipf":       func(c *SteadyConfig) { c.Zipf = -1 },
	} {
		c := DefaultSteadyConfig()
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSteadyParty(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(3, 4))
	counts := make([]int, 5)
	for range 100_000 {
		counts[steadyParty(rng.Float64())]++
	}
	if counts[0] != 0 {
		t.Errorf("party of 0 drawn %d times", counts[0])
	}
	for i, w := range steadyPartyWeights {
		if got := float64(counts[i+1]) / 100_000; math.Abs(got-w) > 0.01 {
			t.Errorf("party of %d drawn %.3f of the time, want %.2f", i+1, got, w)
		}
	}
}

func TestCancelQueue(t *testing.T) {
	var q cancelQueue
	t0 := time.Now()
	for i := range 3000 {
		q.push(cancelJob{key: string(rune('a' + i%26)), due: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	if _, ok := q.pop(t0.Add(-time.Millisecond)); ok {
		t.Fatal("popped a job before it was due")
	}
	n := 0
	for {
		j, ok := q.pop(t0.Add(2 * time.Second))
		if !ok {
			break
		}
		if want := t0.Add(time.Duration(n) * time.Millisecond); !j.due.Equal(want) {
			t.Fatalf("job %d due %v, want %v", n, j.due.Sub(t0), want.Sub(t0))
		}
		n++
	}
	if n != 2001 {
		t.Errorf("popped %d jobs due within 2 s, want 2,001", n)
	}
	if len(q.jobs)-q.head != 999 {
		t.Errorf("%d jobs left, want 999", len(q.jobs)-q.head)
	}
}

// sampleSteady is a small steady drill's result.
func sampleSteady() *SteadyResult {
	r := &SteadyResult{
		Config: DefaultSteadyConfig(), Shape: "PostgreSQL, Redis holds; boxoffice at http://127.0.0.1:8080",
		Started: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC), Events: 1000, SeatsPerEvent: 504, Seats: 504_000, Sections: 4,
		Tiers: []string{"premium", "gold", "silver", "bronze"}, Created: 40 * time.Second, SetUp: 45 * time.Second,
		Load: 3 * time.Minute, Drained: 80 * time.Millisecond,
		Ceilings: Ceilings{Bare: 20000, Conns: 64, BareTime: 3 * time.Second, Redis: 50000, RedisHow: "redis-benchmark ..."},
		Flows:    1000, Bookings: 800, Reserves: 1000, Reads: 3000, Requests: 6000,
		Ends:     map[string]int{"paid": 800, "released": 100},
		Looks:    map[string]int{"seats picked": 1000},
		TopShare: [3]float64{0.18, 0.5, 0.8},
		Audit: SteadyAudit{Events: 1000, Paid: 800, CancelsSent: 40, Cancelled: 40, Sold: 1900,
			Bookings: map[string]int{"confirmed": 760, "cancelled": 40}},
	}
	for i := range 6 {
		r.Intervals = append(r.Intervals, steadyInterval(i+1, 400, 0.02, 100))
	}
	r.Intervals[2].Ops[OpCancel] = OpStat{P50: math.NaN(), P99: math.NaN()}
	r.Intervals[3].Mem = Memory{}
	for op := range NumOps {
		r.Ops[op] = OpTotal{N: 100, P50: 0.002, P95: 0.01, P99: 0.02, Answers: map[string]int{"200": 100}}
	}
	r.Flat, r.FlatOK = Flat(r.Intervals)
	return r
}

func TestSteadyReport(t *testing.T) {
	r := sampleSteady()
	var b bytes.Buffer
	WriteSteadyReport(&b, r)
	out := b.String()
	for _, want := range []string{
		"# boxoffice steady drill, 2026-12-04 10:00 UTC",
		"1,000 direct-sale events on sale at once, each of 504 seats in 4 sections",
		"## Verdict: PASS",
		"| seats with two valid tickets (oversold) | 0 | 0 |",
		"| paid bookings (confirm 200) not confirmed in the store, of 800 paid | 0 | 0 |",
		"| bookings paid (confirm 200) | 400 | 0.020 | 0.008 |",
		"| nodes like this one for the seed's average, at this rate | 14.5 |",
		"| bookings paid per second | 400 | 400 | 1.00 |",
		"| p99 reserve | 20 ms | 20 ms | 1.00 |",
		"| server heap in use | 100 MB | 100 MB | 1.00 |",
		"| t | bookings/s | holds/s | map reads/s | p99 map read | p99 reserve | p99 confirm | p99 release | p99 cancel | heap MB | RSS MB |",
		"| 15s | 400 | 500 | 1,200 | 20 ms | 20 ms | 20 ms | 20 ms | n/a | 100 | 200 |",
		"| 20s | 400 | 500 | 1,200 | 20 ms | 20 ms | 20 ms | 20 ms | 20 ms | n/a | n/a |",
		"| how a booking ended | count |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Count(out, "s | 400 | 500 |") != 6 {
		t.Errorf("want 6 interval rows:\n%s", out)
	}
	if strings.Contains(out, "NaN") {
		t.Errorf("report shows a NaN:\n%s", out)
	}

	r.Audit.Oversold, r.Audit.PaidLost = 2, 1
	r.Audit.Findings = []string{"event 7: oversold 2"}
	if r.Failed() == nil {
		t.Fatal("an oversold drill passed")
	}
	b.Reset()
	WriteSteadyReport(&b, r)
	for _, want := range []string{
		"## Verdict: FAIL: 2 seats oversold (two valid tickets); 1 paid bookings (confirm 200) not confirmed in the store",
		"First findings: event 7: oversold 2.",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("failed report lacks %q", want)
		}
	}

	// Too short to compare.
	r.Intervals, r.FlatOK = r.Intervals[:2], false
	b.Reset()
	WriteSteadyReport(&b, r)
	if !strings.Contains(b.String(), "Too few intervals to compare.") {
		t.Error("a short drill compared thirds")
	}
}
