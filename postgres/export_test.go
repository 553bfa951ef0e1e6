package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// Unexported parts, exported to the tests of package postgres_test.
var (
	Translate   = translate
	Backoff     = backoff
	MigrateTo   = migrateTo
	MaxAttempts = maxAttempts
	// UserSeatsSQL is the per-user limit's count, for the plan tests.
	UserSeatsSQL = userSeatsSQL
	SoldSeatsSQL = soldSeatsSQL
	// EventSoldSeatsSQL is SoldSeats': the seat map's read of an event.
	EventSoldSeatsSQL = eventSoldSeatsSQL
	// The batch's reads (CreateBookings).
	EnsureEventUsersSQL = ensureEventUsersSQL
	LockEventUsersSQL   = lockEventUsersSQL
	UsersSeatsSQL       = usersSeatsSQL
	KnownKeysSQL        = knownKeysSQL
	IdempotenciesSQL    = idempotenciesSQL
	KnownBookingsSQL    = knownBookingsSQL
	SeatFactsSQL        = seatFactsSQL
	// The confirm's reads.
	LockBookingSQL        = lockBookingSQL
	LockBookingOfEventSQL = lockBookingOfEventSQL
	FencingSQL            = fencingSQL
	MarkCapturedSQL       = markCapturedSQL
)

// EnsurePartition creates the partitions of the month of event id.
func (s *Store) EnsurePartition(ctx context.Context, id boxoffice.ID) error {
	return s.ensurePartition(ctx, id)
}

func (s *Store) Transact(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.transact(ctx, fn)
}

// CreateBookingAlone writes a booking in a transaction of its own, without
// the group commit: the reference CreateBookings is compared with.
func (s *Store) CreateBookingAlone(ctx context.Context, nb boxoffice.NewBooking) error {
	return s.createBooking(ctx, nb)
}
