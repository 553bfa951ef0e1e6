package sqlite_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sqlite"
)

// TestAuditCatchesEachViolation breaks a clean database, written through
// the store, one rule at a time with raw SQL, and the audit must name that
// rule and only it. The first case proves the audit itself catches a
// second valid ticket for a seat: the unique index refuses one, so the
// case drops the index first.
func TestAuditCatchesEachViolation(t *testing.T) {
	ctx := t.Context()
	base := filepath.Join(t.TempDir(), "base.db")
	s, err := sqlite.Open(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	e := saleEvent(t, s, 1)
	confirmed(t, s, e, 10, "A-A-1")
	confirmed(t, s, e, 20, "A-A-2")
	// Booking 30 is pending, on A-A-3.
	now := time.Now()
	if err := s.CreateBooking(ctx, boxoffice.NewBooking{TicketLimit: 1000, Booking: &boxoffice.Booking{
		ID: 30, EventID: e.ID, UserID: "other", SeatIDs: []string{"A-A-3"}, Fence: 30, AmountCents: 4500,
		HeldUntil: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now,
	}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err := sqlite.Audit(ctx, rawDB(t, base)); err != nil || !r.OK() || r.Err() != nil {
		t.Fatalf("the clean database: %+v, %v", r, err)
	}

	for _, tc := range []struct {
		name    string
		sql     []string
		check   string
		example string
	}{
		{"a second valid ticket for a seat", []string{
			`DROP INDEX tickets_one_valid_per_seat`,
			`UPDATE bookings SET status = 'confirmed' WHERE id = 30`,
			`INSERT INTO payments (booking_id, auth_id, amount_cents, status, created_at) VALUES (30, 'auth-30', 4500, 'authorized', 0)`,
			`INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at) VALUES (99, 1, 30, 'A-A-3', 'other', 'T99', 'void', 0)`,
			// the second valid ticket: for A-A-1, booking 10's seat
			`INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at) VALUES (100, 1, 30, 'A-A-1', 'other', 'T100', 'valid', 0)`,
		}, "no seat with two valid tickets", "event 1 seat A-A-1: 2 valid tickets"},
		{"a confirmed booking without its ticket", []string{
			`DELETE FROM tickets WHERE booking_id = 20`,
		}, "every seat of a confirmed booking has its ticket", "booking 20 seat A-A-2"},
		{"a confirmed booking without its payment", []string{
			`DELETE FROM payments WHERE booking_id = 20`,
		}, "every confirmed booking has its payment", "booking 20"},
		{"a payment of a pending booking", []string{
			`INSERT INTO payments (booking_id, auth_id, amount_cents, status, created_at) VALUES (30, 'auth-30', 4500, 'authorized', 0)`,
		}, "every payment is of a confirmed or cancelled booking", "payment of booking 30 (pending)"},
		{"a valid ticket of a pending booking", []string{
			`INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at) VALUES (100, 1, 30, 'A-A-3', 'other', 'T100', 'valid', 0)`,
		}, "every valid ticket is of a confirmed booking", "ticket 100 of booking 30 (pending)"},
		{"a payment of another amount", []string{
			`UPDATE payments SET amount_cents = 1 WHERE booking_id = 10`,
		}, "every payment is the booking's amount", "booking 10: paid 1, booked 4500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "broken.db")
			if _, err := sqlite.Backup(ctx, base, path); err != nil {
				t.Fatal(err)
			}
			db := rawDB(t, path)
			for _, q := range tc.sql {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			r, err := sqlite.Audit(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, c := range r.Checks {
				if c.Violations > 0 {
					failed = append(failed, c.Name)
				}
				if c.Name == tc.check && (c.Violations != 1 || !slices.Equal(c.Examples, []string{tc.example})) {
					t.Errorf("%s: %d violations %q, want 1: %q", c.Name, c.Violations, c.Examples, tc.example)
				}
			}
			if !slices.Equal(failed, []string{tc.check}) {
				t.Errorf("failed checks %q, want only %q", failed, tc.check)
			}
			if r.OK() || r.Err() == nil || !strings.Contains(r.Err().Error(), tc.example) {
				t.Errorf("OK() = %v, Err() = %v; want a failure naming %q", r.OK(), r.Err(), tc.example)
			}
		})
	}
}

// TestAuditIndexRefusesASecondValidTicket: without dropping the index the
// schema refuses the write the audit's first case makes, so that case
// needed the drop.
func TestAuditIndexRefusesASecondValidTicket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxoffice.db")
	smallDatabase(t, path)
	_, err := rawDB(t, path).Exec(`INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at) VALUES (100, 1, 10, 'A-A-1', 'fan', 'T100', 'valid', 0)`)
	if err == nil {
		t.Fatal("a second valid ticket was accepted with the index in place")
	}
}
