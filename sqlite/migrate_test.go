package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

func TestMigration0004KeepsTheRowsOfAnOlderDatabase(t *testing.T) {
	// A file as the store left it before 0004: an event, a confirmed
	// booking with its tickets and captured payment, a pending one. 0004
	// rebuilds bookings and payments; every row must come through, with
	// the foreign keys of the tables that point at them intact.
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "boxoffice.db")
	db := rawDB(t, path)
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"0001_init", "0002_outbox", "0003_queue"} {
		script, err := os.ReadFile(filepath.Join("migrations", name+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(script)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := db.Exec(`INSERT INTO schema_migrations VALUES (?, ?, 0)`, name[:4], name); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2030, 6, 1, 18, 0, 0, 0, time.UTC)
	ms := now.UnixMilli()
	for _, q := range []string{
		`INSERT INTO events (id, name, venue, starts_at, sale_opens_at, sale_mode, ticket_limit, created_at)
		 VALUES (1, 'Before', 'Hall', ?1 + 86400000, ?1 - 3600000, 'direct', 4, ?1)`,
		`INSERT INTO sections VALUES (1, 0, 'A', 'std', 1000, 1, 4)`,
		`INSERT INTO seats VALUES (1, 'A-A-1', 'A', 'A', 1, 'std', 1000, 0), (1, 'A-A-2', 'A', 'A', 2, 'std', 1000, 1),
		                          (1, 'A-A-3', 'A', 'A', 3, 'std', 1000, 2), (1, 'A-A-4', 'A', 'A', 4, 'std', 1000, 3)`,
		`INSERT INTO bookings VALUES (2, 1, 'alice', 'confirmed', 7, 2000, ?1 + 600000, ?1, ?1 + 60000, 'CONF', 'auth')`,
		`INSERT INTO bookings VALUES (3, 1, 'bob', 'pending', 8, 1000, ?1 + 600000, ?1, ?1, '', '')`,
		`INSERT INTO booking_seats VALUES (2, 0, 1, 'A-A-2'), (2, 1, 1, 'A-A-1'), (3, 0, 1, 'A-A-3')`,
		`INSERT INTO tickets VALUES (4, 1, 2, 'A-A-2', 'alice', 'T4', 'valid', ?1 + 60000), (5, 1, 2, 'A-A-1', 'alice', 'T5', 'valid', ?1 + 60000)`,
		`INSERT INTO payments VALUES (2, 'auth', 2000, 'captured', ?1 + 60000, ?1 + 61000)`,
	} {
		if _, err := db.Exec(q, ms); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := open(t, path)
	confirmed, err := s.Booking(ctx, 2)
	if err != nil {
		t.Fatalf("Booking(2): %v", err)
	}
	ticket := func(id boxoffice.ID, seat, code string) boxoffice.Ticket {
		return boxoffice.Ticket{ID: id, EventID: 1, BookingID: 2, SeatID: seat, UserID: "alice", Code: code,
			Status: boxoffice.TicketValid, IssuedAt: now.Add(time.Minute)}
	}
	want := &boxoffice.Booking{
		ID: 2, EventID: 1, UserID: "alice", SeatIDs: []string{"A-A-2", "A-A-1"}, Status: boxoffice.BookingConfirmed,
		Fence: 7, AmountCents: 2000, HeldUntil: now.Add(10 * time.Minute), CreatedAt: now, UpdatedAt: now.Add(time.Minute),
		ConfirmationCode: "CONF", PaymentAuthID: "auth",
		Tickets: []boxoffice.Ticket{ticket(4, "A-A-2", "T4"), ticket(5, "A-A-1", "T5")},
	}
	if diff := cmp.Diff(want, confirmed); diff != "" {
		t.Errorf("Booking(2) after 0004 (-want +got):\n%s", diff)
	}
	p, err := s.Payment(ctx, 2)
	if err != nil {
		t.Fatalf("Payment(2): %v", err)
	}
	if p.Status != boxoffice.PaymentCaptured || p.AmountCents != 2000 {
		t.Errorf("Payment(2) = %+v, want captured, 2000", p)
	}
	e, err := s.Event(ctx, 1)
	if err != nil {
		t.Fatalf("Event(1): %v", err)
	}
	if e.Refundable || e.RefundCutoffHours != 0 || e.ResaleDisabled || e.ResaleCapPercent != 0 {
		t.Errorf("Event(1) policy = %+v, want the zero policy", e)
	}
	// The rebuilt tables work as the new ones: the old booking can be
	// cancelled, the pending one released, each with its seat return.
	if _, err := s.CancelBooking(ctx, boxoffice.CancelBooking{BookingID: 2, Now: now.Add(time.Hour)}); err != nil {
		t.Fatalf("CancelBooking(2): %v", err)
	}
	if _, err := s.ReleaseBooking(ctx, 3, boxoffice.BookingReleased, now.Add(time.Hour)); err != nil {
		t.Fatalf("ReleaseBooking(3): %v", err)
	}
	returns, err := s.PendingReturns(ctx, 10)
	if err != nil || len(returns) != 2 {
		t.Errorf("PendingReturns = %+v, %v; want two", returns, err)
	}
	// The keys that point at the rebuilt tables still hold.
	raw := rawDB(t, path)
	for _, q := range []string{
		`INSERT INTO booking_seats VALUES (999, 0, 1, 'A-A-4')`,
		`INSERT INTO tickets VALUES (998, 1, 999, 'A-A-4', 'u', 'T998', 'valid', 0)`,
	} {
		if _, err := raw.Exec(q); err == nil {
			t.Errorf("%s: accepted a row for a booking that does not exist", q)
		}
	}
	var fk int
	if err := raw.QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != 0 {
		t.Errorf("foreign_key_check: %d rows, %v; want none", fk, err)
	}
}
