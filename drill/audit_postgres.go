package drill

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boxoffice/boxoffice"
)

// PostgresAuditor audits the production store through a pgx pool (the
// server's own database; the audit only reads).
type PostgresAuditor struct {
	pool  *pgxpool.Pool
	owned bool // Close closes the pool
}

var _ Auditor = (*PostgresAuditor)(nil)

// NewPostgresAuditor audits the database of pool. Close does not close
// the pool: its owner does.
func NewPostgresAuditor(pool *pgxpool.Pool) *PostgresAuditor { return &PostgresAuditor{pool: pool} }

func (a *PostgresAuditor) Close() error {
	if a.owned {
		a.pool.Close()
	}
	return nil
}

func (a *PostgresAuditor) Oversold(ctx context.Context, eventID boxoffice.ID) (int, error) {
	var n int
	err := a.pool.QueryRow(ctx, `
		SELECT count(*) FROM (
			SELECT seat_id FROM tickets
			WHERE event_id = $1 AND status = 'valid'
			GROUP BY seat_id HAVING count(*) > 1) AS twice`, int64(eventID)).Scan(&n)
	return n, err
}

func (a *PostgresAuditor) DoubleHeld(ctx context.Context, eventID boxoffice.ID) (int, error) {
	// As in SQLiteAuditor.DoubleHeld: a booking claims its seats from its
	// creation until for ever (confirmed), its release or cancellation
	// (released, cancelled) or its hold's end (pending, expired).
	var n int
	err := a.pool.QueryRow(ctx, `
		WITH claims AS (
			SELECT s.seat_id, b.id, b.created_at AS since,
			       CASE b.status WHEN 'confirmed' THEN 'infinity'::timestamptz
			                     WHEN 'released'  THEN b.updated_at
			                     WHEN 'cancelled' THEN b.updated_at
			                     ELSE b.held_until END AS until
			FROM booking_seats s JOIN bookings b ON b.event_id = s.event_id AND b.id = s.booking_id
			WHERE s.event_id = $1)
		SELECT count(DISTINCT x.seat_id)
		FROM claims x JOIN claims y ON y.seat_id = x.seat_id AND y.id > x.id
		WHERE x.since < y.until AND y.since < x.until`, int64(eventID)).Scan(&n)
	return n, err
}

func (a *PostgresAuditor) MissingTickets(ctx context.Context, eventID boxoffice.ID) (int, error) {
	var n int
	err := a.pool.QueryRow(ctx, `
		SELECT count(*) FROM bookings b
		WHERE b.event_id = $1 AND b.status = 'confirmed'
		  AND (SELECT count(*) FROM tickets t WHERE t.event_id = b.event_id AND t.booking_id = b.id AND t.status = 'valid')
		    < (SELECT count(*) FROM booking_seats s WHERE s.event_id = b.event_id AND s.booking_id = b.id)`, int64(eventID)).Scan(&n)
	return n, err
}

func (a *PostgresAuditor) Sold(ctx context.Context, eventID boxoffice.ID) (int, time.Time, error) {
	var (
		n    int
		last *time.Time
	)
	err := a.pool.QueryRow(ctx, `
		SELECT count(*), max(issued_at) FROM tickets
		WHERE event_id = $1 AND status = 'valid'`, int64(eventID)).Scan(&n, &last)
	if err != nil || last == nil {
		return n, time.Time{}, err
	}
	return n, *last, nil
}

func (a *PostgresAuditor) Bookings(ctx context.Context, eventID boxoffice.ID) (map[string]int, error) {
	rows, err := a.pool.Query(ctx, `SELECT status, count(*) FROM bookings WHERE event_id = $1 GROUP BY status`, int64(eventID))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return countsOf(rows)
}

func (a *PostgresAuditor) Confirmed(ctx context.Context, eventID boxoffice.ID) (map[string]bool, error) {
	rows, err := a.pool.Query(ctx, `SELECT id FROM bookings WHERE event_id = $1 AND status = 'confirmed'`, int64(eventID))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return idsOf(rows)
}

// OpenPostgresAuditor audits the database at url over a pool of its own,
// closed by Close: the drill reads the store from outside, as an auditor
// would.
func OpenPostgresAuditor(ctx context.Context, url string) (*PostgresAuditor, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return &PostgresAuditor{pool: pool, owned: true}, nil
}
