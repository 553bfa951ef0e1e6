package boxoffice

import (
	"context"
	"errors"
	"time"
)

// HoldRequest asks for all of SeatIDs of EventID for one booking.
type HoldRequest struct {
	EventID ID
	SeatIDs []string
	// Owner is the booking the hold is for; only it can release or confirm.
	Owner ID
	TTL   time.Duration
	// Supersede, when set, is an owner whose holds on these seats this
	// request takes over as if the seats were free: seats that come back
	// (a released or expired booking) pass straight from the old booking's
	// hold to a waitlist offer, never free in between. Seats held by anyone
	// else still refuse the request.
	Supersede ID
	// Remember, for AcquireLeased only, asks the lock layer to mark a
	// grant under the lease's key for this long, so that a later refusal
	// under that key can tell that it has no earlier answer to replay (see
	// ErrNeverGranted). Zero marks nothing; a layer without marks ignores it.
	Remember time.Duration
}

// ErrNeverGranted is wrapped by the ESEATTAKEN refusal of an AcquireLeased
// (HoldRequest.Remember set) when the lock layer knows that no request under
// its lease key was granted there within Remember: it keeps a mark of each
// such grant, and its record of those marks is complete for that long (no
// restart, failover or eviction lost any since). A retry of a request that
// was answered with a booking would have been granted under its key, so a
// refused request that wraps this has no earlier answer to look up.
var ErrNeverGranted = errors.New("no grant under this key was marked")

// Check is what every Holds implementation asks of a request before
// anything else: EINVALID without seats or without a positive TTL.
func (r HoldRequest) Check() error {
	if len(r.SeatIDs) == 0 {
		return Errorf(EINVALID, "a hold needs at least one seat")
	}
	if r.TTL <= 0 {
		return Errorf(EINVALID, "a hold needs a positive ttl")
	}
	return nil
}

// Hold is a granted HoldRequest.
type Hold struct {
	EventID ID
	SeatIDs []string
	Owner   ID
	// Fence is the fencing token: larger than every earlier fence on each
	// of its seats, so a later hold on a seat always carries a larger one.
	// (In-process it is one counter per event; on Redis Cluster one per
	// section's hash slot, see package redis.)
	Fence     int64
	ExpiresAt time.Time
}

// Holds is the seat-hold port: the lock layer in front of the database.
// Implementations: inmem.Holds (embedded) and redis.Holds (production).
// Every implementation passes holdtest.Run.
//
// The lock layer makes double-selling unlikely and cheap to refuse; it does
// not make it impossible. The Store's unique constraint on valid tickets,
// plus the fence check at confirm, is the final arbiter.
type Holds interface {
	// Acquire holds every seat in the request for req.TTL, or none of them.
	// If any seat is held by another owner (neither req.Owner nor
	// req.Supersede) it returns an ESEATTAKEN *Error whose Seats lists the
	// seats in the way. Acquiring seats the same owner
	// already holds succeeds and refreshes their expiry (a retried request);
	// like any grant it gets a new fence, which replaces the old one on its
	// seats. A request without seats or with a TTL that is not positive is
	// EINVALID. When the lock store is down it returns EUNAVAILABLE.
	Acquire(ctx context.Context, req HoldRequest) (Hold, error)

	// AcquireMany decides a batch of requests as if Acquire were called for
	// each in turn, in slice order: each all-or-nothing, an earlier request
	// taking a seat before a later one can. holds[i] is request i's hold
	// when errs[i] is nil; errs[i] is what Acquire would have returned
	// (ESEATTAKEN with the seats in the way, EINVALID, EUNAVAILABLE). It is
	// the queue's drain: the lock store decides a whole batch in one round
	// trip per hash slot instead of one per request. A request refused
	// EUNAVAILABLE may or may not hold its seats; they are its owner's and
	// expire with its TTL.
	AcquireMany(ctx context.Context, reqs []HoldRequest) (holds []Hold, errs []error)

	// Release deletes the holds on seatIDs that still belong to owner and
	// leaves any other owner's hold alone (check-and-delete). It returns how
	// many seats it freed.
	Release(ctx context.Context, eventID ID, seatIDs []string, owner ID) (int, error)

	// Verify returns nil if every seat is still held by owner under fence,
	// and an EHOLDLOST *Error otherwise.
	Verify(ctx context.Context, eventID ID, seatIDs []string, owner ID, fence int64) error

	// Held reports, for each of seatIDs, whether it is held right now. The
	// result is aligned with seatIDs. It is the seat map's read of the lock
	// layer, so it must not cost one round trip per seat.
	Held(ctx context.Context, eventID ID, seatIDs []string) ([]bool, error)

	// Ping reports whether the lock store is reachable.
	Ping(ctx context.Context) error
}

// LeasedHolds is a Holds that can take an in-flight lease in the step
// that holds the seats: a direct reserve's lease then costs no round trip
// of its own (redis.Holds: one script on the first section's slot).
type LeasedHolds interface {
	Holds
	// AcquireLeased is Acquire that first takes the lease on key for ttl:
	// EIDEMINFLIGHT when someone holds it, nothing held then. When the
	// seats are refused or the call fails, the lease is not kept. After a
	// grant the lease lasts ttl, unless release (which may be called any
	// number of times, and is never nil) ends it first. Its leases are its own: a key leased
	// here and the same key taken by Leases.TryLease are two leases.
	AcquireLeased(ctx context.Context, req HoldRequest, key string, ttl time.Duration) (h Hold, release func(), err error)

	// OpenMarks says that the sections of a new event have never been
	// held: a refusal there can claim ErrNeverGranted from now on, where it
	// would otherwise wait until its marks have been kept for Remember
	// since they began. The record lasts keep. It must be called before
	// any hold of the event, or not at all; a failure (logged by the
	// caller) only costs refused requests a look-up.
	OpenMarks(ctx context.Context, eventID ID, sections []string, keep time.Duration) error
}

// Leases is a small port for short exclusive leases by key: the "a request
// with this idempotency key is in flight" marker. A lease ends when its
// holder calls the returned release func, or by itself after ttl (a crashed
// holder cannot block a key for longer).
type Leases interface {
	// TryLease takes the lease on key for ttl. It returns EIDEMINFLIGHT when
	// someone else holds it, EUNAVAILABLE when the store is down.
	TryLease(ctx context.Context, key string, ttl time.Duration) (release func(), err error)
}

// ManyLeases is a Leases that also takes a batch of leases at once, in one
// round trip per store node instead of one per lease: the queue's drain
// takes the leases of a whole batch so.
type ManyLeases interface {
	Leases
	// TryLeaseMany takes the lease on each of keys for ttl, as TryLease
	// does one: errs[i] is nil when key i's lease was taken, and release
	// ends every lease taken, in one round trip (it may be called any
	// number of times).
	TryLeaseMany(ctx context.Context, keys []string, ttl time.Duration) (release func(), errs []error)
}
