package redis

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/redis/rueidis"
)

var _ boxoffice.ManyLeases = (*Leases)(nil)

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
	release, errs := l.TryLeaseMany(ctx, []string{key}, ttl)
	if errs[0] != nil {
		return nil, errs[0]
	}
	return release, nil
}

// TryLeaseMany takes the leases on keys in one pipelined call (the cluster
// client sends each key to its node, in parallel); see
// boxoffice.ManyLeases. The release runs the check-and-delete of every
// lease taken in one pipelined call too, a script call per hash slot
// (releaseExecs).
func (l *Leases) TryLeaseMany(ctx context.Context, keys []string, ttl time.Duration) (func(), []error) {
	errs := make([]error, len(keys))
	if ttl <= 0 {
		for i := range errs {
			errs[i] = boxoffice.Errorf(boxoffice.EINVALID, "lease ttl must be positive")
		}
		return func() {}, errs
	}
	ms := int64((ttl + time.Millisecond - 1) / time.Millisecond)
	// One random read for the batch: each lease's token is a slice of it.
	raw := make([]byte, 16*len(keys))
	_, _ = rand.Read(raw) // crypto/rand.Read never fails
	tokens, ks := make([]string, len(keys)), make([]string, len(keys))
	cmds := make(rueidis.Commands, 0, len(keys))
	var sent []int
	for i, key := range keys {
		if key == "" {
			errs[i] = boxoffice.Errorf(boxoffice.EINVALID, "lease key is empty")
			continue
		}
		tokens[i], ks[i] = hex.EncodeToString(raw[16*i:16*i+16]), l.prefix+"lease:"+key
		cmds = append(cmds, l.client.B().Set().Key(ks[i]).Value(tokens[i]).Nx().PxMilliseconds(ms).Build())
		sent = append(sent, i)
	}
	var takenKeys, takenTokens []string
	if len(cmds) > 0 {
		ctx, cancel := context.WithTimeout(ctx, l.timeout())
		res := l.client.DoMulti(ctx, cmds...)
		cancel()
		for j, i := range sent {
			switch err := res[j].Error(); {
			case rueidis.IsRedisNil(err):
				errs[i] = boxoffice.Errorf(boxoffice.EIDEMINFLIGHT, "a request with this key is in flight")
			case err != nil:
				errs[i] = boxoffice.Unavailable("the lease store", err)
			default:
				takenKeys, takenTokens = append(takenKeys, ks[i]), append(takenTokens, tokens[i])
			}
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if len(takenKeys) == 0 {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), l.timeout())
			defer cancel()
			execs := releaseExecs(takenKeys, takenTokens, l.client.Mode() == rueidis.ClientModeCluster)
			leaseReleaseScript.execMulti(ctx, l.client, execs)
		})
	}, errs
}

// releaseExecs groups the check-and-deletes of leases into script calls:
// one per hash slot of a cluster (a script's keys must share one), one for
// all on a single server, each of at most releaseChunk keys. A drain
// batch's in-flight leases were released one script call each: 40,000
// commands for the client to write and read back for a 40,000-request
// drain, where a single server now takes 200 calls (Redis's own time
// hardly differs: about 1.2 µs a one-key call, 0.3 µs a key in a
// 200-key one).
func releaseExecs(keys, tokens []string, cluster bool) []rueidis.LuaExec {
	order := make([]int, len(keys))
	slots := make([]int, len(keys))
	for i, k := range keys {
		order[i] = i
		if cluster {
			slots[i] = keySlot(k)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(slots[a], slots[b]) })
	var execs []rueidis.LuaExec
	for j, i := range order {
		if n := len(execs); n == 0 || slots[i] != slots[order[j-1]] || len(execs[n-1].Keys) == releaseChunk {
			execs = append(execs, rueidis.LuaExec{})
		}
		e := &execs[len(execs)-1]
		e.Keys, e.Args = append(e.Keys, keys[i]), append(e.Args, tokens[i])
	}
	return execs
}

// releaseChunk bounds the keys of one release script, and so how long it
// holds the server (about a microsecond a key).
const releaseChunk = 200

// keySlot is key's Redis Cluster hash slot: that of its hash tag, the
// part between its first '{' and the next '}', when not empty, else of
// the whole key.
func keySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key)) % hashSlots
}
