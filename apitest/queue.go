package apitest

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/httpapi"
)

// The flash-sale queue, over HTTP: 202 tickets, outcomes, the storm, the
// pre-queue draw, redelivery, estimates and the live stream.

type queueTicket struct {
	RequestID     string   `json:"request_id"`
	EventID       string   `json:"event_id"`
	Status        string   `json:"status"`
	QueuePosition int64    `json:"queue_position"`
	Ahead         int64    `json:"ahead"`
	Wait          *float64 `json:"estimated_wait_seconds"`
	StatusURL     string   `json:"status_url"`
	EventsURL     string   `json:"events_url"`
	Reason        string   `json:"reason"`
	WaitlistURL   string   `json:"waitlist_url"`
	SeatsLeft     *int     `json:"seats_left"`
	ExpectedLeft  *int     `json:"expected_seats_left_at_turn"`
	BookingID     string   `json:"booking_id"`
	PaymentURL    string   `json:"payment_url"`
}

func needQueue(t *testing.T, s *Stack) {
	if s.Queue == nil {
		t.Skip("this stack runs no queue")
	}
}

func (s *Stack) queuedEvent(t testing.TB, opensIn time.Duration, secs ...section) string {
	body := eventBody(s, secs...)
	body["sale_mode"] = "queued"
	body["sale_opens_at"] = s.Now().UTC().Add(opensIn).Format(time.RFC3339Nano)
	return s.newEvent(t, body)
}

func (c *client) enqueue(eventID, key string, seats ...string) (queueTicket, response) {
	c.t.Helper()
	r := c.reserve(eventID, key, seats...)
	var q queueTicket
	if r.Status == http.StatusAccepted {
		r.decode(c.t, &q)
	}
	return q, r
}

func (c *client) queueStatus(id string) queueTicket {
	c.t.Helper()
	r := c.do("GET", "/queue/"+id, nil)
	if r.Status != http.StatusOK {
		c.t.Fatalf("GET /queue/%s: %d %s", id, r.Status, r.Body)
	}
	var q queueTicket
	r.decode(c.t, &q)
	return q
}

// awaitOutcome polls until the request has an outcome.
func (c *client) awaitOutcome(id string) queueTicket {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		q := c.queueStatus(id)
		if q.Status == "held" || q.Status == "rejected" {
			return q
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("request %s still %s after 60s", id, q.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testQueuedReserve(t *testing.T, s *Stack) {
	needQueue(t, s)
	ev := s.queuedEvent(t, -time.Minute)
	fan := s.client(t, "fan", "")
	q, r := fan.enqueue(ev, "q-1", "A-A-1", "A-A-2")
	if r.Status != http.StatusAccepted {
		t.Fatalf("queued reserve: %d %s, want 202", r.Status, r.Body)
	}
	first := s.positions().Give("fan")
	if q.RequestID == "" || q.QueuePosition != first || q.Status != "queued" || q.StatusURL != "/queue/"+q.RequestID ||
		r.Header.Get("Location") != q.StatusURL || q.EventsURL == "" {
		t.Fatalf("ticket %+v (Location %q)", q, r.Header.Get("Location"))
	}
	// A retry is the same ticket; another request of the same user waits
	// for the first to be served.
	again, r2 := fan.enqueue(ev, "q-1", "A-A-2", "A-A-1")
	if r2.Status != http.StatusAccepted || again.RequestID != q.RequestID || again.QueuePosition != first || r2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %+v", r2.Status, again)
	}
	if _, r3 := fan.enqueue(ev, "q-2", "B-A-1"); r3.Status != http.StatusConflict || r3.problem(t).Code != boxoffice.ECONFLICT {
		t.Fatalf("a second live request: %d %s, want 409", r3.Status, r3.Body)
	}
	if _, r4 := fan.enqueue(ev, "q-1", "B-A-1"); r4.Status != http.StatusUnprocessableEntity {
		t.Fatalf("same key, other seats: %d %s, want 422", r4.Status, r4.Body)
	}
	// Nobody else sees it.
	if r := s.client(t, "other", "").do("GET", "/queue/"+q.RequestID, nil); r.Status != http.StatusNotFound {
		t.Errorf("another user's request: %d, want 404", r.Status)
	}
	if r := s.anonymous(t).do("GET", "/queue/"+q.RequestID, nil); r.Status != http.StatusUnauthorized {
		t.Errorf("anonymous: %d, want 401", r.Status)
	}

	s.StartWorkers(t, 1)
	out := fan.awaitOutcome(q.RequestID)
	if out.Status != "held" || out.BookingID != q.RequestID || out.PaymentURL == "" {
		t.Fatalf("outcome %+v, want held with booking %s", out, q.RequestID)
	}
	var b bookingView
	fan.do("GET", "/bookings/"+out.BookingID, nil).decode(t, &b)
	if b.Status != "pending" || len(b.SeatIDs) != 2 {
		t.Fatalf("booking %+v", b)
	}
	if r := fan.confirm(out.BookingID, "tok_visa", "pay"); r.Status != http.StatusOK {
		t.Fatalf("confirm: %d %s", r.Status, r.Body)
	}
	if st := s.statuses(t, ev); st["A-A-1"] != "sold" || st["A-A-2"] != "sold" {
		t.Errorf("after confirm: %s %s", st["A-A-1"], st["A-A-2"])
	}
	// Served: the user may queue again; a taken seat is a rejection.
	q2, r5 := fan.enqueue(ev, "q-3", "A-A-1")
	if r5.Status != http.StatusAccepted {
		t.Fatalf("after the outcome: %d %s", r5.Status, r5.Body)
	}
	if out := fan.awaitOutcome(q2.RequestID); out.Status != "rejected" || out.Reason != boxoffice.ESEATTAKEN {
		t.Errorf("a sold seat: %+v, want rejected seat_taken", out)
	}
	// Direct reserve refuses a queued event and vice versa the queue a
	// direct one: each answers its own way.
	direct := s.newEvent(t, nil)
	if r := fan.reserve(direct, "d-1", "A-A-1"); r.Status != http.StatusCreated {
		t.Errorf("direct event: %d", r.Status)
	}
}

// Thousands of users, ten thousand requests, a few hundred seats.
func testQueueStorm(t *testing.T, s *Stack) {
	needQueue(t, s)
	ev := s.queuedEvent(t, -time.Minute, section{"A", "gold", 10000, 10, 20}, section{"B", "silver", 5000, 10, 20})
	var seats []string
	for _, sec := range []string{"A", "B"} {
		for row := 1; row <= 10; row++ {
			for n := 1; n <= 20; n++ {
				seats = append(seats, boxoffice.SeatID(sec, boxoffice.RowLabel(row), n))
			}
		}
	}
	// Each user sends three requests, each after the previous one's
	// outcome (one live request per user), so all of them are queued.
	n := s.QueueStorm
	const tries = 3
	users := max(n/tries, 1)
	type sent struct {
		user  string
		seats []string
		tk    queueTicket
	}
	var (
		mu       sync.Mutex
		accepted []sent
		refused  int
	)
	s.StartWorkers(t, 2) // draining while the storm arrives
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for u := range users {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rng := rand.New(rand.NewPCG(uint64(u), 7))
			user := fmt.Sprintf("storm-%d", u)
			c := &client{t: t, base: s.URL, token: s.Token(t, user, ""), hc: sharedHTTP}
			for try := range tries {
				// Adjacent seats, as people ask for them.
				want := []string{}
				start := rng.IntN(len(seats) - 4)
				for k := range 1 + rng.IntN(4) {
					want = append(want, seats[start+k])
				}
				q, r := c.enqueue(ev, fmt.Sprintf("storm-%d-%d", u, try), want...)
				if r.Status != http.StatusAccepted {
					mu.Lock()
					refused++
					mu.Unlock()
					t.Errorf("storm request: %d %s", r.Status, r.Body)
					return
				}
				mu.Lock()
				accepted = append(accepted, sent{user, want, q})
				mu.Unlock()
				c.awaitOutcome(q.RequestID)
			}
		})
	}
	wg.Wait()
	t.Logf("%d users: %d requests queued, %d refused", users, len(accepted), refused)

	positions := make([]int64, 0, len(accepted))
	// A seat may be held again once an earlier hold ran out (a short TTL
	// on a real clock), never while it lasts.
	type span struct {
		req         string
		from, until time.Time
	}
	owner := map[string][]span{}
	held := 0
	for _, a := range accepted {
		positions = append(positions, a.tk.QueuePosition)
		c := &client{t: t, base: s.URL, token: s.Token(t, a.user, ""), hc: sharedHTTP}
		out := c.awaitOutcome(a.tk.RequestID)
		switch out.Status {
		case "held":
			held++
			b, err := s.Store.Booking(ctx, parseID(t, out.BookingID))
			if err != nil || b.ID != parseID(t, a.tk.RequestID) || !slices.Equal(b.SeatIDs, a.seats) || b.UserID != a.user {
				t.Fatalf("booking of held request %s: %+v, %v", a.tk.RequestID, b, err)
			}
			for _, seat := range a.seats {
				for _, o := range owner[seat] {
					if b.CreatedAt.Before(o.until) && o.from.Before(b.HeldUntil) {
						t.Fatalf("seat %s held by requests %s and %s at once", seat, o.req, a.tk.RequestID)
					}
				}
				owner[seat] = append(owner[seat], span{a.tk.RequestID, b.CreatedAt, b.HeldUntil})
			}
		case "rejected":
			if out.Reason != boxoffice.ESEATTAKEN && out.Reason != boxoffice.ELIMIT {
				t.Errorf("rejected for %q", out.Reason)
			}
		}
	}
	slices.Sort(positions)
	who := make([]string, len(accepted))
	for i, a := range accepted {
		who[i] = a.user
	}
	for i, p := range s.positions().Reserve(who) {
		if positions[i] != p {
			t.Fatalf("positions are not the %d expected (1..%[1]d on one sequence): sorted[%d] = %d, want %d", len(positions), i, positions[i], p)
		}
	}
	if len(owner) > len(seats) {
		t.Fatalf("%d seats held of %d", len(owner), len(seats))
	}
	p, err := s.Queue.Progress(ctx, parseID(t, ev))
	if err != nil || p.Served != int64(len(accepted)) || p.Admitted != int64(len(accepted)) {
		t.Errorf("progress %+v (%v), want %d admitted and served", p, err, len(accepted))
	}
	t.Logf("%d held requests, %d seats held of %d", held, len(owner), len(seats))
	if held == 0 || refused > 0 {
		t.Errorf("%d held, %d refused", held, refused)
	}
}

// Requests before the opening wait in the pre-queue; at opening they are
// drawn in random order, and later arrivals queue after them.
func testPreQueueDraw(t *testing.T, s *Stack) {
	needQueue(t, s)
	// Room for the 40 early arrivals on a loaded machine with a real clock
	// (production); the test then waits only for what is left of it.
	opensIn := 10 * time.Second
	opensAt := s.Now().Add(opensIn)
	ev := s.queuedEvent(t, opensIn)
	s.StartWorkers(t, 1)
	const early = 40
	ids := make([]string, early)
	for i := range early {
		c := s.client(t, fmt.Sprint("early-", i), "")
		q, r := c.enqueue(ev, "pre", boxoffice.SeatID("A", "A", 1+i%10))
		if r.Status != http.StatusAccepted || q.Status != "waiting" || q.QueuePosition != 0 || q.Wait == nil {
			t.Fatalf("before opening: %d %+v", r.Status, q)
		}
		ids[i] = q.RequestID
	}
	// The draw is committed to before it happens; seed and order are not
	// told before it.
	anyone := s.anonymous(t)
	before := drawOf(t, anyone, ev)
	if before.Drawn || len(before.Commitment) != 64 || before.Seed != "" || before.OrderURL != "" {
		t.Fatalf("before the opening: %+v", before)
	}
	if r := anyone.do("GET", "/events/"+ev+"/draw/order", nil); r.Status != http.StatusNotFound {
		t.Errorf("the order before the draw: %d", r.Status)
	}
	s.Advance(max(0, opensAt.Sub(s.Now())) + 100*time.Millisecond)
	var got []int64
	positions := map[string]int64{}
	for i, id := range ids {
		out := s.client(t, fmt.Sprint("early-", i), "").awaitOutcome(id)
		got = append(got, out.QueuePosition)
		positions[id] = out.QueuePosition
	}
	checkDraw(t, anyone, ev, before.Commitment, positions)
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	at := s.positions()
	users := make([]string, early)
	for i := range users {
		users[i] = fmt.Sprint("early-", i)
	}
	if want := at.Reserve(users); !slices.Equal(sorted, want) {
		t.Fatalf("drawn positions %v are not %v", got, want)
	}
	if slices.Equal(got, sorted) {
		t.Error("the draw kept arrival order")
	}
	late, r := s.client(t, "late", "").enqueue(ev, "late", "B-A-1")
	if want := at.Give("late"); r.Status != http.StatusAccepted || late.QueuePosition != want {
		t.Errorf("after the draw: %d at %d, want %d", r.Status, late.QueuePosition, want)
	}
	// Ten seats, forty requests for them: exactly ten held.
	held := 0
	for i, id := range ids {
		if s.client(t, fmt.Sprint("early-", i), "").queueStatus(id).Status == "held" {
			held++
		}
	}
	if held != 10 {
		t.Errorf("%d held of 10 seats", held)
	}
}

type drawView struct {
	Commitment    string `json:"commitment"`
	Drawn         bool   `json:"drawn"`
	Seed          string `json:"seed"`
	FirstPosition int64  `json:"first_position"`
	Entries       int    `json:"entries"`
	EntriesSHA256 string `json:"entries_sha256"`
	OrderSHA256   string `json:"order_sha256"`
	OrderURL      string `json:"order_url"`
}

func drawOf(t *testing.T, c *client, eventID string) drawView {
	t.Helper()
	r := c.do("GET", "/events/"+eventID+"/draw", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET draw: %d %s", r.Status, r.Body)
	}
	var d drawView
	r.decode(t, &d)
	return d
}

// checkDraw checks a drawn event's published draw as an outsider would:
// the seed hashes to the commitment seen before, the order is the seed's
// order of its entries, and each request sits at the position its owner
// was told.
func checkDraw(t *testing.T, c *client, eventID, commitment string, positions map[string]int64) {
	t.Helper()
	d := drawOf(t, c, eventID)
	seed, err := hex.DecodeString(d.Seed)
	if !d.Drawn || err != nil || d.Commitment != commitment || boxoffice.DrawCommitment(seed) != commitment {
		t.Fatalf("after the draw: %+v (seed: %v); the commitment before was %s", d, err, commitment)
	}
	r := c.do("GET", d.OrderURL, nil)
	if sum := sha256.Sum256(r.Body); r.Status != http.StatusOK || hex.EncodeToString(sum[:]) != d.OrderSHA256 {
		t.Fatalf("order: %d, sha256 %x, the draw says %s", r.Status, sum, d.OrderSHA256)
	}
	var order []boxoffice.ID
	for _, line := range strings.Fields(string(r.Body)) {
		if line == "-" {
			order = append(order, 0) // a position that went to a request outside the draw
			continue
		}
		order = append(order, parseID(t, line))
	}
	entries := boxoffice.DrawEntries(order)
	if len(entries) != len(positions) || d.Entries != len(entries) {
		t.Fatalf("%d in the order, %d entries said, %d requests waited", len(entries), d.Entries, len(positions))
	}
	if !slices.Equal(boxoffice.DrawOrder(seed, entries), entries) {
		t.Error("the published order is not the seed's order of its entries")
	}
	for i, id := range order {
		if id == 0 {
			continue
		}
		if want := positions[id.String()]; want != d.FirstPosition+int64(i) {
			t.Errorf("request %d is %d-th in the draw (position %d), its owner was told %d", id, i, d.FirstPosition+int64(i), want)
		}
	}
}

// The same request delivered twice, also at once, makes one booking.
func testDuplicateDelivery(t *testing.T, s *Stack) {
	needQueue(t, s)
	ev := s.queuedEvent(t, -time.Minute)
	fan := s.client(t, "fan", "")
	q, _ := fan.enqueue(ev, "dup", "A-A-3")
	e, err := s.Queue.Entry(ctx, parseID(t, q.RequestID))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				err := s.Service.ServeBatch(ctx, []*boxoffice.QueuedRequest{e.Request, e.Request})
				if err == nil {
					return
				}
				if boxoffice.ErrorCode(err) != boxoffice.EIDEMINFLIGHT {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Service.ServeBatch(ctx, []*boxoffice.QueuedRequest{e.Request}); err != nil {
		t.Fatal(err)
	}
	out := fan.queueStatus(q.RequestID)
	if out.Status != "held" {
		t.Fatalf("outcome %+v", out)
	}
	if p, _ := s.Queue.Progress(ctx, parseID(t, ev)); p.Served != 1 {
		t.Errorf("served %d, want 1", p.Served)
	}
	// The seat is this booking's and only its.
	b, err := s.Store.Booking(ctx, parseID(t, out.BookingID))
	if err != nil || b.Status != boxoffice.BookingPending {
		t.Fatalf("booking %+v, %v", b, err)
	}
	if r := s.client(t, "other", "").reserve(s.newEvent(t, nil), "x", "A-A-3"); r.Status != http.StatusCreated {
		t.Errorf("another event's seat: %d", r.Status)
	}
	if err := s.Holds.Verify(ctx, parseID(t, ev), []string{"A-A-3"}, b.ID, b.Fence); err != nil {
		t.Errorf("the booking's hold: %v", err)
	}
}

// A steady drain: the estimate given early matches the wait observed.
func testWaitEstimate(t *testing.T, s *Stack) {
	needQueue(t, s)
	ev := s.queuedEvent(t, -time.Minute, section{"A", "gold", 100, 20, 25})
	const n = 400
	const rate = 60 // requests per second
	var tickets []queueTicket
	var clients []*client
	for i := range n {
		c := s.client(t, fmt.Sprint("steady-", i), "")
		q, r := c.enqueue(ev, "k", boxoffice.SeatID("A", boxoffice.RowLabel(1+i/25), 1+i%25))
		if r.Status != http.StatusAccepted {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		tickets, clients = append(tickets, q), append(clients, c)
	}
	// Before any drain there is an estimate all the same: the prior. And
	// the seats: 500 left; 399 ahead, each expected to take one seat (as
	// this one asks), leave 101 at its turn.
	// (On slots, ahead are the positions below this one: n-1 or fewer.)
	at := s.positions()
	for i := range n {
		at.Give(fmt.Sprint("steady-", i))
	}
	ahead := at.Progress().Before(tickets[n-1].QueuePosition)
	// The estimator reads an event's counters at most every 250 ms: let
	// it see all n (on slots, ahead depends on every slot's count).
	time.Sleep(300 * time.Millisecond)
	first := clients[n-1].queueStatus(tickets[n-1].RequestID)
	if first.Wait == nil || *first.Wait <= 0 || first.Ahead != ahead {
		t.Errorf("before the drain: %+v, want an estimate from the prior with %d ahead", first, ahead)
	}
	if first.SeatsLeft == nil || *first.SeatsLeft != 500 || first.ExpectedLeft == nil || int64(*first.ExpectedLeft) != 500-ahead || first.WaitlistURL != "" {
		t.Errorf("seats before the drain: left %v, expected at turn %v, waitlist %q; want 500, %d, none",
			deref(first.SeatsLeft), deref(first.ExpectedLeft), first.WaitlistURL, 500-ahead)
	}
	if s.queueSlots > 1 {
		// The accuracy against a paced drain is the same arithmetic on
		// any queue (slots change only the count ahead, checked above):
		// a second paced run would only double its exposure to a loaded
		// machine, where the paced worker starves.
		return
	}
	// A worker held to a steady pace, one request at a time, in position
	// order across the whole log: a partitioned log hands over partition
	// after partition, and serving them as they come would serve the last
	// in line before most of those ahead of it. So the requests are
	// gathered first (the log hands them over in milliseconds), then served.
	wctx, cancel := context.WithCancel(context.Background())
	var served serveTimes // when the worker served each request
	done := make(chan struct{})
	gathered := make(chan []*boxoffice.QueuedRequest, 1)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		var all []*boxoffice.QueuedRequest
		seen := map[boxoffice.ID]bool{}
		_ = s.Log.Consume(wctx, func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
			for _, r := range batch {
				if !seen[r.ID] { // a record delivered twice is served once
					seen[r.ID] = true
					if all = append(all, r); len(all) == n {
						gathered <- all
					}
				}
			}
			return nil
		})
	}()
	go func() {
		defer func() { <-consumed; close(done) }()
		var all []*boxoffice.QueuedRequest
		select {
		case <-wctx.Done():
			return
		case all = <-gathered:
		}
		slices.SortFunc(all, func(a, b *boxoffice.QueuedRequest) int { return cmp.Compare(a.Position, b.Position) })
		tick := time.NewTicker(time.Second / rate)
		defer tick.Stop()
		for _, r := range all {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			if err := s.Service.ServeBatch(wctx, []*boxoffice.QueuedRequest{r}); err != nil {
				return
			}
			served.add(time.Now())
		}
	}()
	defer func() { cancel(); <-done }()
	// Let the rate settle (the estimator samples as it is asked): ask the
	// last in line until the estimate comes from the measured drain (the
	// prior, 2,000/s, says well under a second for 399 ahead; 60/s says
	// several seconds), then once more a second later.
	var est queueTicket
	for deadline := time.Now().Add(10 * time.Second); ; {
		est = clients[n-1].queueStatus(tickets[n-1].RequestID)
		if est.Wait != nil && *est.Wait > 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no estimate from a measured drain after 10 s: %+v", est)
		}
		time.Sleep(100 * time.Millisecond)
	}
	asked := time.Now()
	// Once more a second later, while more than two seconds of the drain
	// are left: on a loaded machine the estimate may come late, and the
	// request may be served before a second read.
	if est.Ahead > 2*rate {
		time.Sleep(time.Second)
		if again := clients[n-1].queueStatus(tickets[n-1].RequestID); again.Wait != nil {
			est, asked = again, time.Now()
		}
	}
	clients[n-1].awaitOutcome(tickets[n-1].RequestID)
	outcome := time.Now()
	actual := outcome.Sub(asked).Seconds()
	predicted := *est.Wait
	// The pace the worker really kept over the estimator's window (its
	// EWMA's time constant) before the estimate, and after it.
	before := served.rate(asked.Add(-3*time.Second), asked)
	after := served.rate(asked, outcome)
	fromPace := float64(est.Ahead+1) / before
	t.Logf("last in line, %d ahead: predicted %.1fs, actual %.1fs; the worker served %.1f/s before, %.1f/s after (paced at %d/s)",
		est.Ahead, predicted, actual, before, after, rate)
	// Tolerance: 30% of the wait plus a second for the polling. The
	// estimate must follow the drain as it was measured...
	if math.Abs(predicted-fromPace) > 0.3*fromPace+1 {
		t.Errorf("predicted %.1fs, %.1fs at the pace kept before asking (%.1f/s): outside 30%% + 1s", predicted, fromPace, before)
	}
	// ... and, when the drain kept that pace (the worker is paced, but a
	// loaded machine can starve it for seconds, which no estimate can
	// foresee), match the wait observed.
	if math.Abs(after-before) <= 0.15*before && math.Abs(predicted-actual) > 0.3*actual+1 {
		t.Errorf("predicted %.1fs, actual %.1fs: outside 30%% + 1s", predicted, actual)
	}
}

// serveTimes records when a test's worker served each request.
type serveTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (s *serveTimes) add(t time.Time) {
	s.mu.Lock()
	s.at = append(s.at, t)
	s.mu.Unlock()
}

// rate returns the requests served per second in [from, to], measured from
// the first one served if the drain started after from.
func (s *serveTimes) rate(from, to time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.at) > 0 && s.at[0].After(from) {
		from = s.at[0]
	}
	n := 0
	for _, at := range s.at {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	if d := to.Sub(from).Seconds(); d > 0 {
		return float64(n) / d
	}
	return 0
}

// The stream sends the position, then the outcome, and ends.
func testQueueStream(t *testing.T, s *Stack) {
	needQueue(t, s)
	ev := s.queuedEvent(t, -time.Minute)
	fan := s.client(t, "fan", "")
	q, _ := fan.enqueue(ev, "sse", "A-A-5")
	req, _ := http.NewRequest("GET", s.URL+q.EventsURL+"?access_token="+fan.token, nil)
	req.Header.Set("Last-Event-ID", "41")
	resp, err := sharedHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan queueTicket, 10)
	ids := make(chan string, 10)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				ids <- v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				var tk queueTicket
				if json.Unmarshal([]byte(v), &tk) == nil {
					events <- tk
				}
			}
		}
	}()
	first := <-events
	if first.Status != "queued" || first.QueuePosition != s.positions().Give("fan") || <-ids != "42" {
		t.Fatalf("first event %+v", first)
	}
	s.StartWorkers(t, 1)
	var last queueTicket
	for tk := range events {
		last = tk
	}
	if last.Status != "held" || last.BookingID != q.RequestID {
		t.Fatalf("last event %+v, want held", last)
	}
	// A stream for someone else's request is refused before it starts.
	r := s.client(t, "other", "").do("GET", q.EventsURL, nil)
	if r.Status != http.StatusNotFound || r.problem(t).Code != boxoffice.ENOTFOUND {
		t.Errorf("another user's stream: %d", r.Status)
	}
}

// When every seat is held or sold, a queued sale says so at once: a new
// request gets 409 sold-out with the waitlist's address instead of a 202,
// every request queued before is told sold out (and the drain records it
// without a hold), while a retry of a request that got seats still gets
// its own ticket.
func testQueueSoldOut(t *testing.T, s *Stack) {
	needQueue(t, s)
	ev := s.queuedEvent(t, -time.Minute, section{"A", "t", 5000, 1, 4})
	waitlist := "/events/" + ev + "/waitlist"
	a, b := s.client(t, "early-a", ""), s.client(t, "early-b", "")
	qa, _ := a.enqueue(ev, "a", "A-A-1", "A-A-2")
	qb, _ := b.enqueue(ev, "b", "A-A-3", "A-A-4")
	stop := s.StartWorkers(t, 1)
	if out := a.awaitOutcome(qa.RequestID); out.Status != "held" {
		t.Fatalf("first request: %+v", out)
	}
	if out := b.awaitOutcome(qb.RequestID); out.Status != "held" {
		t.Fatalf("second request: %+v", out)
	}
	stop()

	// Every seat is held. Within the inventory's second (and the seat
	// map's), new requests are refused at the door; those that still got
	// a 202 meanwhile were queued before the sell-out was seen.
	var queuedBefore []string
	var refused response
	deadline := time.Now().Add(20 * time.Second)
	step := time.Now()
	for i := 0; ; i++ {
		c := s.client(t, fmt.Sprintf("late-%d", i), "")
		q, r := c.enqueue(ev, "k", "A-A-1")
		if r.Status == http.StatusAccepted {
			queuedBefore = append(queuedBefore, q.RequestID)
		} else {
			refused = r
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still 202 after 20 s of a sold-out event (%d requests)", i+1)
		}
		// The stack's clock (the seat map's and the holds') moves as the
		// real one does, which the inventory's second is measured on: a
		// fixed step a request ran the holds out (10 minutes) before the
		// count's second was up on a fast machine, and the seats were
		// free again.
		time.Sleep(5 * time.Millisecond)
		s.Advance(time.Since(step))
		step = time.Now()
	}
	if p := refused.problem(t); refused.Status != http.StatusConflict || p.Code != boxoffice.ESOLDOUT || p.WaitlistURL != waitlist {
		t.Fatalf("a request after the sell-out: %d %+v, want 409 sold_out with %s", refused.Status, p, waitlist)
	}
	// A best-available ask is refused the same way.
	best := s.client(t, "best", "")
	r := best.do("POST", "/bookings/reserve", map[string]any{"event_id": ev, "idempotency_key": "b",
		"best_available": map[string]any{"quantity": 1}})
	if r.Status != http.StatusConflict || r.problem(t).Code != boxoffice.ESOLDOUT {
		t.Errorf("best available after the sell-out: %d %s", r.Status, r.Body)
	}
	// Queued before the sell-out, not served yet: told already.
	for i, id := range queuedBefore {
		q := s.client(t, fmt.Sprintf("late-%d", i), "").queueStatus(id)
		if q.Status != "rejected" || q.Reason != boxoffice.ESOLDOUT || q.WaitlistURL != waitlist {
			t.Errorf("request %s queued before the sell-out: %+v, want rejected sold_out", id, q)
		}
	}
	t.Logf("%d requests queued before the sell-out was seen", len(queuedBefore))
	// A retry of a request that has seats is its own ticket, not a refusal.
	if q, r := a.enqueue(ev, "a", "A-A-1", "A-A-2"); r.Status != http.StatusAccepted || q.RequestID != qa.RequestID || q.Status != "held" {
		t.Errorf("retry of a served request: %d %+v", r.Status, q)
	}
	// The drain records the told ones as told, without holding a seat.
	s.StartWorkers(t, 1)
	for i, id := range queuedBefore {
		out := s.client(t, fmt.Sprintf("late-%d", i), "").awaitOutcome(id)
		if out.Status != "rejected" || out.Reason != boxoffice.ESOLDOUT {
			t.Errorf("request %s after the drain: %+v, want rejected sold_out", id, out)
		}
	}
	if st := s.statuses(t, ev); st["A-A-1"] != "held" || st["A-A-3"] != "held" {
		t.Errorf("seats after the drain: %v", st)
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// One user holds at most DefaultStreamsPerUser live streams (429 past
// it; a closed one frees its place), and a stream ends when the token it
// was opened with expires.
func testStreamLimits(t *testing.T, s *Stack) {
	needQueue(t, s)
	ev := s.queuedEvent(t, -time.Minute)
	fan := s.client(t, "streamer", "")
	q, r := fan.enqueue(ev, "sse-limit", "A-A-6") // no worker: it stays queued, its streams stay open
	if r.Status != http.StatusAccepted {
		t.Fatalf("enqueue: %d %s", r.Status, r.Body)
	}
	open := func(token string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", s.URL+q.EventsURL+"?access_token="+token, nil)
		return sharedHTTP.Do(req)
	}
	var streams []*http.Response
	defer func() {
		for _, st := range streams {
			st.Body.Close()
		}
	}()
	for i := range httpapi.DefaultStreamsPerUser {
		resp, err := open(fan.token)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %v %v", i+1, resp, err)
		}
		streams = append(streams, resp)
	}
	resp, err := open(fan.token)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("one stream too many: %v %v, want 429 with Retry-After", resp, err)
	}
	resp.Body.Close()
	// A stream's place comes back once the server sees its close (at its
	// next write): openOnce waits for that, up to 10 s.
	openOnce := func(token, what string) *http.Response {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			resp, err := open(token)
			if err == nil && resp.StatusCode == http.StatusOK {
				return resp
			}
			if err == nil {
				resp.Body.Close()
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v %v", what, resp, err)
			}
		}
	}
	streams[0].Body.Close()
	streams = append(streams[1:], openOnce(fan.token, "a closed stream's place never came back"))

	// A token about to expire: its stream ends with it.
	short, err := s.Auth.Issue("streamer", "", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range streams {
		st.Body.Close() // room for one more
	}
	streams = nil
	brief := openOnce(short, "no stream with the short token")
	defer brief.Body.Close()
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, brief.Body); ended <- err }()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("the stream broke instead of ending: %v", err)
		}
	case <-time.After(30 * time.Second): // a bound on the wait, not a measurement
		t.Error("the stream outlived its token by half a minute")
	}
}
