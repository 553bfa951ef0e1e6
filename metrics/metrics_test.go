package metrics

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

func TestObservedRequestsAreScraped(t *testing.T) {
	r := New()
	r.ObserveRequest("/bookings/reserve", "POST", 201, 3*time.Millisecond)
	r.ObserveRequest("/bookings/reserve", "POST", 409, time.Millisecond)
	r.ObserveRequest("/queue/{request_id}/events", "GET", 200, -1)
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`boxoffice_http_requests_total{method="POST",route="/bookings/reserve",status="201"} 1`,
		`boxoffice_http_requests_total{method="POST",route="/bookings/reserve",status="409"} 1`,
		`boxoffice_http_requests_total{method="GET",route="/queue/{request_id}/events",status="200"} 1`,
		`boxoffice_http_request_duration_seconds_count{route="/bookings/reserve"} 2`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(string(body), `boxoffice_http_request_duration_seconds_count{route="/queue/{request_id}/events"}`) {
		t.Error("a stream's duration was observed")
	}
}

// finishing is a queue state whose FinishMany decides every request the
// first time: what the wrapper counts needs nothing more.
type finishing struct{ boxoffice.QueueState }

func (finishing) FinishMany(_ context.Context, rs []*boxoffice.QueuedRequest, _ []boxoffice.QueueOutcome) ([]bool, error) {
	first := make([]bool, len(rs))
	for i := range first {
		first[i] = true
	}
	return first, nil
}

// A decided request's real wait is measured against the wait its 202
// told: the error's sign says who was optimistic, and within 25% + 2 s
// counts as accurate. Sold-out answers and pre-queued requests (no
// estimate) are left out.
func TestWaitEstimatesAreMeasured(t *testing.T) {
	r := New()
	q := r.Instrument(Ports{Queue: finishing{}}).Queue
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	told := func(s float64) *float64 { return &s }
	reqs := []*boxoffice.QueuedRequest{
		{ID: 1, EnqueuedAt: at, EstimatedWait: told(10)}, // waited 12 s: off by 2, within 3 + 2
		{ID: 2, EnqueuedAt: at, EstimatedWait: told(10)}, // waited 40 s: outside
		{ID: 3, EnqueuedAt: at, EstimatedWait: told(60)}, // waited 30 s: outside, told too long
		{ID: 4, EnqueuedAt: at, EstimatedWait: told(1)},  // sold out: left out
		{ID: 5, EnqueuedAt: at},                          // pre-queued: no estimate
	}
	outs := []boxoffice.QueueOutcome{
		{Status: boxoffice.QueueHeld, FinishedAt: at.Add(12 * time.Second)},
		{Status: boxoffice.QueueHeld, FinishedAt: at.Add(40 * time.Second)},
		{Status: boxoffice.QueueRejected, Reason: boxoffice.ESEATTAKEN, FinishedAt: at.Add(30 * time.Second)},
		{Status: boxoffice.QueueRejected, Reason: boxoffice.ESOLDOUT, FinishedAt: at.Add(90 * time.Second)},
		{Status: boxoffice.QueueHeld, FinishedAt: at.Add(5 * time.Second)},
	}
	if _, err := q.FinishMany(context.Background(), reqs, outs); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`boxoffice_queue_wait_estimates_total{accuracy="within"} 1`,
		`boxoffice_queue_wait_estimates_total{accuracy="outside"} 2`,
		`boxoffice_queue_wait_seconds_count 3`,
		`boxoffice_queue_wait_seconds_sum 82`,
		`boxoffice_queue_wait_estimate_error_seconds_bucket{le="-30"} 1`, // 30 - 60
		`boxoffice_queue_wait_estimate_error_seconds_bucket{le="2"} 2`,   // and 12 - 10
		`boxoffice_queue_wait_estimate_error_seconds_bucket{le="30"} 3`,  // and 40 - 10
		`boxoffice_queue_decided_total{reason="sold_out",status="rejected"} 1`,
		`boxoffice_queue_decided_total{reason="",status="held"} 3`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("scrape lacks %s", want)
		}
	}
}
