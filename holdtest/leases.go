package holdtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

var leaseSpecs = []spec{
	{"Exclusive", testLeaseExclusive},
	{"ReleaseFreesIt", testLeaseRelease},
	{"ExpiresAfterTTL", testLeaseExpires},
	{"LateReleaseNeverFreesNewerLease", testLeaseLateRelease},
	{"OneWinnerUnderConcurrency", testLeaseOneWinner},
	{"ManyAtOnce", testLeaseMany},
}

// newKey returns a lease key no other test run uses.
func newKey(name string) string { return "holdtest:" + newID().String() + ":" + name }

// lease takes key, failing the test if it cannot.
func lease(t testing.TB, h Harness, key string, ttl time.Duration) func() {
	t.Helper()
	release, err := h.Leases.TryLease(context.Background(), key, ttl)
	if err != nil {
		t.Fatalf("TryLease(%q) = %v, want the lease", key, err)
	}
	if release == nil {
		t.Fatalf("TryLease(%q) returned a nil release func", key)
	}
	return release
}

// wantInFlight asserts that key is leased by someone else.
func wantInFlight(t testing.TB, h Harness, key string) {
	t.Helper()
	_, err := h.Leases.TryLease(context.Background(), key, long)
	wantCode(t, err, boxoffice.EIDEMINFLIGHT)
}

func testLeaseExclusive(t *testing.T, h Harness) {
	key := newKey("a")
	lease(t, h, key, long)

	wantInFlight(t, h, key)
	lease(t, h, newKey("b"), long) // other keys are not affected
}

func testLeaseRelease(t *testing.T, h Harness) {
	key := newKey("a")
	release := lease(t, h, key, long)

	release()

	lease(t, h, key, long)
}

func testLeaseExpires(t *testing.T, h Harness) {
	key := newKey("a")
	lease(t, h, key, short)

	h.Advance(short / 2)
	wantInFlight(t, h, key)
	h.Advance(short/2 + short/3)
	lease(t, h, key, long)
}

// A holder back after its lease expired and someone else took the key
// must not end the new lease; neither must a second call of a release func.
func testLeaseLateRelease(t *testing.T, h Harness) {
	key := newKey("a")
	late := lease(t, h, key, short)
	h.Advance(short + short/3)
	newer := lease(t, h, key, long)

	late()
	wantInFlight(t, h, key)

	newer()
	newest := lease(t, h, key, long)
	newer()
	wantInFlight(t, h, key)
	newest()
}

func testLeaseOneWinner(t *testing.T, h Harness) {
	key := newKey("a")
	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			_, errs[i] = h.Leases.TryLease(context.Background(), key, long)
		})
	}
	close(start)
	wg.Wait()

	winners := 0
	for _, err := range errs {
		switch boxoffice.ErrorCode(err) {
		case "":
			winners++
		case boxoffice.EIDEMINFLIGHT:
		default:
			t.Errorf("TryLease = %v, want the lease or %s", err, boxoffice.EIDEMINFLIGHT)
		}
	}
	if winners != 1 {
		t.Errorf("%d of %d racers got the lease, want exactly 1", winners, racers)
	}
}

// TryLeaseMany (a ManyLeases) takes each free key, refuses each held one
// (EIDEMINFLIGHT, also a key twice in one call: the second is held by the
// first) and an empty one (EINVALID); its release frees exactly the leases
// it took, once: a lease taken after it ran is not freed by a second call.
func testLeaseMany(t *testing.T, h Harness) {
	many, ok := h.Leases.(boxoffice.ManyLeases)
	if !ok {
		t.Skip("these leases take one at a time")
	}
	held, a, b := newKey("held"), newKey("a"), newKey("b")
	otherRelease := lease(t, h, held, long)
	release, errs := many.TryLeaseMany(context.Background(), []string{a, held, b, "", a}, long)
	if len(errs) != 5 {
		t.Fatalf("TryLeaseMany of 5 keys answered %d errors", len(errs))
	}
	for i, want := range []string{"", boxoffice.EIDEMINFLIGHT, "", boxoffice.EINVALID, boxoffice.EIDEMINFLIGHT} {
		if got := boxoffice.ErrorCode(errs[i]); got != want {
			t.Errorf("key %d: %v, want %q", i, errs[i], want)
		}
	}
	wantInFlight(t, h, a)
	wantInFlight(t, h, b)

	release()
	wantInFlight(t, h, held) // the lease it refused is someone else's
	otherRelease()
	newer := lease(t, h, a, long)
	lease(t, h, b, long)
	lease(t, h, held, long)
	release() // again: frees nothing
	wantInFlight(t, h, a)
	newer()
	lease(t, h, a, long)

	// Nothing asked: nothing taken, and a release that does nothing.
	release, errs = many.TryLeaseMany(context.Background(), nil, long)
	if len(errs) != 0 {
		t.Errorf("TryLeaseMany of no keys answered %v", errs)
	}
	release()

	// A drain batch's worth, released together (a store may group the
	// releases, by server or by hash slot): each lease it still holds is
	// freed, and none that ran out and went to someone else.
	keys := make([]string, 450)
	for i := range keys {
		keys[i] = newKey(fmt.Sprintf("batch-%d", i))
	}
	expired, errs := many.TryLeaseMany(context.Background(), keys, short)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("TryLeaseMany, key %d: %v", i, err)
		}
	}
	h.Advance(short + short/3)
	for _, k := range keys[:len(keys)/2] {
		lease(t, h, k, long) // someone else's now
	}
	expired()
	for _, k := range keys[:len(keys)/2] {
		wantInFlight(t, h, k)
	}
	rest := keys[len(keys)/2:]
	release, errs = many.TryLeaseMany(context.Background(), rest, long)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("TryLeaseMany of the lapsed keys, key %d: %v", i, err)
		}
	}
	release()
	for _, k := range rest {
		lease(t, h, k, long) // freed by the release
	}
}
