package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Unexported parts, exported to the tests of package postgres_test.
var (
	Translate   = translate
	Backoff     = backoff
	MaxAttempts = maxAttempts
	// UserSeatsSQL is the per-user limit's count, for the plan tests.
	UserSeatsSQL = userSeatsSQL
	SoldSeatsSQL = soldSeatsSQL
)

func (s *Store) Transact(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.transact(ctx, fn)
}
