package node_test

import (
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/node"
)

// TestMetricsTheRulesAndDashboardQueryExist runs a node with every role,
// drives a reserve and a pay and a queued reserve, scrapes /metrics, and checks that every
// metric the alert rules (deploy/prometheus) and the dashboard
// (deploy/grafana) query is in the scrape, and that the sale's counters
// moved as the requests did.
func TestMetricsTheRulesAndDashboardQueryExist(t *testing.T) {
	a, _, base, _ := serveNode(t, node.Options{Data: t.TempDir(), Metrics: true, API: true, Workers: 1, Upkeep: true})
	admin, _ := a.Issue("organiser", boxoffice.RoleAdmin, time.Hour)
	fan, _ := a.Issue("fan-1", "", time.Hour)
	other, _ := a.Issue("fan-2", "", time.Hour)
	ev := newEvent(t, base, admin, "direct", 1)
	var res struct {
		BookingID boxoffice.ID `json:"booking_id"`
	}
	call(t, "POST", base+"/bookings/reserve", fan, "k1", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-1", "A-A-2"}}, http.StatusCreated, &res)
	call(t, "POST", base+"/bookings/reserve", other, "k1", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-2"}}, http.StatusConflict, nil)
	call(t, "POST", base+"/bookings/"+res.BookingID.String()+"/confirm", fan, "k2", map[string]any{"payment_token": "tok_visa"}, http.StatusOK, nil)
	if code := get(t, base+"/events/"+ev.String()+"/seats", ""); code != http.StatusOK {
		t.Fatalf("seat map: %d", code)
	}

	// A queued sale: a 202, decided by the worker; its wait is measured
	// against the estimate told.
	qev := newEvent(t, base, admin, "queued", 1)
	var q struct {
		ID     boxoffice.ID `json:"request_id"`
		Status string       `json:"status"`
	}
	call(t, "POST", base+"/bookings/reserve", fan, "q1", map[string]any{"event_id": qev, "seat_ids": []string{"A-A-1"}}, http.StatusAccepted, &q)
	for deadline := time.Now().Add(20 * time.Second); q.Status != "held"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("queued request %s still %s", q.ID, q.Status)
		}
		call(t, "GET", base+"/queue/"+q.ID.String(), fan, "", nil, http.StatusOK, &q)
	}

	scrape := scrapeMetrics(t, base, admin)
	names := map[string]bool{}
	for _, line := range strings.Split(scrape, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			names[regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`).FindString(line)] = true
		}
	}
	queried := regexp.MustCompile(`\b(?:boxoffice|go|process)_[a-z0-9_]+`)
	for _, file := range []string{"../deploy/prometheus/boxoffice.rules.yml", "../deploy/grafana/boxoffice-sale.json"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		found := queried.FindAllString(string(b), -1)
		if len(found) == 0 {
			t.Errorf("%s queries no boxoffice metric", file)
		}
		for _, m := range found {
			if !names[m] {
				t.Errorf("%s queries %s, which a scrape of a running node does not have", file, m)
			}
		}
	}
	// The counters moved with the requests: three holds asked (two
	// granted, one refused), two bookings held and one confirmed, a
	// payment authorized, a queued request admitted and decided.
	for _, want := range []string{
		`boxoffice_holds_total{outcome="granted"} 2`, // the direct reserve and the queued one
		`boxoffice_holds_total{outcome="refused"} 1`,
		`boxoffice_held_seats_total 3`,
		`boxoffice_bookings_total{transition="held"} 2`,
		`boxoffice_bookings_total{transition="confirmed"} 1`,
		`boxoffice_payments_total{op="authorize",outcome="ok"} 1`,
		`boxoffice_guard_hits_total{check="seat_sold_at_confirm"} 0`,
		`boxoffice_unavailable_total{port="store"} 0`,
		`boxoffice_live_streams 0`,
		`boxoffice_seats{event="` + ev.String() + `",status="sold"} 2`,
		`boxoffice_seats{event="` + ev.String() + `",status="available"} 3`,
		`boxoffice_queue_admitted_total 1`,
		`boxoffice_queue_decided_total{reason="",status="held"} 1`,
		`boxoffice_queue_wait_seconds_count 1`,
		`boxoffice_queue_wait_estimate_error_seconds_count 1`,
		`boxoffice_queue_wait_estimates_total{accuracy="within"} 1`,
		`boxoffice_queue_depth{event="` + qev.String() + `",state="queued"} 0`,
		`boxoffice_queue_depth{event="` + qev.String() + `",state="waiting"} 0`,
	} {
		if !strings.Contains(scrape, want+"\n") {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

func scrapeMetrics(t *testing.T, base, tok string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	return string(b)
}
