package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// These tests put many writes into one batch deterministically: a first
// write holds the writer goroutine while the others queue, so that all of
// them are taken together once it returns (at most maxBatch of them).

var batchNow = time.Date(2030, 6, 1, 18, 0, 0, 0, time.UTC)

func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "boxoffice.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// holdWriter blocks the writer goroutine inside a write of its own until
// release is called.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, unblock, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.writeTx(context.Background(), func(context.Context, *txn) error {
			close(started)
			<-unblock
			return nil
		})
	}()
	<-started
	return func() {
		close(unblock)
		if err := <-done; err != nil {
			t.Errorf("the holding write: %v", err)
		}
	}
}

// waitQueued waits until n writes wait for the writer.
func waitQueued(w *writeCombiner, n int) {
	for {
		w.mu.Lock()
		queued := len(w.queue)
		w.mu.Unlock()
		if queued >= n {
			return
		}
		runtime.Gosched()
	}
}

// batch runs the calls concurrently as one batch and returns their errors,
// in the calls' order.
func batch(t *testing.T, s *Store, calls ...func() error) []error {
	t.Helper()
	if len(calls) > maxBatch {
		t.Fatalf("%d calls do not fit in one batch of %d", len(calls), maxBatch)
	}
	release := holdWriter(t, s)
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() { errs[i] = call() })
	}
	waitQueued(s.writer, len(calls))
	release()
	wg.Wait()
	return errs
}

func createEvent(t *testing.T, s *Store, id boxoffice.ID, seats int) *boxoffice.Event {
	t.Helper()
	e := &boxoffice.Event{
		ID: id, Name: "Batch", Venue: "Hall", StartsAt: batchNow.Add(24 * time.Hour), SaleOpensAt: batchNow.Add(-time.Hour),
		SaleMode: boxoffice.SaleDirect, TicketLimit: 4, CreatedAt: batchNow,
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 1000, Rows: 1, SeatsPerRow: seats}},
	}
	if err := s.CreateEvent(t.Context(), e); err != nil {
		t.Fatalf("CreateEvent: %v", err)
	}
	return e
}

// reserve is one CreateBooking of the test, with an idempotency record.
type reserve struct {
	id    boxoffice.ID
	user  string
	key   string
	seats []string
	want  string // the error code it must get, "" for success, "?" for either
}

func (r reserve) newBooking(eventID boxoffice.ID) boxoffice.NewBooking {
	return boxoffice.NewBooking{
		Booking: &boxoffice.Booking{
			ID: r.id, EventID: eventID, UserID: r.user, SeatIDs: r.seats, Fence: int64(r.id),
			AmountCents: 1000, HeldUntil: batchNow.Add(10 * time.Minute), CreatedAt: batchNow, UpdatedAt: batchNow,
		},
		TicketLimit: 4,
		Idempotency: &boxoffice.IdempotencyRecord{
			UserID: r.user, Key: r.key, RequestHash: fmt.Sprint("hash-", r.id), Outcome: boxoffice.OutcomeHeld,
			Body: []byte(fmt.Sprintf(`{"booking_id":"%d"}`, r.id)), CreatedAt: batchNow, ExpiresAt: batchNow.Add(time.Hour),
		},
	}
}

func TestBatchKeepsEachWriteAtomic(t *testing.T) {
	// One batch of CreateBookings, some of which fail on what the ones
	// before them in the batch wrote: each failure must write nothing (no
	// booking, no seats, no idempotency record) and undo nothing of the
	// others, and each success must be all there.
	s := openStore(t)
	ctx := t.Context()
	e := createEvent(t, s, 1, 60)
	seat := func(n int) string { return boxoffice.SeatID("A", "A", n) }

	// A-A-1 is sold before the batch.
	sold := reserve{id: 10, user: "bob", key: "sold", seats: []string{seat(1)}}
	if err := s.CreateBooking(ctx, sold.newBooking(e.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConfirmBooking(ctx, boxoffice.ConfirmBooking{
		BookingID: 10, Fence: 10, Now: batchNow.Add(time.Minute), Code: "CONF",
		Tickets: []boxoffice.Ticket{{ID: 11, SeatID: seat(1), Code: "T11"}},
		Payment: boxoffice.Payment{AuthID: "auth", AmountCents: 1000},
	}); err != nil {
		t.Fatal(err)
	}

	var reserves []reserve
	id := boxoffice.ID(100)
	add := func(user, key string, want string, seats ...string) {
		id++
		reserves = append(reserves, reserve{id: id, user: user, key: key, seats: seats, want: want})
	}
	// Six bookings of two seats for one user with a limit of four: the
	// first two in the batch fit, the other four see them and are refused.
	for i := range 6 {
		add("greedy", fmt.Sprint("g", i), "?", seat(10+2*i), seat(11+2*i))
	}
	// A sold seat beside a free one: refused, the free one stays free.
	add("late", "l", boxoffice.ESEATTAKEN, seat(30), seat(1))
	// Three attempts with one idempotency key: one wins.
	for range 3 {
		add("retry", "same-key", "?", seat(31+int(id%3)))
	}
	// A seat that is not in the layout, after writing its idempotency
	// record and booking row.
	add("lost", "x", boxoffice.EINVALID, seat(40), "Z-Z-99")
	// Plain successes, interleaved with the rest by the scheduler.
	for i := range 10 {
		add(fmt.Sprint("u", i), "k", "", seat(45+i))
	}

	calls := make([]func() error, len(reserves))
	for i, r := range reserves {
		calls[i] = func() error { return s.CreateBooking(ctx, r.newBooking(e.ID)) }
	}
	errs := batch(t, s, calls...)

	wins := map[string]int{}
	for i, r := range reserves {
		code := boxoffice.ErrorCode(errs[i])
		if r.want != "?" && code != r.want {
			t.Errorf("booking %d of %s: error code %q, want %q (%v)", r.id, r.user, code, r.want, errs[i])
		}
		b, berr := s.Booking(ctx, r.id)
		rec, rerr := s.Idempotency(ctx, r.user, r.key)
		if errs[i] != nil {
			if berr == nil {
				t.Errorf("failed booking %d of %s (%v) was written: %+v", r.id, r.user, errs[i], b)
			}
			if rerr == nil && rec.RequestHash == fmt.Sprint("hash-", r.id) {
				t.Errorf("failed booking %d of %s (%v) wrote its idempotency record", r.id, r.user, errs[i])
			}
			continue
		}
		wins[r.user]++
		if berr != nil {
			t.Errorf("booking %d of %s succeeded but reads back: %v", r.id, r.user, berr)
		} else if fmt.Sprint(b.SeatIDs) != fmt.Sprint(r.seats) || b.Status != boxoffice.BookingPending {
			t.Errorf("booking %d of %s reads back %s with seats %v, want pending with %v", r.id, r.user, b.Status, b.SeatIDs, r.seats)
		}
		if rerr != nil || rec.RequestHash != fmt.Sprint("hash-", r.id) {
			t.Errorf("booking %d of %s succeeded but its idempotency record reads back %+v, %v", r.id, r.user, rec, rerr)
		}
	}
	for i, r := range reserves {
		switch code := boxoffice.ErrorCode(errs[i]); {
		case r.user == "greedy" && code != "" && code != boxoffice.ELIMIT:
			t.Errorf("greedy booking %d: %v, want success or %s", r.id, errs[i], boxoffice.ELIMIT)
		case r.user == "retry" && code != "" && code != boxoffice.EIDEMINFLIGHT:
			t.Errorf("retry booking %d: %v, want success or %s", r.id, errs[i], boxoffice.EIDEMINFLIGHT)
		}
	}
	if wins["greedy"] != 2 {
		t.Errorf("%d of greedy's bookings succeeded, want 2 (the limit is 4 seats)", wins["greedy"])
	}
	if wins["retry"] != 1 {
		t.Errorf("%d of the bookings sharing an idempotency key succeeded, want 1", wins["retry"])
	}
	// The free seats of the refused bookings are still free: a booking of
	// all of them goes through.
	free := reserve{id: 999, user: "after", key: "after", seats: []string{seat(30), seat(40)}}
	if err := s.CreateBooking(ctx, free.newBooking(e.ID)); err != nil {
		t.Errorf("booking the seats the refused bookings named: %v", err)
	}
}

func TestBatchConfirmsOfOneSeatSellItOnce(t *testing.T) {
	// Two confirms of rival bookings of one seat in one batch: the second
	// sees the first's ticket and fails on the unique index inside its
	// savepoint, leaving its booking pending, without tickets or payment.
	s := openStore(t)
	ctx := t.Context()
	e := createEvent(t, s, 1, 4)
	seat := boxoffice.SeatID("A", "A", 1)
	var cs []boxoffice.ConfirmBooking
	for i, user := range []string{"ann", "ben"} {
		id := boxoffice.ID(10 + i)
		if err := s.CreateBooking(ctx, boxoffice.NewBooking{TicketLimit: 4, Booking: &boxoffice.Booking{
			ID: id, EventID: e.ID, UserID: user, SeatIDs: []string{seat}, Fence: 7, AmountCents: 1000,
			HeldUntil: batchNow.Add(10 * time.Minute), CreatedAt: batchNow, UpdatedAt: batchNow,
		}}); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, boxoffice.ConfirmBooking{
			BookingID: id, Fence: 7, Now: batchNow.Add(time.Minute), Code: fmt.Sprint("CONF-", id),
			Tickets: []boxoffice.Ticket{{ID: 100 + id, SeatID: seat, Code: fmt.Sprint("T-", id)}},
			Payment: boxoffice.Payment{AuthID: fmt.Sprint("auth-", id), AmountCents: 1000},
		})
	}
	errs := batch(t, s,
		func() error { _, err := s.ConfirmBooking(ctx, cs[0]); return err },
		func() error { _, err := s.ConfirmBooking(ctx, cs[1]); return err },
	)
	winners := 0
	for i, err := range errs {
		b, berr := s.Booking(ctx, cs[i].BookingID)
		if berr != nil {
			t.Fatal(berr)
		}
		switch boxoffice.ErrorCode(err) {
		case "":
			winners++
			if b.Status != boxoffice.BookingConfirmed || len(b.Tickets) != 1 {
				t.Errorf("winner %d is %s with %d tickets", b.ID, b.Status, len(b.Tickets))
			}
		case boxoffice.ESEATTAKEN:
			if b.Status != boxoffice.BookingPending || len(b.Tickets) != 0 || b.PaymentAuthID != "" {
				t.Errorf("loser %d is %s with %d tickets and payment %q, want pending with none", b.ID, b.Status, len(b.Tickets), b.PaymentAuthID)
			}
		default:
			t.Errorf("confirm %d: %v, want success or %s", cs[i].BookingID, err, boxoffice.ESEATTAKEN)
		}
	}
	if winners != 1 {
		t.Errorf("%d confirms succeeded, want 1", winners)
	}
	ps, err := s.UncapturedPayments(ctx, batchNow.Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Errorf("payments %+v, want the winner's only", ps)
	}
}

func TestWriteWhoseContextEndsWhileQueuedNeverRuns(t *testing.T) {
	s := openStore(t)
	e := createEvent(t, s, 1, 4)
	release := holdWriter(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	r := reserve{id: 10, user: "ann", key: "k", seats: []string{boxoffice.SeatID("A", "A", 1)}}
	done := make(chan error, 1)
	go func() { done <- s.CreateBooking(ctx, r.newBooking(e.ID)) }()
	waitQueued(s.writer, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("CreateBooking cancelled while queued: %v, want %v", err, context.Canceled)
	}
	release()
	if _, err := s.Booking(t.Context(), r.id); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		t.Errorf("Booking after a cancelled CreateBooking: %v, want %s", err, boxoffice.ENOTFOUND)
	}

	// A context already done is answered at once.
	if err := s.CreateBooking(ctx, r.newBooking(e.ID)); !errors.Is(err, context.Canceled) {
		t.Errorf("CreateBooking with a done context: %v, want %v", err, context.Canceled)
	}
}

func TestPanicInABatchReachesItsCallerOnly(t *testing.T) {
	s := openStore(t)
	ctx := t.Context()
	e := createEvent(t, s, 1, 4)
	r := reserve{id: 10, user: "ann", key: "k", seats: []string{boxoffice.SeatID("A", "A", 1)}}
	var recovered any
	errs := batch(t, s,
		func() error {
			defer func() { recovered = recover() }()
			return s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
				if _, err := tx.ExecContext(ctx, `UPDATE events SET name = 'gone'`); err != nil {
					return err
				}
				panic("boom")
			})
		},
		func() error { return s.CreateBooking(ctx, r.newBooking(e.ID)) },
	)
	if recovered != "boom" {
		t.Errorf("the panicking write's caller recovered %v, want boom", recovered)
	}
	if errs[1] != nil {
		t.Errorf("CreateBooking beside a panicking write: %v", errs[1])
	}
	if got, err := s.Event(ctx, e.ID); err != nil || got.Name != e.Name {
		t.Errorf("the panicking write was not rolled back: Event: %+v, %v", got, err)
	}
	if _, err := s.Booking(ctx, r.id); err != nil {
		t.Errorf("the booking beside the panicking write: %v", err)
	}
}

func TestCloseDrainsQueuedWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxoffice.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	e := createEvent(t, s, 1, 10)
	release := holdWriter(t, s)
	const n = 5
	errs := make(chan error, n)
	for i := range n {
		r := reserve{id: boxoffice.ID(10 + i), user: fmt.Sprint("u", i), key: "k", seats: []string{boxoffice.SeatID("A", "A", i+1)}}
		go func() { errs <- s.CreateBooking(ctx, r.newBooking(e.ID)) }()
	}
	waitQueued(s.writer, n)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	for {
		s.writer.mu.Lock()
		refusing := s.writer.closed
		s.writer.mu.Unlock()
		if refusing {
			break
		}
		runtime.Gosched()
	}
	late := reserve{id: 99, user: "late", key: "k", seats: []string{boxoffice.SeatID("A", "A", 9)}}
	if err := s.CreateBooking(ctx, late.newBooking(e.ID)); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Errorf("CreateBooking while closing: %v, want %s", err, boxoffice.EUNAVAILABLE)
	}
	release()
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("a write queued before Close: %v", err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}

	reopened, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	for i := range n {
		if _, err := reopened.Booking(ctx, boxoffice.ID(10+i)); err != nil {
			t.Errorf("booking %d queued before Close, after reopening: %v", 10+i, err)
		}
	}
}
