package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

var errIdemInFlight = boxoffice.Errorf(boxoffice.EIDEMINFLIGHT, "a request with this idempotency key was already recorded")

// Idempotency returns the record for (userID, key), or ENOTFOUND. An
// expired record not yet purged is returned as it is; the caller compares
// ExpiresAt with its clock.
//
// Concurrent look-ups are read together, one statement for many (see
// combiner): under a flash sale every refused hold reads its key's record.
func (s *Store) Idempotency(ctx context.Context, userID, key string) (*boxoffice.IdempotencyRecord, error) {
	r, err := s.idempotency.Call(ctx, idemKey{userID, key})
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no idempotency record for this key")
	}
	return r, nil
}

// idemKey names an idempotency record.
type idemKey struct{ user, key string }

// idempotencies is Idempotencies for the combiner.
func (s *Store) idempotencies(ctx context.Context, ks []idemKey) ([]*boxoffice.IdempotencyRecord, error) {
	users, keys := make([]string, len(ks)), make([]string, len(ks))
	for i, k := range ks {
		users[i], keys[i] = k.user, k.key
	}
	return s.Idempotencies(ctx, users, keys)
}

// Idempotencies reads the records of many (user, key) pairs in one
// statement, a primary-key probe per pair: out[i] is (userIDs[i],
// keys[i])'s, nil when there is none.
func (s *Store) Idempotencies(ctx context.Context, userIDs, keys []string) ([]*boxoffice.IdempotencyRecord, error) {
	if len(userIDs) != len(keys) {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "%d users for %d keys", len(userIDs), len(keys))
	}
	out := make([]*boxoffice.IdempotencyRecord, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, idempotenciesSQL, userIDs, keys)
	var (
		ord int64
		r   boxoffice.IdempotencyRecord
	)
	_, err = forEach(rows, err, []any{&ord, &r.RequestHash, &r.Outcome, &r.Body, &r.CreatedAt, &r.ExpiresAt}, func() {
		rec := r
		rec.UserID, rec.Key = userIDs[ord-1], keys[ord-1]
		rec.CreatedAt, rec.ExpiresAt = rec.CreatedAt.UTC(), rec.ExpiresAt.UTC()
		out[ord-1] = &rec
	})
	if err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// idempotenciesSQL reads records by (user, key) pairs; LATERAL with LIMIT
// keeps it a probe per pair under any plan.
const idempotenciesSQL = `
	SELECT x.ord, i.request_hash, i.outcome, i.body, i.created_at, i.expires_at
	FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(u, k, ord)
	CROSS JOIN LATERAL (
	    SELECT request_hash, outcome, body, created_at, expires_at FROM idempotency_keys
	    WHERE user_id = x.u AND key = x.k LIMIT 1) i`

// PutIdempotency records a response for a request that wrote nothing else.
// A record already present for (user, key) fails with EIDEMINFLIGHT.
func (s *Store) PutIdempotency(ctx context.Context, r *boxoffice.IdempotencyRecord) error {
	return s.putIdempotency(ctx, r, false)
}

// putIdempotency is PutIdempotency; a replica is a sharded store's copy
// of a record whose home is another shard (Sharded.PutIdempotency).
func (s *Store) putIdempotency(ctx context.Context, r *boxoffice.IdempotencyRecord, replica bool) error {
	b := &pgx.Batch{}
	queueIdempotency(b, r)
	if replica {
		b.Queue(`UPDATE idempotency_keys SET replica = true WHERE user_id = $1 AND key = $2`, r.UserID, r.Key)
	}
	err := s.pool.SendBatch(ctx, b).Close()
	if pgCode(err) == codeUniqueViolation {
		return errIdemInFlight
	}
	return translate(err)
}

// PurgeIdempotency deletes the records that expired before now and says how
// many (replicas not counted: their home shard counts them).
func (s *Store) PurgeIdempotency(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		WITH gone AS (DELETE FROM idempotency_keys WHERE expires_at < $1 RETURNING replica)
		SELECT count(*) FILTER (WHERE NOT replica) FROM gone`, ts(now)).Scan(&n)
	if err != nil {
		return 0, translate(err)
	}
	return n, nil
}

// queueIdempotency adds the insert of r to a batch, so that it commits with
// the writes it answers for. A unique violation (23505) on it means the key
// was recorded already.
func queueIdempotency(b *pgx.Batch, r *boxoffice.IdempotencyRecord) {
	var rows idempotencyRows
	rows.add(r)
	rows.queue(b)
}

// idempotencyResult reads the result of the insert queueIdempotency queued
// for r, where it stands in br; a nil r queued nothing and reads nothing.
// The key recorded already is errIdemInFlight.
func idempotencyResult(br pgx.BatchResults, r *boxoffice.IdempotencyRecord) error {
	if r == nil {
		return nil
	}
	if _, err := br.Exec(); err != nil {
		if pgCode(err) == codeUniqueViolation {
			return errIdemInFlight
		}
		return err
	}
	return nil
}

// idempotencyRows gathers records as columns, for one multi-row insert: a
// group commit's records, or queueIdempotency's one.
type idempotencyRows struct {
	users, keys, hashes, outcomes []string
	bodies                        [][]byte
	created, expires              []time.Time
}

func (r *idempotencyRows) add(rec *boxoffice.IdempotencyRecord) {
	r.users, r.keys, r.hashes = append(r.users, rec.UserID), append(r.keys, rec.Key), append(r.hashes, rec.RequestHash)
	r.outcomes, r.bodies = append(r.outcomes, string(rec.Outcome)), append(r.bodies, rec.Body)
	r.created, r.expires = append(r.created, ts(rec.CreatedAt)), append(r.expires, ts(rec.ExpiresAt))
}

// queue adds the insert of the records to batch, if there are any.
func (r *idempotencyRows) queue(batch *pgx.Batch) {
	if len(r.keys) == 0 {
		return
	}
	batch.Queue(`
		INSERT INTO idempotency_keys (user_id, key, request_hash, outcome, body, created_at, expires_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[],
		                     $6::timestamptz[], $7::timestamptz[])`,
		r.users, r.keys, r.hashes, r.outcomes, r.bodies, r.created, r.expires)
}
