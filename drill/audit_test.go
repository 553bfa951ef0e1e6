package drill

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/sqlite"
)

// The audit must not trust the store it audits: the fixture drops the
// unique index on valid tickets and writes the faults the drill exists to
// find, then checks that each query counts exactly them.

const auditEvent = 7

// faults writes, through exec, an event with seats A-1..A-6 and these
// bookings (times in ms from t0):
//
//	1 confirmed, A-1      ticket valid    \ A-1 sold twice: oversold,
//	2 confirmed, A-1      ticket valid    / and claimed twice
//	3 expired [0,100),    A-2
//	4 pending [150,1000), A-2             after 3 ran out: fine
//	5 pending [0,200),    A-3
//	6 pending [100,900),  A-3             while 5 held it: claimed twice
//	7 released at 50 of [0,500), A-4
//	8 pending [60,600),   A-4             after the release: fine
//	9 confirmed, A-5 A-6  one ticket      a paid booking missing a ticket
func faults(t *testing.T, exec func(string), ts func(ms int64) string) {
	t.Helper()
	exec(fmt.Sprintf(`INSERT INTO events (id, name, venue, starts_at, sale_opens_at, sale_mode, ticket_limit, created_at)
		VALUES (%d, 'Audit', 'Hall', %s, %s, 'queued', 6, %s)`, auditEvent, ts(9_000_000), ts(0), ts(0)))
	for n := 1; n <= 6; n++ {
		exec(fmt.Sprintf(`INSERT INTO seats (event_id, seat_id, section, row_label, number, price_tier, price_cents, position)
			VALUES (%d, 'S-A-%d', 'S', 'A', %d, 't', 100, %d)`, auditEvent, n, n, n))
	}
	booking := func(id int, status string, created, held, updated int64, seats ...int) {
		exec(fmt.Sprintf(`INSERT INTO bookings (id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at)
			VALUES (%d, %d, 'u%d', '%s', %d, 100, %s, %s, %s)`, id, auditEvent, id, status, id, ts(held), ts(created), ts(updated)))
		for i, n := range seats {
			exec(fmt.Sprintf(`INSERT INTO booking_seats (booking_id, position, event_id, seat_id) VALUES (%d, %d, %d, 'S-A-%d')`, id, i, auditEvent, n))
		}
	}
	ticket := func(id, bookingID, seat int, issued int64) {
		exec(fmt.Sprintf(`INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at)
			VALUES (%d, %d, %d, 'S-A-%d', 'u%d', 'code-%d', 'valid', %s)`, id, auditEvent, bookingID, seat, bookingID, id, ts(issued)))
	}
	booking(1, "confirmed", 0, 600, 10, 1)
	booking(2, "confirmed", 20, 620, 30, 1)
	booking(3, "expired", 0, 100, 200, 2)
	booking(4, "pending", 150, 1000, 150, 2)
	booking(5, "pending", 0, 200, 0, 3)
	booking(6, "pending", 100, 900, 100, 3)
	booking(7, "released", 0, 500, 50, 4)
	booking(8, "pending", 60, 600, 60, 4)
	booking(9, "confirmed", 0, 600, 40, 5, 6)
	ticket(11, 1, 1, 10)
	ticket(12, 2, 1, 30)
	ticket(13, 9, 5, 40)
}

func checkAudit(t *testing.T, a Auditor, t0 time.Time) {
	t.Helper()
	ctx := context.Background()
	ev := boxoffice.ID(auditEvent)
	if n, err := a.Oversold(ctx, ev); err != nil || n != 1 {
		t.Errorf("Oversold = %d, %v; want 1 (S-A-1)", n, err)
	}
	if n, err := a.DoubleHeld(ctx, ev); err != nil || n != 2 {
		t.Errorf("DoubleHeld = %d, %v; want 2 (S-A-1, S-A-3)", n, err)
	}
	if n, err := a.MissingTickets(ctx, ev); err != nil || n != 1 {
		t.Errorf("MissingTickets = %d, %v; want 1 (booking 9)", n, err)
	}
	n, last, err := a.Sold(ctx, ev)
	if err != nil || n != 3 || !last.Equal(t0.Add(40*time.Millisecond)) {
		t.Errorf("Sold = %d, %s, %v; want 3, the last at t0+40ms", n, last, err)
	}
	b, err := a.Bookings(ctx, ev)
	if diff := cmp.Diff(map[string]int{"confirmed": 3, "expired": 1, "pending": 4, "released": 1}, b); err != nil || diff != "" {
		t.Errorf("Bookings (%v) (-want +got):\n%s", err, diff)
	}
	c, err := a.Confirmed(ctx, ev)
	if diff := cmp.Diff(map[string]bool{"1": true, "2": true, "9": true}, c); err != nil || diff != "" {
		t.Errorf("Confirmed (%v) (-want +got):\n%s", err, diff)
	}
	if n, err := a.Oversold(ctx, 999); err != nil || n != 0 {
		t.Errorf("another event: %d, %v", n, err)
	}
}

func TestSQLiteAuditor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxoffice.db")
	st, err := sqlite.Open(context.Background(), path) // the real schema, migrated
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`DROP INDEX tickets_one_valid_per_seat`)
	t0 := time.UnixMilli(1_800_000_000_000)
	faults(t, exec, func(ms int64) string { return fmt.Sprint(t0.UnixMilli() + ms) })
	a, err := OpenSQLiteAuditor(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	checkAudit(t, a, t0)
	if _, err := a.db.Exec(`DELETE FROM tickets`); err == nil {
		t.Error("the auditor's connection can write")
	}
}

// TestPostgresAuditor runs the same faults in a schema of its own on the
// development PostgreSQL (BOXOFFICE_TEST_POSTGRES), skipping when there is
// none unless CI=true.
func TestPostgresAuditor(t *testing.T) {
	url := os.Getenv("BOXOFFICE_TEST_POSTGRES")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, url)
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at %s: %v", url, err)
		}
		t.Skipf("no PostgreSQL at %s: %v", url, err)
	}
	defer admin.Close()
	schema := fmt.Sprintf("drill_audit_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	st, err := postgres.Open(ctx, url+sep+"search_path="+schema) // the real schema, migrated
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := st.Pool().Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`DROP INDEX tickets_one_valid_per_seat`)
	t0 := time.UnixMilli(1_800_000_000_000)
	faults(t, exec, func(ms int64) string {
		return fmt.Sprintf("'epoch'::timestamptz + %d * interval '1 millisecond'", t0.UnixMilli()+ms)
	})
	checkAudit(t, NewPostgresAuditor(st.Pool()), t0)
}
