package storetest

import (
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

func (s suite) idempotency(t *testing.T) {
	s.test(t, "PutIdempotencyThenIdempotencyReturnsIt", func(t *testing.T, f *fixture) {
		r := f.idem("alice", "confirm-7")
		paris := time.FixedZone("CEST", 2*3600)
		r.CreatedAt = time.Date(2030, 6, 1, 20, 0, 0, 1_999_999, paris)
		r.ExpiresAt = r.CreatedAt.Add(24 * time.Hour)
		r.Body = []byte{0, 1, 2, 0xff, '{', '}'} // any bytes, not only text
		if err := f.store.PutIdempotency(f.ctx, r); err != nil {
			t.Fatalf("PutIdempotency: %v", err)
		}
		f.wantIdempotency(r)
	})

	s.test(t, "IdempotencyUnknownIsNotFound", func(t *testing.T, f *fixture) {
		if err := f.store.PutIdempotency(f.ctx, f.idem("alice", "k")); err != nil {
			t.Fatalf("PutIdempotency: %v", err)
		}
		f.wantNoIdempotency("alice", "other-key")
		f.wantNoIdempotency("bob", "k")
	})

	s.test(t, "PutIdempotencyTwiceIsInFlightAndKeepsTheFirst", func(t *testing.T, f *fixture) {
		first := f.idem("alice", "k")
		if err := f.store.PutIdempotency(f.ctx, first); err != nil {
			t.Fatalf("PutIdempotency: %v", err)
		}
		second := f.idem("alice", "k")
		second.RequestHash, second.Outcome, second.Body = "another", boxoffice.OutcomeCancelled, []byte("second")
		wantCode(t, "PutIdempotency(again)", f.store.PutIdempotency(f.ctx, second), boxoffice.EIDEMINFLIGHT)
		f.wantIdempotency(first)
	})

	s.test(t, "PutIdempotencyKeysAreScopedToTheUser", func(t *testing.T, f *fixture) {
		alice, bob := f.idem("alice", "k"), f.idem("bob", "k")
		bob.Body = []byte("bob's")
		for _, r := range []*boxoffice.IdempotencyRecord{alice, bob} {
			if err := f.store.PutIdempotency(f.ctx, r); err != nil {
				t.Fatalf("PutIdempotency(%s): %v", r.UserID, err)
			}
		}
		f.wantIdempotency(alice)
		f.wantIdempotency(bob)
	})

	s.test(t, "PurgeIdempotencyDeletesRecordsThatExpiredBeforeNow", func(t *testing.T, f *fixture) {
		now := t0.Add(48 * time.Hour)
		records := map[string]struct {
			expiresAt time.Time
			purged    bool
		}{
			"long-gone":    {now.Add(-time.Hour), true},
			"just-gone":    {now.Add(-time.Millisecond), true},
			"expiring-now": {now, false}, // not before now
			"fresh":        {now.Add(time.Hour), false},
		}
		for key, r := range records {
			rec := f.idem("alice", key)
			rec.ExpiresAt = r.expiresAt
			if err := f.store.PutIdempotency(f.ctx, rec); err != nil {
				t.Fatalf("PutIdempotency(%s): %v", key, err)
			}
		}
		n, err := f.store.PurgeIdempotency(f.ctx, now)
		if err != nil {
			t.Fatalf("PurgeIdempotency: %v", err)
		}
		if n != 2 {
			t.Errorf("PurgeIdempotency = %d, want 2", n)
		}
		for key, r := range records {
			if r.purged {
				f.wantNoIdempotency("alice", key)
				continue
			}
			rec := f.idem("alice", key)
			rec.ExpiresAt = r.expiresAt
			f.wantIdempotency(rec)
		}
		if n, err := f.store.PurgeIdempotency(f.ctx, now); err != nil || n != 0 {
			t.Errorf("PurgeIdempotency(again) = %d, %v; want 0, nil", n, err)
		}
	})
}
