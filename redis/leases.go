package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/redis/rueidis"
)

var _ boxoffice.Leases = (*Leases)(nil)

// Leases is boxoffice.Leases on Redis: a lease is the key
// <prefix>lease:<key> holding a random token, set with SET NX PX and
// released by a check-and-delete script, so a holder whose lease ran out
// and went to someone else cannot end the newer lease. It is safe for
// concurrent use.
type Leases struct {
	client rueidis.Client
	prefix string

	// Timeout bounds each call against Redis, the release included; zero
	// means DefaultTimeout.
	Timeout time.Duration
}

// NewLeases returns Leases storing its keys under prefix, which must not
// contain '{' or '}' (NewLeases panics if it does).
func NewLeases(client rueidis.Client, prefix string) *Leases {
	checkPrefix(prefix)
	return &Leases{client: client, prefix: prefix}
}

func (l *Leases) timeout() time.Duration {
	if l.Timeout > 0 {
		return l.Timeout
	}
	return DefaultTimeout
}

// TryLease takes the lease on key for ttl. It returns EINVALID for an empty
// key or a ttl that is not positive, EIDEMINFLIGHT when someone holds the
// lease, EUNAVAILABLE when Redis fails. The release func may be called any
// number of times; if Redis cannot be reached then, the lease ends with its
// ttl.
func (l *Leases) TryLease(ctx context.Context, key string, ttl time.Duration) (func(), error) {
	if key == "" {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "lease key is empty")
	}
	if ttl <= 0 {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "lease ttl must be positive")
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	token := hex.EncodeToString(b[:])
	k := l.prefix + "lease:" + key

	ctx, cancel := context.WithTimeout(ctx, l.timeout())
	defer cancel()
	ms := int64((ttl + time.Millisecond - 1) / time.Millisecond)
	err := l.client.Do(ctx, l.client.B().Set().Key(k).Value(token).Nx().PxMilliseconds(ms).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return nil, boxoffice.Errorf(boxoffice.EIDEMINFLIGHT, "a request with this key is in flight")
	}
	if err != nil {
		return nil, boxoffice.Unavailable("the lease store", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), l.timeout())
			defer cancel()
			leaseReleaseScript.exec(ctx, l.client, []string{k}, []string{token})
		})
	}, nil
}
