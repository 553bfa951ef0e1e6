package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/wait"
	"github.com/boxoffice/boxoffice/snowflake"
)

// The event tables are partitioned by event id, one partition per calendar
// month of show starts (migrations/0010_partition_by_event.sql). An event
// id's time bits are its show's start (sale.Catalog.CreateEvent), so the
// month of an id is a range of ids.

// PartitionedTables are the tables partitioned by event, in the order their
// partitions are created (referenced tables first); the archive detaches
// them in the reverse order. It mirrors boxoffice_partitioned_tables().
var PartitionedTables = []string{
	"events", "sections", "seats", "seat_holds", "event_users", "bookings",
	"booking_seats", "tickets", "payments", "listings", "payouts", "waitlist_entries",
}

// EventTables are the tables not partitioned that hold rows of an event:
// the archive exports and deletes them with its partition.
var EventTables = []string{"event_draws", "seat_returns", "queue_outcomes"}

// MonthPartition is the suffix and event-id range [lo, hi) of the month
// partition of event id id.
func MonthPartition(id boxoffice.ID) (suffix string, lo, hi int64) {
	t, _, _ := snowflake.Parts(id)
	start := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start.Format("y2006m01"), EventIDAt(start), EventIDAt(start.AddDate(0, 1, 0))
}

// EventIDAt is the smallest event id of a show starting at t.
func EventIDAt(t time.Time) int64 { return snowflake.Millis(t) << snowflake.TimeShift }

// partitionAttempts bounds the tries to create a month's partition.
const partitionAttempts = 8

// partitions remembers the month partitions known to exist, so that only
// the first event of a month in this process costs a round trip.
type partitions struct {
	mu    sync.Mutex
	known map[string]bool
}

// ensurePartition makes sure the partition for event id exists: the
// month's, unless the id falls in a partition already there (the legacy
// one). It runs in a transaction of its own, before the event's: the DDL's
// locks are then held for milliseconds, not for the event's COPY.
func (s *Store) ensurePartition(ctx context.Context, id boxoffice.ID) error {
	suffix, lo, hi := MonthPartition(id)
	s.parts.mu.Lock()
	known := s.parts.known[suffix]
	s.parts.mu.Unlock()
	if known {
		return nil
	}
	// Attaching a partition takes SHARE ROW EXCLUSIVE on the parents (their
	// foreign keys), which waits for the writes in flight and holds up the
	// ones behind it: a short lock_timeout, and a few tries apart, keep a
	// long transaction somewhere from stalling every booking behind this
	// DDL for longer than the timeout. Still blocked after the tries:
	// EUNAVAILABLE (503, Retry-After), and the event is not created.
	var err error
	for attempt := range partitionAttempts {
		if attempt > 0 {
			if err := wait.Sleep(ctx, time.Duration(attempt)*100*time.Millisecond); err != nil {
				return translate(err)
			}
		}
		err = s.transact(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '250ms'`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `
				SELECT boxoffice_partition($1, $2, $3)
				WHERE NOT EXISTS (SELECT 1 FROM event_partitions WHERE (lo IS NULL OR lo <= $4) AND $4 < hi)`,
				suffix, lo, hi, int64(id))
			return err
		})
		if pgCode(err) != codeLockNotAvailable {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("partition %s: %w", suffix, err) // transact translated it
	}
	s.parts.mu.Lock()
	if s.parts.known == nil {
		s.parts.known = map[string]bool{}
	}
	s.parts.known[suffix] = true
	s.parts.mu.Unlock()
	return nil
}
