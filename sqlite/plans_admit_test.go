package sqlite

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// The front door's batch statements (AdmitMany) probe the rows their JSON
// array names through an index, and the consumers read the log through
// its index of queued requests, and the draw reads its pool through the
// indexes of waiting requests and of positions; none scans queue_requests or
// queue_events: checked on an empty file and after ANALYZE with many
// requests of many users, where the planner has statistics to be tempted
// by.
func TestAdmissionStatementsProbeTheirRows(t *testing.T) {
	s := openStore(t)
	want := map[string]struct{ sql, index string }{
		"keys":          {admitKeysSQL, "sqlite_autoindex_queue_requests_1"},
		"live":          {admitLiveSQL, "sqlite_autoindex_queue_requests_1"},
		"counters":      {admitCountersSQL, "INTEGER PRIMARY KEY"},
		"log":           {nextLogSeqSQL, "queue_requests_log"},
		"consume":       {nextSQL, "queue_requests_todo"},
		"pool":          {drawPoolSQL, "queue_requests_position"},
		"pool, waiting": {drawPoolSQL, "queue_requests_waiting"},
	}
	check := func(when string) {
		for name, w := range want {
			var args []any
			switch {
			case w.sql == nextSQL:
				args = append(args, 0, math.MaxInt64, 256)
			case w.sql == drawPoolSQL:
				args = append(args, 1, 0, 100)
			case strings.Contains(w.sql, "?"):
				args = append(args, "[]")
			}
			checkProbes(t, s, when+", "+name, w.index, w.sql, args...)
		}
	}
	check("empty")
	e := plansEvent(t, s, boxoffice.SaleQueued)
	analyzeAfter(t, s, 3000, func(ctx context.Context, tx *txn, i int) error {
		status := []string{"queued", "held", "rejected", "waiting"}[i%4]
		_, err := tx.ExecContext(ctx, `INSERT INTO queue_requests
			(id, event_id, user_id, idempotency_key, request_hash, seat_ids, position, log_seq, status, enqueued_at)
			VALUES (?, ?, ?, ?, 'h', '[]', ?, ?, ?, 0)`,
			i+1, e.ID, "u"+strconv.Itoa(i%300), "k"+strconv.Itoa(i), i+1, i+1, status)
		return err
	})
	check("analyzed")
}

// The opener's look-up of the draws the embedded queue left cut short
// reads queue_events_draw_fence, not every event's row.
func TestCutShortDrawsReadTheirIndex(t *testing.T) {
	checkProbes(t, openStore(t), "cut short", "queue_events_draw_fence", cutShortSQL, 100)
}
