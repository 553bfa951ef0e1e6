package drill

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPercentile(t *testing.T) {
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(i + 1)
	}
	for _, tc := range []struct{ p, want float64 }{{50, 50}, {95, 95}, {99, 99}, {100, 100}, {0.1, 1}} {
		if got := Percentile(v, tc.p); got != tc.want {
			t.Errorf("p%g = %g, want %g", tc.p, got, tc.want)
		}
	}
	if got := Percentile([]float64{7}, 99); got != 7 {
		t.Errorf("one value: %g", got)
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("no values: want NaN")
	}
}

func TestPeak(t *testing.T) {
	peak, five := Peak([]float64{0, 10, 2, 8, 6, 4, 0, 0}, 5)
	if peak != 10 || five != 6 {
		t.Errorf("peak %g, best 5 s %g; want 10, 6", peak, five)
	}
	if _, short := Peak([]float64{3, 5}, 5); short != 4 {
		t.Errorf("fewer values than the window: %g, want their mean 4", short)
	}
}

func TestAccuracy(t *testing.T) {
	a := Accuracy([]WaitPoint{
		{Predicted: 1, Actual: 1},     // exact
		{Predicted: 4.5, Actual: 1.5}, // 3 s pessimistic: outside 25% + 2 s
		{Predicted: 10, Actual: 12},   // 2 s optimistic: within 5 s
		{Predicted: 30, Actual: 60},   // 30 s optimistic: outside 17 s
		{Predicted: 0.5, Actual: 0.2}, // within
	})
	if a.N != 5 || a.MedianAbsError != 2 || a.MedianError != 0 {
		t.Errorf("n %d, median |e| %g, median e %g; want 5, 2, 0", a.N, a.MedianAbsError, a.MedianError)
	}
	if math.Abs(a.Within-0.6) > 1e-9 {
		t.Errorf("within %g, want 0.6", a.Within)
	}
	want := []WaitBin{
		{Lo: 0, Hi: 1, N: 1, MedianPredicted: 0.5, MedianActual: 0.2},
		{Lo: 1, Hi: 2, N: 1, MedianPredicted: 1, MedianActual: 1},
		{Lo: 2, Hi: 5, N: 1, MedianPredicted: 4.5, MedianActual: 1.5},
		{Lo: 10, Hi: 20, N: 1, MedianPredicted: 10, MedianActual: 12},
		{Lo: 20, Hi: 40, N: 1, MedianPredicted: 30, MedianActual: 60},
	}
	if diff := cmp.Diff(want, a.Bins); diff != "" {
		t.Errorf("bins (-want +got):\n%s", diff)
	}
	if e := Accuracy(nil); e.N != 0 || e.Bins != nil {
		t.Errorf("no points: %+v", e)
	}
}

func TestSeries(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newSeries(t0, 3*time.Second)
	s.add(t0.Add(-time.Second), 1) // before the start: second 0
	s.add(t0.Add(1500*time.Millisecond), 2)
	s.add(t0.Add(time.Hour), 4) // past the span: the last second
	if diff := cmp.Diff([]float64{1, 2, 0, 4}, s.values(10)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{1, 2}, s.values(2)); diff != "" {
		t.Errorf("first two (-want +got):\n%s", diff)
	}
}

func TestBucket(t *testing.T) {
	now := time.Unix(0, 0)
	b := bucket{rate: 10, burst: 2, tokens: 2}
	for i := range 2 {
		if ok, _ := b.take(now); !ok {
			t.Fatalf("token %d of the burst refused", i)
		}
	}
	ok, next := b.take(now)
	if ok || next.Sub(now) != 100*time.Millisecond {
		t.Fatalf("empty bucket: %v, next in %s; want refused, next in 100ms", ok, next.Sub(now))
	}
	if ok, _ := b.take(now.Add(100 * time.Millisecond)); !ok {
		t.Error("a token after 1/rate was refused")
	}
	granted := 0
	for i := range 1000 { // 10 s in 10 ms steps: about 100 tokens
		if ok, _ := b.take(now.Add(100*time.Millisecond + time.Duration(i)*10*time.Millisecond)); ok {
			granted++
		}
	}
	if granted < 99 || granted > 102 {
		t.Errorf("%d tokens in 10 s at 10/s", granted)
	}
	if ok, _ := (&bucket{}).take(now); !ok {
		t.Error("rate 0 means no budget, not no polls")
	}
}
