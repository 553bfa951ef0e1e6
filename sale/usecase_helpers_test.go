package sale

// The harness of the use-case tests (issue 17): a Service over the
// embedded parts (the SQLite store and its queue, the in-process lock
// layer and leases, the test payment gateway), all on one settable clock,
// so that holds, grace periods and offers run out when a test moves the
// clock, never by sleeping.

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/snowflake"
	"github.com/boxoffice/boxoffice/sqlite"
	"github.com/boxoffice/boxoffice/testpay"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// newFakeClock starts at a whole millisecond (the store keeps times in
// milliseconds), so that times read back compare equal.
func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2031, time.March, 1, 18, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// harness is a Service over the embedded parts and the parts themselves,
// for the tests to look behind the use cases.
type harness struct {
	t        *testing.T
	ctx      context.Context
	clock    *fakeClock
	store    *sqlite.Store
	queue    *sqlite.Queue
	holds    *inmem.Holds
	leases   *inmem.Leases
	pay      *testpay.Gateway
	notifier *inmem.Notifier
	svc      *Service
	// deps and cfg are what svc was made of: another node makes its own
	// Service of them (node).
	deps Deps
	cfg  Config
}

// node is another process of the deployment: a Service over the same
// parts with caches of its own (a seat map's inventory counted afresh).
func (h *harness) node() *Service { return New(h.deps, h.cfg) }

// harnessOptions vary the harness: the service's policy, and a seat map
// to count inventories from (none by default: best available then reads
// the store and the lock layer).
type harnessOptions struct {
	cfg   Config
	avail Availability
	// payments wraps the test gateway (nil: the gateway itself).
	payments func(*testpay.Gateway) boxoffice.PaymentGateway
	// queue wraps the queue's state (nil: the embedded one itself).
	queue func(*sqlite.Queue) boxoffice.QueueState
	// leases wraps the leases (nil: the in-memory ones themselves).
	leases func(*inmem.Leases) boxoffice.Leases
}

func newHarness(t *testing.T) *harness { return newHarnessWith(t, harnessOptions{}) }

func newHarnessWith(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sale.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	clock := newFakeClock()
	store.Now = clock.Now
	// Ids on the real clock: they only need to be unique and increasing.
	ids, err := snowflake.New(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: ctx, clock: clock, store: store, queue: store.Queue(),
		holds: inmem.NewHolds(clock.Now), leases: inmem.NewLeases(clock.Now),
		pay: testpay.New(), notifier: inmem.NewNotifier()}
	var pay boxoffice.PaymentGateway = h.pay
	if o.payments != nil {
		pay = o.payments(h.pay)
	}
	var queue boxoffice.QueueState = h.queue
	if o.queue != nil {
		queue = o.queue(h.queue)
	}
	var leases boxoffice.Leases = h.leases
	if o.leases != nil {
		leases = o.leases(h.leases)
	}
	h.deps = Deps{Store: store, Holds: h.holds, Leases: leases, Payments: pay, IDs: ids,
		Now: clock.Now, Log: slog.New(slog.DiscardHandler),
		Queue: queue, RequestLog: h.queue, QueuePurge: h.queue, Notifier: h.notifier, Availability: o.avail}
	h.cfg = o.cfg
	h.svc = h.node()
	return h
}

// testAdmin is the organiser; testStaff works the doors.
var (
	testAdmin = boxoffice.User{ID: "organiser", Role: boxoffice.RoleAdmin}
	testStaff = boxoffice.User{ID: "door", Role: boxoffice.RoleStaff}
)

// buyer is a plain user.
func buyer(id string) boxoffice.User { return boxoffice.User{ID: id} }

// seatPrice is the price of every seat of the harness's events.
const seatPrice = 5000

// event creates a direct sale, open now, of one section F of rows rows
// of perRow seats ("F-A-1", ...), after edit changes it.
func (h *harness) event(rows, perRow int, edit func(e *boxoffice.Event)) *boxoffice.Event {
	h.t.Helper()
	now := h.clock.Now()
	e := &boxoffice.Event{Name: "show", Venue: "hall", StartsAt: now.Add(30 * 24 * time.Hour),
		SaleOpensAt: now.Add(-time.Hour), SaleMode: boxoffice.SaleDirect,
		Sections: []boxoffice.Section{{Name: "F", PriceTier: "std", PriceCents: seatPrice, Rows: rows, SeatsPerRow: perRow}}}
	if edit != nil {
		edit(e)
	}
	e, err := h.svc.CreateEvent(h.ctx, testAdmin, e)
	if err != nil {
		h.t.Fatalf("create event: %v", err)
	}
	return e
}

// reserve reserves seats for u and fails the test if it is refused.
func (h *harness) reserve(u boxoffice.User, eventID boxoffice.ID, key string, seats ...string) *ReserveResult {
	h.t.Helper()
	res, err := h.svc.Reserve(h.ctx, u, ReserveRequest{EventID: eventID, SeatIDs: seats, IdempotencyKey: key})
	if err != nil {
		h.t.Fatalf("%s reserves %v: %v", u.ID, seats, err)
	}
	return res
}

// confirm pays for a booking with the approving test card.
func (h *harness) confirm(u boxoffice.User, bookingID boxoffice.ID, key string) *Confirmation {
	h.t.Helper()
	c, err := h.svc.Confirm(h.ctx, u, ConfirmRequest{BookingID: bookingID, PaymentToken: testpay.TokenApprove, IdempotencyKey: key})
	if err != nil {
		h.t.Fatalf("%s confirms %s: %v", u.ID, bookingID, err)
	}
	return c
}

// booking reads a booking from the store.
func (h *harness) booking(id boxoffice.ID) *boxoffice.Booking {
	h.t.Helper()
	b, err := h.store.Booking(h.ctx, id)
	if err != nil {
		h.t.Fatalf("booking %s: %v", id, err)
	}
	return b
}

// held reports, per seat, whether the lock layer holds it now.
func (h *harness) held(eventID boxoffice.ID, seats ...string) []bool {
	h.t.Helper()
	held, err := h.holds.Held(h.ctx, eventID, seats)
	if err != nil {
		h.t.Fatal(err)
	}
	return held
}

// wantHeld fails unless every seat's held state is want.
func (h *harness) wantHeld(eventID boxoffice.ID, want bool, seats ...string) {
	h.t.Helper()
	for i, held := range h.held(eventID, seats...) {
		if held != want {
			h.t.Errorf("seat %s held %v, want %v", seats[i], held, want)
		}
	}
}

// wantHeldBy fails unless booking b (as the store has it) still holds
// its seats under its fence.
func (h *harness) wantHeldBy(b *boxoffice.Booking) {
	h.t.Helper()
	if err := h.holds.Verify(h.ctx, b.EventID, b.SeatIDs, b.ID, b.Fence); err != nil {
		h.t.Errorf("booking %s does not hold its seats %v: %v", b.ID, b.SeatIDs, err)
	}
}

// wantCode fails unless err carries the error code want.
func wantCode(t *testing.T, err error, want string) {
	t.Helper()
	if got := boxoffice.ErrorCode(err); got != want {
		t.Fatalf("error %v (code %q), want code %q", err, got, want)
	}
}

// auths returns the test gateway's authorizations, once the captures
// running after their confirms' answers have ended.
func (h *harness) auths() []testpay.Auth {
	h.t.Helper()
	if err := h.svc.WaitCaptures(h.ctx); err != nil {
		h.t.Fatal(err)
	}
	return h.pay.Auths()
}

// fseats are the ids of seats "F-<row>-<n>" for n in ns.
func fseats(row string, ns ...int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf("F-%s-%d", row, n)
	}
	return out
}

// sameSeats reports whether a and b name the same seats, in any order.
func sameSeats(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
