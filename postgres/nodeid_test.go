package postgres_test

import (
	"context"
	"crypto/rand"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/snowflake"
)

// monoClock is an injected monotonic clock: it moves only when told.
type monoClock struct{ ns atomic.Int64 }

func (c *monoClock) Now() time.Duration      { return time.Duration(c.ns.Load()) }
func (c *monoClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// wallClock is an injected wall clock.
type wallClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *wallClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *wallClock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// withAppName tags the connections of u with an application_name, so a
// test can kill exactly one "process's" sessions.
func withAppName(tb testing.TB, u, name string) string {
	tb.Helper()
	if !strings.Contains(u, "://") {
		return u + " application_name=" + name
	}
	p, err := url.Parse(u)
	if err != nil {
		tb.Fatal(err)
	}
	q := p.Query()
	q.Set("application_name", name)
	p.RawQuery = q.Encode()
	return p.String()
}

func acquire(tb testing.TB, l *postgres.NodeLease) int {
	tb.Helper()
	if err := l.Acquire(context.Background()); err != nil {
		tb.Fatalf("Acquire: %v", err)
	}
	node, held := l.Node()
	if !held {
		tb.Fatal("Acquire succeeded but the lease holds nothing")
	}
	return node
}

func mustID(tb testing.TB, g *snowflake.Generator) boxoffice.ID {
	tb.Helper()
	id, err := g.NextID()
	if err != nil {
		tb.Fatalf("NextID: %v", err)
	}
	return id
}

// eventually polls cond every few milliseconds until it holds; the
// deadline only keeps a broken test from hanging.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNodeLeaseExclusiveAndReleasedIsReused(t *testing.T) {
	st := newStore(t)
	a, b := st.NewNodeLease(postgres.NodeLeaseConfig{}), st.NewNodeLease(postgres.NodeLeaseConfig{})
	na, nb := acquire(t, a), acquire(t, b)
	if na == nb {
		t.Fatalf("two live leases got node id %d", na)
	}
	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Grant(); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Fatalf("Grant after Release: %v, want unavailable", err)
	}
	c := st.NewNodeLease(postgres.NodeLeaseConfig{})
	if nc := acquire(t, c); nc != na {
		t.Fatalf("after releasing %d, a new lease got %d (want the released id back; %d is still held)", na, nc, nb)
	}
	if err := b.Renew(context.Background()); err != nil {
		t.Fatalf("Renew of the untouched lease: %v", err)
	}
}

func TestNodeLeasesTakenAtOnceAreDistinct(t *testing.T) {
	u := freshSchema(t)
	stores := []*postgres.Store{openStore(t, u), openStore(t, u), openStore(t, u)}
	const n = 30
	nodes := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			l := stores[i%len(stores)].NewNodeLease(postgres.NodeLeaseConfig{})
			errs[i] = l.Acquire(context.Background())
			nodes[i], _ = l.Node()
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Acquire: %v", errs[i])
		}
		if seen[nodes[i]] {
			t.Fatalf("node id %d leased twice", nodes[i])
		}
		seen[nodes[i]] = true
	}
}

// TestNodeLeasePausedPastItsLease is a process stopped (SIGSTOP) past its
// lease: it refuses ids as soon as its validity is over, another process
// takes its node id once the database says the lease ran out, the paused
// one learns it lost the lease at its next renewal, and once running again
// takes another node id. The new holder's ids are all above anything the
// old holder could have issued, although its wall clock is a minute behind.
func TestNodeLeasePausedPastItsLease(t *testing.T) {
	u := freshSchema(t)
	stA, stB := openStore(t, u), openStore(t, u)
	const ttl = 2 * time.Second
	mono := &monoClock{}
	a := stA.NewNodeLease(postgres.NodeLeaseConfig{TTL: ttl, Mono: mono.Now})
	na := acquire(t, a)
	genA := snowflake.NewLeased(a, nil)

	// Running normally: the loop renews, ids flow.
	ctxA, stopA := context.WithCancel(context.Background())
	doneA := make(chan struct{})
	go func() { defer close(doneA); a.Run(ctxA) }()
	var lastA boxoffice.ID
	for range 1000 {
		lastA = mustID(t, genA)
	}
	// SIGSTOP: no more renewals (after a last one, so the database
	// surely still has the lease live below), and the monotonic clock
	// moves past the TTL.
	stopA()
	<-doneA
	if err := a.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	grA, err := a.Grant()
	if err != nil {
		t.Fatal(err)
	}
	mono.Advance(ttl)
	if _, err := genA.NextID(); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Fatalf("NextID past the lease's validity: %v, want unavailable", err)
	}

	// The database lets another process take the node id only once its
	// expiry passed by the database's clock.
	b := stB.NewNodeLease(postgres.NodeLeaseConfig{TTL: ttl})
	if nb := acquire(t, b); nb == na {
		t.Fatalf("node id %d taken while its lease was live in the database", na)
	}
	eventually(t, "the lease to run out in the database", func() bool {
		var expired bool
		err := stA.Pool().QueryRow(context.Background(),
			`SELECT expires_at < now() FROM node_leases WHERE node_id = $1`, na).Scan(&expired)
		return err == nil && expired
	})
	wall := &wallClock{t: time.Now().Add(-time.Minute)} // stepped back a minute
	b2 := stB.NewNodeLease(postgres.NodeLeaseConfig{TTL: ttl, Wall: wall.Now})
	if nb2 := acquire(t, b2); nb2 != na {
		t.Fatalf("the expired node id %d was not taken (got %d)", na, nb2)
	}
	genB := snowflake.NewLeased(b2, wall.Now)
	for range 5000 {
		id := mustID(t, genB)
		if _, node, _ := snowflake.Parts(id); node != na {
			t.Fatalf("B's id on node %d, want %d", node, na)
		}
		if id <= lastA || snowflake.IDMillis(id) <= grA.Ceiling {
			t.Fatalf("B's id %d (at %d ms) not above A's last id %d and A's ceiling %d ms",
				id, snowflake.IDMillis(id), lastA, grA.Ceiling)
		}
	}

	// SIGCONT: A's next renewal finds the lease lost; ids stay refused.
	if err := a.Renew(context.Background()); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Fatalf("Renew of a lease taken over: %v, want unavailable", err)
	}
	if _, held := a.Node(); held {
		t.Fatal("A still thinks it holds its node id")
	}
	if _, err := genA.NextID(); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Fatalf("NextID after losing the lease: %v, want unavailable", err)
	}
	// Its loop runs again and takes another node id; ids flow again.
	ctxA, stopA = context.WithCancel(context.Background())
	doneA = make(chan struct{})
	go func() { defer close(doneA); a.Run(ctxA) }()
	defer func() { stopA(); <-doneA }()
	var id boxoffice.ID
	eventually(t, "A to lease a node id again", func() bool {
		id, err = genA.NextID()
		return err == nil
	})
	if _, node, _ := snowflake.Parts(id); node == na {
		t.Fatalf("A took node %d again while B holds it", na)
	}
	if id <= lastA {
		t.Fatalf("A's ids went back: %d after %d", id, lastA)
	}
}

// TestNodeLeaseFloorAcrossRestart: a process releases its node id on a
// clean shutdown and a new one takes it with the wall clock set back by a
// minute: the new ids are above every id of the old holder.
func TestNodeLeaseFloorAcrossRestart(t *testing.T) {
	u := freshSchema(t)
	now := time.Now()
	wallA := &wallClock{t: now}
	a := openStore(t, u).NewNodeLease(postgres.NodeLeaseConfig{Wall: wallA.Now})
	na := acquire(t, a)
	genA := snowflake.NewLeased(a, wallA.Now)
	var lastA boxoffice.ID
	for i := range 3 {
		for range 5000 {
			lastA = mustID(t, genA)
		}
		wallA.Set(now.Add(time.Duration(i+1) * time.Second))
		if err := a.Renew(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	gr, err := a.Grant()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := genA.NextID(); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Fatalf("NextID after Release: %v, want unavailable", err)
	}

	wallB := &wallClock{t: now.Add(-time.Minute)}
	b := openStore(t, u).NewNodeLease(postgres.NodeLeaseConfig{Wall: wallB.Now})
	if nb := acquire(t, b); nb != na {
		t.Fatalf("got node %d, want the released %d", nb, na)
	}
	grB, err := b.Grant()
	if err != nil {
		t.Fatal(err)
	}
	if grB.Floor < gr.Ceiling {
		t.Fatalf("B's floor %d below A's ceiling %d", grB.Floor, gr.Ceiling)
	}
	genB := snowflake.NewLeased(b, wallB.Now)
	for range 10000 {
		if id := mustID(t, genB); id <= lastA || snowflake.IDMillis(id) <= gr.Ceiling {
			t.Fatalf("B's id %d not above A's last %d / ceiling %d ms", id, lastA, gr.Ceiling)
		}
	}
	// Renewals keep B's window ahead of what it uses, though its clock is
	// behind: ids keep flowing.
	if err := b.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustID(t, genB)
}

// TestNodeLeaseSurvivesServerRestart kills every session of one process,
// as a PostgreSQL restart does. The lease is a row, not a session lock, so
// another process cannot take the node id, and the first keeps renewing
// once its pool reconnects.
func TestNodeLeaseSurvivesServerRestart(t *testing.T) {
	u := freshSchema(t)
	app := "bo_lease_" + strings.ToLower(rand.Text()[:10])
	stA := openStore(t, withAppName(t, u, app))
	stB := openStore(t, u)
	a := stA.NewNodeLease(postgres.NodeLeaseConfig{TTL: 3 * time.Second})
	na := acquire(t, a)
	genA := snowflake.NewLeased(a, nil)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	defer func() { stop(); <-done }()
	mustID(t, genA)

	var killed int
	if err := stB.Pool().QueryRow(context.Background(), `
		SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, app).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("no session of the lease holder to kill")
	}
	b := stB.NewNodeLease(postgres.NodeLeaseConfig{})
	if nb := acquire(t, b); nb == na {
		t.Fatalf("node id %d taken from a live holder after its sessions died", na)
	}
	eventually(t, "A to renew over a new connection", func() bool { return a.Renew(context.Background()) == nil })
	if node, held := a.Node(); !held || node != na {
		t.Fatalf("after reconnecting A holds %d (held %v), want %d", node, held, na)
	}
	if _, node, _ := snowflake.Parts(mustID(t, genA)); node != na {
		t.Fatalf("A's id on node %d, want %d", node, na)
	}
}

// TestNodeLeaseClockStepsForward: the wall clock jumps past the reserved
// window. The generator refuses rather than pass the ceiling, asks for a
// renewal, and ids flow again once it reserved the new time.
func TestNodeLeaseClockStepsForward(t *testing.T) {
	st := newStore(t)
	wall := &wallClock{t: time.Now()}
	l := st.NewNodeLease(postgres.NodeLeaseConfig{TTL: 3 * time.Second, Wall: wall.Now})
	acquire(t, l)
	gen := snowflake.NewLeased(l, wall.Now)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	defer func() { stop(); <-done }()
	mustID(t, gen)

	wall.Set(wall.Now().Add(time.Hour))
	jumped := snowflake.Millis(wall.Now())
	var id boxoffice.ID
	eventually(t, "ids at the new time", func() bool {
		var err error
		id, err = gen.NextID()
		if err != nil && boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
			t.Fatalf("NextID: %v", err)
		}
		return err == nil
	})
	gr, err := l.Grant()
	if err != nil {
		t.Fatal(err)
	}
	if ms := snowflake.IDMillis(id); ms < jumped || ms > gr.Ceiling {
		t.Fatalf("id at %d ms: want the new time %d, within the ceiling %d", ms, jumped, gr.Ceiling)
	}
	var reserved int64
	if err := st.Pool().QueryRow(context.Background(), `SELECT reserved_ms FROM node_leases WHERE node_id = $1`, gr.Node).Scan(&reserved); err != nil {
		t.Fatal(err)
	}
	if reserved < gr.Ceiling {
		t.Fatalf("the database reserved %d ms, less than the ceiling %d the generator uses", reserved, gr.Ceiling)
	}
}
