package sqlite_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/queuetest"
	"github.com/boxoffice/boxoffice/sqlite"
)

var eventSeq atomic.Int64

func TestQueue(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Harness {
		s := open(t, filepath.Join(t.TempDir(), "boxoffice.db"))
		q := s.Queue()
		q.PollInterval = 10 * time.Millisecond
		return queuetest.Harness{State: q, Log: q, NewEvent: func(t *testing.T) boxoffice.ID { return queuedEvent(t, s) }}
	})
}

// queuedEvent creates a queued event of five seats whose sale is open.
func queuedEvent(t *testing.T, s *sqlite.Store) boxoffice.ID {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	e := &boxoffice.Event{ID: boxoffice.ID(1000 + eventSeq.Add(1)), Name: "Q", Venue: "V", SaleMode: boxoffice.SaleQueued,
		StartsAt: now.Add(24 * time.Hour), SaleOpensAt: now, TicketLimit: 8, CreatedAt: now,
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "t", PriceCents: 100, Rows: 1, SeatsPerRow: 5}}}
	if err := s.CreateEvent(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	return e.ID
}
