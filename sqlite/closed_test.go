package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sqlite"
)

// A store closed at shutdown while calls are still on their way answers
// them EUNAVAILABLE (503, retried elsewhere), reads as well as writes,
// never as an internal error.
func TestClosedStoreIsUnavailable(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "boxoffice.db"))
	if err != nil {
		t.Fatal(err)
	}
	e := &boxoffice.Event{ID: 1, Name: "Closing night", Venue: "Hall",
		StartsAt: time.Now().Add(48 * time.Hour), SaleOpensAt: time.Now().Add(-time.Hour),
		SaleMode: boxoffice.SaleDirect, TicketLimit: 4, CreatedAt: time.Now(),
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 100, Rows: 1, SeatsPerRow: 4}}}
	if err := s.CreateEvent(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	// Warm the read statements, as a running store has them.
	if _, err := s.Event(t.Context(), e.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SoldSeats(t.Context(), e.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	calls := map[string]func() error{
		"Event":     func() error { _, err := s.Event(ctx, e.ID); return err },
		"Events":    func() error { _, err := s.Events(ctx, boxoffice.EventFilter{}); return err },
		"SoldSeats": func() error { _, err := s.SoldSeats(ctx, e.ID); return err },
		"Booking":   func() error { _, err := s.Booking(ctx, 7); return err },
		"Idempotency": func() error {
			_, err := s.Idempotency(ctx, "u", "k")
			return err
		},
		"UserTickets": func() error { _, err := s.UserTickets(ctx, "u"); return err },
		"Ping":        func() error { return s.Ping(ctx) },
		"CreateEvent": func() error { e2 := *e; e2.ID = 2; return s.CreateEvent(ctx, &e2) },
		"PurgeIdempotency": func() error {
			_, err := s.PurgeIdempotency(ctx, time.Now())
			return err
		},
	}
	for name, call := range calls {
		if err := call(); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
			t.Errorf("%s on a closed store = %v (code %q), want %s", name, err, boxoffice.ErrorCode(err), boxoffice.EUNAVAILABLE)
		}
	}
}
