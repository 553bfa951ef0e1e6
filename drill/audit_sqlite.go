package drill

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// SQLiteAuditor audits the embedded store: the SQLite file, opened
// read-only beside the server (WAL lets a reader run next to the writer).
// Times in that schema are unix milliseconds.
type SQLiteAuditor struct {
	db *sql.DB
}

var _ Auditor = (*SQLiteAuditor)(nil)

// OpenSQLiteAuditor opens the database file at path read-only.
func OpenSQLiteAuditor(path string) (*SQLiteAuditor, error) {
	db, err := sql.Open("sqlite", path+"?_busy_timeout=5000&_query_only=1")
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(2)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	return &SQLiteAuditor{db: db}, nil
}

func (a *SQLiteAuditor) Close() error { return a.db.Close() }

func (a *SQLiteAuditor) Oversold(ctx context.Context, eventID boxoffice.ID) (int, error) {
	var n int
	err := a.db.QueryRowContext(ctx, `
		SELECT count(*) FROM (
			SELECT seat_id FROM tickets
			WHERE event_id = ? AND status = 'valid'
			GROUP BY seat_id HAVING count(*) > 1)`, eventID).Scan(&n)
	return n, err
}

func (a *SQLiteAuditor) DoubleHeld(ctx context.Context, eventID boxoffice.ID) (int, error) {
	// A booking claims its seats from its creation until: for ever once
	// confirmed, its release or cancellation when released or cancelled
	// (updated_at), its hold's end otherwise (pending, expired). Two claims
	// of one seat must not overlap.
	var n int
	err := a.db.QueryRowContext(ctx, `
		WITH claims AS (
			SELECT s.seat_id, b.id, b.created_at AS since,
			       CASE b.status WHEN 'confirmed' THEN 9223372036854775807
			                     WHEN 'released'  THEN b.updated_at
			                     WHEN 'cancelled' THEN b.updated_at
			                     ELSE b.held_until END AS until
			FROM booking_seats s JOIN bookings b ON b.id = s.booking_id
			WHERE s.event_id = ?)
		SELECT count(DISTINCT x.seat_id)
		FROM claims x JOIN claims y ON y.seat_id = x.seat_id AND y.id > x.id
		WHERE x.since < y.until AND y.since < x.until`, eventID).Scan(&n)
	return n, err
}

func (a *SQLiteAuditor) MissingTickets(ctx context.Context, eventID boxoffice.ID) (int, error) {
	var n int
	err := a.db.QueryRowContext(ctx, `
		SELECT count(*) FROM bookings b
		WHERE b.event_id = ? AND b.status = 'confirmed'
		  AND (SELECT count(*) FROM tickets t WHERE t.booking_id = b.id AND t.status = 'valid')
		    < (SELECT count(*) FROM booking_seats s WHERE s.booking_id = b.id)`, eventID).Scan(&n)
	return n, err
}

func (a *SQLiteAuditor) Sold(ctx context.Context, eventID boxoffice.ID) (int, time.Time, error) {
	var (
		n    int
		last int64
	)
	err := a.db.QueryRowContext(ctx, `
		SELECT count(*), coalesce(max(issued_at), 0) FROM tickets
		WHERE event_id = ? AND status = 'valid'`, eventID).Scan(&n, &last)
	if err != nil || last == 0 {
		return n, time.Time{}, err
	}
	return n, time.UnixMilli(last), nil
}

func (a *SQLiteAuditor) Bookings(ctx context.Context, eventID boxoffice.ID) (map[string]int, error) {
	rows, err := a.db.QueryContext(ctx, `SELECT status, count(*) FROM bookings WHERE event_id = ? GROUP BY status`, eventID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return countsOf(rows)
}

func (a *SQLiteAuditor) Confirmed(ctx context.Context, eventID boxoffice.ID) (map[string]bool, error) {
	rows, err := a.db.QueryContext(ctx, `SELECT id FROM bookings WHERE event_id = ? AND status = 'confirmed'`, eventID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return idsOf(rows)
}
