package redis

import (
	"errors"
	"github.com/google/go-cmp/cmp"
	"slices"
	"strconv"
	"strings"
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

// The same contract with each event's queue spread over three slots: on
// the cluster, over its three primaries.
func TestQueueStateSlots(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		queuetest.Run(t, func(t *testing.T) queuetest.Harness {
			q := NewQueueState(client, newPrefix(t, client))
			q.Slots = 3
			return queuetest.Harness{State: q, NewEvent: func(t *testing.T) boxoffice.ID { return initEvent(t, q) },
				Slots: 3, SlotOf: func(user string) int { return UserSlot(user, 3) }}
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
	_, client := startDialed(t)
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

// A user's live count is a key while they have requests queued and gone
// once the last is decided, not left at 0 until the queue's TTL: a sale of
// millions of users left millions of such keys. Two requests of one user,
// decided one after the other; a limit of two live requests each.
func TestLiveCountGoneWhenDecided(t *testing.T) {
	client := dialSingle(t)
	q := NewQueueState(client, newPrefix(t, client))
	ctx := t.Context()
	ev := initEvent(t, q)
	a, b := queuetest.Request(ev, "fan"), queuetest.Request(ev, "fan")
	for _, r := range []*boxoffice.QueuedRequest{a, b} {
		if _, _, err := q.Admit(ctx, r, 2, false); err != nil {
			t.Fatal(err)
		}
	}
	_, live := q.userKeys(ev, 1, "fan", a.IdempotencyKey)
	count := func() string {
		t.Helper()
		v, err := client.Do(ctx, client.B().Get().Key(live).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return "none"
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := count(); got != "2" {
		t.Fatalf("live count after two admissions: %s, want 2", got)
	}
	o := boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, FinishedAt: time.Now()}
	for i, want := range []string{"1", "none"} {
		r := []*boxoffice.QueuedRequest{a, b}[i]
		if first, err := q.Finish(ctx, r, o); err != nil || !first {
			t.Fatalf("Finish: %v %v", first, err)
		}
		if got := count(); got != want {
			t.Fatalf("live count after %d decided: %s, want %s", i+1, got, want)
		}
	}
	// Admitted again: counted from nothing.
	c := queuetest.Request(ev, "fan")
	if _, _, err := q.Admit(ctx, c, 1, false); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "1" {
		t.Fatalf("live count after a new admission: %s, want 1", got)
	}
}

// An event keeps the slots it was initialized with: a process configured
// otherwise (a rolling change of --queue-slots) follows the recorded
// number, so a user's requests are found where they are.
func TestSlotsAreTheEvents(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		prefix := newPrefix(t, client)
		three, one := NewQueueState(client, prefix), NewQueueState(client, prefix)
		three.Slots = 3
		ev := initEvent(t, three)
		ctx := t.Context()
		positions := queuetest.NewPositions(3, func(user string) int { return UserSlot(user, 3) })
		for i := range 12 {
			q := []*QueueState{one, three}[i%2]
			r := queuetest.Request(ev, "fan-"+strconv.Itoa(i))
			e, _, err := q.Admit(ctx, r, 1, false)
			if err != nil || e.Request.Position != positions.Give(r.UserID) {
				t.Fatalf("admission %d: %+v %v", i, e, err)
			}
			if e, err := one.Entry(ctx, r.ID); err != nil || e.Request.ID != r.ID {
				t.Fatalf("Entry: %+v %v", e, err)
			}
		}
		if ok, err := one.Init(ctx, ev, nil); err != nil || !ok {
			t.Fatalf("Init again: %v %v", ok, err)
		}
		p, err := one.Progress(ctx, ev)
		if err != nil || len(p.Slots) != 3 || p.Admitted != 12 {
			t.Fatalf("progress %+v %v; want 12 admitted over 3 slots", p, err)
		}
	})
}

// A draw over three slots cut short after one slot took its positions (the
// opener died): the next Open draws the same entries again and gives every
// request the position the whole draw would have.
func TestOpenCutShortDrawsTheSameOnSlots(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		q := NewQueueState(client, newPrefix(t, client))
		q.Slots = 3
		ctx := t.Context()
		ev := initEvent(t, q)
		const n = 30
		var users []string
		bySlot := make([][]string, 3) // entry keys of each slot's pre-queue, in arrival order
		for i := range n {
			r := queuetest.Request(ev, "early-"+strconv.Itoa(i))
			if _, _, err := q.Admit(ctx, r, 1, true); err != nil {
				t.Fatal(err)
			}
			users = append(users, r.UserID)
			j := UserSlot(r.UserID, 3)
			bySlot[j] = append(bySlot[j], q.entryKey(ev, 3, r.UserID, r.IdempotencyKey))
		}
		seed := boxoffice.NewDrawSeed()
		draw := func(ids []boxoffice.ID) []boxoffice.ID { return boxoffice.DrawOrder(seed, ids) }
		first, err := q.Open(ctx, ev, draw)
		if err != nil || len(first) != n {
			t.Fatalf("Open: %d, %v", len(first), err)
		}
		reserved := queuetest.NewPositions(3, func(user string) int { return UserSlot(user, 3) }).Reserve(users)
		var ids []boxoffice.ID
		for i, r := range first {
			if r.Position != reserved[i] {
				t.Fatalf("drawn %d at %d, want %d", i, r.Position, reserved[i])
			}
			ids = append(ids, r.ID)
		}
		if !slices.Equal(ids, boxoffice.DrawOrder(seed, ids)) {
			t.Fatal("position order is not the drawn order")
		}

		// Back to the moment after slot 0's drawLua: its entries drawn,
		// the other slots' not, every pool still there.
		do := func(cmd rueidis.Completed) {
			if err := client.Do(ctx, cmd).Error(); err != nil {
				t.Fatal(err)
			}
		}
		for j := range 3 {
			slot := q.slot(ev, j, 3)
			do(client.B().Rpush().Key(slot + "pool").Element(bySlot[j]...).Build())
			if j == 0 {
				continue
			}
			for _, k := range bySlot[j] {
				do(client.B().Hset().Key(k).FieldValue().FieldValue("status", "waiting").FieldValue("pos", "0").Build())
				do(client.B().Hdel().Key(k).Field("drawn").Build())
			}
			do(client.B().Del().Key(slot + "opened").Build())
			do(client.B().Hset().Key(slot+"n").FieldValue().FieldValue("drawn", "0").Build())
			do(client.B().Hincrby().Key(slot + "n").Field("given").Increment(-int64(len(bySlot[j]))).Build())
		}

		again, err := q.Open(ctx, ev, draw)
		if err != nil || len(again) != n {
			t.Fatalf("Open after a cut-short draw: %d, %v", len(again), err)
		}
		for i := range again {
			if again[i].ID != first[i].ID || again[i].Position != first[i].Position {
				t.Fatalf("drawn again %d: request %d at %d, the first draw had %d at %d", i, again[i].ID, again[i].Position, first[i].ID, first[i].Position)
			}
		}
		for j := range 3 {
			if n, err := client.Do(ctx, client.B().Exists().Key(q.slot(ev, j, 3)+"pool").Build()).AsInt64(); err != nil || n != 0 {
				t.Errorf("slot %d's pool is still there: %d %v", j, n, err)
			}
		}
		if p, err := q.Progress(ctx, ev); err != nil || p.Admitted != n || !p.Opened {
			t.Errorf("progress %+v %v", p, err)
		}
	})
}

// crc16 is the cluster's own key hash, and an event's three slots land on
// the three primaries of the CI cluster (evenly split, as redis-cli
// --cluster create makes it), not on two by the luck of the hash.
func TestSlotTagsSpreadOverPrimaries(t *testing.T) {
	client := dialCluster(t)
	q := NewQueueState(client, "p:")
	ctx := t.Context()
	for i := range 20 {
		ev := boxoffice.ID(1_000_003 * (i + 1))
		nodes := map[string]bool{}
		for j := range 3 {
			key := q.slot(ev, j, 3) + "n"
			slot, err := client.Do(ctx, client.B().ClusterKeyslot().Key(key).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			tag := key[strings.Index(key, "{")+1 : strings.Index(key, "}")]
			if want := int64(crc16(tag)) % hashSlots; slot != want {
				t.Fatalf("%s: the cluster says slot %d, crc16 %d", key, slot, want)
			}
			owner := ""
			shards, err := client.Do(ctx, client.B().ClusterSlots().Build()).ToArray()
			if err != nil {
				t.Fatal(err)
			}
			for _, sh := range shards {
				r, _ := sh.ToArray()
				lo, _ := r[0].AsInt64()
				hi, _ := r[1].AsInt64()
				if slot >= lo && slot <= hi {
					primary, _ := r[2].ToArray()
					port, _ := primary[1].AsInt64()
					owner = strconv.FormatInt(port, 10)
				}
			}
			nodes[owner] = true
		}
		if len(nodes) != 3 {
			t.Errorf("event %d: its 3 slots are on %v", ev, nodes)
		}
	}
}

// A request's entry is read by its id in one round trip once this process
// knows where it is (it admitted it, or read its index before). The entry
// under its key must still be its own: when it is gone (expired with its
// index) and a later request took the key, the id is not found, not
// answered with the later request's entry.
func TestEntryByIDIsItsOwn(t *testing.T) {
	client, prefix, q, first := admitOne(t, false)
	ev, ctx := first.EventID, t.Context()
	// Another process reads it through the index; this one without.
	other := NewQueueState(client, prefix)
	for _, s := range []*QueueState{q, other} {
		if e, err := s.Entry(ctx, first.ID); err != nil || e.Request.ID != first.ID {
			t.Fatalf("Entry: %+v %v, want the request", e, err)
		}
	}
	if err := client.Do(ctx, client.B().Del().Key(q.idKey(first.ID)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*QueueState{q, other} {
		if e, err := s.Entry(ctx, first.ID); err != nil || e.Request.ID != first.ID {
			t.Fatalf("Entry of a request this process knows, without its index: %+v %v", e, err)
		}
	}

	// Its entry and live count go (as when they expire); the user asks
	// again with the same key.
	entry, live := q.userKeys(ev, 1, first.UserID, first.IdempotencyKey)
	if err := client.Do(ctx, client.B().Del().Key(entry, live).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	later := *first
	later.ID = first.ID + 1
	if _, replay, err := q.Admit(ctx, &later, 1, false); err != nil || replay {
		t.Fatalf("Admit of the later request: replay %v, %v", replay, err)
	}
	for _, s := range []*QueueState{q, other} {
		_, err := s.Entry(ctx, first.ID)
		if boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
			t.Errorf("Entry of the first request after a later one took its key: %v, want ENOTFOUND", err)
		}
	}
	if e, err := q.Entry(ctx, later.ID); err != nil || e.Request.ID != later.ID {
		t.Errorf("Entry of the later request: %+v %v", e, err)
	}
}

// A poll of a request this process knows reads only the entry's state and
// keeps the request it has: what it answers must be what a process that
// reads the whole entry answers, through the draw's position and the
// outcome.
func TestEntryOfAKnownRequestFollowsItsState(t *testing.T) {
	client, prefix, q, r := admitOne(t, true)
	ev, ctx := r.EventID, t.Context()
	same := func(when string, want boxoffice.QueueStatus) *boxoffice.QueueEntry {
		t.Helper()
		known, err := q.Entry(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		// A new process reads it by the index and the whole entry.
		whole, err := NewQueueState(client, prefix).Entry(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(whole, known); diff != "" {
			t.Fatalf("%s: the entry read by state only differs from the whole one (-whole +known):\n%s", when, diff)
		}
		if known.Status != want {
			t.Fatalf("%s: status %s, want %s", when, known.Status, want)
		}
		return known
	}
	same("waiting", boxoffice.QueueWaiting)
	if _, err := q.Open(ctx, ev, func(ids []boxoffice.ID) []boxoffice.ID { return ids }); err != nil {
		t.Fatal(err)
	}
	if e := same("drawn", boxoffice.QueueQueued); e.Request.Position != 1 {
		t.Fatalf("position after the draw = %d, want 1", e.Request.Position)
	}
	o := boxoffice.QueueOutcome{Status: boxoffice.QueueHeld, BookingID: r.ID, HeldUntil: time.Now().Add(time.Minute).Truncate(time.Millisecond).UTC(),
		FinishedAt: time.Now().Truncate(time.Millisecond).UTC()}
	if _, err := q.Finish(ctx, r, o); err != nil {
		t.Fatal(err)
	}
	if e := same("held", boxoffice.QueueHeld); e.BookingID != r.ID || !e.HeldUntil.Equal(o.HeldUntil) {
		t.Fatalf("held entry %+v, want booking %s until %s", e, r.ID, o.HeldUntil)
	}
}

// admitOne admits one request of a new event, to the waiting room with
// preQueue, under a new prefix on the single server.
func admitOne(t *testing.T, preQueue bool) (rueidis.Client, string, *QueueState, *boxoffice.QueuedRequest) {
	t.Helper()
	client := dialSingle(t)
	prefix := newPrefix(t, client)
	q := NewQueueState(client, prefix)
	r := queuetest.Request(initEvent(t, q), "fan")
	if _, _, err := q.Admit(t.Context(), r, 1, preQueue); err != nil {
		t.Fatal(err)
	}
	return client, prefix, q, r
}
