package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/holdtest"
	"github.com/boxoffice/boxoffice/postgres"
)

// TestHolds runs the lock-layer contract on PostgreSQL, a fresh schema per
// subtest. Time moves by sleeping: expiry is the database's clock.
func TestHolds(t *testing.T) {
	holdtest.Run(t, func(t *testing.T) holdtest.Harness {
		s := newStore(t)
		return holdtest.Harness{Holds: s.Holds(), Leases: s.Leases(), Advance: time.Sleep}
	})
}

// TestPGHoldsOneWinnerAcrossProcesses races 50 buyers for one seat through
// two Stores on one schema (two processes, two pools): the row lock, not
// anything in the process, decides, and exactly one buyer wins. The seat's
// next holder, through the other process, gets a larger fence.
func TestPGHoldsOneWinnerAcrossProcesses(t *testing.T) {
	u := freshSchema(t)
	procs := []*postgres.Holds{openStore(t, u).Holds(), openStore(t, u).Holds()}
	ctx := context.Background()
	event := boxoffice.ID(rand.Int64N(1<<50) + 1) // in the legacy partition (0010)
	seat := boxoffice.SeatID("Floor", "A", 1)

	const racers = 50
	holds, errs := holdtest.Race(racers, func(i int) (boxoffice.Hold, error) {
		return procs[i%2].Acquire(ctx, boxoffice.HoldRequest{
			EventID: event, SeatIDs: []string{seat}, Owner: boxoffice.ID(i + 1), TTL: time.Minute,
		})
	})
	winner := holdtest.OneWinner(t, errs, []string{seat})
	w := holds[winner]
	other := procs[(winner+1)%2]
	if err := other.Verify(ctx, event, w.SeatIDs, w.Owner, w.Fence); err != nil {
		t.Errorf("the other process's Verify of the winner = %v", err)
	}
	if n, err := procs[winner%2].Release(ctx, event, w.SeatIDs, w.Owner); n != 1 || err != nil {
		t.Fatalf("Release = %d, %v; want 1, nil", n, err)
	}
	next, err := other.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: w.SeatIDs, Owner: racers + 1, TTL: time.Minute})
	if err != nil {
		t.Fatalf("Acquire after the release = %v", err)
	}
	if next.Fence <= w.Fence {
		t.Errorf("next hold's fence %d, want above the winner's %d", next.Fence, w.Fence)
	}
}

// TestPGHoldsNoDeadlock races, round after round on the same four seats,
// writers that name them in opposite orders: an Acquire in ascending
// order, one in descending order, an AcquireMany whose requests go
// descending, and the Release (descending) of the hold that has them at
// the start of the round. Every writer locks rows in one order, so none
// ever waits for the server's deadlock detector: the calls are bounded
// below deadlock_timeout, so a deadlock would fail the test as
// EUNAVAILABLE rather than be retried unseen. Whatever the interleaving, a
// seat is granted to at most one of them.
func TestPGHoldsNoDeadlock(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var deadlockMS int64
	if err := s.Pool().QueryRow(ctx, `SELECT setting::bigint FROM pg_settings WHERE name = 'deadlock_timeout'`).Scan(&deadlockMS); err != nil {
		t.Fatal(err)
	}
	if deadlockMS < 500 {
		t.Skipf("deadlock_timeout is %d ms, too short to tell a deadlock from a slow call", deadlockMS)
	}
	h := s.Holds()
	h.Timeout = time.Duration(deadlockMS) * time.Millisecond * 3 / 4

	event := boxoffice.ID(rand.Int64N(1<<50) + 1) // in the legacy partition (0010)
	asc := []string{
		boxoffice.SeatID("Floor", "A", 1), boxoffice.SeatID("Floor", "A", 2),
		boxoffice.SeatID("Floor", "A", 3), boxoffice.SeatID("Floor", "A", 4),
	}
	desc := slices.Clone(asc)
	slices.Reverse(desc)
	owner := boxoffice.ID(1)
	newOwner := func() boxoffice.ID { owner++; return owner }

	const rounds = 40
	for round := range rounds {
		// The round starts with the seats held by an owner who releases
		// them while the others ask.
		start, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: asc, Owner: newOwner(), TTL: time.Minute})
		if err != nil {
			t.Fatalf("round %d: Acquire of the free seats = %v", round, err)
		}
		up := boxoffice.HoldRequest{EventID: event, SeatIDs: asc, Owner: newOwner(), TTL: time.Minute}
		down := boxoffice.HoldRequest{EventID: event, SeatIDs: desc, Owner: newOwner(), TTL: time.Minute}
		var batch []boxoffice.HoldRequest
		for _, seat := range desc {
			batch = append(batch, boxoffice.HoldRequest{EventID: event, SeatIDs: []string{seat}, Owner: newOwner(), TTL: time.Minute})
		}

		var (
			wg               sync.WaitGroup
			upHold, downHold boxoffice.Hold
			upErr, downErr   error
			batchHolds       []boxoffice.Hold
			batchErrs        []error
			released         int
			releaseErr       error
			begin            = make(chan struct{})
			unexpected       = func(name string, err error) {
				if c := boxoffice.ErrorCode(err); c != "" && c != boxoffice.ESEATTAKEN {
					t.Errorf("round %d: %s = %v, want a hold or %s", round, name, err, boxoffice.ESEATTAKEN)
				}
			}
		)
		wg.Go(func() { <-begin; upHold, upErr = h.Acquire(ctx, up) })
		wg.Go(func() { <-begin; downHold, downErr = h.Acquire(ctx, down) })
		wg.Go(func() { <-begin; batchHolds, batchErrs = h.AcquireMany(ctx, batch) })
		wg.Go(func() { <-begin; released, releaseErr = h.Release(ctx, event, desc, start.Owner) })
		close(begin)
		wg.Wait()

		if released != len(asc) || releaseErr != nil {
			t.Errorf("round %d: Release = %d, %v; want %d, nil", round, released, releaseErr, len(asc))
		}
		unexpected("Acquire ascending", upErr)
		unexpected("Acquire descending", downErr)
		for i, err := range batchErrs {
			unexpected(fmt.Sprintf("AcquireMany request %d", i), err)
		}

		// Who has each seat now: at most one grant per seat.
		holder := map[string]boxoffice.Hold{}
		grant := func(hold boxoffice.Hold) {
			for _, seat := range hold.SeatIDs {
				if prev, ok := holder[seat]; ok {
					t.Errorf("round %d: %s granted to %v and %v", round, seat, prev.Owner, hold.Owner)
				}
				holder[seat] = hold
			}
		}
		if upErr == nil {
			grant(upHold)
		}
		if downErr == nil {
			grant(downHold)
		}
		for i, err := range batchErrs {
			if err == nil {
				grant(batchHolds[i])
			}
		}
		held, err := h.Held(ctx, event, asc)
		if err != nil {
			t.Fatal(err)
		}
		for i, seat := range asc {
			if _, ok := holder[seat]; held[i] != ok {
				t.Errorf("round %d: Held(%s) = %v, want %v", round, seat, held[i], ok)
			}
		}
		// Free the seats for the next round.
		seen := map[boxoffice.ID]bool{}
		for _, hold := range holder {
			if seen[hold.Owner] {
				continue
			}
			seen[hold.Owner] = true
			if err := h.Verify(ctx, event, hold.SeatIDs, hold.Owner, hold.Fence); err != nil {
				t.Errorf("round %d: Verify of a grant = %v", round, err)
			}
			if _, err := h.Release(ctx, event, hold.SeatIDs, hold.Owner); err != nil {
				t.Fatal(err)
			}
		}
		if t.Failed() {
			t.FailNow() // later rounds would only repeat the failure
		}
	}
}

// TestPGHoldsUnavailable: with the database out of reach every call fails
// closed with EUNAVAILABLE (and an invalid request of a batch is still
// EINVALID alone), within the Timeout.
func TestPGHoldsUnavailable(t *testing.T) {
	ctx := context.Background()
	// Nothing listens on port 1: every connection attempt is refused.
	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	h, l := postgres.NewHolds(pool), postgres.NewLeases(pool)
	h.Timeout, l.Timeout = 3*time.Second, 3*time.Second
	event, seats := boxoffice.ID(1), []string{boxoffice.SeatID("Floor", "A", 1)}
	req := boxoffice.HoldRequest{EventID: event, SeatIDs: seats, Owner: 2, TTL: time.Minute}

	want := func(name string, err error) {
		t.Helper()
		if c := boxoffice.ErrorCode(err); c != boxoffice.EUNAVAILABLE {
			t.Errorf("%s = %v (code %q), want %s", name, err, c, boxoffice.EUNAVAILABLE)
		}
	}
	_, err = h.Acquire(ctx, req)
	want("Acquire", err)
	_, errs := h.AcquireMany(ctx, []boxoffice.HoldRequest{req, {EventID: event, Owner: 3, TTL: time.Minute}})
	want("AcquireMany request 0", errs[0])
	if c := boxoffice.ErrorCode(errs[1]); c != boxoffice.EINVALID {
		t.Errorf("AcquireMany request without seats = %v, want %s", errs[1], boxoffice.EINVALID)
	}
	_, err = h.Release(ctx, event, seats, 2)
	want("Release", err)
	want("Verify", h.Verify(ctx, event, seats, 2, 1))
	_, err = h.Held(ctx, event, seats)
	want("Held", err)
	want("Ping", h.Ping(ctx))
	_, err = l.TryLease(ctx, "k", time.Minute)
	want("TryLease", err)
}
