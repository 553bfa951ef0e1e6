package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/redis/rueidis"
)

// The marks of leased grants (see Marks in the package comment): a refusal
// claims boxoffice.ErrNeverGranted only when no grant under its key can
// have happened, and never for a key that was granted.

// leasedReq is a remembered AcquireLeased request of a new owner.
func leasedReq(event boxoffice.ID, seats []string, remember time.Duration) boxoffice.HoldRequest {
	return boxoffice.HoldRequest{EventID: event, SeatIDs: seats, Owner: newID(), TTL: time.Minute, Remember: remember}
}

// refuse asks for seats under key, which must be refused; it reports
// whether the refusal claimed ErrNeverGranted.
func refuse(t *testing.T, h *Holds, event boxoffice.ID, seats []string, key string, remember time.Duration) bool {
	t.Helper()
	_, _, err := h.AcquireLeased(context.Background(), leasedReq(event, seats, remember), key, time.Minute)
	if boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
		t.Fatalf("AcquireLeased(%v, %q) = %v, want %s", seats, key, err, boxoffice.ESEATTAKEN)
	}
	return errors.Is(err, boxoffice.ErrNeverGranted)
}

// grantThenLose holds seats under key, then lets another owner take them
// as if the first hold had run out, the lease ended: the retry's case.
func grantThenLose(t *testing.T, h *Holds, event boxoffice.ID, seats []string, key string, remember time.Duration) {
	t.Helper()
	ctx := context.Background()
	req := leasedReq(event, seats, remember)
	_, endLease, err := h.AcquireLeased(ctx, req, key, time.Minute)
	if err != nil {
		t.Fatalf("AcquireLeased(%v, %q) = %v", seats, key, err)
	}
	endLease()
	if _, err := h.Release(ctx, event, seats, req.Owner); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, h, event, seats, newID(), time.Minute)
}

func TestMarks(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		const day = 25 * time.Hour
		ctx := context.Background()
		h := NewHolds(client, newPrefix(t, client))

		t.Run("OpenedEvent", func(t *testing.T) {
			ev := newID()
			if err := h.OpenMarks(ctx, ev, []string{"A", "B"}, time.Hour); err != nil {
				t.Fatal(err)
			}
			mustAcquire(t, h, ev, []string{"A-A-1"}, newID(), time.Minute)
			if !refuse(t, h, ev, []string{"A-A-1"}, "fresh", day) {
				t.Error("a key never granted, refused in an opened section: not vouched for")
			}
			if refuse(t, h, ev, []string{"A-A-1"}, "fresh-unremembered", 0) {
				t.Error("a request without Remember claimed ErrNeverGranted")
			}
			grantThenLose(t, h, ev, []string{"A-A-2"}, "granted", day)
			if refuse(t, h, ev, []string{"A-A-2"}, "granted", day) {
				t.Error("the retry of a granted key claimed ErrNeverGranted")
			}
			// A grant over two sections marks its key in the first one's
			// slot; its retry, refused in either, never claims.
			grantThenLose(t, h, ev, []string{"A-A-3", "B-A-3"}, "across", day)
			if refuse(t, h, ev, []string{"A-A-3", "B-A-3"}, "across", day) {
				t.Error("the retry of a key granted across sections claimed ErrNeverGranted")
			}
			if refuse(t, h, ev, []string{"A-A-3"}, "across", day) {
				t.Error("a key granted across sections, refused in its first section alone, claimed ErrNeverGranted")
			}
		})

		t.Run("BatchOfRetriesAndNewKeys", func(t *testing.T) {
			// Concurrent calls share scripts: each answer is about its own key.
			ev := newID()
			if err := h.OpenMarks(ctx, ev, []string{"A"}, time.Hour); err != nil {
				t.Fatal(err)
			}
			const n = 40
			for i := range n / 2 {
				grantThenLose(t, h, ev, []string{fmt.Sprintf("A-B-%d", i+1)}, fmt.Sprintf("k%d", i), day)
			}
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					seat := fmt.Sprintf("A-B-%d", i%(n/2)+1)
					_, _, err := h.AcquireLeased(ctx, leasedReq(ev, []string{seat}, day), fmt.Sprintf("k%d", i), time.Minute)
					if boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
						t.Errorf("key k%d: %v, want %s", i, err, boxoffice.ESEATTAKEN)
						return
					}
					if claimed, granted := errors.Is(err, boxoffice.ErrNeverGranted), i < n/2; claimed == granted {
						t.Errorf("key k%d (granted before: %v) claimed ErrNeverGranted: %v", i, granted, claimed)
					}
				})
			}
			wg.Wait()
		})

		t.Run("LedgerBegunByAGrant", func(t *testing.T) {
			// Without OpenMarks the ledger begins with the first mark and
			// vouches once a whole Remember has passed since.
			const remember = 1500 * time.Millisecond
			ev := newID()
			grantThenLose(t, h, ev, []string{"A-A-1"}, "first", remember)
			if refuse(t, h, ev, []string{"A-A-1"}, "fresh", remember) {
				t.Error("a ledger begun just now vouched for a refusal")
			}
			time.Sleep(remember + 200*time.Millisecond)
			if !refuse(t, h, ev, []string{"A-A-1"}, "fresh", remember) {
				t.Error("a ledger begun more than Remember ago did not vouch")
			}
			// The first key's mark and record are as old as Remember: it
			// has nothing left to replay either.
			if !refuse(t, h, ev, []string{"A-A-1"}, "first", remember) {
				t.Error("a grant older than Remember still counts")
			}
		})

		t.Run("MarksKeptLessThanAsked", func(t *testing.T) {
			// A deployment raises its Remember (its idempotency records'
			// TTL): the marks written before run out while their records
			// remain, so a refusal asking for longer is not vouched for
			// until a whole new Remember of longer marks has passed; a
			// shorter one lowers what the ledger vouches for.
			const short, long = time.Second, 2 * time.Second
			ev := newID()
			if err := h.OpenMarks(ctx, ev, []string{"A"}, time.Hour); err != nil {
				t.Fatal(err)
			}
			grantThenLose(t, h, ev, []string{"A-A-1"}, "old", short)
			time.Sleep(short + 200*time.Millisecond) // its mark is gone
			if refuse(t, h, ev, []string{"A-A-1"}, "old", long) {
				t.Error("a key granted under shorter marks, retried with a longer Remember, claimed ErrNeverGranted")
			}
			if !refuse(t, h, ev, []string{"A-A-1"}, "fresh", short) {
				t.Error("the opened ledger stopped vouching for the marks' own length")
			}
			grantThenLose(t, h, ev, []string{"A-A-2"}, "new", long)
			if refuse(t, h, ev, []string{"A-A-2"}, "fresh", long) {
				t.Error("the ledger begun anew by a longer mark vouched at once")
			}
			time.Sleep(long + 200*time.Millisecond)
			if !refuse(t, h, ev, []string{"A-A-2"}, "fresh", long) {
				t.Error("a ledger of longer marks, begun more than Remember ago, did not vouch")
			}
			grantThenLose(t, h, ev, []string{"A-A-3"}, "shorter", short)
			if refuse(t, h, ev, []string{"A-A-3"}, "fresh", long) {
				t.Error("after a shorter mark the ledger still vouched for the longer Remember")
			}
			if !refuse(t, h, ev, []string{"A-A-3"}, "fresh", short) {
				t.Error("a shorter mark stopped the ledger vouching for its own length")
			}
		})

		t.Run("LedgerOfAnotherServer", func(t *testing.T) {
			// A failover or resharding puts the slot on a server with
			// another run id: the ledger no longer vouches, and the next
			// mark begins it anew.
			ev := newID()
			if err := h.OpenMarks(ctx, ev, []string{"A"}, time.Hour); err != nil {
				t.Fatal(err)
			}
			ledger := h.section(ev.String(), "A").ledger
			foreign := "0:" + "0123456789abcdef0123456789abcdef01234567" + ":"
			if err := client.Do(ctx, client.B().Set().Key(ledger).Value(foreign).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			mustAcquire(t, h, ev, []string{"A-A-1"}, newID(), time.Minute)
			if refuse(t, h, ev, []string{"A-A-1"}, "fresh", day) {
				t.Error("another server's ledger vouched for a refusal")
			}
			grantThenLose(t, h, ev, []string{"A-A-2"}, "granted", day)
			v, err := client.Do(ctx, client.B().Get().Key(ledger).Build()).ToString()
			if err != nil || v == foreign {
				t.Fatalf("ledger after a mark: %q, %v; want it begun anew", v, err)
			}
			if refuse(t, h, ev, []string{"A-A-1"}, "fresh", day) {
				t.Error("a ledger begun anew vouched at once")
			}
		})
	})
}

// Redis restarting empty loses the marks; a retry of a granted key must
// still read its record, whoever holds its seats now.
func TestMarksRedisRestart(t *testing.T) {
	srv, client := startDialed(t)
	ctx := context.Background()
	h := NewHolds(client, "restart:")
	ev := newID()
	const day = 25 * time.Hour
	if err := h.OpenMarks(ctx, ev, []string{"A"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.AcquireLeased(ctx, leasedReq(ev, []string{"A-A-1"}, day), "granted", time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Kill(t)
	srv.Start(t)
	// Once every connection of the client is back (a few calls in a row
	// answer, each on seats of its own), someone else holds the seat, by a
	// plain hold and then by a marked one.
	seat, ok := 0, 0
	waitFor(t, func() bool {
		seat++
		_, _, err := h.AcquireLeased(ctx, leasedReq(ev, []string{fmt.Sprintf("B-A-%d", seat)}, 0), newID().String(), time.Minute)
		_, err2 := h.Acquire(ctx, boxoffice.HoldRequest{EventID: ev, SeatIDs: []string{fmt.Sprintf("C-A-%d", seat)}, Owner: newID(), TTL: time.Minute})
		if err != nil || err2 != nil {
			ok = 0
		} else {
			ok++
		}
		return ok == 5
	})
	mustAcquire(t, h, ev, []string{"A-A-1"}, newID(), time.Minute)
	if refuse(t, h, ev, []string{"A-A-1"}, "granted", day) {
		t.Error("after a restart, the retry of a granted key claimed ErrNeverGranted")
	}
	grantThenLose(t, h, ev, []string{"A-A-2"}, "other", day)
	if refuse(t, h, ev, []string{"A-A-1"}, "granted", day) {
		t.Error("after a restart and a new mark, the retry of a granted key claimed ErrNeverGranted")
	}
}

// A failover to a replica that missed the last writes: the replica has the
// ledger (the primary's run id in it) but not the mark of a grant made on
// the primary just before. Its refusal of that key's retry must read the
// record; so must any refusal there until a ledger of its own has vouched.
func TestMarksFailoverToAStaleReplica(t *testing.T) {
	primary, pc := startDialed(t)
	_, rc := startDialed(t)
	ctx := context.Background()
	do := func(c rueidis.Client, args ...string) rueidis.RedisResult {
		t.Helper()
		r := c.Do(ctx, c.B().Arbitrary(args[0]).Args(args[1:]...).Build())
		if err := r.Error(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return r
	}
	// A full sync without a file: the servers run in the package's
	// directory.
	do(pc, "CONFIG", "SET", "repl-diskless-sync", "yes")
	do(pc, "CONFIG", "SET", "repl-diskless-sync-delay", "0")
	do(rc, "CONFIG", "SET", "repl-diskless-load", "swapdb")
	do(rc, "REPLICAOF", "127.0.0.1", fmt.Sprint(primary.Port))
	waitFor(t, func() bool {
		info, _ := rc.Do(ctx, rc.B().Info().Section("replication").Build()).ToString()
		return strings.Contains(info, "master_link_status:up")
	})
	hp, hr := NewHolds(pc, "failover:"), NewHolds(rc, "failover:")
	ev := newID()
	const day = 25 * time.Hour
	if err := hp.OpenMarks(ctx, ev, []string{"A"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if n, _ := do(pc, "WAIT", "1", "5000").AsInt64(); n != 1 {
		t.Fatalf("WAIT: %d replicas have the ledger", n)
	}
	// The replica is promoted (it stops following) before the grant.
	do(rc, "REPLICAOF", "NO", "ONE")
	if _, _, err := hp.AcquireLeased(ctx, leasedReq(ev, []string{"A-A-1"}, day), "granted", time.Minute); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, hr, ev, []string{"A-A-1"}, newID(), time.Minute)
	if refuse(t, hr, ev, []string{"A-A-1"}, "granted", day) {
		t.Error("on the promoted replica, the retry of a key granted on the old primary claimed ErrNeverGranted")
	}
	if refuse(t, hr, ev, []string{"A-A-1"}, "fresh", day) {
		t.Error("the old primary's ledger vouched on the promoted replica")
	}
}
