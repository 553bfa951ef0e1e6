package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

var errIdemInFlight = boxoffice.Errorf(boxoffice.EIDEMINFLIGHT, "a request with this idempotency key was already recorded")

// Idempotency returns the record for (userID, key), or ENOTFOUND. An
// expired record not yet purged is returned as it is; the caller compares
// ExpiresAt with its clock.
func (s *Store) Idempotency(ctx context.Context, userID, key string) (*boxoffice.IdempotencyRecord, error) {
	r := boxoffice.IdempotencyRecord{UserID: userID, Key: key}
	err := s.pool.QueryRow(ctx, `
		SELECT request_hash, status, body, created_at, expires_at
		FROM idempotency_keys WHERE user_id = $1 AND key = $2`, userID, key).
		Scan(&r.RequestHash, &r.Status, &r.Body, &r.CreatedAt, &r.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no idempotency record for this key")
	}
	if err != nil {
		return nil, translate(err)
	}
	r.CreatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC()
	return &r, nil
}

// PutIdempotency records a response for a request that wrote nothing else.
// A record already present for (user, key) fails with EIDEMINFLIGHT.
func (s *Store) PutIdempotency(ctx context.Context, r *boxoffice.IdempotencyRecord) error {
	b := &pgx.Batch{}
	queueIdempotency(b, r)
	err := s.pool.SendBatch(ctx, b).Close()
	if pgCode(err) == codeUniqueViolation {
		return errIdemInFlight
	}
	return translate(err)
}

// PurgeIdempotency deletes the records that expired before now and says how
// many.
func (s *Store) PurgeIdempotency(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE expires_at < $1`, ts(now))
	if err != nil {
		return 0, translate(err)
	}
	return int(tag.RowsAffected()), nil
}

// queueIdempotency adds the insert of r to a batch, so that it commits with
// the writes it answers for. A unique violation (23505) on it means the key
// was recorded already.
func queueIdempotency(b *pgx.Batch, r *boxoffice.IdempotencyRecord) {
	b.Queue(`
		INSERT INTO idempotency_keys (user_id, key, request_hash, status, body, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		r.UserID, r.Key, r.RequestHash, r.Status, r.Body, ts(r.CreatedAt), ts(r.ExpiresAt))
}
