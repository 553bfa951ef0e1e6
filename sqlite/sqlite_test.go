package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sqlite"
	"github.com/boxoffice/boxoffice/storetest"
	"github.com/google/go-cmp/cmp"

	_ "modernc.org/sqlite"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) boxoffice.Store {
		return open(t, filepath.Join(t.TempDir(), "boxoffice.db"))
	})
}

// open opens the store at path and closes it when the test ends.
func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
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

func TestOpenRefusesAnInMemoryDatabase(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file::memory:?cache=shared"} {
		if s, err := sqlite.Open(t.Context(), path); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", path)
		}
	}
}

func TestMigrationsApplyOnceAcrossReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxoffice.db")
	for range 3 {
		s, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	db := rawDB(t, path)
	rows, err := db.Query(`SELECT version, name FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type applied struct {
		Version int
		Name    string
	}
	var got []applied
	for rows.Next() {
		var a applied
		if err := rows.Scan(&a.Version, &a.Name); err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Every file of migrations/, each once, in version order.
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations/*.sql: %v files, %v", len(files), err)
	}
	var want []applied
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".sql")
		v, err := strconv.Atoi(name[:4])
		if err != nil {
			t.Fatalf("migration %s: %v", f, err)
		}
		want = append(want, applied{v, name})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schema_migrations mismatch (-want +got):\n%s", diff)
	}
}

func TestPragmas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxoffice.db")
	open(t, path)
	var mode string
	if err := rawDB(t, path).QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
}

func TestDataSurvivesCloseAndReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "boxoffice.db")
	now := time.Date(2030, 6, 1, 18, 0, 0, 0, time.UTC)
	e := &boxoffice.Event{
		ID: 1, Name: "Reopened", Venue: "Hall", StartsAt: now.Add(24 * time.Hour), SaleOpensAt: now.Add(-time.Hour),
		SaleMode: boxoffice.SaleDirect, TicketLimit: 4, CreatedAt: now,
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 1000, Rows: 1, SeatsPerRow: 4}},
	}
	b := &boxoffice.Booking{
		ID: 2, EventID: 1, UserID: "alice", SeatIDs: []string{"A-A-2", "A-A-1"}, Status: boxoffice.BookingPending,
		Fence: 7, AmountCents: 2000, HeldUntil: now.Add(10 * time.Minute), CreatedAt: now, UpdatedAt: now,
	}

	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.CreateEvent(ctx, e); err != nil {
		t.Fatalf("CreateEvent: %v", err)
	}
	if err := s.CreateBooking(ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 4}); err != nil {
		t.Fatalf("CreateBooking: %v", err)
	}
	confirmed, err := s.ConfirmBooking(ctx, boxoffice.ConfirmBooking{
		BookingID: 2, Fence: 7, Now: now.Add(time.Minute), Code: "CONF",
		Tickets: []boxoffice.Ticket{{ID: 3, SeatID: "A-A-2", Code: "T3"}, {ID: 4, SeatID: "A-A-1", Code: "T4"}},
		Payment: boxoffice.Payment{AuthID: "auth", AmountCents: 2000},
	})
	if err != nil {
		t.Fatalf("ConfirmBooking: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = open(t, path)
	gotEvent, err := s.Event(ctx, 1)
	if err != nil {
		t.Fatalf("Event after reopen: %v", err)
	}
	if diff := cmp.Diff(e, gotEvent); diff != "" {
		t.Errorf("Event after reopen (-want +got):\n%s", diff)
	}
	gotBooking, err := s.Booking(ctx, 2)
	if err != nil {
		t.Fatalf("Booking after reopen: %v", err)
	}
	if diff := cmp.Diff(confirmed, gotBooking); diff != "" {
		t.Errorf("Booking after reopen (-want +got):\n%s", diff)
	}
	// The tickets are filled in from the booking, whatever the caller left
	// out (see ConfirmBooking).
	for _, tk := range gotBooking.Tickets {
		if tk.EventID != 1 || tk.BookingID != 2 || tk.UserID != "alice" || tk.Status != boxoffice.TicketValid || !tk.IssuedAt.Equal(now.Add(time.Minute)) {
			t.Errorf("ticket %+v: want event 1, booking 2, alice, valid, issued at the confirm", tk)
		}
	}
}

func TestTicketUniqueIndexIsTheFinalArbiter(t *testing.T) {
	// Even a write that bypasses the store cannot give a seat a second
	// valid ticket: the schema refuses it.
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "boxoffice.db")
	s := open(t, path)
	now := time.Date(2030, 6, 1, 18, 0, 0, 0, time.UTC)
	if err := s.CreateEvent(ctx, &boxoffice.Event{
		ID: 1, Name: "E", StartsAt: now.Add(time.Hour), SaleOpensAt: now, SaleMode: boxoffice.SaleDirect, TicketLimit: 4,
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 1, Rows: 1, SeatsPerRow: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []boxoffice.ID{10, 11} {
		if err := s.CreateBooking(ctx, boxoffice.NewBooking{TicketLimit: 4, Booking: &boxoffice.Booking{
			ID: id, EventID: 1, UserID: "u", SeatIDs: []string{"A-A-1"}, Fence: 1, HeldUntil: now.Add(time.Hour), CreatedAt: now,
		}}); err != nil {
			t.Fatal(err)
		}
	}
	db := rawDB(t, path)
	insert := `INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at) VALUES (?, 1, ?, 'A-A-1', 'u', ?, ?, 0)`
	if _, err := db.Exec(insert, 100, 10, "c1", "valid"); err != nil {
		t.Fatalf("first valid ticket: %v", err)
	}
	if _, err := db.Exec(insert, 101, 11, "c2", "valid"); err == nil {
		t.Fatal("a second valid ticket for the seat was accepted")
	}
	if _, err := db.Exec(insert, 102, 11, "c3", "void"); err != nil {
		t.Errorf("a void ticket beside the valid one: %v", err)
	}
}

// rawDB opens path with the bare driver, for what the port cannot show.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_busy_timeout=5000&_foreign_keys=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestPingAfterCloseIsUnavailable(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "boxoffice.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := boxoffice.ErrorCode(s.Ping(t.Context())); got != boxoffice.EUNAVAILABLE {
		t.Errorf("Ping after Close: code %q, want %q", got, boxoffice.EUNAVAILABLE)
	}
}
