package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
