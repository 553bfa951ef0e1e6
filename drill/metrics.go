package drill

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxoffice/boxoffice"
)

// series counts events per second since the drill's start: the time axis
// of the report and the chart. Counting is one atomic add, so that the
// load generator's own bookkeeping costs nothing measurable.
type series struct {
	t0      time.Time
	buckets []atomic.Int64
}

func newSeries(t0 time.Time, span time.Duration) *series {
	return &series{t0: t0, buckets: make([]atomic.Int64, int(span/time.Second)+1)}
}

func (s *series) add(at time.Time, n int64) {
	i := int(at.Sub(s.t0) / time.Second)
	s.buckets[min(max(i, 0), len(s.buckets)-1)].Add(n)
}

// values returns the first n buckets.
func (s *series) values(n int) []float64 {
	n = min(n, len(s.buckets))
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(s.buckets[i].Load())
	}
	return out
}

// samples collects durations, in seconds, for percentiles.
type samples struct {
	mu sync.Mutex
	v  []float64
}

func (s *samples) add(d time.Duration) {
	s.mu.Lock()
	s.v = append(s.v, d.Seconds())
	s.mu.Unlock()
}

// sorted returns a sorted copy.
func (s *samples) sorted() []float64 {
	s.mu.Lock()
	out := slices.Clone(s.v)
	s.mu.Unlock()
	slices.Sort(out)
	return out
}

// counter counts labelled outcomes (answers by status, outcomes by
// reason).
type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) add(label string) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[label]++
	c.mu.Unlock()
}

func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method, NaN when sorted is empty.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Peak returns the largest value of v and the largest mean over window
// consecutive values: a one-second peak says little on its own, a
// sustained rate says what the system kept up.
func Peak(v []float64, window int) (peak, sustained float64) {
	for i, x := range v {
		peak = max(peak, x)
		if i+1 >= window {
			sum := 0.0
			for _, y := range v[i+1-window : i+1] {
				sum += y
			}
			sustained = max(sustained, sum/float64(window))
		}
	}
	if len(v) < window && len(v) > 0 {
		sum := 0.0
		for _, y := range v {
			sum += y
		}
		sustained = sum / float64(len(v))
	}
	return peak, sustained
}

// WaitPoint is one request's wait as the queue predicted it and as it
// turned out, in seconds from the moment of the prediction.
type WaitPoint struct {
	Predicted, Actual float64
	// At is when the prediction was made, from the event's creation, and
	// Ahead how many requests the answer said were ahead.
	At    time.Duration
	Ahead int64
}

// WaitBin is the requests whose prediction fell in [Lo, Hi).
type WaitBin struct {
	Lo, Hi                        float64
	N                             int
	MedianPredicted, MedianActual float64
}

// WaitAccuracy sums up how well the queue's estimates held.
type WaitAccuracy struct {
	N int
	// MedianAbsError is the median of |predicted - actual|; MedianError
	// the median of predicted - actual (negative: the queue promised less
	// than it took).
	MedianAbsError, MedianError float64
	// Within is the share within 25% of the actual wait plus 2 s
	// (boxoffice.WaitEstimateWithin, the rule the metrics count by too).
	Within float64
	Bins   []WaitBin
}

// waitBinEdges are the bins of the predicted wait, seconds: finer where
// people notice the difference.
var waitBinEdges = []float64{0, 1, 2, 5, 10, 20, 40, 80, 160, 320, math.Inf(1)}

// Accuracy computes the estimate's accuracy over points.
func Accuracy(points []WaitPoint) WaitAccuracy {
	a := WaitAccuracy{N: len(points)}
	if len(points) == 0 {
		return a
	}
	abs := make([]float64, len(points))
	signed := make([]float64, len(points))
	within := 0
	for i, p := range points {
		e := p.Predicted - p.Actual
		signed[i], abs[i] = e, math.Abs(e)
		if boxoffice.WaitEstimateWithin(p.Predicted, p.Actual) {
			within++
		}
	}
	slices.Sort(abs)
	slices.Sort(signed)
	a.MedianAbsError, a.MedianError = Percentile(abs, 50), Percentile(signed, 50)
	a.Within = float64(within) / float64(len(points))
	for i := 0; i+1 < len(waitBinEdges); i++ {
		lo, hi := waitBinEdges[i], waitBinEdges[i+1]
		var pred, act []float64
		for _, p := range points {
			if p.Predicted >= lo && p.Predicted < hi {
				pred, act = append(pred, p.Predicted), append(act, p.Actual)
			}
		}
		if len(pred) == 0 {
			continue
		}
		slices.Sort(pred)
		slices.Sort(act)
		a.Bins = append(a.Bins, WaitBin{Lo: lo, Hi: hi, N: len(pred), MedianPredicted: Percentile(pred, 50), MedianActual: Percentile(act, 50)})
	}
	return a
}

// bucket is a token bucket: rate tokens a second, at most burst saved.
// Not safe for concurrent use (the scheduler holds its lock).
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

// take takes a token at now, or reports when the next one is due.
func (b *bucket) take(now time.Time) (bool, time.Time) {
	if b.rate <= 0 {
		return true, now
	}
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, now
	}
	return false, now.Add(time.Duration((1 - b.tokens) / b.rate * float64(time.Second)))
}
