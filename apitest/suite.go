package apitest

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice"
)

var keySeq atomic.Int64

// Run runs the whole HTTP contract suite; newStack builds a fresh stack
// for each test.
func Run(t *testing.T, newStack func(t *testing.T) *Stack) {
	run(t, newStack, func(string) bool { return true })
}

// RunQueue runs the flash-sale queue's part of the suite: for a queue
// configured otherwise (spread over several Redis slots) where the rest
// of the stack is the same.
func RunQueue(t *testing.T, newStack func(t *testing.T) *Stack) {
	run(t, newStack, func(name string) bool { return strings.Contains(name, "Queue") })
}

func run(t *testing.T, newStack func(t *testing.T) *Stack, pick func(name string) bool) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s *Stack)
	}{
		{"EventsCreateListGet", testEvents},
		{"HTTPHygiene", testHTTPHygiene},
		{"EventsPaged", testEventsPaged},
		{"BadLayoutRefusedAndNothingWritten", testBadLayouts},
		{"BadReserveInputRefusedAndNothingWritten", testBadReserve},
		{"ReserveConfirmHappyPath", testHappyPath},
		{"SameSeatStormExactlyOneWins", testSameSeatStorm},
		{"OverlappingMultiSeatNeverPartial", testOverlappingMultiSeat},
		{"ExpiryFreesSeatsAndConfirmChargesNothing", testExpiry},
		{"LateReleaseNeverFreesNewerHold", testLateRelease},
		{"ConfirmAfterTakeoverFailsCleanly", testTakeover},
		{"IdempotentReserveRetries", testIdempotentReserve},
		{"RetryAfterTheSeatsWentElsewhere", testRetryAfterTakeover},
		{"ConcurrentRetriesOneBooking", testConcurrentRetries},
		{"ConfirmIdempotentAndChargedOnce", testConfirmIdempotent},
		{"PaymentOutcomes", testPaymentOutcomes},
		{"TicketLimitPerUser", testTicketLimit},
		{"BestAvailable", testBestAvailable},
		{"SeatFeatures", testSeatFeatures},
		{"AuthorizationAcrossUsers", testAuthorization},
		{"ReleaseIsIdempotent", testRelease},
		{"SeatMapCaching", testSeatMapCaching},
		{"LayoutImmutableAndGzipped", testLayout},
		{"RandomizedStormAudit", testRandomizedStorm},
		{"ReconcilerExpiresPendingBookings", testReconciler},
		{"QueuedReserve", testQueuedReserve},
		{"QueueStorm", testQueueStorm},
		{"PreQueueDraw", testPreQueueDraw},
		{"QueueDuplicateDelivery", testDuplicateDelivery},
		{"QueueWaitEstimate", testWaitEstimate},
		{"QueueSoldOutSaidAtOnce", testQueueSoldOut},
		{"QueueStream", testQueueStream},
		{"QueueStreamLimits", testStreamLimits},
		{"QueuedBestAvailable", testQueuedBestAvailable},
		{"QueuedBestAvailableBatch", testQueuedBestAvailableBatch},
		{"WaitlistExpiryOffersInJoinOrder", testWaitlistExpiryOffersInJoinOrder},
		{"WaitlistReleaseAndDecline", testWaitlistReleaseAndDecline},
		{"WaitlistInput", testWaitlistInput},
		{"ResaleRaceOneTicketOneCharge", testResaleRace},
		{"ResaleCheckIn", testResaleCheckIn},
		{"ResaleUnpaidGoesToTheWaitlist", testResaleUnpaidGoesToTheWaitlist},
		{"CancelRefund", testCancelRefund},
		{"AfterSaleRandomizedAudit", testAfterSaleAudit},
	}
	for _, tc := range tests {
		if !pick(tc.name) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStack(t))
		})
	}
}

// layout builders -------------------------------------------------------

type section struct {
	Name        string `json:"name"`
	PriceTier   string `json:"price_tier"`
	PriceCents  int64  `json:"price_cents"`
	Rows        int    `json:"rows"`
	SeatsPerRow int    `json:"seats_per_row"`
}

func eventBody(s *Stack, sections ...section) map[string]any {
	now := s.Now().UTC()
	if len(sections) == 0 {
		sections = []section{{"A", "gold", 10000, 2, 10}, {"B", "silver", 5000, 3, 10}}
	}
	return map[string]any{
		"name": "Test Show", "venue": "Test Hall",
		"starts_at":     now.Add(30 * 24 * time.Hour).Format(time.RFC3339),
		"sale_opens_at": now.Add(-time.Hour).Format(time.RFC3339),
		"sale_mode":     "direct",
		"sections":      sections,
	}
}

type eventView struct {
	EventID     string    `json:"event_id"`
	Name        string    `json:"name"`
	SeatCount   int       `json:"seat_count"`
	SaleMode    string    `json:"sale_mode"`
	TicketLimit int       `json:"ticket_limit"`
	StartsAt    time.Time `json:"starts_at"`
}

// newEvent creates an event of 50 seats (A: 2x10 at 100.00, B: 3x10 at
// 50.00) unless body says otherwise, and returns its id.
func (s *Stack) newEvent(t testing.TB, body map[string]any) string {
	t.Helper()
	if body == nil {
		body = eventBody(s)
	}
	r := s.client(t, "organiser", "admin").do("POST", "/events", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("create event: %d %s", r.Status, r.Body)
	}
	var e eventView
	r.decode(t, &e)
	return e.EventID
}

func parseID(t testing.TB, s string) boxoffice.ID {
	t.Helper()
	id, err := boxoffice.ParseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// tests ------------------------------------------------------------------

func testEvents(t *testing.T, s *Stack) {
	id := s.newEvent(t, nil)
	anon := s.anonymous(t)
	r := anon.do("GET", "/events/"+id, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("get event: %d %s", r.Status, r.Body)
	}
	var e eventView
	r.decode(t, &e)
	if e.SeatCount != 50 || e.SaleMode != "direct" || e.TicketLimit != boxoffice.DefaultTicketLimit || e.Name != "Test Show" {
		t.Errorf("event = %+v", e)
	}
	var list struct {
		Events []eventView `json:"events"`
	}
	anon.do("GET", "/events", nil).decode(t, &list)
	found := false
	for _, ev := range list.Events {
		found = found || ev.EventID == id
	}
	if !found {
		t.Errorf("event %s missing from the list", id)
	}
	st := s.statuses(t, id)
	if len(st) != 50 || st["A-A-1"] != "available" || st["B-C-10"] != "available" {
		t.Errorf("seat map of a new event: %d seats, A-A-1=%q B-C-10=%q", len(st), st["A-A-1"], st["B-C-10"])
	}
	for _, path := range []string{"/events/999", "/events/abc", "/events/999/seats"} {
		if r := anon.do("GET", path, nil); r.Status != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, r.Status)
		} else {
			r.problem(t)
		}
	}
}

func testBadLayouts(t *testing.T, s *Stack) {
	admin := s.client(t, "organiser", "admin")
	good := func() map[string]any { return eventBody(s) }
	with := func(k string, v any) map[string]any { b := good(); b[k] = v; return b }
	cases := []struct {
		name string
		body any
	}{
		{"MalformedJSON", `{"name": "x",`},
		{"NotAnObject", `[1,2]`},
		{"Empty", ``},
		{"TrailingData", `{"name":"x"} {}`},
		{"UnknownField", with("colour", "red")},
		{"FieldNameCase", func() map[string]any { b := good(); b["Name"] = b["name"]; delete(b, "name"); return b }()},
		{"NULInName", with("name", "Show\x00time")},
		{"ControlInVenue", with("venue", "Hall\x1b[31m")},
		{"WrongType", with("sections", "many")},
		{"NoName", with("name", "")},
		{"BadTime", with("starts_at", "tomorrow")},
		{"SaleAfterShow", with("sale_opens_at", s.Now().Add(60*24*time.Hour).UTC().Format(time.RFC3339))},
		{"ShowInThePast", func() map[string]any {
			b := good()
			b["starts_at"] = s.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
			b["sale_opens_at"] = s.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)
			return b
		}()},
		{"ShowTooFarAhead", with("starts_at", s.Now().AddDate(6, 0, 0).UTC().Format(time.RFC3339))},
		{"BadMode", with("sale_mode", "auction")},
		{"NoSections", with("sections", []section{})},
		{"DuplicateSection", with("sections", []section{{"A", "t", 1, 1, 1}, {"A", "t", 1, 1, 1}})},
		{"DashInSectionName", with("sections", []section{{"A-1", "t", 1, 1, 1}})},
		{"ZeroRows", with("sections", []section{{"A", "t", 1, 0, 1}})},
		{"NegativePrice", with("sections", []section{{"A", "t", -1, 1, 1}})},
		{"TooManySeats", with("sections", []section{{"A", "t", 1, 700, 1000}})},
		{"TicketLimitTooHigh", with("ticket_limit", 1000)},
		{"HugeBody", `{"name":"` + strings.Repeat("x", 200<<10) + `"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := admin.do("POST", "/events", tc.body)
			if r.Status < 400 || r.Status >= 500 {
				t.Fatalf("status %d, want 4xx; body %s", r.Status, r.Body)
			}
			r.problem(t)
		})
	}
	es, err := s.Store.Events(ctx, boxoffice.EventFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 0 {
		t.Errorf("bad layouts wrote %d events", len(es))
	}
	if r := s.client(t, "fan", "").do("POST", "/events", good()); r.Status != http.StatusForbidden {
		t.Errorf("customer creating an event: %d, want 403", r.Status)
	}
}

func testBadReserve(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	c := s.client(t, "fan", "")
	cases := []struct {
		name   string
		body   any
		status int
		seats  []string
	}{
		{"MalformedJSON", `{"event_id":`, 400, nil},
		{"WrongTypeSeatIDs", map[string]any{"event_id": ev, "seat_ids": "A-A-1", "idempotency_key": "k"}, 400, nil},
		{"WrongTypeEventID", map[string]any{"event_id": true, "seat_ids": []string{"A-A-1"}, "idempotency_key": "k"}, 400, nil},
		{"NegativeEventID", map[string]any{"event_id": "-5", "seat_ids": []string{"A-A-1"}, "idempotency_key": "k"}, 400, nil},
		{"MissingKey", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-1"}}, 400, nil},
		{"UnknownEvent", map[string]any{"event_id": "12345", "seat_ids": []string{"A-A-1"}, "idempotency_key": "k"}, 404, nil},
		{"UnknownSeat", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-1", "Z-Z-99"}, "idempotency_key": "k"}, 400, []string{"Z-Z-99"}},
		{"DuplicateSeat", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-1", "A-A-1"}, "idempotency_key": "k"}, 400, []string{"A-A-1"}},
		{"NoSeats", map[string]any{"event_id": ev, "seat_ids": []string{}, "idempotency_key": "k"}, 400, nil},
		{"TooManySeats", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-1", "A-A-2", "A-A-3", "A-A-4", "A-A-5", "A-A-6", "A-A-7", "A-A-8", "A-A-9"}, "idempotency_key": "k"}, 422, nil},
		{"UnknownField", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-1"}, "idempotency_key": "k", "vip": true}, 400, nil},
		{"KeyTooLong", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-1"}, "idempotency_key": strings.Repeat("k", 300)}, 400, nil},
		// Field names are exact: encoding/json alone would take these.
		{"FieldNameCase", map[string]any{"EVENT_ID": ev, "Seat_IDs": []string{"A-A-3"}, "idempotency_key": "k"}, 400, nil},
		{"NestedFieldNameCase", map[string]any{"event_id": ev, "best_available": map[string]any{"Quantity": 1}, "idempotency_key": "k"}, 400, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do("POST", "/bookings/reserve", tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d; body %s", r.Status, tc.status, r.Body)
			}
			p := r.problem(t)
			if tc.seats != nil {
				if diff := cmp.Diff(tc.seats, p.Seats); diff != "" {
					t.Errorf("problem seats (-want +got):\n%s", diff)
				}
			}
		})
	}
	if r := c.do("POST", "/bookings/reserve", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-1"}}, "Idempotency-Key", "h1"); r.Status != 201 {
		t.Errorf("key in the header: %d %s", r.Status, r.Body)
	}
	if r := c.do("POST", "/bookings/reserve", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-2"}, "idempotency_key": "a"}, "Idempotency-Key", "b"); r.Status != 400 {
		t.Errorf("header and body keys differ: %d, want 400", r.Status)
	}
	st := s.statuses(t, ev)
	for id, v := range st {
		if v != "available" && id != "A-A-1" {
			t.Errorf("seat %s is %s after refused requests", id, v)
		}
	}
}

func testHappyPath(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	c := s.client(t, "fan", "")
	res := c.mustReserve(ev, "A-A-1", "B-A-2")
	if !res.HeldUntil.After(s.Now()) || res.PaymentURL == "" {
		t.Errorf("reserve answer %+v", res)
	}
	if st := s.statuses(t, ev); st["A-A-1"] != "held" || st["B-A-2"] != "held" || st["A-A-2"] != "available" {
		t.Errorf("after reserve: A-A-1=%s B-A-2=%s A-A-2=%s", st["A-A-1"], st["B-A-2"], st["A-A-2"])
	}
	r := c.confirm(res.BookingID, "tok_visa", "pay-1")
	if r.Status != http.StatusOK {
		t.Fatalf("confirm: %d %s", r.Status, r.Body)
	}
	var conf confirmation
	r.decode(t, &conf)
	if conf.ConfirmationCode == "" || len(conf.Tickets) != 2 || conf.AmountCents != 15000 {
		t.Fatalf("confirmation %+v", conf)
	}
	if conf.Tickets[0].Code == conf.Tickets[1].Code || conf.Tickets[0].Status != "valid" {
		t.Errorf("tickets %+v", conf.Tickets)
	}
	var b bookingView
	c.do("GET", "/bookings/"+res.BookingID, nil).decode(t, &b)
	if b.Status != "confirmed" {
		t.Errorf("booking status %q, want confirmed", b.Status)
	}
	if st := s.statuses(t, ev); st["A-A-1"] != "sold" || st["B-A-2"] != "sold" {
		t.Errorf("after confirm: A-A-1=%s B-A-2=%s", st["A-A-1"], st["B-A-2"])
	}
	if got := s.Pay.Charged()[res.BookingID+":pay-1"]; got != 15000 {
		t.Errorf("charged %d, want 15000", got)
	}
	// A sold seat stays sold after its hold would have run out.
	s.Advance(s.HoldTTL + time.Second)
	r = s.client(t, "other", "").reserve(ev, "late", "A-A-1")
	if r.Status != http.StatusConflict || r.problem(t).Code != boxoffice.ESEATTAKEN {
		t.Errorf("reserving a sold seat after the hold ran out: %d %s", r.Status, r.Body)
	}
}

func testSameSeatStorm(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	const n = 64
	var wins, taken, other atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			c := s.client(t, fmt.Sprintf("fan-%d", i), "")
			<-start
			r := c.reserve(ev, "storm", "A-A-5", "A-A-6")
			switch {
			case r.Status == http.StatusCreated:
				wins.Add(1)
			case r.Status == http.StatusConflict && r.problem(t).Code == boxoffice.ESEATTAKEN:
				taken.Add(1)
			default:
				other.Add(1)
				t.Errorf("unexpected %d %s", r.Status, r.Body)
			}
		})
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 || taken.Load() != n-1 {
		t.Fatalf("wins=%d taken=%d other=%d, want 1 and %d", wins.Load(), taken.Load(), other.Load(), n-1)
	}
}

func testOverlappingMultiSeat(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	pool := []string{"A-A-1", "A-A-2", "A-A-3", "A-A-4", "A-A-5", "A-A-6", "B-A-1", "B-A-2"}
	type grant struct {
		seats []string
	}
	var mu sync.Mutex
	var grants []grant
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			c := s.client(t, fmt.Sprintf("fan-%d", i), "")
			perm := rng.Perm(len(pool))
			k := 1 + rng.IntN(4)
			seats := make([]string, k)
			for j := range k {
				seats[j] = pool[perm[j]]
			}
			r := c.reserve(ev, "overlap", seats...)
			if r.Status == http.StatusCreated {
				mu.Lock()
				grants = append(grants, grant{seats})
				mu.Unlock()
			} else if r.Status != http.StatusConflict {
				t.Errorf("unexpected %d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	owner := map[string]int{}
	for gi, g := range grants {
		for _, seat := range g.seats {
			if prev, dup := owner[seat]; dup {
				t.Fatalf("seat %s granted to requests %d and %d", seat, prev, gi)
			}
			owner[seat] = gi
		}
	}
	st := s.statuses(t, ev)
	for _, seat := range pool {
		_, granted := owner[seat]
		if held := st[seat] == "held"; held != granted {
			t.Errorf("seat %s: held=%v but granted=%v (a partial hold was left)", seat, held, granted)
		}
	}
}

func testExpiry(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	a := s.client(t, "alice", "")
	res := a.mustReserve(ev, "A-B-1", "A-B-2")
	s.Advance(s.HoldTTL + time.Second)
	if st := s.statuses(t, ev); st["A-B-1"] != "available" || st["A-B-2"] != "available" {
		t.Errorf("after expiry: %s %s, want available", st["A-B-1"], st["A-B-2"])
	}
	r := a.confirm(res.BookingID, "tok_visa", "late-pay")
	if r.Status != http.StatusGone {
		t.Fatalf("confirm after expiry: %d %s, want 410", r.Status, r.Body)
	}
	if p := r.problem(t); p.Code != boxoffice.EHOLDLOST {
		t.Errorf("problem code %q", p.Code)
	}
	if len(s.Pay.Charged()) != 0 {
		t.Errorf("a confirm after expiry charged: %v", s.Pay.Charged())
	}
	var b bookingView
	a.do("GET", "/bookings/"+res.BookingID, nil).decode(t, &b)
	if b.Status != "expired" {
		t.Errorf("status %q, want expired", b.Status)
	}
	s.client(t, "bob", "").mustReserve(ev, "A-B-1", "A-B-2")
}

func testLateRelease(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	a, b := s.client(t, "alice", ""), s.client(t, "bob", "")
	old := a.mustReserve(ev, "A-B-5")
	s.Advance(s.HoldTTL + time.Second)
	b.mustReserve(ev, "A-B-5")
	r := a.do("DELETE", "/bookings/"+old.BookingID, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("late release: %d %s", r.Status, r.Body)
	}
	if st := s.statuses(t, ev); st["A-B-5"] != "held" {
		t.Fatalf("the late release freed bob's newer hold: %s", st["A-B-5"])
	}
	if r := s.client(t, "carol", "").reserve(ev, "c", "A-B-5"); r.Status != http.StatusConflict {
		t.Errorf("carol got bob's seat: %d", r.Status)
	}
}

func testTakeover(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	a, b := s.client(t, "alice", ""), s.client(t, "bob", "")
	first := a.mustReserve(ev, "B-C-1")
	s.Advance(s.HoldTTL + time.Second)
	second := b.mustReserve(ev, "B-C-1")
	if r := a.confirm(first.BookingID, "tok_visa", "a-pay"); r.Status != http.StatusGone {
		t.Fatalf("first holder's confirm after takeover: %d %s, want 410", r.Status, r.Body)
	}
	if r := b.confirm(second.BookingID, "tok_visa", "b-pay"); r.Status != http.StatusOK {
		t.Fatalf("second holder's confirm: %d %s", r.Status, r.Body)
	}
	charged := s.Pay.Charged()
	if charged[first.BookingID+":a-pay"] != 0 || charged[second.BookingID+":b-pay"] != 5000 {
		t.Errorf("charges %v", charged)
	}
}

func testIdempotentReserve(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	c := s.client(t, "fan", "")
	r1 := c.reserve(ev, "same", "A-A-7", "A-A-8")
	r2 := c.reserve(ev, "same", "A-A-8", "A-A-7") // same seats, other order: the same request
	if r1.Status != 201 || r2.Status != 201 {
		t.Fatalf("statuses %d %d", r1.Status, r2.Status)
	}
	sameReserve(t, r1, r2)
	r3 := c.reserve(ev, "same", "A-A-9")
	if r3.Status != http.StatusUnprocessableEntity || r3.problem(t).Code != boxoffice.EIDEMMISMATCH {
		t.Errorf("same key, other body: %d %s", r3.Status, r3.Body)
	}
	if st := s.statuses(t, ev); st["A-A-9"] != "available" {
		t.Errorf("the refused request held A-A-9")
	}
	// Keys are per user: another user's identical key is a different request.
	if r := s.client(t, "other", "").reserve(ev, "same", "A-A-9"); r.Status != 201 {
		t.Errorf("another user with the same key: %d %s", r.Status, r.Body)
	}
}

// A retry of an answered reserve gets its first answer even when its hold
// and its in-flight lease have run out and someone else holds the seats
// now: on Redis the refusal must not be taken for one of a key never
// granted (redis.Holds' marks).
func testRetryAfterTakeover(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	a, b := s.client(t, "first", ""), s.client(t, "second", "")
	r1 := a.reserve(ev, "once", "B-C-3")
	if r1.Status != http.StatusCreated {
		t.Fatalf("first reserve: %d %s", r1.Status, r1.Body)
	}
	s.Advance(s.HoldTTL + s.LeaseTTL + time.Second)
	b.mustReserve(ev, "B-C-3")
	r2 := a.reserve(ev, "once", "B-C-3")
	if r2.Status != http.StatusCreated {
		t.Fatalf("retry after the seat went elsewhere: %d %s, want the first answer replayed", r2.Status, r2.Body)
	}
	sameReserve(t, r1, r2)
	// A new key for the same seat is refused: the seat is taken.
	if r := a.reserve(ev, "twice", "B-C-3"); r.Status != http.StatusConflict || r.problem(t).Code != boxoffice.ESEATTAKEN {
		t.Errorf("a new key for a taken seat: %d %s", r.Status, r.Body)
	}
}

// sameReserve checks that retry replays first's answer.
func sameReserve(t *testing.T, first, retry response) {
	t.Helper()
	var a, b reserved
	first.decode(t, &a)
	retry.decode(t, &b)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("retry answered differently (-first +retry):\n%s", diff)
	}
	if retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Error("retry not marked Idempotent-Replayed")
	}
}

func testConcurrentRetries(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	c := s.client(t, "fan", "")
	var mu sync.Mutex
	ids := map[string]int{}
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			r := c.reserve(ev, "retry-storm", "B-B-1", "B-B-2")
			switch r.Status {
			case http.StatusCreated:
				var res reserved
				r.decode(t, &res)
				mu.Lock()
				ids[res.BookingID]++
				mu.Unlock()
			case http.StatusConflict:
				if code := r.problem(t).Code; code != boxoffice.EIDEMINFLIGHT {
					t.Errorf("retry got %s, want %s or the first answer", code, boxoffice.EIDEMINFLIGHT)
				}
				if r.Header.Get("Retry-After") == "" {
					t.Error("in-flight 409 without Retry-After")
				}
			default:
				t.Errorf("retry: %d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	if len(ids) != 1 {
		t.Fatalf("concurrent retries produced %d bookings: %v", len(ids), ids)
	}
	// After the storm, a retry always gets the one booking.
	var res reserved
	c.reserve(ev, "retry-storm", "B-B-1", "B-B-2").decode(t, &res)
	if _, ok := ids[res.BookingID]; !ok {
		t.Errorf("late retry got booking %s, not the one of the storm", res.BookingID)
	}
}

func testConfirmIdempotent(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	c := s.client(t, "fan", "")
	res := c.mustReserve(ev, "A-B-9")
	var wg sync.WaitGroup
	var codes sync.Map
	for i := range 16 {
		wg.Go(func() {
			key := "pay"
			if i%2 == 1 {
				key = fmt.Sprintf("pay-%d", i) // other keys for the same booking
			}
			r := c.confirm(res.BookingID, "tok_visa", key)
			switch r.Status {
			case http.StatusOK:
				var conf confirmation
				r.decode(t, &conf)
				codes.Store(conf.ConfirmationCode, true)
			case http.StatusConflict:
				if code := r.problem(t).Code; code != boxoffice.EIDEMINFLIGHT {
					t.Errorf("concurrent confirm: %s", code)
				}
			default:
				t.Errorf("concurrent confirm: %d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	n := 0
	codes.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d different confirmation codes", n)
	}
	var total int64
	for _, v := range s.Pay.Charged() {
		total += v
	}
	if total != 10000 {
		t.Errorf("charged %d in all, want 10000 once", total)
	}
	again := c.confirm(res.BookingID, "tok_visa", "pay")
	if again.Status != 200 {
		t.Fatalf("repeat: %d", again.Status)
	}
	if r := c.confirm(res.BookingID, "tok_chargeDeclined", "pay"); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("same key, other token: %d, want 422", r.Status)
	}
	if r := c.do("POST", "/bookings/"+res.BookingID+"/confirm", map[string]any{"payment_token": "tok_visa"}); r.Status != 400 {
		t.Errorf("confirm without a key: %d, want 400", r.Status)
	}
}

func testPaymentOutcomes(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	c := s.client(t, "fan", "")
	res := c.mustReserve(ev, "A-A-3")
	r := c.confirm(res.BookingID, "tok_chargeDeclined", "d1")
	if r.Status != http.StatusPaymentRequired || r.problem(t).Code != boxoffice.EPAYMENTDECLINED {
		t.Fatalf("declined: %d %s", r.Status, r.Body)
	}
	if st := s.statuses(t, ev); st["A-A-3"] != "held" {
		t.Errorf("after a decline the hold must stay: %s", st["A-A-3"])
	}
	r = c.confirm(res.BookingID, "tok_error", "e1")
	if r.Status != http.StatusBadGateway {
		t.Fatalf("gateway error: %d %s", r.Status, r.Body)
	}
	if st := s.statuses(t, ev); st["A-A-3"] == "sold" {
		t.Error("a failed payment sold the seat")
	}
	r = c.confirm(res.BookingID, "tok_bogus", "b1")
	if r.Status != http.StatusBadRequest {
		t.Errorf("unknown token: %d", r.Status)
	}
	if r := c.confirm(res.BookingID, "tok_slow", "s1"); r.Status != http.StatusOK {
		t.Fatalf("slow approval: %d %s", r.Status, r.Body)
	}
	if len(s.Pay.Charged()) != 1 {
		t.Errorf("charges %v, want only the slow approval", s.Pay.Charged())
	}
}

func testTicketLimit(t *testing.T, s *Stack) {
	body := eventBody(s)
	body["ticket_limit"] = 4
	ev := s.newEvent(t, body)
	c := s.client(t, "scalper", "")
	c.mustReserve(ev, "A-A-1", "A-A-2", "A-A-3")
	r := c.reserve(ev, "more", "A-A-4", "A-A-5")
	if r.Status != http.StatusUnprocessableEntity || r.problem(t).Code != boxoffice.ELIMIT {
		t.Fatalf("over the limit: %d %s", r.Status, r.Body)
	}
	if st := s.statuses(t, ev); st["A-A-4"] != "available" || st["A-A-5"] != "available" {
		t.Error("a refused over-limit request left seats held")
	}
	// Its retry is refused the same, not told it is in flight: a refused
	// request leaves no lease behind (on Redis the lease is taken in the
	// hold's script, and ended when no booking is written).
	if r := c.reserve(ev, "more", "A-A-4", "A-A-5"); r.Status != http.StatusUnprocessableEntity || r.problem(t).Code != boxoffice.ELIMIT {
		t.Errorf("the over-limit request again: %d %s", r.Status, r.Body)
	}
	c.mustReserve(ev, "A-A-4")
	// Parallel requests cannot slip past the limit either.
	other := s.client(t, "scalper2", "")
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if r := other.reserve(ev, fmt.Sprintf("p%d", i), fmt.Sprintf("B-A-%d", i+1)); r.Status == 201 {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 4 {
		t.Errorf("%d parallel single-seat holds granted with a limit of 4", ok.Load())
	}
}

func testAuthorization(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	alice, bob := s.client(t, "alice", ""), s.client(t, "bob", "")
	admin := s.client(t, "organiser", "admin")
	res := alice.mustReserve(ev, "A-A-1")
	path := "/bookings/" + res.BookingID
	expired, _ := s.Auth.Issue("alice", "", -time.Hour)
	forged := s.client(t, "alice", "")
	forged.token = forged.token[:len(forged.token)-4] + "AAAA"
	noToken := s.anonymous(t)
	expiredC := &client{t: t, base: s.URL, token: expired, hc: sharedHTTP}

	cases := []struct {
		name   string
		c      *client
		method string
		path   string
		body   any
		want   int
	}{
		{"BobReadsAlice", bob, "GET", path, nil, 404},
		{"BobReleasesAlice", bob, "DELETE", path, nil, 404},
		{"BobConfirmsAlice", bob, "POST", path + "/confirm", map[string]string{"payment_token": "tok_visa", "idempotency_key": "x"}, 404},
		{"AnonymousReads", noToken, "GET", path, nil, 401},
		{"AnonymousReserves", noToken, "POST", "/bookings/reserve", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-2"}, "idempotency_key": "x"}, 401},
		{"AnonymousReleases", noToken, "DELETE", path, nil, 401},
		{"AnonymousConfirms", noToken, "POST", path + "/confirm", map[string]string{"payment_token": "tok_visa", "idempotency_key": "x"}, 401},
		{"ExpiredTokenOnPublicRoute", expiredC, "GET", "/events", nil, 401},
		{"ForgedTokenOnPublicRoute", forged, "GET", "/events/" + ev + "/seats", nil, 401},
		{"ForgedTokenReserves", forged, "POST", "/bookings/reserve", map[string]any{"event_id": ev, "seat_ids": []string{"A-A-2"}, "idempotency_key": "x"}, 401},
		{"CustomerCreatesEvent", bob, "POST", "/events", eventBody(s), 403},
		{"AdminReadsAnyBooking", admin, "GET", path, nil, 200},
		{"AdminCannotReleaseForAlice", admin, "DELETE", path, nil, 404},
		{"AliceReadsHers", alice, "GET", path, nil, 200},
		{"UnknownBooking", alice, "GET", "/bookings/42", nil, 404},
		{"MalformedBookingID", alice, "GET", "/bookings/not-a-number", nil, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.c.do(tc.method, tc.path, tc.body)
			if r.Status != tc.want {
				t.Fatalf("%s %s = %d, want %d; body %s", tc.method, tc.path, r.Status, tc.want, r.Body)
			}
			if tc.want >= 400 {
				r.problem(t)
			}
			if tc.want == 401 && r.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	if st := s.statuses(t, ev); st["A-A-1"] != "held" || st["A-A-2"] != "available" {
		t.Errorf("unauthorized requests changed seats: A-A-1=%s A-A-2=%s", st["A-A-1"], st["A-A-2"])
	}
	if len(s.Pay.Charged()) != 0 {
		t.Error("an unauthorized confirm charged")
	}
}

func testRelease(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	c := s.client(t, "fan", "")
	res := c.mustReserve(ev, "A-A-1", "A-A-2")
	for i := range 2 {
		r := c.do("DELETE", "/bookings/"+res.BookingID, nil)
		var b bookingView
		r.decode(t, &b)
		if r.Status != 200 || b.Status != "released" {
			t.Fatalf("release #%d: %d %s", i+1, r.Status, r.Body)
		}
	}
	if st := s.statuses(t, ev); st["A-A-1"] != "available" || st["A-A-2"] != "available" {
		t.Errorf("released seats: %s %s", st["A-A-1"], st["A-A-2"])
	}
	if r := c.confirm(res.BookingID, "tok_visa", "after-release"); r.Status != http.StatusConflict {
		t.Errorf("confirm after release: %d, want 409", r.Status)
	}
	if len(s.Pay.Charged()) != 0 {
		t.Error("a confirm after release charged")
	}
	paid := c.mustReserve(ev, "A-A-3")
	if r := c.confirm(paid.BookingID, "tok_visa", "p"); r.Status != 200 {
		t.Fatal(r.Status)
	}
	if r := c.do("DELETE", "/bookings/"+paid.BookingID, nil); r.Status != http.StatusConflict {
		t.Errorf("releasing a confirmed booking: %d, want 409", r.Status)
	}
}

func testSeatMapCaching(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	anon := s.anonymous(t)
	r := anon.do("GET", "/events/"+ev+"/seats", nil)
	etag := r.Header.Get("ETag")
	maxAge := strconv.Itoa(int(s.SeatmapTTL.Seconds()))
	if etag == "" || r.Header.Get("Cache-Control") != "public, max-age="+maxAge || r.Header.Get("Age") == "" {
		t.Fatalf("headers %v, want Cache-Control public, max-age=%s and an Age", r.Header, maxAge)
	}
	if age, err := strconv.Atoi(r.Header.Get("Age")); err != nil || age > int(s.SeatmapTTL.Seconds()) {
		t.Errorf("Age %q: a map older than its TTL (%s)", r.Header.Get("Age"), s.SeatmapTTL)
	}
	if r2 := anon.do("GET", "/events/"+ev+"/seats", nil, "If-None-Match", etag); r2.Status != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", r2.Status)
	}
	s.client(t, "fan", "").mustReserve(ev, "A-A-1")
	if s.SeatmapTTL+time.Second >= s.HoldTTL {
		t.Fatalf("the stack's seat-map TTL %s must be well under its hold TTL %s for this test", s.SeatmapTTL, s.HoldTTL)
	}
	// After a quiet spell past the TTL, the first read shows the change:
	// it waits for the rebuild rather than get the old copy.
	s.Advance(s.SeatmapTTL + time.Second)
	if r3 := anon.do("GET", "/events/"+ev+"/seats", nil, "If-None-Match", etag); r3.Status != http.StatusOK || r3.Header.Get("ETag") == etag {
		t.Fatalf("the first read after the TTL: %d, ETag %s; want the new map", r3.Status, r3.Header.Get("ETag"))
	}
	var avail struct {
		SeatCount int    `json:"seat_count"`
		Runs      string `json:"runs"`
	}
	anon.do("GET", "/events/"+ev+"/availability", nil).decode(t, &avail)
	if avail.SeatCount != 50 || avail.Runs != "1h49a" {
		t.Errorf("availability %+v, want 50 seats and runs 1h49a", avail)
	}
}

// testRandomizedStorm mixes reserve, confirm and release from many users on
// a few hot seats, then audits: no seat with two valid tickets, the seat map
// agrees with the tickets, and money matches tickets exactly.
func testRandomizedStorm(t *testing.T, s *Stack) {
	ev := s.newEvent(t, eventBody(s, section{"H", "hot", 1000, 1, 6}))
	seats := []string{"H-A-1", "H-A-2", "H-A-3", "H-A-4", "H-A-5", "H-A-6"}
	var wg sync.WaitGroup
	var confirmedMu sync.Mutex
	confirmed := map[string][]string{} // booking → seats
	for u := range 24 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(u), 99))
			c := s.client(t, fmt.Sprintf("storm-%d", u), "")
			for i := range 12 {
				k := 1 + rng.IntN(2)
				perm := rng.Perm(len(seats))
				pick := []string{seats[perm[0]]}
				if k == 2 {
					pick = append(pick, seats[perm[1]])
				}
				r := c.reserve(ev, fmt.Sprintf("u%d-%d", u, i), pick...)
				if r.Status != http.StatusCreated {
					if r.Status != http.StatusConflict && r.Status != http.StatusUnprocessableEntity {
						t.Errorf("reserve: %d %s", r.Status, r.Body)
					}
					continue
				}
				var res reserved
				r.decode(t, &res)
				switch rng.IntN(3) {
				case 0:
					c.do("DELETE", "/bookings/"+res.BookingID, nil)
				default:
					tok := []string{"tok_visa", "tok_visa", "tok_chargeDeclined", "tok_error"}[rng.IntN(4)]
					if r := c.confirm(res.BookingID, tok, fmt.Sprintf("c%d-%d", u, i)); r.Status == http.StatusOK {
						confirmedMu.Lock()
						confirmed[res.BookingID] = pick
						confirmedMu.Unlock()
					} else {
						c.do("DELETE", "/bookings/"+res.BookingID, nil)
					}
				}
			}
		})
	}
	wg.Wait()
	// Audit the store directly.
	sold := s.soldOnce(t, ev)
	seen := map[string]bool{}
	for _, seat := range sold {
		seen[seat] = true
	}
	var want []string
	var wantCents int64
	for id, ss := range confirmed {
		want = append(want, ss...)
		b, err := s.Store.Booking(ctx, parseID(t, id))
		if err != nil {
			t.Fatal(err)
		}
		if b.Status != boxoffice.BookingConfirmed || len(b.Tickets) != len(ss) {
			t.Errorf("booking %s: %s with %d tickets", id, b.Status, len(b.Tickets))
		}
		wantCents += b.AmountCents
	}
	sort.Strings(want)
	got := append([]string(nil), sold...)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sold seats vs confirmed bookings (-confirmed +sold):\n%s", diff)
	}
	st := s.statuses(t, ev)
	for _, seat := range seats {
		if (st[seat] == "sold") != seen[seat] {
			t.Errorf("seat map says %s is %s; tickets say sold=%v", seat, st[seat], seen[seat])
		}
	}
	var charged int64
	for _, v := range s.Pay.Charged() {
		charged += v
	}
	if charged != wantCents {
		t.Errorf("charged %d, tickets worth %d: a payment without a ticket or the reverse", charged, wantCents)
	}
}

func testReconciler(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	c := s.client(t, "fan", "")
	res := c.mustReserve(ev, "A-A-1")
	if rep, err := s.Service.Reconcile(ctx); err != nil || rep.Expired != 0 {
		t.Fatalf("early pass: %+v %v", rep, err)
	}
	s.AdvanceClock(s.HoldTTL + 2*s.PendingGrace) // no returns pass: the reconciler catches what it missed
	rep, err := s.Service.Reconcile(ctx)
	if err != nil || rep.Expired != 1 {
		t.Fatalf("pass after hold+grace: %+v %v, want 1 expired", rep, err)
	}
	b, err := s.Store.Booking(ctx, parseID(t, res.BookingID))
	if err != nil || b.Status != boxoffice.BookingExpired {
		t.Fatalf("booking after reconcile: %+v %v", b, err)
	}
}

// soldOnce audits the store directly: the event's sold seats, failing the
// test if any seat has two valid tickets.
func (s *Stack) soldOnce(t testing.TB, eventID string) []string {
	t.Helper()
	sold, err := s.Store.SoldSeats(ctx, parseID(t, eventID))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, seat := range sold {
		if seen[seat] {
			t.Fatalf("seat %s has two valid tickets", seat)
		}
		seen[seat] = true
	}
	return sold
}

// Every answer says nosniff; a path's methods are in Allow, OPTIONS
// included; no socket address or Go internals reach a problem's detail.
func testHTTPHygiene(t *testing.T, s *Stack) {
	anon := s.anonymous(t)
	for _, path := range []string{"/events", "/events/1", "/no/such/path", "/openapi.json"} {
		if r := anon.do("GET", path, nil); r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d without nosniff", path, r.Status)
		}
	}
	r := anon.do("OPTIONS", "/events", nil)
	if r.Status != http.StatusNoContent || r.Header.Get("Allow") != "GET, POST, HEAD" {
		t.Errorf("OPTIONS /events: %d, Allow %q; want 204 and GET, POST, HEAD", r.Status, r.Header.Get("Allow"))
	}
	r = anon.do("PUT", "/bookings/1", nil)
	if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "GET, DELETE, HEAD" {
		t.Errorf("PUT /bookings/1: %d, Allow %q; want 405 and GET, DELETE, HEAD", r.Status, r.Header.Get("Allow"))
	}
	r.problem(t)
}

// GET /events pages with a cursor: a full page says where the next one
// is (next and a Link header), and following it reaches every event once.
func testEventsPaged(t *testing.T, s *Stack) {
	want := map[string]bool{}
	for range 5 {
		want[s.newEvent(t, nil)] = true
	}
	anon := s.anonymous(t)
	type page struct {
		Events []struct {
			EventID string `json:"event_id"`
		} `json:"events"`
		Next string `json:"next"`
	}
	seen := map[string]bool{}
	url, pages := "/events?limit=2", 0
	for url != "" {
		r := anon.do("GET", url, nil)
		var p page
		r.decode(t, &p)
		if r.Status != http.StatusOK || (p.Next != "") != (r.Header.Get("Link") != "") {
			t.Fatalf("GET %s: %d, next %q, Link %q", url, r.Status, p.Next, r.Header.Get("Link"))
		}
		for _, e := range p.Events {
			if seen[e.EventID] {
				t.Fatalf("event %s on two pages", e.EventID)
			}
			seen[e.EventID] = true
		}
		url = p.Next
		if pages++; pages > 5 {
			t.Fatal("the pages never end")
		}
	}
	if len(seen) != len(want) {
		t.Errorf("the pages gave %d events of %d", len(seen), len(want))
	}
	var all page
	anon.do("GET", "/events", nil).decode(t, &all)
	if len(all.Events) != 5 || all.Next != "" {
		t.Errorf("one page of everything: %d events, next %q", len(all.Events), all.Next)
	}
	if r := anon.do("GET", "/events?limit=101", nil); r.Status != http.StatusBadRequest {
		t.Errorf("limit 101: %d, want 400", r.Status)
	}
}
