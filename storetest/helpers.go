package storetest

import (
	"context"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// CreateAll writes nbs in one CreateBookings call and fails tb if the
// batch fails or any booking of it is refused: for benchmarks and set-ups
// whose bookings must all be written.
func CreateAll(ctx context.Context, tb testing.TB, s boxoffice.BookingStore, nbs []boxoffice.NewBooking) {
	tb.Helper()
	errs, err := s.CreateBookings(ctx, nbs)
	if err != nil {
		tb.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("booking %d of %d: %v", i, len(nbs), err)
		}
	}
}
