package redis

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/queuetest"
)

var queueEvents atomic.Int64

func TestQueueState(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		queuetest.Run(t, func(t *testing.T) queuetest.Harness {
			q := NewQueueState(client, newPrefix(t, client))
			return queuetest.Harness{State: q, NewEvent: func(t *testing.T) boxoffice.ID { return initEvent(t, q) }}
		})
	})
}

// initEvent returns a new event whose state is initialized. Alone, the
// Redis state starts every event cold; package queuestate initializes
// them (see TestQueueStateCold).
func initEvent(t *testing.T, q *QueueState) boxoffice.ID {
	t.Helper()
	ev := boxoffice.ID(time.Now().UnixNano()/1000 + queueEvents.Add(1))
	if ok, err := q.Init(t.Context(), ev, nil); err != nil || !ok {
		t.Fatalf("Init: %v %v", ok, err)
	}
	return ev
}

// An event whose state is not initialized (a Redis that restarted empty)
// refuses admissions and the draw, and Init with an epoch initializes it
// only on a node of that epoch.
func TestQueueStateCold(t *testing.T) {
	client := dialSingle(t)
	q := NewQueueState(client, newPrefix(t, client))
	ctx := t.Context()
	ev := boxoffice.ID(time.Now().UnixNano()/1000 + queueEvents.Add(1))
	r := queuetest.Request(ev, "fan")
	if _, _, err := q.Admit(ctx, r, 1, false); !errors.Is(err, boxoffice.ErrQueueCold) || boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Fatalf("Admit on a cold event: %v", err)
	}
	if _, err := q.Open(ctx, ev, func(ids []boxoffice.ID) []boxoffice.ID { return ids }); !errors.Is(err, boxoffice.ErrQueueCold) {
		t.Fatalf("Open on a cold event: %v", err)
	}
	if _, err := q.Progress(ctx, ev); !errors.Is(err, boxoffice.ErrQueueCold) {
		t.Fatalf("Progress on a cold event: %v", err)
	}
	if ok, err := q.Init(ctx, ev, []string{"a-node-that-is-gone"}); err != nil || ok {
		t.Fatalf("Init on a node outside the epoch: %v %v, want false", ok, err)
	}
	nodes, err := q.Nodes(ctx)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("Nodes: %v %v", nodes, err)
	}
	if ok, err := q.Init(ctx, ev, nodes); err != nil || !ok {
		t.Fatalf("Init on a node of the epoch: %v %v", ok, err)
	}
	if e, _, err := q.Admit(ctx, r, 1, false); err != nil || e.Request.Position != 1 {
		t.Fatalf("Admit after Init: %+v %v", e, err)
	}
}

func TestEvictionPolicy(t *testing.T) {
	srv := startServer(t)
	client, err := Dial(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	ctx := t.Context()
	if got := EvictionPolicy(ctx, client); len(got) != 0 {
		t.Fatalf("a default Redis: %v, want nothing to warn about", got)
	}
	if err := client.Do(ctx, client.B().ConfigSet().ParameterValue().ParameterValue("maxmemory-policy", "allkeys-lru").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if got := EvictionPolicy(ctx, client); len(got) != 1 {
		t.Fatalf("allkeys-lru: %v, want one node to warn about", got)
	}
}

// A request restored with a position (its drawn copy was in the log) but
// still listed in the pre-queue is not drawn a second time.
func TestOpenSkipsRequestsWithAPosition(t *testing.T) {
	client := dialSingle(t)
	q := NewQueueState(client, newPrefix(t, client))
	ctx := t.Context()
	ev := initEvent(t, q)
	var reqs []*boxoffice.QueuedRequest
	for i := range 5 {
		r := queuetest.Request(ev, "early-"+strconv.Itoa(i))
		if _, _, err := q.Admit(ctx, r, 1, true); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	held := *reqs[2]
	held.Position = 7
	if err := q.Restore(ctx, ev, []*boxoffice.QueueEntry{{Request: &held, Status: boxoffice.QueueHeld, BookingID: held.ID,
		FinishedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	drawn, err := q.Open(ctx, ev, func(ids []boxoffice.ID) []boxoffice.ID { return ids })
	if err != nil {
		t.Fatal(err)
	}
	if len(drawn) != 4 {
		t.Fatalf("drawn %d, want 4", len(drawn))
	}
	for i, r := range drawn {
		if r.ID == held.ID || r.Position != int64(i+1) {
			t.Errorf("drawn %d: request %d at %d", i, r.ID, r.Position)
		}
	}
	e, err := q.Entry(ctx, held.ID)
	if err != nil || e.Status != boxoffice.QueueHeld || e.Request.Position != 7 {
		t.Fatalf("the restored request after the draw: %+v %v", e, err)
	}
}

// A big pre-queue opens while requests keep joining it, as in the burst at
// a sale's opening: the draw freezes the pre-queue first, so arrivals never
// make it start over, and every request that waited gets a position, the
// later ones behind. (A draw that started over whenever the pre-queue had
// changed never finished in the 200,000-user drill.)
func TestOpenBigPreQueueUnderArrivals(t *testing.T) {
	client := dialSingle(t)
	q := NewQueueState(client, newPrefix(t, client))
	ctx := t.Context()
	ev := initEvent(t, q)
	admit := func(from, n int) {
		as := make([]boxoffice.Admission, n)
		for i := range as {
			as[i] = boxoffice.Admission{Request: queuetest.Request(ev, "early-"+strconv.Itoa(from+i)), MaxLive: 1, PreQueue: true}
		}
		if _, err := q.AdmitMany(ctx, as); err != nil {
			t.Error(err)
		}
	}
	const n = 30_000
	for i := 0; i < n; i += 500 {
		admit(i, 500)
	}
	// Arrivals meanwhile, until the draw is done: each one is waiting
	// (the event has not opened) and changes the pre-queue under the draw.
	done := make(chan struct{})
	arrived := make(chan int)
	go func() {
		k := 0
		defer func() { arrived <- k }()
		for {
			select {
			case <-done:
				return
			default:
			}
			admit(n+k, 20)
			k += 20
		}
	}()
	draws := 0
	drawn, err := q.Open(ctx, ev, func(ids []boxoffice.ID) []boxoffice.ID { draws++; return ids })
	close(done)
	extra := <-arrived
	if err != nil {
		t.Fatalf("Open after %d draws: %v", draws, err)
	}
	p, err := q.Progress(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	// Arrivals after the opening are queued behind the drawn ones.
	if len(drawn) < n || int64(len(drawn)) > p.Admitted || p.Admitted != int64(n+extra) || p.Waiting != 0 {
		t.Fatalf("drawn %d of %d waiting (+%d arrived meanwhile); progress %+v", len(drawn), n, extra, p)
	}
	for i, r := range drawn {
		if r.Position != int64(i+1) {
			t.Fatalf("drawn[%d] at %d", i, r.Position)
		}
	}
	t.Logf("%d drawn in %d draws, %d arrived during the opening", len(drawn), draws, extra)
}

// Finish finds the entry by the request's own event, user and key, and
// records nothing when the entry there is another request's (a later one
// admitted under the same key after the state was lost).
func TestFinishOnlyItsOwnEntry(t *testing.T) {
	client := dialSingle(t)
	q := NewQueueState(client, newPrefix(t, client))
	ctx := t.Context()
	ev := initEvent(t, q)
	r := queuetest.Request(ev, "fan")
	if _, _, err := q.Admit(ctx, r, 1, false); err != nil {
		t.Fatal(err)
	}
	other := *r
	other.ID = r.ID + 1
	o := boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, FinishedAt: time.Now()}
	if first, err := q.Finish(ctx, &other, o); err != nil || first {
		t.Fatalf("Finish of another request under the same key: %v %v, want false", first, err)
	}
	if e, err := q.Entry(ctx, r.ID); err != nil || e.Status != boxoffice.QueueQueued {
		t.Fatalf("the entry after it: %+v %v, want still queued", e, err)
	}
	if first, err := q.Finish(ctx, r, o); err != nil || !first {
		t.Fatalf("Finish of the request itself: %v %v", first, err)
	}
}
