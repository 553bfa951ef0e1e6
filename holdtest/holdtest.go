// Package holdtest is the contract test suite of the lock layer: every
// implementation of boxoffice.Holds and boxoffice.Leases (inmem, redis,
// Redis Cluster) runs Run and passes it.
//
// The suite is written for real servers too: every subtest uses fresh
// random event ids, owners and lease keys, so it can share a Redis with
// other runs, and it moves time only through Harness.Advance, with TTLs
// short enough to sleep through.
package holdtest

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/boxoffice/boxoffice"
)

// Harness is one fresh implementation under test.
type Harness struct {
	Holds  boxoffice.Holds
	Leases boxoffice.Leases
	// Advance moves the clock of Holds and Leases forward by d: a fake
	// clock in-process, time.Sleep against a real server.
	Advance func(d time.Duration)
}

// Run runs the whole contract. newHarness is called once per subtest; the
// subtests run one after another, so newHarness may reset a shared store.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	groups := []struct {
		name  string
		specs []spec
	}{
		{"Acquire", acquireSpecs},
		{"AcquireMany", manySpecs},
		{"Supersede", supersedeSpecs},
		{"Concurrency", concurrencySpecs},
		{"Expiry", expirySpecs},
		{"Release", releaseSpecs},
		{"Verify", verifySpecs},
		{"Fence", fenceSpecs},
		{"Held", heldSpecs},
		{"Ping", pingSpecs},
		{"Leases", leaseSpecs},
		{"AcquireLeased", leasedSpecs},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, s := range g.specs {
				t.Run(s.name, func(t *testing.T) { s.test(t, newHarness(t)) })
			}
		})
	}
}

// spec is one named requirement of the contract.
type spec struct {
	name string
	test func(t *testing.T, h Harness)
}

const (
	// long is the TTL of holds and leases a test does not let expire.
	long = time.Minute
	// short is the TTL of those a test lets expire. Against a real server
	// Advance sleeps, so it is short; the tests step around an expiry with
	// a margin of at least short/3 on either side, for slow machines.
	short = 600 * time.Millisecond
)

// newID returns a random positive id: fresh events and owners for every
// test, so runs sharing a server never meet. It is below 2^50, an id of the
// first days after the Snowflake epoch: a store that keeps holds by event
// partition (postgres, since 0010) has those events' partition from its
// first migration on.
func newID() boxoffice.ID { return boxoffice.ID(rand.Int64N(1<<50) + 1) }

// seats returns the ids of seats from..to of row A of section.
func seats(section string, from, to int) []string {
	var ids []string
	for n := from; n <= to; n++ {
		ids = append(ids, boxoffice.SeatID(section, "A", n))
	}
	return ids
}

// seat returns the id of seat n of row A of section.
func seat(section string, n int) string { return boxoffice.SeatID(section, "A", n) }

func concat(lists ...[]string) []string {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

// acquire holds seatIDs for owner, failing the test if it cannot.
func acquire(t testing.TB, h Harness, event boxoffice.ID, seatIDs []string, owner boxoffice.ID, ttl time.Duration) boxoffice.Hold {
	t.Helper()
	hold, err := h.Holds.Acquire(context.Background(), boxoffice.HoldRequest{
		EventID: event, SeatIDs: seatIDs, Owner: owner, TTL: ttl,
	})
	if err != nil {
		t.Fatalf("Acquire(%v, owner %v) = %v, want a hold", seatIDs, owner, err)
	}
	return hold
}

// wantTaken asserts that owner cannot acquire seatIDs because exactly
// wantSeats (in any order) are held by others.
func wantTaken(t testing.TB, h Harness, event boxoffice.ID, seatIDs []string, owner boxoffice.ID, wantSeats []string) {
	t.Helper()
	_, err := h.Holds.Acquire(context.Background(), boxoffice.HoldRequest{
		EventID: event, SeatIDs: seatIDs, Owner: owner, TTL: long,
	})
	wantCode(t, err, boxoffice.ESEATTAKEN)
	if diff := cmp.Diff(wantSeats, boxoffice.ErrorSeats(err), sortStrings); diff != "" {
		t.Errorf("Acquire(%v) conflicting seats mismatch (-want +got):\n%s", seatIDs, diff)
	}
}

// wantHeld asserts Held for seatIDs.
func wantHeld(t testing.TB, h Harness, event boxoffice.ID, seatIDs []string, want []bool) {
	t.Helper()
	got, err := h.Holds.Held(context.Background(), event, seatIDs)
	if err != nil {
		t.Fatalf("Held(%d seats) = %v", len(seatIDs), err)
	}
	if len(got) != len(want) {
		t.Fatalf("Held(%d seats) returned %d answers, want one per seat", len(seatIDs), len(got))
	}
	var wrong []string
	for i := range want {
		if got[i] != want[i] {
			wrong = append(wrong, seatIDs[i]+": held="+strconv.FormatBool(got[i]))
		}
	}
	if len(wrong) > 0 {
		if len(wrong) > 10 {
			wrong = append(wrong[:10], "...")
		}
		t.Errorf("Held: %d of %d seats wrong: %s", len(wrong), len(seatIDs), strings.Join(wrong, ", "))
	}
}

// allHeld returns n copies of v.
func allHeld(n int, v bool) []bool {
	b := make([]bool, n)
	for i := range b {
		b[i] = v
	}
	return b
}

// wantVerify asserts the outcome of Verify: nil for wantCode "".
func wantVerify(t testing.TB, h Harness, event boxoffice.ID, seatIDs []string, owner boxoffice.ID, fence int64, code string) {
	t.Helper()
	err := h.Holds.Verify(context.Background(), event, seatIDs, owner, fence)
	if got := boxoffice.ErrorCode(err); got != code {
		t.Errorf("Verify(%v, owner %v, fence %d) = %v, want code %q", seatIDs, owner, fence, err, code)
	}
}

// release releases seatIDs for owner and asserts how many were freed.
func release(t testing.TB, h Harness, event boxoffice.ID, seatIDs []string, owner boxoffice.ID, want int) {
	t.Helper()
	n, err := h.Holds.Release(context.Background(), event, seatIDs, owner)
	if err != nil {
		t.Fatalf("Release(%v, owner %v) = %v", seatIDs, owner, err)
	}
	if n != want {
		t.Errorf("Release(%v, owner %v) freed %d seats, want %d", seatIDs, owner, n, want)
	}
}

// wantCode asserts the error code of err ("" for nil).
func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := boxoffice.ErrorCode(err); got != code {
		t.Errorf("error = %v (code %q), want code %q", err, got, code)
	}
}

var sortStrings = cmpopts.SortSlices(strings.Compare)
