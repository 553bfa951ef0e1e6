package sale

import (
	"context"
	"encoding/json"
	"time"

	"github.com/boxoffice/boxoffice"
)

// replay looks up the stored answer for (user, key). It returns
// errNoRecord when there is none, EIDEMMISMATCH when the key was used for
// another request, and otherwise decodes the stored body into out.
func (s *core) replay(ctx context.Context, userID, key, hash string, out any) error {
	rec, err := s.idem.Idempotency(ctx, userID, key)
	if isCode(err, boxoffice.ENOTFOUND) {
		return errNoRecord
	}
	if err != nil {
		return err
	}
	return s.replayRecord(rec, hash, out)
}

// replayRecord is replay's reading of a record found.
func (s *core) replayRecord(rec *boxoffice.IdempotencyRecord, hash string, out any) error {
	if !rec.ExpiresAt.After(s.now()) {
		return errNoRecord // expired and not yet purged: the key is free again
	}
	if rec.RequestHash != hash {
		return boxoffice.Errorf(boxoffice.EIDEMMISMATCH, "this idempotency key was already used for a different request")
	}
	if err := json.Unmarshal(rec.Body, out); err != nil {
		return &boxoffice.Error{Code: boxoffice.EINTERNAL, Message: "stored idempotent response is unreadable", Err: err}
	}
	return nil
}

// lease takes the in-flight lease for (user, key): a concurrent retry of
// the same request gets EIDEMINFLIGHT instead of doing the work twice.
func (s *core) lease(ctx context.Context, scope, userID, key string) (func(), error) {
	return s.leases.TryLease(ctx, leaseKey(scope, userID, key), s.leaseTTL())
}

func leaseKey(scope, userID, key string) string { return scope + "\x00" + userID + "\x00" + key }

// leaseTTL outlasts the slowest request: a payment's timeout and more.
func (s *core) leaseTTL() time.Duration { return s.cfg.PaymentTimeout + s.cfg.HoldTTL/10 }

// queuedLease is the in-flight lease of a queued request's worker.
const queuedLease = 10 * time.Second

// record is the idempotency record of a request that ended in outcome,
// answered with v.
func (s *core) record(userID, key, hash string, outcome boxoffice.Outcome, v any) (*boxoffice.IdempotencyRecord, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	now := s.now()
	return &boxoffice.IdempotencyRecord{UserID: userID, Key: key, RequestHash: hash, Outcome: outcome,
		Body: body, CreatedAt: now, ExpiresAt: now.Add(s.cfg.IdempotencyTTL)}, nil
}
