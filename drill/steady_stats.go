package drill

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// hist is a latency histogram of fixed size: buckets growing by 2% from
// 1 µs to about 400 s, so that a drill of any length keeps its percentiles
// in constant memory (the load generator shares the process with an
// in-process server, whose memory the drill samples).
type hist struct {
	counts [histBuckets]int64
	n      int64
}

const (
	histBuckets = 1000
	histBase    = 1e-6 // seconds
	histGrowth  = 1.02
)

var histLogGrowth = math.Log(histGrowth)

func (h *hist) add(d time.Duration) {
	s := d.Seconds()
	i := 0
	if s > histBase {
		i = int(math.Log(s/histBase) / histLogGrowth)
	}
	h.counts[min(max(i, 0), histBuckets-1)]++
	h.n++
}

// quantile returns the p-th percentile (0 < p <= 100) in seconds by the
// nearest rank, as the middle of its bucket (within 1%); NaN when empty.
func (h *hist) quantile(p float64) float64 {
	if h.n == 0 {
		return math.NaN()
	}
	rank := max(int64(math.Ceil(p/100*float64(h.n))), 1)
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return histBase * math.Pow(histGrowth, float64(i)+0.5)
		}
	}
	return histBase * math.Pow(histGrowth, histBuckets)
}

// opStats are one kind of operation's latencies: over the current
// interval and over the whole load.
type opStats struct {
	mu         sync.Mutex
	cur, total hist
}

func (o *opStats) add(d time.Duration) {
	o.mu.Lock()
	o.cur.add(d)
	o.total.add(d)
	o.mu.Unlock()
}

// flush returns the interval's figures and starts the next interval.
func (o *opStats) flush() OpStat {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := OpStat{N: o.cur.n, P50: o.cur.quantile(50), P99: o.cur.quantile(99)}
	o.cur = hist{}
	return s
}

// OpStat is one kind of operation over an interval: how many completed
// and their latency percentiles, seconds (NaN: none).
type OpStat struct {
	N        int64
	P50, P99 float64
}

// SteadyInterval is one sampling interval of the load.
type SteadyInterval struct {
	// At is the interval's end from the start of the load, Span its
	// length.
	At, Span time.Duration
	// Per second over the interval: bookings paid (confirm 200), holds
	// made (reserve 201), seat-map reads served (200 and 304), HTTP
	// answers of any kind.
	Bookings, Reserves, Reads, Requests float64
	Ops                                 [NumOps]OpStat
	// Mem is the server's memory at the interval's end (zero: not
	// sampled); MemErr why it is not.
	Mem    Memory
	MemErr string
}

// sampler turns the runner's counters into intervals.
type sampler struct {
	r                  *steadyRunner
	t0, last           time.Time
	bookings, reserves int64
	reads, requests    int64
}

func (s *sampler) sample(ctx context.Context, now time.Time) SteadyInterval {
	r := s.r
	span := now.Sub(s.last)
	in := SteadyInterval{At: now.Sub(s.t0), Span: span}
	sec := span.Seconds()
	rate := func(c int64, prev *int64) float64 {
		d := c - *prev
		*prev = c
		return float64(d) / sec
	}
	in.Bookings = rate(r.bookings.Load(), &s.bookings)
	in.Reserves = rate(r.reserves.Load(), &s.reserves)
	in.Reads = rate(r.reads.Load(), &s.reads)
	in.Requests = rate(r.requests.Load(), &s.requests)
	for op := range NumOps {
		in.Ops[op] = r.ops[op].flush()
	}
	s.last = now
	if r.t.Memory != nil {
		m, err := r.t.Memory(ctx)
		if err != nil {
			in.MemErr = err.Error()
		}
		in.Mem = m
	}
	if r.t.Progress != nil {
		fmt.Fprintf(r.t.Progress, "steady: t=%4.0fs bookings %s/s, holds %s/s, map reads %s/s, p99 reserve %s confirm %s map %s, heap %s\n",
			in.At.Seconds(), num(int(math.Round(in.Bookings))), num(int(math.Round(in.Reserves))), num(int(math.Round(in.Reads))),
			secs(in.Ops[OpReserve].P99), secs(in.Ops[OpConfirm].P99), secs(in.Ops[OpMap].P99), mb(in.Mem.HeapInuse))
	}
	return in
}

// Memory is a server's memory in bytes (0: unknown).
type Memory struct {
	// HeapInuse is the Go heap's spans in use (after a collection, for a
	// server in this process); RSS the process's resident set.
	HeapInuse, RSS int64
}

// ProcessMemory is the memory of this process: the heap in use right
// after a collection, and the resident set (Linux). A server drilled in
// this process shares it with the load generator, whose own memory the
// steady drill keeps small and constant.
func ProcessMemory(context.Context) (Memory, error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := Memory{HeapInuse: int64(ms.HeapInuse)}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				m.RSS = pages * int64(os.Getpagesize())
			}
		}
	}
	return m, nil
}

// MetricsMemory reads a server's memory from its Prometheus metrics at
// url (".../metrics", which boxoffice serves to an organiser's token):
// go_memstats_heap_inuse_bytes and process_resident_memory_bytes. The
// heap is as the server last saw it, not after a collection.
func MetricsMemory(url, token string) func(ctx context.Context) (Memory, error) {
	hc := &http.Client{Timeout: 10 * time.Second}
	return func(ctx context.Context) (Memory, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return Memory{}, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return Memory{}, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			_, _ = io.Copy(io.Discard, resp.Body)
			return Memory{}, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return ParseMemoryMetrics(resp.Body)
	}
}

// ParseMemoryMetrics reads the heap in use and the resident set from a
// Prometheus text exposition.
func ParseMemoryMetrics(r io.Reader) (Memory, error) {
	var m Memory
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	found := false
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		var dst *int64
		switch name {
		case "go_memstats_heap_inuse_bytes":
			dst = &m.HeapInuse
		case "process_resident_memory_bytes":
			dst = &m.RSS
		default:
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return m, fmt.Errorf("metrics: %s %q: %w", name, val, err)
		}
		*dst, found = int64(f), true
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	if !found {
		return m, errors.New("metrics: neither go_memstats_heap_inuse_bytes nor process_resident_memory_bytes")
	}
	return m, nil
}

// Flatness compares the last third of the intervals with the first
// third, after a warm-up interval: a ratio near 1 is flat.
type Flatness struct {
	// First and Last are the compared intervals' indexes, [lo, hi).
	First, Last [2]int
	// Bookings/s, mean per interval.
	Bookings Ratio
	// P99 per kind of operation: the median of the intervals' p99s.
	P99 [NumOps]Ratio
	// Heap in use and resident set, mean per interval.
	Heap, RSS Ratio
}

// Ratio is a figure over the first and the last third and Last/First
// (NaN when either is unknown or the first is zero).
type Ratio struct {
	First, Last, Ratio float64
}

// Flat computes the flatness of intervals; ok is false when there are
// fewer than two intervals after the warm-up.
func Flat(intervals []SteadyInterval) (Flatness, bool) {
	var f Flatness
	n := len(intervals) - 1 // the first is the warm-up
	if n < 2 {
		return f, false
	}
	k := max(1, n/3)
	f.First = [2]int{1, 1 + k}
	f.Last = [2]int{len(intervals) - k, len(intervals)}
	first, last := intervals[f.First[0]:f.First[1]], intervals[f.Last[0]:f.Last[1]]
	f.Bookings = ratioOf(first, last, func(in SteadyInterval) float64 { return in.Bookings }, mean)
	for op := range NumOps {
		f.P99[op] = ratioOf(first, last, func(in SteadyInterval) float64 { return in.Ops[op].P99 }, median)
	}
	known := func(v int64) float64 {
		if v <= 0 {
			return math.NaN()
		}
		return float64(v)
	}
	f.Heap = ratioOf(first, last, func(in SteadyInterval) float64 { return known(in.Mem.HeapInuse) }, mean)
	f.RSS = ratioOf(first, last, func(in SteadyInterval) float64 { return known(in.Mem.RSS) }, mean)
	return f, true
}

func ratioOf(first, last []SteadyInterval, get func(SteadyInterval) float64, agg func([]float64) float64) Ratio {
	vals := func(ins []SteadyInterval) []float64 {
		var v []float64
		for _, in := range ins {
			if x := get(in); !math.IsNaN(x) {
				v = append(v, x)
			}
		}
		return v
	}
	r := Ratio{First: agg(vals(first)), Last: agg(vals(last)), Ratio: math.NaN()}
	if !math.IsNaN(r.First) && !math.IsNaN(r.Last) && r.First > 0 {
		r.Ratio = r.Last / r.First
	}
	return r
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// mb formats bytes as MB (n/a for 0).
func mb(b int64) string {
	if b <= 0 {
		return "n/a"
	}
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 0, 64) + " MB"
}
