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
	BookingsByIDSQL       = bookingsByIDSQL
	LockBookingSQL        = lockBookingSQL
	LockBookingOfEventSQL = lockBookingOfEventSQL
	FencingSQL            = fencingSQL
	MarkCapturedSQL       = markCapturedSQL
	// The confirms' group commit.
	LockBookingsSQL = lockBookingsSQL
	FencingManySQL  = fencingManySQL
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

// ConfirmBookings runs cs as one batch of the confirms' group commit:
// the answers, in order, of each call.
func (s *Store) ConfirmBookings(ctx context.Context, cs []boxoffice.ConfirmBooking) ([]*boxoffice.Booking, []error, error) {
	for i := range cs {
		cs[i].Now = ts(cs[i].Now)
	}
	out, err := s.confirmBookings(ctx, cs)
	if err != nil {
		return nil, nil, err
	}
	bs, errs := make([]*boxoffice.Booking, len(out)), make([]error, len(out))
	for i, r := range out {
		bs[i], errs[i] = r.b, r.err
	}
	return bs, errs, nil
}

// Pipelined runs fn as a transaction of batches (transactBatches' one
// attempt).
func (s *Store) Pipelined(ctx context.Context, fn func(send func(*pgx.Batch) pgx.BatchResults) (*pgx.Batch, error)) (committing bool, err error) {
	return s.pipelined(ctx, func(send sendFunc) (*pgx.Batch, error) { return fn(send) })
}

// WinnerWrites is the batch of inserts CreateBookings sends for nbs once
// they have all won, without its reads.
func WinnerWrites(nbs []boxoffice.NewBooking) (*pgx.Batch, error) {
	var w batchWrites
	for _, nb := range nbs {
		if err := w.add(nb); err != nil {
			return nil, err
		}
	}
	return w.batch(), nil
}
