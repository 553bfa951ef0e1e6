package sqlite

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// The drain's batch statements probe the rows they are given by primary
// key, never scan a table: EXPLAIN QUERY PLAN says SEARCH, driven by the
// JSON array. Checked on an empty file, and again after ANALYZE with
// idempotency_keys filled, where the planner has statistics to be tempted
// by.
func TestBatchReadsProbeTheirRows(t *testing.T) {
	s := openStore(t)
	check := func(when string) {
		for name, q := range map[string]string{"entries": entriesSQL, "idempotencies": idempotenciesSQL, "finish": finishSQL, "draw": drawChunkSQL} {
			args := []any{"[]"}
			if name == "draw" {
				args = []any{0, 0, "[]"}
			}
			checkProbes(t, s, when+", "+name, "PRIMARY KEY", q, args...)
		}
	}
	check("empty")
	analyzeAfter(t, s, 2000, func(ctx context.Context, tx *txn, i int) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, outcome, body, created_at, expires_at)
			VALUES (?, ?, 'h', 'held', NULL, 0, 0)`, "u"+strconv.Itoa(i%50), "k"+strconv.Itoa(i))
		return err
	})
	check("analyzed")
}

// checkProbes fails t when query's plan (EXPLAIN QUERY PLAN with args)
// scans a table other than a JSON array, or searches through no index
// whose description holds index.
func checkProbes(t *testing.T, s *Store, label, index, query string, args ...any) {
	t.Helper()
	rows, err := s.read.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	rows.Close()
	text := strings.Join(plan, "; ")
	t.Logf("%s: %s", label, text)
	for _, step := range plan {
		if strings.HasPrefix(step, "SCAN") && !strings.Contains(step, "VIRTUAL TABLE") && step != "SCAN CONSTANT ROW" {
			t.Errorf("%s: scans a table: %s", label, text)
		}
	}
	if !strings.Contains(text, "SEARCH") || !strings.Contains(text, index) {
		t.Errorf("%s: no search through %s: %s", label, index, text)
	}
}

// analyzeAfter writes n rows with insert (row i each) and runs ANALYZE, in
// one transaction: the planner then has statistics to be tempted by.
func analyzeAfter(t *testing.T, s *Store, n int, insert func(ctx context.Context, tx *txn, i int) error) {
	t.Helper()
	err := s.writeTx(t.Context(), func(ctx context.Context, tx *txn) error {
		for i := range n {
			if err := insert(ctx, tx, i); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `ANALYZE`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The booking's checks (checkBookingSQL), which a batch of the drain runs
// once per booking on the writer, probe their rows: never a scan of
// bookings, tickets, seats or idempotency_keys. Checked on an empty file
// and after ANALYZE with many bookings of a few users.
func TestBookingCheckProbesItsRows(t *testing.T) {
	s := openStore(t)
	args := []any{1, "u1", 0, `["A-A-1","A-A-2"]`, "u1", "k1", 7}
	checkProbes(t, s, "empty", "PRIMARY KEY", checkBookingSQL, args...)
	plansEvent(t, s, boxoffice.SaleDirect)
	analyzeAfter(t, s, 2000, func(ctx context.Context, tx *txn, i int) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO bookings (id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at)
			VALUES (?, 1, ?, 'pending', 1, 100, 0, 0, 0)`, i+1, "u"+strconv.Itoa(i%5))
		return err
	})
	checkProbes(t, s, "analyzed", "PRIMARY KEY", checkBookingSQL, args...)
}

// plansEvent writes event 1, of four seats A-A-1 to A-A-4, for the plan
// tests' rows to belong to.
func plansEvent(t *testing.T, s *Store, mode boxoffice.SaleMode) *boxoffice.Event {
	t.Helper()
	e := &boxoffice.Event{ID: 1, Name: "Plans", Venue: "Hall",
		StartsAt: time.Now().Add(48 * time.Hour), SaleOpensAt: time.Now().Add(-time.Hour),
		SaleMode: mode, TicketLimit: 4, CreatedAt: time.Now(),
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 100, Rows: 1, SeatsPerRow: 4}}}
	if err := s.CreateEvent(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

// The purge of decided queued requests walks the primary key below the
// cutoff's first id, and finds the log's last place through its index:
// never a scan of queue_requests, which holds every request of every sale.
func TestPurgeDecidedWalksThePrimaryKey(t *testing.T) {
	s := openStore(t)
	checkProbes(t, s, "purge", "PRIMARY KEY (rowid<?)", purgeDecidedSQL, 1<<40, 0, 1000)
}
