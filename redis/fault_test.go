package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
)

// TestRedisFaultsMidCall runs 32 goroutines of holds, leases, seat-map
// snapshots and notices against a Redis of the test's own while it fails
// under them the ways a production Redis does: a failover that leaves this
// node a replica (writes answer READONLY), a replica cut off from its master
// (MASTERDOWN), a kill -9 and a restart on the same port. Every error must
// be EUNAVAILABLE (503 with Retry-After upstream), and nothing half-written
// may be left: a hold the store granted is whole, in every section, under
// one fence; an acquire the server refused left no seat held.
func TestRedisFaultsMidCall(t *testing.T) {
	if testing.Short() {
		t.Skip("a fault test of a few seconds")
	}
	srv := startServer(t)
	client, err := Dial(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	admin, err := Dial(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const timeout = 500 * time.Millisecond
	h := NewHolds(client, "fault:")
	h.Timeout = timeout
	leases := NewLeases(client, "fault:")
	leases.Timeout = timeout
	snaps := NewSnapshots(client, "fault:")
	snaps.Timeout = timeout
	notifier := NewNotifier(client, "fault:")
	event := newID()
	ctx := context.Background()

	var (
		// epoch counts the server's restarts twice: odd while it is down
		// or restarting, so a hold granted at an even epoch that is still
		// the current one must still be there.
		epoch   atomic.Int64
		mu      sync.Mutex
		errs    = map[string]int{}
		samples = map[string]bool{}
		granted []grantedHold
		refused [][]string // seats of acquires the server itself refused
	)
	check := func(op string, err error, allowed ...string) {
		if err == nil {
			return
		}
		code := boxoffice.ErrorCode(err)
		mu.Lock()
		defer mu.Unlock()
		errs[code]++
		if len(samples) < 10 && !samples[err.Error()] {
			samples[err.Error()] = true
			t.Logf("  e.g. %s: %v", op, err)
		}
		if code == boxoffice.EUNAVAILABLE {
			return
		}
		for _, a := range allowed {
			if code == a {
				return
			}
		}
		t.Errorf("%s: %v (code %q), want %s", op, err, code, boxoffice.EUNAVAILABLE)
	}

	storm := func(round int, stop <-chan struct{}) *sync.WaitGroup {
		row := boxoffice.RowLabel(round) // fresh seats and keys each round
		var wg sync.WaitGroup
		for w := range 32 {
			wg.Go(func() {
				var mine []grantedHold
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					seats := []string{fmt.Sprintf("W%d-%s-%d", w, row, i)}
					if i%2 == 1 {
						seats = append(seats, fmt.Sprintf("X%d-%s-%d", w, row, i)) // across two sections, two slots
					}
					e0 := epoch.Load()
					hold, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: seats, Owner: newID(), TTL: time.Minute})
					check("Acquire", err)
					var re *rueidis.RedisError
					switch {
					case err == nil:
						g := grantedHold{hold: hold, epoch: e0}
						mine = append(mine, g)
						mu.Lock()
						granted = append(granted, g)
						mu.Unlock()
					case len(seats) == 1 && errors.As(err, &re):
						// Refused by the server (not a lost answer, whose
						// script may have run): nothing may be held.
						mu.Lock()
						refused = append(refused, seats)
						mu.Unlock()
					}
					if len(mine) > 0 {
						g := mine[len(mine)-1]
						err := h.Verify(ctx, event, g.hold.SeatIDs, g.hold.Owner, g.hold.Fence)
						if now := epoch.Load(); g.epoch == now && now%2 == 0 {
							check("Verify", err)
						} else {
							check("Verify", err, boxoffice.EHOLDLOST) // the restart lost it
						}
					}
					_, err = h.Held(ctx, event, seats)
					check("Held", err)
					if i%5 == 4 && len(mine) > 0 {
						_, err := h.Release(ctx, event, mine[0].hold.SeatIDs, mine[0].hold.Owner)
						check("Release", err)
					}
					release, err := leases.TryLease(ctx, fmt.Sprintf("fault-%s-%d-%d", row, w, i), time.Minute)
					check("TryLease", err)
					if err == nil {
						release()
					}
					_, err = snaps.PeekSnapshot(ctx, event, 28)
					check("PeekSnapshot", err)
					if i%4 == 0 {
						check("StoreSnapshot", snaps.StoreSnapshot(ctx, event, []byte("snapshot"), time.Minute))
						_, err = snaps.LoadSnapshot(ctx, event)
						check("LoadSnapshot", err)
					}
					check("Notify", notifier.Notify(ctx, boxoffice.QueueNotice{RequestID: newID()}))
					time.Sleep(2 * time.Millisecond)
				}
			})
		}
		return &wg
	}
	adminDo := func(cmd rueidis.Completed) {
		t.Helper()
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := admin.Do(actx, cmd).Error(); err != nil {
			t.Fatalf("admin: %v", err)
		}
	}

	// 0. A client closed at shutdown while calls still come
	// (rueidis.ErrClosing).
	closing, err := Dial(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	closing.Close()
	for name, err := range map[string]error{
		"Acquire": func() error {
			_, err := NewHolds(closing, "fault:").Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: []string{"A-A-1"}, Owner: newID(), TTL: time.Minute})
			return err
		}(),
		"Verify": NewHolds(closing, "fault:").Verify(ctx, event, []string{"A-A-1"}, 1, 1),
		"Held":   func() error { _, err := NewHolds(closing, "fault:").Held(ctx, event, []string{"A-A-1"}); return err }(),
		"Release": func() error {
			_, err := NewHolds(closing, "fault:").Release(ctx, event, []string{"A-A-1"}, 1)
			return err
		}(),
		"TryLease": func() error { _, err := NewLeases(closing, "fault:").TryLease(ctx, "closed", time.Minute); return err }(),
		"LoadSnapshot": func() error {
			_, err := NewSnapshots(closing, "fault:").LoadSnapshot(ctx, event)
			return err
		}(),
		"StoreSnapshot": NewSnapshots(closing, "fault:").StoreSnapshot(ctx, event, []byte("x"), time.Minute),
		"Notify":        NewNotifier(closing, "fault:").Notify(ctx, boxoffice.QueueNotice{RequestID: newID()}),
	} {
		if !errors.Is(err, rueidis.ErrClosing) {
			t.Errorf("%s on a closed client = %v, want rueidis.ErrClosing", name, err)
		}
		check(name+" on a closed client", err)
	}
	clear(errs)
	clear(samples)

	// 1. A failover that makes this node a replica of a master that is not
	// there: writes answer READONLY; then reads answer MASTERDOWN too; then
	// it is a master again.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	stop := make(chan struct{})
	wg := storm(1, stop)
	time.Sleep(300 * time.Millisecond)
	adminDo(admin.B().Replicaof().Host("127.0.0.1").Port(int64(deadPort)).Build())
	time.Sleep(500 * time.Millisecond)
	adminDo(admin.B().ConfigSet().ParameterValue().ParameterValue("replica-serve-stale-data", "no").Build())
	time.Sleep(500 * time.Millisecond)
	adminDo(admin.B().Arbitrary("REPLICAOF", "NO", "ONE").Build())
	adminDo(admin.B().ConfigSet().ParameterValue().ParameterValue("replica-serve-stale-data", "yes").Build())
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("after the failover: errors by code %v, %d holds granted, %d acquires refused", errs, len(granted), len(refused))
	if errs[boxoffice.EUNAVAILABLE] == 0 || len(refused) == 0 {
		t.Fatalf("the failover never failed a call (errors %v, %d refused): the test proves nothing", errs, len(refused))
	}

	// Nothing half-written: every granted hold is whole under its fence
	// (unless released since), every refused acquire holds nothing.
	for _, g := range granted {
		held, err := h.Held(ctx, event, g.hold.SeatIDs)
		if err != nil {
			t.Fatal(err)
		}
		if !held[0] && !held[len(held)-1] {
			continue // released by the storm
		}
		if err := h.Verify(ctx, event, g.hold.SeatIDs, g.hold.Owner, g.hold.Fence); err != nil {
			t.Errorf("hold %v of %s (fence %d) is not whole: %v", g.hold.SeatIDs, g.hold.Owner, g.hold.Fence, err)
		}
	}
	for _, seats := range refused {
		held, err := h.Held(ctx, event, seats)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range held {
			if x {
				t.Errorf("seat %s is held although the server refused its acquire", seats[i])
			}
		}
	}

	// 2. kill -9 under the storm, and a restart on the same port (without
	// persistence: the holds are gone, and Verify says so).
	clear(errs)
	stop = make(chan struct{})
	wg = storm(2, stop)
	time.Sleep(300 * time.Millisecond)
	epoch.Add(1)
	srv.Kill(t)
	time.Sleep(500 * time.Millisecond)
	srv.Start(t)
	epoch.Add(1)
	waitFor(t, func() bool { return h.Ping(ctx) == nil })
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("after kill -9: errors by code %v", errs)
	if errs[boxoffice.EUNAVAILABLE] == 0 {
		t.Errorf("kill -9 failed no call (errors %v)", errs)
	}
	mustAcquire(t, h, event, []string{"R-A-" + strconv.Itoa(int(newID()%1000))}, newID(), time.Minute)

}

type grantedHold struct {
	hold  boxoffice.Hold
	epoch int64
}
