package postgres_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/snowflake"
)

// TestPartitionUpgradeKeepsRows writes a sale the way release 0009 stored
// it, then opens the store, which applies 0010: every row is read back
// through the store, from the partitioned tables.
func TestPartitionUpgradeKeepsRows(t *testing.T) {
	u := freshSchema(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := postgres.MigrateTo(ctx, pool, 9); err != nil {
		t.Fatalf("migrate to 0009: %v", err)
	}
	const (
		ev, bk, buyer, tk, lst, entry = 1001, 2001, 2002, 3001, 4001, 5001
	)
	// Several statements: no parameters (the simple protocol), the times
	// as literals.
	lit := func(t time.Time) string { return "'" + t.Format(time.RFC3339Nano) + "'" }
	_, err = pool.Exec(ctx, strings.NewReplacer("$1", lit(t0.Add(30*24*time.Hour)), "$2", lit(t0), "$3", lit(t0.Add(10*time.Minute))).Replace(`
		INSERT INTO events (id, name, venue, starts_at, sale_opens_at, sale_mode, ticket_limit, created_at)
		VALUES (1001, 'Old show', 'Hall', $1, $2, 'direct', 4, $2);
		INSERT INTO sections (event_id, position, name, price_tier, price_cents, row_count, seats_per_row)
		VALUES (1001, 0, 'A', 'std', 5000, 1, 4);
		INSERT INTO seats (event_id, seat_id, section, row_label, number, price_tier, price_cents, position)
		SELECT 1001, 'A-A-' || n, 'A', 'A', n, 'std', 5000, n - 1 FROM generate_series(1, 4) n;
		INSERT INTO event_users VALUES (1001, 'ann'), (1001, 'bob');
		INSERT INTO bookings (id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at,
		                      confirmation_code, payment_auth_id)
		VALUES (2001, 1001, 'ann', 'confirmed', 1, 10000, $3, $2, $2, 'CONF', 'auth-1'),
		       (2002, 1001, 'bob', 'expired', 2, 5000, $3, $2, $2, '', '');
		INSERT INTO booking_seats VALUES (2001, 0, 1001, 'A-A-1'), (2001, 1, 1001, 'A-A-2'), (2002, 0, 1001, 'A-A-3');
		INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at)
		VALUES (3001, 1001, 2001, 'A-A-1', 'ann', 'code-1', 'valid', $2),
		       (3002, 1001, 2001, 'A-A-2', 'ann', 'code-2', 'valid', $2);
		INSERT INTO payments (booking_id, auth_id, amount_cents, status, created_at) VALUES (2001, 'auth-1', 10000, 'captured', $2);
		INSERT INTO listings (id, event_id, ticket_id, seat_id, seller_id, price_cents, status, created_at, updated_at)
		VALUES (4001, 1001, 3002, 'A-A-2', 'ann', 6000, 'active', $2, $2);
		INSERT INTO waitlist_entries (id, event_id, user_id, quantity, status, joined_at, updated_at)
		VALUES (5001, 1001, 'cy', 2, 'waiting', $2, $2);
		INSERT INTO seat_returns (event_id, booking_id, seat_ids, created_at) VALUES (1001, 2002, '{A-A-3}', $2);`))
	if err != nil {
		t.Fatalf("write the 0009 rows: %v", err)
	}

	s := openStore(t, u) // applies 0010
	e, err := s.Event(ctx, ev)
	if err != nil || e.Name != "Old show" || len(e.Sections) != 1 {
		t.Fatalf("Event after 0010 = %+v, %v", e, err)
	}
	b, err := s.Booking(ctx, bk)
	if err != nil {
		t.Fatalf("Booking after 0010: %v", err)
	}
	if b.Status != boxoffice.BookingConfirmed || !slices.Equal(b.SeatIDs, []string{"A-A-1", "A-A-2"}) || len(b.Tickets) != 2 {
		t.Errorf("Booking after 0010 = %+v", b)
	}
	if b.Tickets[1].ListingID != lst {
		t.Errorf("ticket A-A-2's listing = %d, want %d", b.Tickets[1].ListingID, lst)
	}
	if p, err := s.Payment(ctx, bk); err != nil || p.Status != boxoffice.PaymentCaptured || p.AmountCents != 10000 {
		t.Errorf("Payment after 0010 = %+v, %v", p, err)
	}
	if tkt, err := s.Ticket(ctx, tk); err != nil || tkt.Code != "code-1" {
		t.Errorf("Ticket after 0010 = %+v, %v", tkt, err)
	}
	if l, err := s.Listing(ctx, lst); err != nil || l.Status != boxoffice.ListingActive {
		t.Errorf("Listing after 0010 = %+v, %v", l, err)
	}
	if w, err := s.WaitlistEntry(ctx, entry); err != nil || w.Quantity != 2 {
		t.Errorf("WaitlistEntry after 0010 = %+v, %v", w, err)
	}
	if rs, err := s.PendingReturns(ctx, 10); err != nil || len(rs) != 1 || rs[0].BookingID != buyer {
		t.Errorf("PendingReturns after 0010 = %+v, %v", rs, err)
	}
	sold, err := s.SoldSeats(ctx, ev)
	if err != nil || !slices.Equal(sold, []string{"A-A-1", "A-A-2"}) {
		t.Errorf("SoldSeats after 0010 = %v, %v", sold, err)
	}
	// The database still refuses a second valid ticket for a seat.
	_, err = s.Pool().Exec(ctx, `
		INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at)
		VALUES (3003, 1001, 2002, 'A-A-1', 'bob', 'code-3', 'valid', $1)`, t0)
	if err == nil {
		t.Error("a second valid ticket for A-A-1 was accepted after 0010")
	}
	var where string
	if err := s.Pool().QueryRow(ctx, `SELECT tableoid::regclass::text FROM bookings WHERE id = $1`, int64(bk)).Scan(&where); err != nil || where != "bookings_legacy" {
		t.Errorf("booking %d lives in %q (%v), want bookings_legacy", bk, where, err)
	}
}

// TestEventsOfAMonthShareAPartition creates events of shows in two months
// (one partition each, made on demand, also when two processes make the
// same month's at once) and checks where their rows live.
func TestEventsOfAMonthShareAPartition(t *testing.T) {
	u := freshSchema(t)
	stores := []*postgres.Store{openStore(t, u), openStore(t, u)}
	ctx := context.Background()
	march := time.Date(2031, 3, 10, 20, 0, 0, 0, time.UTC)
	april := time.Date(2031, 4, 1, 0, 0, 0, 0, time.UTC) // the first millisecond of the month

	var (
		wg     sync.WaitGroup
		events = make([]*boxoffice.Event, 4)
		errs   = make([]error, 4)
	)
	for i := range events {
		show := march
		if i >= 2 {
			show = april
		}
		e := &boxoffice.Event{
			ID: snowflake.OnDay(newID()<<8, show), Name: "Show", Venue: "Hall",
			StartsAt: show, SaleOpensAt: t0, SaleMode: boxoffice.SaleDirect, TicketLimit: 4, CreatedAt: t0,
			Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 5000, Rows: 1, SeatsPerRow: 4}},
		}
		events[i] = e
		wg.Go(func() { errs[i] = stores[i%2].CreateEvent(ctx, e) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("CreateEvent %d: %v", i, err)
		}
	}
	want := map[boxoffice.ID]string{events[0].ID: "y2031m03", events[1].ID: "y2031m03", events[2].ID: "y2031m04", events[3].ID: "y2031m04"}
	for _, e := range events {
		b := createBooking(t, stores[0], e, "ann", 1, seat(1))
		if _, err := stores[1].ConfirmBooking(ctx, confirmation(b)); err != nil {
			t.Fatalf("ConfirmBooking: %v", err)
		}
		for _, table := range []string{"events", "seats", "bookings", "booking_seats", "tickets", "payments"} {
			col := "event_id"
			if table == "events" {
				col = "id"
			}
			var where string
			err := stores[0].Pool().QueryRow(ctx, `SELECT DISTINCT tableoid::regclass::text FROM `+table+` WHERE `+col+` = $1`, int64(e.ID)).Scan(&where)
			if err != nil || where != table+"_"+want[e.ID] {
				t.Errorf("event %s (show %s): %s rows in %q (%v), want %s_%s", e.ID, e.StartsAt, table, where, err, table, want[e.ID])
			}
		}
	}
	var parts []string
	rows, err := stores[0].Pool().Query(ctx, `SELECT suffix FROM event_partitions ORDER BY suffix`)
	if err == nil {
		for rows.Next() {
			var p string
			_ = rows.Scan(&p)
			parts = append(parts, p)
		}
		err = rows.Err()
	}
	if err != nil || !slices.Equal(parts, []string{"legacy", "y2031m03", "y2031m04"}) {
		t.Errorf("event_partitions = %v (%v), want legacy, y2031m03, y2031m04", parts, err)
	}
}

// TestPartitionWaitsForNoLongTransaction holds a booking's transaction open
// (its locks on the parent tables) while an event of a new month is
// created: making the month's partitions gives up (EUNAVAILABLE) instead
// of queueing every other write behind it for as long as that transaction
// lasts, creates nothing, and succeeds once the transaction is over.
func TestPartitionWaitsForNoLongTransaction(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	e := createEvent(t, s, 1, 4, 4)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO event_users (event_id, user_id) VALUES ($1, 'slow')`, int64(e.ID)); err != nil {
		t.Fatal(err)
	}
	// The booking's row: attaching a partition of the tables that refer to
	// bookings locks bookings against it.
	if _, err := tx.Exec(ctx, `
		INSERT INTO bookings (id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at)
		VALUES ($1, $2, 'slow', 'pending', 1, 0, now(), now(), now())`, int64(newID()), int64(e.ID)); err != nil {
		t.Fatal(err)
	}

	show := time.Date(2032, 7, 14, 20, 0, 0, 0, time.UTC)
	next := &boxoffice.Event{
		ID: snowflake.OnDay(newID(), show), Name: "Next month", Venue: "Hall",
		StartsAt: show, SaleOpensAt: t0, SaleMode: boxoffice.SaleDirect, TicketLimit: 4, CreatedAt: t0,
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 5000, Rows: 1, SeatsPerRow: 4}},
	}
	err = s.CreateEvent(ctx, next)
	if code := boxoffice.ErrorCode(err); code != boxoffice.EUNAVAILABLE {
		t.Fatalf("CreateEvent behind a long transaction = %v (code %q), want %s", err, code, boxoffice.EUNAVAILABLE)
	}
	// Meanwhile the other events' writes were not stopped for good.
	createBooking(t, s, e, "other", 1, seat(1))
	var parts int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM event_partitions WHERE suffix = 'y2032m07'`).Scan(&parts); err != nil || parts != 0 {
		t.Fatalf("partition y2032m07 recorded %d times (%v) after giving up, want 0", parts, err)
	}
	if _, err := s.Event(ctx, next.ID); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		t.Fatalf("Event after giving up = %v, want %s", err, boxoffice.ENOTFOUND)
	}

	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateEvent(ctx, next); err != nil {
		t.Fatalf("CreateEvent once the transaction ended: %v", err)
	}
	if _, err := s.Event(ctx, next.ID); err != nil {
		t.Fatalf("Event: %v", err)
	}
}
