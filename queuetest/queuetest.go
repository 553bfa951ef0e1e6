// Package queuetest is the contract suite of the flash-sale queue's ports:
// every boxoffice.QueueState (sqlite.Queue, redis.QueueState) and every
// boxoffice.RequestLog (sqlite.Queue, kafka.RequestLog) runs it.
package queuetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// Harness is one fresh implementation under test.
type Harness struct {
	State boxoffice.QueueState
	// Log is the request log; nil skips the log tests.
	Log boxoffice.RequestLog
	// NewEvent returns the id of an event requests may name (a real row
	// for a store with foreign keys).
	NewEvent func(t *testing.T) boxoffice.ID
	// Slots and SlotOf describe a queue spread over Slots > 1 slots (a
	// redis.QueueState with Slots): slot j = SlotOf(user) holds the user's
	// requests and gives the positions j+1, j+1+Slots, ... in turn. Zero:
	// one sequence, 1, 2, 3, ...
	Slots  int
	SlotOf func(user string) int
}

// Positions predicts the positions an event's queue gives (one per
// event): one sequence, or Slots slots.
type Positions struct {
	k      int
	slotOf func(string) int
	given  []int64 // per slot
}

// NewPositions returns the positions of a fresh event's queue over slots
// slots (0 or 1: one sequence), slotOf telling a user's slot.
func NewPositions(slots int, slotOf func(user string) int) *Positions {
	n := &Positions{k: max(1, slots), slotOf: slotOf}
	n.given = make([]int64, n.k)
	return n
}

func (h Harness) numbering() *Positions { return NewPositions(h.Slots, h.SlotOf) }

func (n *Positions) slot(user string) int {
	if n.k == 1 {
		return 0
	}
	return n.slotOf(user)
}

// Give returns the position the next admission of user gets.
func (n *Positions) Give(user string) int64 {
	j := n.slot(user)
	n.given[j]++
	return (n.given[j]-1)*int64(n.k) + int64(j) + 1
}

// Progress is the queue's progress as these positions make it: Admitted
// and, on slots, each slot's last position (for QueueProgress.Before).
func (n *Positions) Progress() boxoffice.QueueProgress {
	var p boxoffice.QueueProgress
	for j, g := range n.given {
		p.Admitted += g
		if n.k > 1 {
			p.Slots = append(p.Slots, boxoffice.QueueSlot{Last: max(0, (g-1)*int64(n.k)+int64(j)+1)})
		}
	}
	return p
}

// Reserve returns the positions a draw of the users' pre-queue hands out,
// in order: each user's slot reserves one of its own.
func (n *Positions) Reserve(users []string) []int64 {
	out := make([]int64, len(users))
	for i, u := range users {
		out[i] = n.Give(u)
	}
	slices.Sort(out)
	return out
}

// Run runs the whole contract, one fresh harness per subtest.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	specs := []struct {
		name string
		test func(t *testing.T, h Harness)
	}{
		{"PositionsInArrivalOrder", testPositions},
		{"ConcurrentAdmitsArePermutation", testConcurrentAdmits},
		{"RetryReturnsSameEntry", testReplay},
		{"OneLiveEntryPerUser", testMaxLive},
		{"AdmitManyAsOneByOne", testAdmitMany},
		{"FinishOnce", testFinishOnce},
		{"FinishManyAsOneByOne", testFinishMany},
		{"EntriesAsEntry", testEntries},
		{"SoldOutMarkCoversPositionsGiven", testSoldOut},
		{"UnknownRequest", testUnknown},
		{"PreQueueDrawnAtOpening", testPreQueue},
		{"LogDeliversEveryRequest", testLogDelivers},
		{"LogRedeliversFailedBatch", testLogRedelivers},
		{"BestAvailableRequestRoundTrips", testBestAvailable},
	}
	for _, s := range specs {
		t.Run(s.name, func(t *testing.T) { s.test(t, newHarness(t)) })
	}
}

var (
	ctx    = context.Background()
	nextID atomic.Int64
)

func init() { nextID.Store(time.Now().UnixNano() >> 8) }

// QueuedEvent creates in store a queued event of five seats whose sale is
// open: a Harness's NewEvent, where the queue's rows name a real event.
func QueuedEvent(t *testing.T, store interface {
	CreateEvent(context.Context, *boxoffice.Event) error
}) boxoffice.ID {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	e := &boxoffice.Event{ID: boxoffice.ID(nextID.Add(1)), Name: "Q", Venue: "V", SaleMode: boxoffice.SaleQueued,
		StartsAt: now.Add(24 * time.Hour), SaleOpensAt: now, TicketLimit: 8, CreatedAt: now,
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "t", PriceCents: 100, Rows: 1, SeatsPerRow: 5}}}
	if err := store.CreateEvent(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	return e.ID
}

// Request returns a fresh request of user for event.
func Request(event boxoffice.ID, user string, seats ...string) *boxoffice.QueuedRequest {
	id := boxoffice.ID(nextID.Add(1))
	if len(seats) == 0 {
		seats = []string{"A-A-1"}
	}
	return &boxoffice.QueuedRequest{ID: id, EventID: event, UserID: user, SeatIDs: seats,
		IdempotencyKey: "key-" + id.String(), RequestHash: "hash-" + user, EnqueuedAt: time.Now().UTC().Truncate(time.Millisecond)}
}

func admit(t *testing.T, h Harness, r *boxoffice.QueuedRequest, pre bool) *boxoffice.QueueEntry {
	t.Helper()
	e, replay, err := h.State.Admit(ctx, r, 1, pre)
	if err != nil {
		t.Fatalf("Admit(%s): %v", r.UserID, err)
	}
	if replay {
		t.Fatalf("Admit(%s) of a new request reported a replay", r.UserID)
	}
	return e
}

func code(err error) string { return boxoffice.ErrorCode(err) }

func testPositions(t *testing.T, h Harness) {
	ev := h.NewEvent(t)
	want := h.numbering()
	for i := 1; i <= 5; i++ {
		user := fmt.Sprint("u", i)
		e := admit(t, h, Request(ev, user), false)
		if pos := want.Give(user); e.Status != boxoffice.QueueQueued || e.Request.Position != pos {
			t.Fatalf("request %d: status %s position %d, want queued at %d", i, e.Status, e.Request.Position, pos)
		}
	}
	// Positions are per event.
	other := h.NewEvent(t)
	if e, pos := admit(t, h, Request(other, "u1"), false), h.numbering().Give("u1"); e.Request.Position != pos {
		t.Errorf("first request of another event at %d, want %d", e.Request.Position, pos)
	}
	p, err := h.State.Progress(ctx, ev)
	if err != nil || p.Admitted != 5 || p.Served != 0 || !p.Opened || !p.Released {
		t.Errorf("progress %+v, %v; want 5 admitted, 0 served, opened and released (no pre-queue)", p, err)
	}
}

func testConcurrentAdmits(t *testing.T, h Harness) {
	ev := h.NewEvent(t)
	const n = 300
	positions := make([]int64, n)
	want, users := h.numbering(), make([]string, n)
	for i := range n {
		users[i] = fmt.Sprint("user-", i)
	}
	expected := want.Reserve(users) // the same positions, in any order
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			e, _, err := h.State.Admit(ctx, Request(ev, fmt.Sprint("user-", i)), 1, false)
			if err != nil {
				t.Error(err)
				return
			}
			positions[i] = e.Request.Position
		})
	}
	wg.Wait()
	slices.Sort(positions)
	for i, p := range positions {
		if p != expected[i] {
			t.Fatalf("positions are not a permutation of the %d expected: sorted[%d] = %d, want %d", n, i, p, expected[i])
		}
	}
}

func testReplay(t *testing.T, h Harness) {
	ev := h.NewEvent(t)
	r := Request(ev, "fan")
	first := admit(t, h, r, false)
	again := *r
	again.ID = r.ID + 1_000_000 // a retry comes with a new id; the key decides
	e, replay, err := h.State.Admit(ctx, &again, 1, false)
	if err != nil || !replay || e.Request.ID != r.ID || e.Request.Position != first.Request.Position {
		t.Fatalf("retry: %+v replay=%v err=%v; want the first entry (%d at %d)", e, replay, err, r.ID, first.Request.Position)
	}
	other := *r
	other.RequestHash = "another body"
	if _, _, err := h.State.Admit(ctx, &other, 1, false); code(err) != boxoffice.EIDEMMISMATCH {
		t.Errorf("same key, other request: %v, want EIDEMMISMATCH", err)
	}
	if p, _ := h.State.Progress(ctx, ev); p.Admitted != 1 {
		t.Errorf("retries took positions: admitted %d, want 1", p.Admitted)
	}
}

func testMaxLive(t *testing.T, h Harness) {
	ev := h.NewEvent(t)
	r := Request(ev, "scalper")
	admit(t, h, r, false)
	if _, _, err := h.State.Admit(ctx, Request(ev, "scalper"), 1, false); code(err) != boxoffice.ECONFLICT {
		t.Fatalf("second live entry: %v, want ECONFLICT", err)
	}
	// Another event is another queue.
	admit(t, h, Request(h.NewEvent(t), "scalper"), false)
	// Two allowed when asked for.
	if _, _, err := h.State.Admit(ctx, Request(ev, "scalper"), 2, false); err != nil {
		t.Fatalf("second entry with maxLive 2: %v", err)
	}
	if _, _, err := h.State.Admit(ctx, Request(ev, "scalper"), 2, false); code(err) != boxoffice.ECONFLICT {
		t.Fatalf("third entry with maxLive 2: %v, want ECONFLICT", err)
	}
	// An outcome frees the slot.
	if _, err := h.State.Finish(ctx, r, boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, Reason: boxoffice.ESEATTAKEN, FinishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.State.Admit(ctx, Request(ev, "scalper"), 2, false); err != nil {
		t.Errorf("after an outcome: %v", err)
	}
}

// A batch is decided as if its requests came one by one, in slice order:
// within one batch a second request of a user is refused, the same key
// again is the first's replay, and positions follow the slice; two events
// in one batch are two queues.
func testAdmitMany(t *testing.T, h Harness) {
	ev, other := h.NewEvent(t), h.NewEvent(t)
	at, atOther := h.numbering(), h.numbering()
	before := admit(t, h, Request(ev, "early"), false)
	if pos := at.Give("early"); before.Request.Position != pos {
		t.Fatalf("first request at %d, want %d", before.Request.Position, pos)
	}
	a, b := Request(ev, "fan-a"), Request(ev, "fan-b")
	retry := *a
	retry.ID = a.ID + 1_000_000
	mismatch := *a
	mismatch.ID, mismatch.RequestHash = a.ID+2_000_000, "another body"
	second := Request(ev, "fan-a") // a new key while a is live
	elsewhere := Request(other, "fan-a")
	// On slots, the opening is each slot's: a slot that has given no
	// position yet still takes a pre-queue flag at its word (the opener
	// then draws it), so this request is of early's slot.
	lateFan := "late-fan"
	for i := 0; at.slot(lateFan) != at.slot("early"); i++ {
		lateFan = fmt.Sprint("late-fan-", i)
	}
	pre := Request(ev, lateFan)
	as := []boxoffice.Admission{
		{Request: a, MaxLive: 1}, {Request: elsewhere, MaxLive: 1}, {Request: &retry, MaxLive: 1},
		{Request: &mismatch, MaxLive: 1}, {Request: second, MaxLive: 1}, {Request: b, MaxLive: 1},
		// After the opening a pre-queue flag changes nothing: it is queued.
		{Request: pre, MaxLive: 1, PreQueue: true},
	}
	out, err := h.State.AdmitMany(ctx, as)
	if err != nil {
		t.Fatalf("AdmitMany: %v", err)
	}
	if len(out) != len(as) {
		t.Fatalf("%d answers for %d requests", len(out), len(as))
	}
	want := []struct {
		id      boxoffice.ID
		pos     int64
		replay  bool
		errCode string
	}{
		{a.ID, at.Give("fan-a"), false, ""},
		{elsewhere.ID, atOther.Give("fan-a"), false, ""},
		{a.ID, 0, true, ""}, // a's, checked below
		{0, 0, false, boxoffice.EIDEMMISMATCH},
		{0, 0, false, boxoffice.ECONFLICT},
		{b.ID, at.Give("fan-b"), false, ""},
		{pre.ID, at.Give(lateFan), false, ""},
	}
	want[2].pos = want[0].pos
	for i, w := range want {
		o := out[i]
		if w.errCode != "" {
			if code(o.Err) != w.errCode || o.Entry != nil {
				t.Errorf("request %d: %+v, %v; want %s", i, o.Entry, o.Err, w.errCode)
			}
			continue
		}
		if o.Err != nil || o.Entry == nil {
			t.Errorf("request %d: %v", i, o.Err)
			continue
		}
		if o.Entry.Request.ID != w.id || o.Entry.Request.Position != w.pos || o.Replay != w.replay || o.Entry.Status != boxoffice.QueueQueued {
			t.Errorf("request %d: id %d at %d (%s) replay=%v; want id %d at %d replay=%v",
				i, o.Entry.Request.ID, o.Entry.Request.Position, o.Entry.Status, o.Replay, w.id, w.pos, w.replay)
		}
	}
	for _, r := range []*boxoffice.QueuedRequest{a, b, pre} {
		if e, err := h.State.Entry(ctx, r.ID); err != nil || e.Status != boxoffice.QueueQueued {
			t.Errorf("entry %d after the batch: %+v, %v", r.ID, e, err)
		}
	}
	if p, _ := h.State.Progress(ctx, ev); p.Admitted != 4 {
		t.Errorf("admitted %d, want 4", p.Admitted)
	}
	if out, err := h.State.AdmitMany(ctx, nil); err != nil || len(out) != 0 {
		t.Errorf("empty batch: %v, %v", out, err)
	}
}

func testFinishOnce(t *testing.T, h Harness) {
	ev := h.NewEvent(t)
	r := Request(ev, "fan", "A-A-1", "A-A-2")
	admit(t, h, r, false)
	held := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Millisecond)
	o := boxoffice.QueueOutcome{Status: boxoffice.QueueHeld, BookingID: r.ID, HeldUntil: held, FinishedAt: time.Now().UTC().Truncate(time.Millisecond)}
	var wg sync.WaitGroup
	var firsts atomic.Int32
	for range 8 {
		wg.Go(func() {
			first, err := h.State.Finish(ctx, r, o)
			if err != nil {
				t.Error(err)
			}
			if first {
				firsts.Add(1)
			}
		})
	}
	wg.Wait()
	if firsts.Load() != 1 {
		t.Fatalf("%d Finish calls reported first, want 1", firsts.Load())
	}
	if first, _ := h.State.Finish(ctx, r, boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, Reason: "X", FinishedAt: time.Now()}); first {
		t.Error("a second outcome replaced the first")
	}
	e, err := h.State.Entry(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != boxoffice.QueueHeld || e.BookingID != r.ID || !e.HeldUntil.Equal(held) || e.FinishedAt.IsZero() ||
		!slices.Equal(e.Request.SeatIDs, r.SeatIDs) || e.Request.UserID != "fan" || e.Request.Position != h.numbering().Give("fan") {
		t.Errorf("entry %+v / %+v", e, e.Request)
	}
	if p, _ := h.State.Progress(ctx, ev); p.Served != 1 {
		t.Errorf("served %d, want 1", p.Served)
	}
	if _, err := h.State.Finish(ctx, r, boxoffice.QueueOutcome{Status: boxoffice.QueueQueued}); code(err) != boxoffice.EINVALID {
		t.Errorf("a non-final outcome: %v, want EINVALID", err)
	}
}

// testFinishMany: a batch's outcomes are recorded as Finish would one by
// one: a request finished before, or twice in the batch, keeps its first
// outcome; the served count and the live slots follow.
func testFinishMany(t *testing.T, h Harness) {
	ev := h.NewEvent(t)
	var rs []*boxoffice.QueuedRequest
	for i := range 4 {
		r := Request(ev, fmt.Sprintf("fan-%d", i), fmt.Sprintf("A-A-%d", i+1))
		admit(t, h, r, false)
		rs = append(rs, r)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	rejected := boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, Reason: boxoffice.ESEATTAKEN, Message: "taken", FinishedAt: now}
	if _, err := h.State.Finish(ctx, rs[1], rejected); err != nil {
		t.Fatal(err)
	}
	held := boxoffice.QueueOutcome{Status: boxoffice.QueueHeld, BookingID: rs[0].ID, HeldUntil: now.Add(time.Minute), FinishedAt: now}
	batch := []*boxoffice.QueuedRequest{rs[0], rs[1], rs[2], rs[0]}
	outs := []boxoffice.QueueOutcome{held, held, rejected, rejected}
	first, err := h.State.FinishMany(ctx, batch, outs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, true, false}; !slices.Equal(first, want) {
		t.Errorf("FinishMany reported first %v, want %v", first, want)
	}
	for i, want := range []boxoffice.QueueStatus{boxoffice.QueueHeld, boxoffice.QueueRejected, boxoffice.QueueRejected, boxoffice.QueueQueued} {
		e, err := h.State.Entry(ctx, rs[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if e.Status != want {
			t.Errorf("request %d: %s, want %s", i, e.Status, want)
		}
	}
	if p, _ := h.State.Progress(ctx, ev); p.Served != 3 {
		t.Errorf("served %d, want 3", p.Served)
	}
	// Finished requests free their users' slots; the unfinished one not.
	if _, _, err := h.State.Admit(ctx, Request(ev, "fan-2"), 1, false); err != nil {
		t.Errorf("fan-2 after its outcome: %v", err)
	}
	if _, _, err := h.State.Admit(ctx, Request(ev, "fan-3"), 1, false); code(err) != boxoffice.ECONFLICT {
		t.Errorf("fan-3 still queued: %v, want ECONFLICT", err)
	}
	if _, err := h.State.FinishMany(ctx, rs[3:], []boxoffice.QueueOutcome{{Status: boxoffice.QueueQueued}}); code(err) != boxoffice.EINVALID {
		t.Errorf("a non-final outcome: %v, want EINVALID", err)
	}
	if first, err := h.State.FinishMany(ctx, nil, nil); err != nil || len(first) != 0 {
		t.Errorf("an empty batch: %v, %v", first, err)
	}
}

// testEntries: a batch read gives each request's entry as Entry does,
// nil for a request the state never admitted.
func testEntries(t *testing.T, h Harness) {
	ev := h.NewEvent(t)
	a, b := Request(ev, "fan-a", "A-A-1"), Request(ev, "fan-b", "A-A-2")
	admit(t, h, a, false)
	admit(t, h, b, false)
	if _, err := h.State.Finish(ctx, b, boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, Reason: "X", FinishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	stranger := Request(ev, "fan-c", "A-A-3")
	stranger.Position = 9
	// b twice, as a redelivery in one batch brings it.
	got, err := h.State.Entries(ctx, []*boxoffice.QueuedRequest{b, stranger, a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[1] != nil {
		t.Fatalf("Entries = %v, want four with the stranger's nil", got)
	}
	for i, r := range []*boxoffice.QueuedRequest{b, nil, a, b} {
		if r == nil {
			continue
		}
		want, err := h.State.Entry(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if g := got[i]; g == nil || g.Request.ID != r.ID || g.Status != want.Status || g.Reason != want.Reason ||
			g.Request.Position != want.Request.Position || !slices.Equal(g.Request.SeatIDs, want.Request.SeatIDs) {
			t.Errorf("entry %d: %+v, Entry says %+v", i, g, want)
		}
	}
	if got, err := h.State.Entries(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("no requests: %v, %v", got, err)
	}
}

// testSoldOut: the sold-out mark covers the positions given when it is
// set, never goes down, and is raised by a later mark.
func testSoldOut(t *testing.T, h Harness) {
	ev := h.NewEvent(t)
	at := h.numbering()
	var early []int64
	for i := range 3 {
		user := fmt.Sprintf("fan-%d", i)
		admit(t, h, Request(ev, user, "A-A-1"), false)
		early = append(early, at.Give(user))
	}
	if p, err := h.State.Progress(ctx, ev); err != nil || p.SoldOutUpTo != 0 || p.SoldOut(early[0]) || p.AllSoldOut() {
		t.Fatalf("before any mark: %+v, %v", p, err)
	}
	upTo, err := h.State.MarkSoldOut(ctx, ev)
	if err != nil || upTo != slices.Max(early) {
		t.Fatalf("MarkSoldOut = %d, %v; want %d", upTo, err, slices.Max(early))
	}
	admit(t, h, Request(ev, "late", "A-A-2"), false)
	late := at.Give("late")
	p, _ := h.State.Progress(ctx, ev)
	if p.SoldOutUpTo != upTo || p.Admitted != 4 || p.SoldOut(late) || p.AllSoldOut() {
		t.Errorf("after a later admission: %+v, want the mark still at %d of 4, not covering %d", p, upTo, late)
	}
	for _, pos := range early {
		if !p.SoldOut(pos) {
			t.Errorf("position %d, given before the mark, is not sold out: %+v", pos, p)
		}
	}
	if upTo, err := h.State.MarkSoldOut(ctx, ev); err != nil || upTo != max(late, slices.Max(early)) {
		t.Errorf("a second MarkSoldOut = %d, %v; want %d", upTo, err, max(late, slices.Max(early)))
	}
	if p, _ := h.State.Progress(ctx, ev); !p.SoldOut(late) || !p.AllSoldOut() {
		t.Errorf("Progress after the second mark: %+v", p)
	}
	// A retry is recognised by its key.
	r := Request(ev, "keyed", "A-A-3")
	admit(t, h, r, false)
	e, err := h.State.EntryByKey(ctx, ev, "keyed", r.IdempotencyKey)
	if pos := at.Give("keyed"); err != nil || e.Request.ID != r.ID || e.Request.Position != pos {
		t.Errorf("EntryByKey = %+v, %v; want request %d at %d", e, err, r.ID, pos)
	}
	if _, err := h.State.EntryByKey(ctx, ev, "keyed", "another"); code(err) != boxoffice.ENOTFOUND {
		t.Errorf("EntryByKey of an unknown key: %v, want ENOTFOUND", err)
	}
}

func testUnknown(t *testing.T, h Harness) {
	if _, err := h.State.Entry(ctx, boxoffice.ID(nextID.Add(1))); code(err) != boxoffice.ENOTFOUND {
		t.Errorf("Entry of an unknown request: %v, want ENOTFOUND", err)
	}
	if p, err := h.State.Progress(ctx, h.NewEvent(t)); err != nil || p.Admitted != 0 || p.Served != 0 || p.Waiting != 0 || p.Opened || p.Released || p.SoldOutUpTo != 0 || !p.AllSoldOut() {
		t.Errorf("Progress of an event without a queue: %+v, %v", p, err)
	}
}

func testPreQueue(t *testing.T, h Harness) {
	ev := h.NewEvent(t)
	const n = 40
	var early []*boxoffice.QueuedRequest
	users := []string{"just-after"}
	for i := range n {
		users = append(users, fmt.Sprint("early-", i))
		r := Request(ev, fmt.Sprint("early-", i))
		e := admit(t, h, r, true)
		if e.Status != boxoffice.QueueWaiting || e.Request.Position != 0 {
			t.Fatalf("before opening: %s at %d, want waiting at 0", e.Status, e.Request.Position)
		}
		early = append(early, r)
	}
	// Just after the opening instant, before Open ran: it joins the draw.
	late := Request(ev, "just-after")
	if e := admit(t, h, late, false); e.Status != boxoffice.QueueWaiting {
		t.Fatalf("before Open ran: %s, want waiting", e.Status)
	}
	if first, _ := h.State.Finish(ctx, late, boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, FinishedAt: time.Now()}); first {
		t.Fatal("a waiting request was finished")
	}
	if p, _ := h.State.Progress(ctx, ev); p.Waiting != n+1 || p.Opened || p.Admitted != 0 {
		t.Fatalf("progress before opening %+v", p)
	}
	seed := boxoffice.NewDrawSeed()
	var drawnIDs []boxoffice.ID
	draw := func(ids []boxoffice.ID) []boxoffice.ID {
		drawnIDs = boxoffice.DrawOrder(seed, ids)
		return drawnIDs
	}
	opened, err := h.State.Open(ctx, ev, draw)
	if err != nil {
		t.Fatal(err)
	}
	if len(opened) != n+1 {
		t.Fatalf("Open returned %d requests, want %d", len(opened), n+1)
	}
	at := h.numbering()
	reserved := at.Reserve(users)
	inOrder := true
	for i, r := range opened {
		if r.Position != reserved[i] {
			t.Fatalf("opened[%d] at position %d, want %d", i, r.Position, reserved[i])
		}
		if i < n && r.ID != early[i].ID {
			inOrder = false
		}
		if r.ID != drawnIDs[i] {
			t.Fatalf("opened[%d] is %d, the draw put %d there", i, r.ID, drawnIDs[i])
		}
		e, _ := h.State.Entry(ctx, r.ID)
		if e == nil || e.Status != boxoffice.QueueQueued || e.Request.Position != r.Position {
			t.Fatalf("entry after opening %+v", e)
		}
	}
	if inOrder {
		t.Error("the draw left the pre-queue in arrival order")
	}
	again, err := h.State.Open(ctx, ev, draw)
	if err != nil || len(again) != len(opened) {
		t.Fatalf("second Open: %d requests, %v", len(again), err)
	}
	for i := range again {
		if again[i].ID != opened[i].ID {
			t.Fatal("a second Open drew again")
		}
	}
	// After opening: arrival order, after the draw.
	if e, pos := admit(t, h, Request(ev, "later"), false), at.Give("later"); e.Status != boxoffice.QueueQueued || e.Request.Position != pos {
		t.Errorf("after opening: %s at %d, want queued at %d", e.Status, e.Request.Position, pos)
	}
	if p, _ := h.State.Progress(ctx, ev); !p.Opened || p.Waiting != 0 || p.Admitted != n+2 {
		t.Errorf("progress after opening %+v", p)
	}
	if err := h.State.MarkReleased(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if p, _ := h.State.Progress(ctx, ev); !p.Released {
		t.Errorf("progress after MarkReleased %+v", p)
	}
	// Opening an event nobody queued for early is harmless.
	if rs, err := h.State.Open(ctx, h.NewEvent(t), draw); err != nil || len(rs) != 0 {
		t.Errorf("Open of an empty pre-queue: %d, %v", len(rs), err)
	}
}

// consume runs the log until every id in want was seen or the deadline.
func consume(t *testing.T, h Harness, want map[boxoffice.ID]bool, handle func(batch []*boxoffice.QueuedRequest) error) map[boxoffice.ID]int {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	seen := map[boxoffice.ID]int{}
	done := make(chan error, 1)
	go func() {
		done <- h.Log.Consume(cctx, func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
			if err := handle(batch); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range batch {
				seen[r.ID]++
			}
			all := true
			for id := range want {
				all = all && seen[id] > 0
			}
			if all {
				cancel()
			}
			return nil
		})
	}()
	if err := <-done; err != nil {
		t.Fatalf("Consume: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id := range want {
		if seen[id] == 0 {
			t.Fatalf("request %d never delivered (%d of %d seen)", id, len(seen), len(want))
		}
	}
	return seen
}

func admitAndAppend(t *testing.T, h Harness, ev boxoffice.ID, n int) map[boxoffice.ID]bool {
	want := map[boxoffice.ID]bool{}
	for i := range n {
		r := Request(ev, fmt.Sprint("log-user-", i))
		e := admit(t, h, r, false)
		if err := h.Log.Append(ctx, e.Request); err != nil {
			t.Fatal(err)
		}
		want[r.ID] = true
	}
	return want
}

func finishAll(t *testing.T, h Harness, batch []*boxoffice.QueuedRequest) {
	for _, r := range batch {
		if r.Position == 0 || len(r.SeatIDs) == 0 || r.UserID == "" {
			t.Errorf("delivered request is incomplete: %+v", r)
		}
		if _, err := h.State.Finish(ctx, r, boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, FinishedAt: time.Now()}); err != nil {
			t.Error(err)
		}
	}
}

func testLogDelivers(t *testing.T, h Harness) {
	if h.Log == nil {
		t.Skip("no log")
	}
	want := admitAndAppend(t, h, h.NewEvent(t), 500)
	consume(t, h, want, func(batch []*boxoffice.QueuedRequest) error { finishAll(t, h, batch); return nil })
}

func testLogRedelivers(t *testing.T, h Harness) {
	if h.Log == nil {
		t.Skip("no log")
	}
	want := admitAndAppend(t, h, h.NewEvent(t), 50)
	var failed atomic.Bool
	var firstFailed []boxoffice.ID
	seen := consume(t, h, want, func(batch []*boxoffice.QueuedRequest) error {
		if !failed.Swap(true) {
			for _, r := range batch {
				firstFailed = append(firstFailed, r.ID)
			}
			return fmt.Errorf("the worker fails its first batch")
		}
		finishAll(t, h, batch)
		return nil
	})
	for _, id := range firstFailed {
		if seen[id] == 0 {
			t.Errorf("request %d of the failed batch was not delivered again", id)
		}
	}
}

// A request for the best seats left (no seat ids) comes back from the
// state and the log as it went in.
func testBestAvailable(t *testing.T, h Harness) {
	ev := h.NewEvent(t)
	r := Request(ev, "best-fan")
	r.SeatIDs = nil
	r.Best = &boxoffice.BestAvailable{Quantity: 3, Section: "A", PriceTier: "gold", Features: []boxoffice.SeatFeature{boxoffice.Wheelchair, boxoffice.Companion}}
	e := admit(t, h, r, false)
	got, err := h.State.Entry(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Request.Best == nil || !reflect.DeepEqual(*got.Request.Best, *r.Best) || len(got.Request.SeatIDs) != 0 {
		t.Errorf("entry's request: best %+v seats %v, want best %+v and no seats", got.Request.Best, got.Request.SeatIDs, *r.Best)
	}
	if h.Log == nil {
		return
	}
	if err := h.Log.Append(ctx, e.Request); err != nil {
		t.Fatal(err)
	}
	consume(t, h, map[boxoffice.ID]bool{r.ID: true}, func(batch []*boxoffice.QueuedRequest) error {
		for _, d := range batch {
			if d.ID == r.ID && (d.Best == nil || !reflect.DeepEqual(*d.Best, *r.Best)) {
				t.Errorf("delivered best %+v, want %+v", d.Best, *r.Best)
			}
			if _, err := h.State.Finish(ctx, d, boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, FinishedAt: time.Now()}); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
}
