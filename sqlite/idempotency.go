package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/boxoffice/boxoffice"
)

// Idempotency returns the record for (userID, key), or ENOTFOUND. An
// expired record not yet purged is still returned.
func (s *Store) Idempotency(ctx context.Context, userID, key string) (*boxoffice.IdempotencyRecord, error) {
	r, err := scanIdempotency(s.queryRow(ctx, `
		SELECT `+idempotencyColumns+`
		FROM idempotency_keys
		WHERE user_id = ? AND key = ?`, userID, key))
	if err == sql.ErrNoRows {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no idempotency record for this key")
	}
	if err != nil {
		return nil, translate(err, "database")
	}
	return r, nil
}

// PutIdempotency records a response for a request that wrote nothing else.
// A record already present fails with EIDEMINFLIGHT.
func (s *Store) PutIdempotency(ctx context.Context, r *boxoffice.IdempotencyRecord) error {
	return s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		return insertIdempotency(ctx, tx, r)
	})
}

// insertIdempotency writes r in tx; EIDEMINFLIGHT if (user, key) is taken.
func insertIdempotency(ctx context.Context, tx *txn, r *boxoffice.IdempotencyRecord) error {
	return insertIdempotencyRows(ctx, tx, idempotencyRow(nil, r))
}

// insertIdempotencies writes idempotency records, 7 values each.
var insertIdempotencies = newMultiInsert(`INSERT INTO idempotency_keys (user_id, key, request_hash, outcome, body, created_at, expires_at)`, 7, 128, 32, 8, 1)

// idempotencyRow appends r's row of insertIdempotencies to dst.
func idempotencyRow(dst []any, r *boxoffice.IdempotencyRecord) []any {
	return append(dst, r.UserID, r.Key, r.RequestHash, r.Outcome, r.Body, millis(r.CreatedAt), millis(r.ExpiresAt))
}

// insertIdempotencyRows writes rows of insertIdempotencies; a key taken
// is errKeyTaken.
func insertIdempotencyRows(ctx context.Context, tx *txn, rows []any) error {
	err := insertIdempotencies.exec(ctx, tx, rows)
	if isUniqueViolation(err) {
		return errKeyTaken
	}
	return err
}

// errKeyTaken refuses a record whose (user, key) has one already.
var errKeyTaken = boxoffice.Errorf(boxoffice.EIDEMINFLIGHT, "a request with this idempotency key was already made")

// PurgeIdempotency deletes records that expired before now (expires_at <
// now) and returns how many.
func (s *Store) PurgeIdempotency(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE expires_at < ?`, millis(now))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// idempotenciesSQL reads the records of a JSON array of [user, key]
// pairs, one primary-key probe each (TestBatchReadsProbeTheirRows).
const idempotenciesSQL = `SELECT ` + idempotencyColumns + ` FROM idempotency_keys
	WHERE (user_id, key) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))`

// Idempotencies reads the records of many (user, key) pairs in one
// statement: out[i] is (userIDs[i], keys[i])'s, nil when there is none.
// The drain asks for a whole batch's, and a statement's fixed cost in
// database/sql and the driver was most of a look-up's.
func (s *Store) Idempotencies(ctx context.Context, userIDs, keys []string) ([]*boxoffice.IdempotencyRecord, error) {
	if len(userIDs) != len(keys) {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "%d users for %d keys", len(userIDs), len(keys))
	}
	out := make([]*boxoffice.IdempotencyRecord, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	pairs := make([][2]string, len(keys))
	for i := range keys {
		pairs[i] = [2]string{userIDs[i], keys[i]}
	}
	arg, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, idempotenciesSQL, string(arg))
	if err != nil {
		return nil, translate(err, "database")
	}
	found, err := collect(rows, scanIdempotency)
	if err != nil {
		return nil, translate(err, "database")
	}
	byPair := make(map[[2]string]*boxoffice.IdempotencyRecord, len(found))
	for _, r := range found {
		byPair[[2]string{r.UserID, r.Key}] = r
	}
	for i, p := range pairs {
		out[i] = byPair[p]
	}
	return out, nil
}
