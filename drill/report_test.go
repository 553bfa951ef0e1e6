package drill

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// sampleResult is a small drill's result, as results() would make it.
func sampleResult() *Result {
	r := &Result{
		Config: DefaultConfig(), Shape: "SQLite, in-process holds, embedded queue (SQLite); boxoffice in this process",
		Started: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), EventID: "42", Seats: 2000, Sections: 8,
		Tiers: []string{"premium", "gold"}, OpensAt: 2 * time.Second, LoadEnded: 9 * time.Second, Ended: 10 * time.Second,
		Ceilings: Ceilings{Bare: 20000, Conns: 256, BareTime: 3 * time.Second},
		Arrivals: []float64{100, 200, 900, 300, 100, 50, 10, 0, 0, 0, 0},
		Admitted: []float64{100, 200, 800, 400, 100, 50, 10, 0, 0, 0, 0},
		Refused:  make([]float64, 11), Sent: make([]float64, 11), Polls: []float64{0, 0, 10, 500, 600, 300, 100, 0, 0, 0, 0},
		Confirmed: []float64{0, 0, 0, 5, 20, 30, 10, 2, 0, 0, 0},
		Reads200:  []float64{1, 1, 1, 2, 1, 1, 1, 1, 1, 0, 0}, Reads304: []float64{900, 800, 300, 200, 400, 800, 900, 900, 900, 0, 0},
		Queue: []QueueSample{{At: time.Second, Admitted: 0, Waiting: 300}, {At: 2500 * time.Millisecond, Admitted: 600, Served: 50},
			{At: 4 * time.Second, Admitted: 1400, Served: 900}, {At: 6 * time.Second, Admitted: 1660, Served: 1660}},
		Available: []AvailSample{{At: 0, Available: 2000}, {At: 4 * time.Second, Available: 300}, {At: 7 * time.Second, Available: 0}},
		SoldOut:   5 * time.Second, Arrived: 1660, Requests: 1660, Prequeued: 300,
		Answers:  map[string]int{"202": 1660, "409 conflict": 2},
		Outcomes: map[string]int{"held ": 600, "rejected seat_taken": 1060},
		Ends:     map[string]int{"paid": 500, "abandoned after the 202": 160},
		To202:    []float64{0.01, 0.02, 0.5}, Service: []float64{0.01}, ToOutcome: []float64{0.5, 1, 2},
		Wait:       Accuracy([]WaitPoint{{Predicted: 1, Actual: 1.2}, {Predicted: 2, Actual: 2.5}, {Predicted: 4, Actual: 3}}),
		WaitPoints: []WaitPoint{{Predicted: 1, Actual: 1.2}, {Predicted: 2, Actual: 2.5}, {Predicted: 4, Actual: 3}},
		Audit: AuditResult{Checked: 1660, Settled: true, SettleNote: "drained", Sold: 1500,
			Progress: boxoffice.QueueProgress{Admitted: 1660, Served: 1660}, Bookings: map[string]int{"confirmed": 500}},
	}
	return r
}

func TestReportVerdict(t *testing.T) {
	r := sampleResult()
	var b bytes.Buffer
	WriteReport(&b, r, "/tmp/drill.svg")
	out := b.String()
	for _, want := range []string{
		"## Verdict: PASS",
		"| seats with two valid tickets (oversold) | 0 | 0 |",
		"| requests with a 202 and no outcome (lost), of 1,660 checked | 0 | 0 |",
		"| admitted (202) per second, peak 1 s | 800 | 0.04 |",
		"| sold out on the public map (no seat available), after the opening | 5.0 s |",
		"Chart: `/tmp/drill.svg`.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if err := r.Failed(); err != nil {
		t.Errorf("a clean drill failed: %v", err)
	}
	r.Audit.Settled, r.Audit.SettleNote = false, "still draining when --settle ran out"
	if err := r.Failed(); err != nil {
		t.Errorf("a queue that drained just after --settle, every request with its outcome at the audit: %v", err)
	}

	for _, tc := range []struct {
		name  string
		spoil func(a *AuditResult)
		want  string
	}{
		{"Oversold", func(a *AuditResult) { a.Oversold = 2 }, "2 seats oversold"},
		{"Lost", func(a *AuditResult) { a.Lost, a.LostIDs = 1, []string{"99"} }, "1 requests lost"},
		{"UnservedByTheCounters", func(a *AuditResult) { a.Unserved = 3 }, "the queue counts 3 not served"},
		{"PaidLost", func(a *AuditResult) { a.PaidLost = 1 }, "1 paid bookings"},
		{"DoubleHeld", func(a *AuditResult) { a.DoubleHeld = 4 }, "4 seats claimed by two bookings"},
		{"NotDrained", func(a *AuditResult) { a.Settled, a.SettleNote, a.Unserved = false, "still draining", 5 }, "the queue had not drained (still draining): 5 requests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleResult()
			tc.spoil(&r.Audit)
			err := r.Failed()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Failed() = %v, want it to say %q", err, tc.want)
			}
			var b bytes.Buffer
			WriteReport(&b, r, "")
			if !strings.Contains(b.String(), "## Verdict: FAIL") {
				t.Error("the report does not say FAIL")
			}
		})
	}
}

func TestQueueSeries(t *testing.T) {
	depth, drained := sampleResult().QueueSeries()
	// Second 1 ends with 300 waiting; second 2 with 600 admitted, 50
	// served; second 4 with 1660 served of 1660.
	if depth[1] != 300 || depth[2] != 550 || drained[2] != 50 || depth[6] != 0 || drained[6] != 760 {
		t.Errorf("depth %v, drained %v", depth, drained)
	}
	if at, ok := sampleResult().Drained(); !ok || at != 4*time.Second {
		t.Errorf("drained at %s (%v), want 4s after the opening", at, ok)
	}
}

func TestChartIsWellFormedSVG(t *testing.T) {
	for _, r := range []*Result{sampleResult(), {Config: DefaultConfig(), SoldOut: -1, Admitted: nil}} {
		var b bytes.Buffer
		if err := WriteSVG(&b, r); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.String(), "<svg ") || strings.Contains(b.String(), "NaN") {
			t.Errorf("chart starts %q or holds NaN", b.String()[:min(40, b.Len())])
		}
		d := xml.NewDecoder(&b)
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("not XML: %v", err)
			}
		}
	}
}

func TestNumbers(t *testing.T) {
	// num itself is numfmt.Thousands, tested there.
	if axisMax(61) != 80 || niceCeil(61) != 100 || short(1500) != "1.5k" {
		t.Errorf("axisMax(61) %g, niceCeil(61) %g, short(1500) %s", axisMax(61), niceCeil(61), short(1500))
	}
}
