package faulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The checks of TestFaultSchedule must be able to fail: these tests feed
// them answers and store rows with the faults they look for, and a clean
// case that must pass.

func selfAuditor(t *testing.T, recs []*rec) *auditor {
	t0 := time.Now().Add(-time.Minute)
	top := &topology{t: t, logDir: t.TempDir(), apis: []*proc{{name: "api1"}, {name: "api2"}}}
	return &auditor{ctx: context.Background(), top: top, inj: &injector{top: top}, l: &load{t0: t0}, recs: recs, finals: map[string]*rec{}}
}

func wantPass(t *testing.T, r result, pass bool) {
	t.Helper()
	if r.Pass != pass {
		t.Errorf("%s: pass=%v, want %v: %s %v", r.Name, r.Pass, pass, r.Detail, r.Evidence)
	}
}

func TestRecordChecksCatchFaults(t *testing.T) {
	now := time.Now()
	ok := []*rec{
		{Op: "reserve", User: "u1", Key: "k1", Status: 201, BookingID: "1", Start: now, End: now},
		{Op: "reserve", User: "u1", Key: "k1", Status: 201, BookingID: "1", Replayed: true, Start: now, End: now},
		{Op: "reserve", User: "u2", Key: "k2", Status: 202, RequestID: "2", Kind: "queued", Start: now, End: now},
		{Op: "status", User: "u2", Status: 200, RequestID: "2", QStatus: "held", BookingID: "2", Start: now, End: now},
		{Op: "confirm", User: "u1", Key: "c1", Booking: "1", BookingID: "1", Status: 200, Tickets: []string{"10", "11"}, Start: now, End: now},
	}
	a := selfAuditor(t, ok)
	a.finals["2"] = &rec{Op: "final", User: "u2", Status: 200, RequestID: "2", QStatus: "held", BookingID: "2"}
	wantPass(t, a.idsUnique(), true)
	wantPass(t, a.no500(), true)
	wantPass(t, a.queueFinal(), true)

	for name, bad := range map[string]*rec{
		"one id, two requests":  {Op: "reserve", User: "u3", Key: "k3", Status: 201, BookingID: "1"},
		"one request, two ids":  {Op: "reserve", User: "u1", Key: "k1", Status: 201, BookingID: "7"},
		"held as another id":    {Op: "status", User: "u2", Status: 200, RequestID: "2", QStatus: "held", BookingID: "9"},
		"ticket id reused":      {Op: "confirm", User: "u3", Key: "c3", Booking: "5", BookingID: "5", Status: 200, Tickets: []string{"11"}},
		"request id as ticket":  {Op: "confirm", User: "u3", Key: "c4", Booking: "6", BookingID: "6", Status: 200, Tickets: []string{"2"}},
		"confirm names another": {Op: "confirm", User: "u1", Key: "c5", Booking: "1", BookingID: "8", Status: 200},
	} {
		t.Run(name, func(t *testing.T) {
			wantPass(t, selfAuditor(t, append(append([]*rec{}, ok...), bad)).idsUnique(), false)
		})
	}

	t.Run("a 500", func(t *testing.T) {
		wantPass(t, selfAuditor(t, append(append([]*rec{}, ok...), &rec{Op: "reserve", Status: 500, Start: now, End: now})).no500(), false)
	})
	t.Run("a 502", func(t *testing.T) {
		wantPass(t, selfAuditor(t, append(append([]*rec{}, ok...), &rec{Op: "confirm", Status: 502, Start: now, End: now})).no500(), false)
	})

	t.Run("queue", func(t *testing.T) {
		// A 404 during the run for a 202'd id.
		a := selfAuditor(t, append(append([]*rec{}, ok...), &rec{Op: "status", User: "u2", Status: 404, RequestID: "2", Start: now, End: now}))
		a.finals["2"] = &rec{Op: "final", Status: 200, RequestID: "2", QStatus: "held", BookingID: "2"}
		wantPass(t, a.queueFinal(), false)
		// Not final at the end, or 404 at the end, or never read.
		for _, f := range []*rec{{Status: 200, QStatus: "queued"}, {Status: 404}, {Status: 503}, nil} {
			a := selfAuditor(t, ok)
			if f != nil {
				a.finals["2"] = f
			}
			wantPass(t, a.queueFinal(), false)
		}
	})

	t.Run("redis outage", func(t *testing.T) {
		from := now.Add(-10 * time.Second)
		in := func(status int, retryAfter, timeout bool) *rec {
			at := from.Add(time.Second)
			return &rec{Op: "reserve", Status: status, RetryAfter: retryAfter, Timeout: timeout, Start: at, End: at.Add(100 * time.Millisecond)}
		}
		run := func(recs ...*rec) result {
			a := selfAuditor(t, recs)
			a.inj.windows = []*window{{What: "redis", From: from, To: from.Add(3 * time.Second)}}
			return a.redisOutage()
		}
		wantPass(t, run(in(503, true, false), in(409, false, false)), true)
		wantPass(t, run(in(503, true, false), in(500, false, false)), false)
		wantPass(t, run(in(503, true, false), in(503, false, false)), false)
		wantPass(t, run(in(503, true, false), in(0, false, true)), false)
		wantPass(t, run(in(409, false, false)), false) // no 503 at all: not exercised
		wantPass(t, run(), false)                      // nothing sent during the outage
		// Requests to an API that was down at the time are not counted.
		a := selfAuditor(t, []*rec{in(503, true, false), in(0, false, true)})
		a.inj.windows = []*window{{What: "redis", From: from, To: from.Add(3 * time.Second)}, {What: "api1", From: from, To: from.Add(5 * time.Second)}}
		wantPass(t, a.redisOutage(), false) // both sent to api1 (API 0): nothing left
	})
}

// TestStoreChecksCatchFaults runs the database and Kafka checks against a
// schema of their own with the columns they read (not the product's
// migrations: no unique index stops the faults being written) and an
// in-process Kafka.
func TestStoreChecksCatchFaults(t *testing.T) {
	base := os.Getenv("BOXOFFICE_TEST_POSTGRES")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx := context.Background()
	db, err := pgx.Connect(ctx, base)
	if err != nil {
		skipOrFail(t, "PostgreSQL unreachable: %v", err)
	}
	defer db.Close(ctx)
	schema := fmt.Sprintf("fault_self_%d", time.Now().UnixNano())
	for _, q := range []string{
		"CREATE SCHEMA " + schema,
		"SET search_path TO " + schema,
		`CREATE TABLE bookings (id bigint PRIMARY KEY, event_id bigint, user_id text, status text, amount_cents bigint)`,
		`CREATE TABLE booking_seats (booking_id bigint, event_id bigint, seat_id text)`,
		`CREATE TABLE tickets (id bigint PRIMARY KEY, event_id bigint, booking_id bigint, seat_id text, status text)`,
		`CREATE TABLE payments (booking_id bigint PRIMARY KEY, status text, amount_cents bigint)`,
		`INSERT INTO bookings VALUES (1, 100, 'u1', 'confirmed', 1000), (2, 100, 'u2', 'pending', 1000)`,
		`INSERT INTO booking_seats VALUES (1, 100, 'A-A-1'), (2, 100, 'A-A-2')`,
		`INSERT INTO tickets VALUES (11, 100, 1, 'A-A-1', 'valid')`,
		`INSERT INTO payments VALUES (1, 'captured', 1000)`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	defer db.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")

	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "booking.confirmed"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	seeds := strings.Join(cluster.ListenAddrs(), ",")
	produce := func(values ...string) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for _, v := range values {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "booking.confirmed", Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	confirmedEvent := func(b string) string {
		return fmt.Sprintf(`{"id":"booking.confirmed:%s","type":"booking.confirmed","booking":{"booking_id":"%s","status":"confirmed"}}`, b, b)
	}
	produce(confirmedEvent("1"), confirmedEvent("1")) // at least once: a duplicate is fine

	recs := []*rec{
		{Op: "reserve", User: "u1", Event: "100", Status: http.StatusCreated, BookingID: "1"},
		{Op: "reserve", User: "u2", Event: "100", Status: http.StatusCreated, BookingID: "2"},
		{Op: "confirm", User: "u1", Booking: "1", BookingID: "1", Status: http.StatusOK, Tickets: []string{"11"}},
	}
	a := selfAuditor(t, recs)
	a.db = db
	a.top.seeds = seeds
	wantPass(t, a.noDoubleSale(), true)
	wantPass(t, a.confirmsValid(), true)
	wantPass(t, a.payments(), true)
	wantPass(t, a.bookingsInStore(), true)
	wantPass(t, a.kafkaConfirmed(0), true)

	exec := func(q string) {
		t.Helper()
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// A second confirmed booking of the same seat, with a valid ticket and
	// no payment, and no booking.confirmed.
	exec(`INSERT INTO bookings VALUES (3, 100, 'u3', 'confirmed', 1000)`)
	exec(`INSERT INTO booking_seats VALUES (3, 100, 'A-A-1')`)
	exec(`INSERT INTO tickets VALUES (13, 100, 3, 'A-A-1', 'valid')`)
	wantPass(t, a.noDoubleSale(), false)
	wantPass(t, a.payments(), false)
	wantPass(t, a.kafkaConfirmed(0), false)
	exec(`DELETE FROM tickets WHERE id = 13`)
	wantPass(t, a.noDoubleSale(), false) // still two confirmed bookings of one seat
	exec(`UPDATE bookings SET status = 'expired' WHERE id = 3`)
	exec(`INSERT INTO payments VALUES (3, 'captured', 1000)`)
	wantPass(t, a.noDoubleSale(), true)
	wantPass(t, a.payments(), false) // a captured payment for a booking not confirmed
	exec(`DELETE FROM payments WHERE booking_id = 3`)
	wantPass(t, a.payments(), true)
	produce(confirmedEvent("3"))
	wantPass(t, a.kafkaConfirmed(0), false) // an event for a booking not confirmed
	exec(`UPDATE bookings SET status = 'confirmed' WHERE id = 3`)
	exec(`INSERT INTO payments VALUES (3, 'captured', 1000)`)
	exec(`INSERT INTO tickets VALUES (13, 100, 3, 'A-A-9', 'valid')`)
	exec(`UPDATE booking_seats SET seat_id = 'A-A-9' WHERE booking_id = 3`)
	wantPass(t, a.kafkaConfirmed(0), true)
	wantPass(t, a.payments(), true)

	// A confirmed payment left authorized, or of another amount.
	exec(`UPDATE payments SET status = 'authorized' WHERE booking_id = 1`)
	wantPass(t, a.payments(), false)
	exec(`UPDATE payments SET status = 'captured', amount_cents = 999 WHERE booking_id = 1`)
	wantPass(t, a.payments(), false)
	exec(`UPDATE payments SET amount_cents = 1000 WHERE booking_id = 1`)
	wantPass(t, a.payments(), true)

	// A 200 confirm whose ticket is void now, or whose booking is not
	// confirmed any more.
	exec(`UPDATE tickets SET status = 'void' WHERE id = 11`)
	wantPass(t, a.confirmsValid(), false)
	wantPass(t, a.payments(), false) // confirmed with fewer valid tickets than seats
	exec(`UPDATE tickets SET status = 'valid' WHERE id = 11`)
	exec(`UPDATE bookings SET status = 'expired' WHERE id = 1`)
	wantPass(t, a.confirmsValid(), false)
	exec(`UPDATE bookings SET status = 'confirmed' WHERE id = 1`)
	wantPass(t, a.confirmsValid(), true)

	// The seat map against the valid tickets, and the counts against the
	// capacity.
	exec(`INSERT INTO tickets VALUES (21, 200, 20, 'S-A-1', 'valid')`)
	var mu sync.Mutex
	statuses := []string{"sold", "available", "available"}
	extra := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		counts := map[string]int{}
		var seats []map[string]string
		for i, st := range statuses {
			counts[st]++
			seats = append(seats, map[string]string{"seat_id": fmt.Sprintf("S-A-%d", i+1), "status": st})
		}
		counts["held"] += extra
		var v any = map[string]any{"seat_count": len(statuses), "seats": counts, "seat_map_built_at": time.Now().UTC()}
		if strings.HasSuffix(r.URL.Path, "/seats") {
			v = map[string]any{"event_id": "200", "seats": seats}
		}
		_ = json.NewEncoder(w).Encode(v)
	}))
	defer srv.Close()
	a.l.apis, a.l.client = []string{srv.URL}, srv.Client()
	a.l.events = []*event{{ID: "200", Kind: "direct", Sections: []section{{"S", 1, 3}}}}
	a.fresh = time.Now()
	wantPass(t, a.seatMaps(), true)
	set := func(f func()) { mu.Lock(); f(); mu.Unlock() }
	set(func() { statuses[1] = "sold" }) // sold in the map, no valid ticket
	wantPass(t, a.seatMaps(), false)
	set(func() { statuses[0], statuses[1] = "held", "available" }) // a valid ticket shown held
	wantPass(t, a.seatMaps(), false)
	set(func() { statuses[0], extra = "sold", 1 }) // counts that add up to more than the capacity
	wantPass(t, a.seatMaps(), false)
	set(func() { extra = 0; statuses = append(statuses, "available") }) // a seat the layout lacks
	wantPass(t, a.seatMaps(), false)

	// A confirmed booking whose every confirm said nothing was charged;
	// one whose answer was lost is no fault.
	wantPass(t, a.unchargedTruth(), true) // booking 3 was never confirmed by the workload
	a.recs = append(a.recs, &rec{Op: "confirm", User: "u3", Booking: "3", Status: http.StatusServiceUnavailable, RetryAfter: true})
	wantPass(t, a.unchargedTruth(), false)
	a.recs = append(a.recs, &rec{Op: "confirm", User: "u3", Booking: "3", Status: 0, Timeout: true})
	wantPass(t, a.unchargedTruth(), true)

	// A booking answered to u2 that the store has as another user's.
	exec(`UPDATE bookings SET user_id = 'u9' WHERE id = 2`)
	wantPass(t, a.bookingsInStore(), false)
	exec(`DELETE FROM booking_seats WHERE booking_id = 2`)
	exec(`DELETE FROM bookings WHERE id = 2`)
	wantPass(t, a.bookingsInStore(), false) // missing altogether
}
