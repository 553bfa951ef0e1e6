package redis

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/holdtest"
	"github.com/boxoffice/boxoffice/internal/testredis"
)

// The tests run against real servers:
//
//	BOXOFFICE_TEST_REDIS          one server (default redis://127.0.0.1:6379/0)
//	BOXOFFICE_TEST_REDIS_CLUSTER  comma-separated cluster nodes (scripts/redis-cluster.sh start)
//
// A missing server skips its tests, unless CI=true, where it fails them.
// Every test works under a random key prefix and deletes its keys after.

func TestHolds(t *testing.T) {
	client := dialSingle(t)
	holdtest.Run(t, func(t *testing.T) holdtest.Harness { return harness(t, client) })
}

func TestHoldsCluster(t *testing.T) {
	client := dialCluster(t)
	holdtest.Run(t, func(t *testing.T) holdtest.Harness { return harness(t, client) })
}

func harness(t *testing.T, client rueidis.Client) holdtest.Harness {
	prefix := newPrefix(t, client)
	return holdtest.Harness{
		Holds:   NewHolds(client, prefix),
		Leases:  NewLeases(client, prefix),
		Advance: time.Sleep,
	}
}

// eachServer runs test against the single server and against the cluster.
func eachServer(t *testing.T, test func(t *testing.T, client rueidis.Client)) {
	t.Run("Single", func(t *testing.T) { test(t, dialSingle(t)) })
	t.Run("Cluster", func(t *testing.T) { test(t, dialCluster(t)) })
}

// Seats of one hold in several sections, hence several hash slots.
func TestCrossSection(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		t.Run("FenceAboveEverySectionsCounter", func(t *testing.T) { testCrossFence(t, client) })
		t.Run("BatchFencesRaiseTheCounter", func(t *testing.T) { testBatchCounter(t, client) })
		t.Run("ConflictGivesBackEverySection", func(t *testing.T) { testCrossConflict(t, client) })
		t.Run("FailedRetryKeepsEarlierHold", func(t *testing.T) { testCrossFailedRetry(t, client) })
		t.Run("Storm", func(t *testing.T) { testCrossStorm(t, client) })
		t.Run("SpansShards", func(t *testing.T) { testCrossShards(t, client) })
	})
}

// On a cluster, a hold over six sections lands on several primaries, and
// it is whole on each.
func testCrossShards(t *testing.T, client rueidis.Client) {
	if len(client.Nodes()) < 2 {
		t.Skip("one node: nothing to span")
	}
	ctx := context.Background()
	h := NewHolds(client, newPrefix(t, client))
	seatIDs := []string{"A-A-1", "B-A-1", "C-A-1", "D-A-1", "E-A-1", "F-A-1"}
	for range 10 {
		event := newID()
		hold := mustAcquire(t, h, event, seatIDs, newID(), time.Minute)
		if err := h.Verify(ctx, event, seatIDs, hold.Owner, hold.Fence); err != nil {
			t.Fatalf("Verify = %v", err)
		}
		nodes := map[string]bool{}
		for _, s := range seatIDs {
			nodes[nodeOf(t, client, seatKey(h, event, s))] = true
		}
		if len(nodes) > 1 {
			t.Logf("one hold, fence %d, on %d primaries", hold.Fence, len(nodes))
			return
		}
	}
	t.Errorf("ten holds over six sections each landed on a single node: are the hash tags per section?")
}

// nodeOf returns the address of the primary that holds key.
func nodeOf(t *testing.T, client rueidis.Client, key string) string {
	t.Helper()
	for addr, node := range client.Nodes() {
		// A node that does not own the key's slot answers MOVED.
		n, err := node.Do(context.Background(), node.B().Exists().Key(key).Build()).AsInt64()
		if err == nil && n == 1 {
			return addr
		}
	}
	t.Fatalf("no node holds %s", key)
	return ""
}

// A hold over sections whose counters differ gets one fence above all of
// them, and every later hold on any of its seats gets a larger one still:
// the promotion step raises the lagging counters.
func testCrossFence(t *testing.T, client rueidis.Client) {
	ctx := context.Background()
	for _, ahead := range []string{"A", "B", "C"} {
		t.Run("Ahead"+ahead, func(t *testing.T) {
			h := NewHolds(client, newPrefix(t, client))
			event := newID()
			// A section far ahead of the others, as after much traffic or on
			// a node whose clock runs fast.
			far := time.Now().Add(24*time.Hour).UnixMicro() + rand.Int64N(1000)
			setCounter(t, h, event, ahead, far)

			seatIDs := []string{"C-A-1", "A-A-1", "B-A-1"}
			hold := mustAcquire(t, h, event, seatIDs, newID(), time.Minute)
			if hold.Fence <= far {
				t.Fatalf("cross-section fence %d, want above section %s's counter %d", hold.Fence, ahead, far)
			}
			if diff := cmp.Diff(seatIDs, hold.SeatIDs); diff != "" {
				t.Errorf("SeatIDs mismatch (-want +got):\n%s", diff)
			}
			if err := h.Verify(ctx, event, seatIDs, hold.Owner, hold.Fence); err != nil {
				t.Fatalf("Verify = %v", err)
			}
			for _, s := range seatIDs {
				if got, want := seatValue(t, h, event, s), fmt.Sprintf("%d:%d", hold.Owner, hold.Fence); got != want {
					t.Errorf("value of %s = %q, want %q", s, got, want)
				}
			}
			if n, err := h.Release(ctx, event, seatIDs, hold.Owner); n != 3 || err != nil {
				t.Fatalf("Release = %d, %v; want 3, nil", n, err)
			}
			for _, s := range seatIDs {
				next := mustAcquire(t, h, event, []string{s}, newID(), time.Minute)
				if next.Fence <= hold.Fence {
					t.Errorf("later hold on %s got fence %d, want above the cross-section hold's %d", s, next.Fence, hold.Fence)
				}
			}
		})
	}
}

// A batch's grants take fences above the section's counter, whatever the
// clock says, and leave the counter at the last of them: a later hold
// goes above every fence of the batch.
func testBatchCounter(t *testing.T, client rueidis.Client) {
	ctx := context.Background()
	h := NewHolds(client, newPrefix(t, client))
	event := newID()
	far := time.Now().Add(24 * time.Hour).UnixMicro()
	setCounter(t, h, event, "A", far)
	var reqs []boxoffice.HoldRequest
	for i := range 5 {
		reqs = append(reqs, boxoffice.HoldRequest{EventID: event, SeatIDs: []string{fmt.Sprintf("A-A-%d", i+1)}, Owner: newID(), TTL: time.Minute})
	}
	holds, errs := h.AcquireMany(ctx, reqs)
	last := far
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if holds[i].Fence <= last {
			t.Fatalf("request %d: fence %d, want above %d", i, holds[i].Fence, last)
		}
		last = holds[i].Fence
	}
	next := mustAcquire(t, h, event, []string{"A-A-9"}, newID(), time.Minute)
	if next.Fence <= last {
		t.Errorf("a hold after the batch got fence %d, want above the batch's last %d", next.Fence, last)
	}
}

// A cross-section request that meets a taken seat in any section leaves
// nothing held, and names the taken seats of every section.
func testCrossConflict(t *testing.T, client rueidis.Client) {
	tests := []struct {
		name    string
		taken   [][]string
		request []string
		want    []string
	}{
		{"LastSection", [][]string{{"C-A-1"}}, []string{"A-A-1", "B-A-1", "C-A-1", "C-A-2"}, []string{"C-A-1"}},
		{"FirstSection", [][]string{{"A-A-2"}}, []string{"B-A-1", "A-A-1", "A-A-2"}, []string{"A-A-2"}},
		{"SeveralSections", [][]string{{"B-A-1"}, {"C-A-1", "D-A-1"}}, []string{"A-A-1", "B-A-1", "C-A-1", "D-A-1", "E-A-1"}, []string{"B-A-1", "C-A-1", "D-A-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			h := NewHolds(client, newPrefix(t, client))
			event := newID()
			taken := map[string]bool{}
			var holds []boxoffice.Hold
			for _, s := range tt.taken {
				holds = append(holds, mustAcquire(t, h, event, s, newID(), time.Minute))
				for _, id := range s {
					taken[id] = true
				}
			}
			_, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: tt.request, Owner: newID(), TTL: time.Minute})
			if code := boxoffice.ErrorCode(err); code != boxoffice.ESEATTAKEN {
				t.Fatalf("Acquire = %v, want %s", err, boxoffice.ESEATTAKEN)
			}
			if diff := cmp.Diff(tt.want, boxoffice.ErrorSeats(err), cmpopts.SortSlices(strings.Compare)); diff != "" {
				t.Errorf("conflicting seats mismatch (-want +got):\n%s", diff)
			}
			held, err := h.Held(ctx, event, tt.request)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.request {
				if held[i] != taken[s] {
					t.Errorf("after the refused request, %s held = %v, want %v", s, held[i], taken[s])
				}
			}
			for _, hold := range holds {
				if err := h.Verify(ctx, event, hold.SeatIDs, hold.Owner, hold.Fence); err != nil {
					t.Errorf("hold in the way was disturbed: Verify = %v", err)
				}
			}
		})
	}
}

// An owner's cross-section retry that fails leaves the owner's earlier hold
// as it was: same fence, still expiring.
func testCrossFailedRetry(t *testing.T, client rueidis.Client) {
	ctx := context.Background()
	h := NewHolds(client, newPrefix(t, client))
	event, owner := newID(), newID()
	mine := mustAcquire(t, h, event, []string{"A-A-1", "B-A-1"}, owner, time.Minute)
	mustAcquire(t, h, event, []string{"C-A-1"}, newID(), time.Minute)

	_, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: []string{"A-A-1", "B-A-1", "C-A-1"}, Owner: owner, TTL: time.Minute})
	if diff := cmp.Diff([]string{"C-A-1"}, boxoffice.ErrorSeats(err)); boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN || diff != "" {
		t.Fatalf("Acquire = %v, want %s on C-A-1", err, boxoffice.ESEATTAKEN)
	}
	if err := h.Verify(ctx, event, mine.SeatIDs, owner, mine.Fence); err != nil {
		t.Errorf("earlier hold after the failed retry: Verify = %v", err)
	}
	for _, s := range mine.SeatIDs {
		pttl, err := client.Do(ctx, client.B().Pttl().Key(seatKey(h, event, s)).Build()).AsInt64()
		if err != nil || pttl <= 0 || pttl > time.Minute.Milliseconds() {
			t.Errorf("PTTL of %s = %d, %v; want the earlier hold's remaining TTL", s, pttl, err)
		}
	}
}

// Many buyers grab and give back random sets of seats spread over three
// sections: granted holds stay whole, no seat has two holders, refused
// requests leave nothing behind.
func testCrossStorm(t *testing.T, client rueidis.Client) {
	const workers, rounds = 16, 60
	ctx := context.Background()
	h := NewHolds(client, newPrefix(t, client))
	event := newID()
	var pool []string
	for _, sec := range []string{"A", "B", "C"} {
		for n := 1; n <= 3; n++ {
			pool = append(pool, boxoffice.SeatID(sec, "A", n))
		}
	}
	kept := make([][]boxoffice.Hold, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(event), uint64(w)))
			var mine []boxoffice.Hold
			for range rounds {
				var want []string
				for _, i := range rng.Perm(len(pool))[:1+rng.IntN(4)] {
					want = append(want, pool[i])
				}
				hold, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: want, Owner: newID(), TTL: time.Minute})
				switch boxoffice.ErrorCode(err) {
				case "":
					mine = append(mine, hold)
				case boxoffice.ESEATTAKEN:
				default:
					t.Errorf("Acquire(%v) = %v", want, err)
					return
				}
				if len(mine) > 0 && rng.IntN(2) == 0 {
					k := mine[0]
					if n, err := h.Release(ctx, event, k.SeatIDs, k.Owner); err != nil || n != len(k.SeatIDs) {
						t.Errorf("Release(%v) = %d, %v; want %d", k.SeatIDs, n, err, len(k.SeatIDs))
					}
					mine = mine[1:]
				}
			}
			kept[w] = mine
		})
	}
	wg.Wait()

	holder := map[string]boxoffice.ID{}
	for _, mine := range kept {
		for _, k := range mine {
			for _, s := range k.SeatIDs {
				if other, ok := holder[s]; ok {
					t.Errorf("seat %s granted to both %v and %v", s, other, k.Owner)
				}
				holder[s] = k.Owner
			}
			if err := h.Verify(ctx, event, k.SeatIDs, k.Owner, k.Fence); err != nil {
				t.Errorf("kept hold on %v: Verify = %v", k.SeatIDs, err)
			}
		}
	}
	held, err := h.Held(ctx, event, pool)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range pool {
		if _, ok := holder[s]; held[i] != ok {
			t.Errorf("seat %s held = %v, but %v holds it (a leftover of a refused request?)", s, held[i], holder[s])
		}
	}
}

// The scripts survive SCRIPT FLUSH: EVALSHA meets NOSCRIPT and falls back to
// EVAL, on the single-script path (rueidis.Lua.Exec) and on the pipelined
// one (script.execMulti), including while other callers are mid-flight.
//
// SCRIPT FLUSH empties the cache of the whole server, so the single-server
// case runs on a server of its own rather than the shared one.
func TestScriptFlush(t *testing.T) {
	own := func(t *testing.T) rueidis.Client {
		_, client := startDialed(t)
		return client
	}
	t.Run("Single", func(t *testing.T) { testScriptFlush(t, own(t)) })
	t.Run("Cluster", func(t *testing.T) { testScriptFlush(t, dialCluster(t)) })
}

func testScriptFlush(t *testing.T, client rueidis.Client) {
	ctx := context.Background()
	prefix := newPrefix(t, client)
	h := NewHolds(client, prefix)
	leases := NewLeases(client, prefix)
	event := newID()

	steps := []struct {
		name   string
		script *script
		run    func() error
	}{
		{"AcquireOneSection", acquireScript, func() error {
			_, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: []string{"A-A-1", "A-A-2"}, Owner: 1, TTL: time.Minute})
			return err
		}},
		{"AcquireAndPromoteAcrossSections", promoteScript, func() error {
			_, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: []string{"B-A-1", "C-A-1", "D-A-1"}, Owner: 2, TTL: time.Minute})
			return err
		}},
		{"UndoAcrossSections", undoScript, func() error {
			// Z is the last section in sorted order: E and F are taken, then given back.
			if _, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: []string{"Z-A-1"}, Owner: 4, TTL: time.Minute}); err != nil {
				return err
			}
			_, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: []string{"Z-A-1", "E-A-1", "F-A-1"}, Owner: 3, TTL: time.Minute})
			if boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
				return fmt.Errorf("got %v, want %s", err, boxoffice.ESEATTAKEN)
			}
			held, err := h.Held(ctx, event, []string{"E-A-1", "F-A-1"})
			if err != nil || held[0] || held[1] {
				return fmt.Errorf("Held after the undo = %v, %v; want none held", held, err)
			}
			return nil
		}},
		{"ReleaseAcrossSections", releaseScript, func() error {
			n, err := h.Release(ctx, event, []string{"B-A-1", "C-A-1", "D-A-1"}, 2)
			if err == nil && n != 3 {
				err = fmt.Errorf("freed %d, want 3", n)
			}
			return err
		}},
		{"LeaseRelease", leaseReleaseScript, func() error {
			release, err := leases.TryLease(ctx, "flush", time.Minute)
			if err != nil {
				return err
			}
			release()
			release, err = leases.TryLease(ctx, "flush", time.Minute)
			if err != nil {
				return fmt.Errorf("lease after release: %w", err)
			}
			release()
			return nil
		}},
	}
	for _, step := range steps {
		flushScripts(t, client)
		if err := step.run(); err != nil {
			t.Fatalf("%s after SCRIPT FLUSH: %v", step.name, err)
		}
		if !scriptLoaded(t, client, step.script) {
			t.Errorf("%s: script not loaded again after SCRIPT FLUSH (was EVAL not used?)", step.name)
		}
	}

	t.Run("MidUse", func(t *testing.T) {
		var stop atomic.Bool
		var wg sync.WaitGroup
		var ops atomic.Int64
		for w := range 8 {
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					owner := boxoffice.ID(1000 + w)
					seatIDs := []string{fmt.Sprintf("M%d-A-%d", w, i), fmt.Sprintf("N%d-A-%d", w, i)}
					_, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: seatIDs, Owner: owner, TTL: time.Minute})
					if err != nil {
						t.Errorf("Acquire while flushing: %v", err)
						return
					}
					if n, err := h.Release(ctx, event, seatIDs, owner); err != nil || n != 2 {
						t.Errorf("Release while flushing = %d, %v", n, err)
						return
					}
					ops.Add(1)
				}
			})
		}
		for range 20 {
			flushScripts(t, client)
			time.Sleep(5 * time.Millisecond)
		}
		stop.Store(true)
		wg.Wait()
		t.Logf("%d holds taken and released across 20 SCRIPT FLUSHes", ops.Load())
	})
}

// Held reads a 70,000-seat map in one pipelined call, never a round trip
// per seat or per section; Verify of a cross-section hold likewise.
func TestHeldOneRoundTrip(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		ctx := context.Background()
		counted := &countingClient{Client: client}
		h := NewHolds(counted, newPrefix(t, client))
		event := newID()
		var ids []string
		for s := range 35 {
			ids = append(ids, holdtestSeats(fmt.Sprintf("S%d", s), 2000)...)
		}
		rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		hold := mustAcquire(t, h, event, ids[:4], newID(), time.Minute)

		counted.reset()
		held, err := h.Held(ctx, event, ids)
		if err != nil {
			t.Fatal(err)
		}
		if do, multi := counted.counts(); do != 0 || multi != 1 {
			t.Errorf("Held(%d seats) made %d Do and %d DoMulti calls, want 0 and 1", len(ids), do, multi)
		}
		for i := range ids {
			if want := i < 4; held[i] != want {
				t.Fatalf("Held[%d] (%s) = %v, want %v", i, ids[i], held[i], want)
			}
		}

		counted.reset()
		if err := h.Verify(ctx, event, hold.SeatIDs, hold.Owner, hold.Fence); err != nil {
			t.Fatal(err)
		}
		if do, multi := counted.counts(); do != 0 || multi != 1 {
			t.Errorf("Verify made %d Do and %d DoMulti calls, want 0 and 1", do, multi)
		}
	})
}

// With Redis gone the ports fail closed with EUNAVAILABLE, each call bounded
// by Timeout, and the same Holds works again once Redis is back on its port.
func TestRedisDown(t *testing.T) {
	srv, client := startDialed(t)
	ctx := context.Background()
	h := NewHolds(client, "down:")
	h.Timeout = 300 * time.Millisecond
	leases := NewLeases(client, "down:")
	leases.Timeout = 300 * time.Millisecond
	snaps := NewSnapshots(client, "down:")
	snaps.Timeout = 300 * time.Millisecond
	notifier := NewNotifier(client, "down:")
	event := newID()

	calls := []struct {
		name string
		call func() error
	}{
		{"Acquire", func() error {
			_, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: []string{"A-A-1"}, Owner: newID(), TTL: time.Minute})
			return err
		}},
		{"AcquireAcrossSections", func() error {
			_, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: []string{"A-A-2", "B-A-2"}, Owner: newID(), TTL: time.Minute})
			return err
		}},
		{"Verify", func() error { return h.Verify(ctx, event, []string{"A-A-1"}, 1, 1) }},
		{"Held", func() error { _, err := h.Held(ctx, event, []string{"A-A-1", "B-A-1"}); return err }},
		{"Release", func() error { _, err := h.Release(ctx, event, []string{"A-A-1"}, 1); return err }},
		{"Ping", func() error { return h.Ping(ctx) }},
		{"TryLease", func() error { _, err := leases.TryLease(ctx, newID().String(), time.Minute); return err }},
		{"PeekSnapshot", func() error { _, err := snaps.PeekSnapshot(ctx, event, 28); return err }},
		{"LoadSnapshot", func() error { _, err := snaps.LoadSnapshot(ctx, event); return err }},
		{"StoreSnapshot", func() error { return snaps.StoreSnapshot(ctx, event, []byte("x"), time.Minute) }},
		{"Notify", func() error { return notifier.Notify(ctx, boxoffice.QueueNotice{RequestID: newID()}) }},
	}
	wantUnavailable := func(t *testing.T) {
		t.Helper()
		for _, c := range calls {
			start := time.Now()
			err := c.call()
			t.Logf("%s: %v after %v", c.name, err, time.Since(start).Round(time.Millisecond))
			if code := boxoffice.ErrorCode(err); code != boxoffice.EUNAVAILABLE {
				t.Errorf("%s = %v, want %s", c.name, err, boxoffice.EUNAVAILABLE)
			}
		}
	}
	wantRecovered := func(t *testing.T) {
		t.Helper()
		waitFor(t, func() bool { return h.Ping(ctx) == nil })
		hold := mustAcquire(t, h, event, []string{"R-A-" + newID().String()}, newID(), time.Minute)
		if err := h.Verify(ctx, event, hold.SeatIDs, hold.Owner, hold.Fence); err != nil {
			t.Errorf("Verify after recovery = %v", err)
		}
		if _, err := h.Held(ctx, event, hold.SeatIDs); err != nil {
			t.Errorf("Held after recovery = %v", err)
		}
	}

	mustAcquire(t, h, event, []string{"A-A-1"}, newID(), time.Minute)

	t.Run("Killed", func(t *testing.T) {
		srv.Kill(t)
		wantUnavailable(t)
		srv.Start(t)
		wantRecovered(t)
	})
	t.Run("Hung", func(t *testing.T) {
		srv.Signal(t, syscall.SIGSTOP)
		wantUnavailable(t)
		srv.Signal(t, syscall.SIGCONT)
		wantRecovered(t)
	})
}

func TestDialAddresses(t *testing.T) {
	tests := []struct {
		addr    string
		want    []string
		db      int
		wantErr bool
	}{
		{addr: "redis://127.0.0.1:6379/0", want: []string{"127.0.0.1:6379"}},
		{addr: "redis://127.0.0.1:6380/3", want: []string{"127.0.0.1:6380"}, db: 3},
		{addr: "127.0.0.1:6379", want: []string{"127.0.0.1:6379"}},
		{addr: "127.0.0.1:7000,127.0.0.1:7001, redis://127.0.0.1:7002", want: []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}},
		{addr: "redis://127.0.0.1:7000/2,127.0.0.1:7001", wantErr: true},
		{addr: "127.0.0.1:7000,redis://127.0.0.1:7001/2", wantErr: true},
		{addr: "", wantErr: true},
		{addr: " , ", wantErr: true},
		{addr: "http://127.0.0.1:6379", wantErr: true},
	}
	for _, tt := range tests {
		opt, err := parseAddr(tt.addr)
		if tt.wantErr {
			if err == nil {
				t.Errorf("parseAddr(%q) = %v, want an error", tt.addr, opt.InitAddress)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseAddr(%q) = %v", tt.addr, err)
			continue
		}
		if diff := cmp.Diff(tt.want, opt.InitAddress); diff != "" || opt.SelectDB != tt.db {
			t.Errorf("parseAddr(%q) = %v db %d, want %v db %d", tt.addr, opt.InitAddress, opt.SelectDB, tt.want, tt.db)
		}
		if opt.Dialer.Timeout != DefaultDialTimeout || opt.ConnWriteTimeout != DefaultWriteTimeout {
			t.Errorf("parseAddr(%q) timeouts = %v, %v; want the defaults", tt.addr, opt.Dialer.Timeout, opt.ConnWriteTimeout)
		}
	}
}

func TestPrefixWithBracesPanics(t *testing.T) {
	for _, p := range []string{"a{", "}", "x{y}:"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewHolds(prefix %q) did not panic", p)
				}
			}()
			NewHolds(nil, p)
		}()
	}
}

// ---- helpers ----

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

var (
	clientsMu sync.Mutex
	clients   = map[string]rueidis.Client{}
)

// dial returns a client for addr shared by the tests of this run.
func dial(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	clientsMu.Lock()
	defer clientsMu.Unlock()
	if c, ok := clients[addr]; ok {
		return c
	}
	c, err := Dial(addr)
	if err != nil {
		skipOrFail(t, "Redis at %s: %v", addr, err)
	}
	clients[addr] = c
	return c
}

func dialSingle(t *testing.T) rueidis.Client {
	t.Helper()
	addr := os.Getenv("BOXOFFICE_TEST_REDIS")
	if addr == "" {
		addr = "redis://127.0.0.1:6379/0"
	}
	return dial(t, addr)
}

func dialCluster(t *testing.T) rueidis.Client {
	t.Helper()
	addr := os.Getenv("BOXOFFICE_TEST_REDIS_CLUSTER")
	if addr == "" {
		skipOrFail(t, "BOXOFFICE_TEST_REDIS_CLUSTER is not set (scripts/redis-cluster.sh start DIR prints it)")
	}
	c := dial(t, addr)
	if len(c.Nodes()) < 2 {
		t.Fatalf("BOXOFFICE_TEST_REDIS_CLUSTER=%s: %d node(s), want a cluster", addr, len(c.Nodes()))
	}
	return c
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range clients {
		c.Close()
	}
	os.Exit(code)
}

// newPrefix returns a fresh key prefix whose keys are deleted when t ends.
func newPrefix(tb testing.TB, client rueidis.Client) string {
	var b [6]byte
	_, _ = crand.Read(b[:])
	prefix := "boxoffice-test:" + hex.EncodeToString(b[:]) + ":"
	tb.Cleanup(func() { deleteKeys(tb, client, prefix) })
	return prefix
}

// deleteKeys deletes every key under prefix on every node.
func deleteKeys(tb testing.TB, client rueidis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys := map[string]bool{}
	for _, node := range client.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+"*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				tb.Logf("cleanup of %s*: %v", prefix, err)
				return
			}
			for _, k := range e.Elements {
				keys[k] = true
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	var cmds rueidis.Commands
	for k := range keys {
		cmds = append(cmds, client.B().Unlink().Key(k).Build())
		if len(cmds) == 1000 {
			client.DoMulti(ctx, cmds...)
			cmds = nil
		}
	}
	if len(cmds) > 0 {
		client.DoMulti(ctx, cmds...)
	}
}

func newID() boxoffice.ID { return boxoffice.ID(rand.Int64N(1<<62) + 1) }

func holdtestSeats(section string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = boxoffice.SeatID(section, boxoffice.RowLabel(i/50+1), i%50+1)
	}
	return ids
}

func mustAcquire(t testing.TB, h *Holds, event boxoffice.ID, seatIDs []string, owner boxoffice.ID, ttl time.Duration) boxoffice.Hold {
	t.Helper()
	hold, err := h.Acquire(context.Background(), boxoffice.HoldRequest{EventID: event, SeatIDs: seatIDs, Owner: owner, TTL: ttl})
	if err != nil {
		t.Fatalf("Acquire(%v) = %v", seatIDs, err)
	}
	return hold
}

func seatKey(h *Holds, event boxoffice.ID, seatID string) string {
	return h.groups(event, []string{seatID}, true)[0].keys[0]
}

func seatValue(t *testing.T, h *Holds, event boxoffice.ID, seatID string) string {
	t.Helper()
	v, err := h.client.Do(context.Background(), h.client.B().Get().Key(seatKey(h, event, seatID)).Build()).ToString()
	if err != nil {
		t.Fatalf("GET %s: %v", seatID, err)
	}
	return v
}

func setCounter(t *testing.T, h *Holds, event boxoffice.ID, section string, v int64) {
	t.Helper()
	key := h.groups(event, []string{section + "-A-1"}, true)[0].counter
	if err := h.client.Do(context.Background(), h.client.B().Set().Key(key).Value(strconv.FormatInt(v, 10)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

// flushScripts empties the script cache of every node.
func flushScripts(t *testing.T, client rueidis.Client) {
	t.Helper()
	for addr, node := range client.Nodes() {
		if err := node.Do(context.Background(), node.B().ScriptFlush().Build()).Error(); err != nil {
			t.Fatalf("SCRIPT FLUSH on %s: %v", addr, err)
		}
	}
}

// scriptLoaded reports whether some node has s in its script cache.
func scriptLoaded(t *testing.T, client rueidis.Client, s *script) bool {
	t.Helper()
	for addr, node := range client.Nodes() {
		got, err := node.Do(context.Background(), node.B().ScriptExists().Sha1(s.sha).Build()).AsIntSlice()
		if err != nil {
			t.Fatalf("SCRIPT EXISTS on %s: %v", addr, err)
		}
		if len(got) == 1 && got[0] == 1 {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds, failing t if it does not within a
// generous bound (a liveness bound, not a performance figure).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countingClient counts the calls that reach Redis.
type countingClient struct {
	rueidis.Client
	do, multi atomic.Int64
}

func (c *countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.do.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c *countingClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.multi.Add(1)
	return c.Client.DoMulti(ctx, cmds...)
}

func (c *countingClient) reset() { c.do.Store(0); c.multi.Store(0) }

func (c *countingClient) counts() (do, multi int64) { return c.do.Load(), c.multi.Load() }

// startServer starts a redis-server of the test's own (testredis).
func startServer(t *testing.T) *testredis.Server { return testredis.Start(t) }

// startDialed starts a server of the test's own and a client of it, closed
// when the test ends.
func startDialed(t *testing.T) (*testredis.Server, rueidis.Client) {
	t.Helper()
	srv := startServer(t)
	client, err := Dial(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return srv, client
}
