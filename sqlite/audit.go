package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// AuditCheck is one rule of the audit and what broke it.
type AuditCheck struct {
	Name       string   // the rule, as a sentence that should hold
	Violations int      // how many rows break it
	Examples   []string // the first few of them (auditExamples), by id
}

// AuditReport is the audit of a whole database, read in one snapshot.
type AuditReport struct {
	Checks []AuditCheck
}

// OK reports whether every check passed.
func (r AuditReport) OK() bool { return r.Violations() == 0 }

// Violations is the sum of the checks' violations.
func (r AuditReport) Violations() int {
	n := 0
	for _, c := range r.Checks {
		n += c.Violations
	}
	return n
}

// Err is nil when every check passed, else an error naming the failed
// checks with their examples.
func (r AuditReport) Err() error {
	var failed []string
	for _, c := range r.Checks {
		if c.Violations > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d violations (e.g. %s)", c.Name, c.Violations, strings.Join(c.Examples, "; ")))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("audit failed: %s", strings.Join(failed, "; "))
}

// auditExamples is how many violations of a check the report names.
const auditExamples = 5

// auditChecks are the rules of the audit, each a query that returns one
// row per violation: a description (its ids), and the count of all of
// them (a window over the whole result, so one query gives both). They
// read only columns of the first migration, so a backup of any schema
// version can be audited. The unique index on valid tickets already
// forbids the first; the audit checks anyway, so that its verdict does not
// depend on the schema it judges (a copy could lack the index).
var auditChecks = []struct{ name, query string }{
	{"no seat with two valid tickets", `
		SELECT printf('event %d seat %s: %d valid tickets', event_id, seat_id, count(*)), count(*) OVER ()
		FROM tickets
		WHERE status = 'valid'
		GROUP BY event_id, seat_id
		HAVING count(*) > 1
		ORDER BY event_id, seat_id`},
	// A resold ticket is void and its booking stays confirmed, so a
	// confirmed booking's seat needs a ticket, valid or void.
	{"every seat of a confirmed booking has its ticket", `
		SELECT printf('booking %d seat %s', b.id, bs.seat_id), count(*) OVER ()
		FROM bookings b
		JOIN booking_seats bs ON bs.booking_id = b.id
		WHERE b.status = 'confirmed'
		  AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.booking_id = b.id AND t.seat_id = bs.seat_id)
		ORDER BY b.id, bs.position`},
	{"every confirmed booking has its payment", `
		SELECT printf('booking %d', b.id), count(*) OVER ()
		FROM bookings b
		WHERE b.status = 'confirmed'
		  AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.booking_id = b.id)
		ORDER BY b.id`},
	// A cancelled booking keeps its payment: the refund owed, then done.
	{"every payment is of a confirmed or cancelled booking", `
		SELECT printf('payment of booking %d (%s)', p.booking_id, coalesce(b.status, 'no such booking')), count(*) OVER ()
		FROM payments p
		LEFT JOIN bookings b ON b.id = p.booking_id
		WHERE b.status IS NULL OR b.status NOT IN ('confirmed', 'cancelled')
		ORDER BY p.booking_id`},
	{"every valid ticket is of a confirmed booking", `
		SELECT printf('ticket %d of booking %d (%s)', t.id, t.booking_id, coalesce(b.status, 'no such booking')), count(*) OVER ()
		FROM tickets t
		LEFT JOIN bookings b ON b.id = t.booking_id
		WHERE t.status = 'valid' AND (b.status IS NULL OR b.status <> 'confirmed')
		ORDER BY t.id`},
	{"every payment is the booking's amount", `
		SELECT printf('booking %d: paid %d, booked %d', b.id, p.amount_cents, b.amount_cents), count(*) OVER ()
		FROM payments p
		JOIN bookings b ON b.id = p.booking_id
		WHERE p.amount_cents <> b.amount_cents
		ORDER BY b.id`},
}

// Audit checks a whole boxoffice database, in one read transaction: no seat
// with two valid tickets, and payments that match tickets (see
// auditChecks). It only reads; db may be a live store's file (WAL lets it
// read beside the writer) or a copy. A query that fails is an error; rules
// that do not hold are in the report (AuditReport.Err).
func Audit(ctx context.Context, db *sql.DB) (AuditReport, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return AuditReport{}, fmt.Errorf("audit: %w", err)
	}
	defer tx.Rollback()
	var r AuditReport
	for _, c := range auditChecks {
		check, err := auditCheck(ctx, tx, c.name, c.query)
		if err != nil {
			return AuditReport{}, fmt.Errorf("audit: %s: %w", c.name, err)
		}
		r.Checks = append(r.Checks, check)
	}
	return r, nil
}

func auditCheck(ctx context.Context, tx *sql.Tx, name, query string) (AuditCheck, error) {
	c := AuditCheck{Name: name}
	rows, err := tx.QueryContext(ctx, query+` LIMIT ?`, auditExamples)
	if err != nil {
		return c, err
	}
	defer rows.Close()
	for rows.Next() {
		var example string
		if err := rows.Scan(&example, &c.Violations); err != nil {
			return c, err
		}
		c.Examples = append(c.Examples, example)
	}
	return c, rows.Err()
}
