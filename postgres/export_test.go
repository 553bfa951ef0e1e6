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
)

func (s *Store) Transact(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.transact(ctx, fn)
}
