package sale

import (
	"context"
	"encoding"
	"encoding/json"
	"reflect"
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
	if err := s.answers.Decode(rec.Outcome, rec.Body, out); err != nil {
		return &boxoffice.Error{Code: boxoffice.EINTERNAL, Message: "stored idempotent response is unreadable", Err: err}
	}
	return nil
}

// lease takes the in-flight lease for (user, key): a concurrent retry of
// the same request gets EIDEMINFLIGHT instead of doing the work twice.
func (s *core) lease(ctx context.Context, scope, userID, key string) (func(), error) {
	return s.leases.TryLease(ctx, leaseKey(scope, userID, key), s.cfg.LeaseTTL())
}

func leaseKey(scope, userID, key string) string { return scope + "\x00" + userID + "\x00" + key }

// requestLease is the key of a queued request's in-flight lease: the one
// its worker holds while it decides it, and a status takes before telling
// it sold out (toldSoldOut).
func requestLease(r *boxoffice.QueuedRequest) string {
	return leaseKey("reserve", r.UserID, r.IdempotencyKey)
}

// queuedLease is the in-flight lease of a queued request's worker.
const queuedLease = 10 * time.Second

// record is the idempotency record of a request that ended in outcome,
// answered with v: its body is v as the service's AnswerCodec encodes it.
func (s *core) record(userID, key, hash string, outcome boxoffice.Outcome, v any) (*boxoffice.IdempotencyRecord, error) {
	body, err := s.answers.Encode(outcome, v)
	if err != nil {
		return nil, err
	}
	now := s.now()
	return &boxoffice.IdempotencyRecord{UserID: userID, Key: key, RequestHash: hash, Outcome: outcome,
		Body: body, CreatedAt: now, ExpiresAt: now.Add(s.cfg.IdempotencyTTL)}, nil
}

// goAnswers is the AnswerCodec of a service given none (Deps.Answers):
// encoding/json of sale's types as they are, under their Go field names,
// zero fields left out (a zero boxoffice.ID, such as a ticket's ListingID,
// would not read back). It is not the API's format, so a store that API
// servers read must not hold its records; a node gives httpapi.Answers.
type goAnswers struct{}

func (goAnswers) Encode(_ boxoffice.Outcome, v any) ([]byte, error) {
	return json.Marshal(nonZero(reflect.ValueOf(v)))
}

func (goAnswers) Decode(_ boxoffice.Outcome, b []byte, out any) error { return json.Unmarshal(b, out) }

// nonZero is v for encoding/json with the zero fields of its structs left
// out; fields of an embedded struct are promoted, as encoding/json reads
// them. Values that encode themselves (time.Time, boxoffice.ID) are kept
// as they are.
func nonZero(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if encodesItself(v.Type()) {
		return v.Interface()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return nonZero(v.Elem())
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Interface()
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = nonZero(v.Index(i))
		}
		return out
	case reflect.Struct:
		m := map[string]any{}
		nonZeroFields(v, m)
		return m
	default:
		return v.Interface()
	}
}

func nonZeroFields(v reflect.Value, m map[string]any) {
	for i := 0; i < v.NumField(); i++ {
		f, fv := v.Type().Field(i), v.Field(i)
		switch {
		case !f.IsExported() && !f.Anonymous, fv.IsZero():
		case f.Anonymous && fv.Kind() == reflect.Pointer && fv.Elem().Kind() == reflect.Struct && !encodesItself(fv.Type()):
			nonZeroFields(fv.Elem(), m)
		case f.Anonymous && fv.Kind() == reflect.Struct && !encodesItself(fv.Type()):
			nonZeroFields(fv, m)
		case f.IsExported():
			m[f.Name] = nonZero(fv)
		}
	}
}

func encodesItself(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler)
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)
