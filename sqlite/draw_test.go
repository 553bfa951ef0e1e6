package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/queuetest"
	"github.com/boxoffice/boxoffice/sqlite"
)

// A draw writes its positions a chunk at a time, in the log's order, and
// other writes go between the chunks. One cut short (a crash) leaves the
// event open with its pool reserved: requests arriving meanwhile are
// queued behind the pool, and consumers read the chunks written but
// nothing past them, of this event or any other, until the next Open has
// drawn the rest. That Open gives every request the place the whole draw
// would have given it.
func TestADrawCutShortIsFinishedBehindItsFence(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "boxoffice.db"))
	q := s.Queue()
	admit := func(ev boxoffice.ID, user string, pre bool) *boxoffice.QueueEntry {
		t.Helper()
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := q.AdmitMany(actx, []boxoffice.Admission{{Request: queuetest.Request(ev, user), MaxLive: 1, PreQueue: pre}})
		if err == nil {
			err = out[0].Err
		}
		if err != nil {
			t.Fatalf("admit %s: %v", user, err)
		}
		return out[0].Entry
	}
	ids := func(rs []*boxoffice.QueuedRequest) []boxoffice.ID {
		out := make([]boxoffice.ID, len(rs))
		for i, r := range rs {
			out[i] = r.ID
		}
		return out
	}

	other, ev := queuetest.QueuedEvent(t, s), queuetest.QueuedEvent(t, s)
	var before, pool, after []boxoffice.ID // in the log's order
	for i := range 3 {
		before = append(before, admit(other, "early-"+strconv.Itoa(i), false).Request.ID)
	}
	for i := range 40 {
		e := admit(ev, "waiting-"+strconv.Itoa(i), true)
		if e.Status != boxoffice.QueueWaiting {
			t.Fatalf("a pre-queued request is %s", e.Status)
		}
		pool = append(pool, e.Request.ID)
	}
	// The draw: the requests by id, backwards.
	slices.Sort(pool)
	slices.Reverse(pool)

	crash := errors.New("crash")
	q.SetDrawChunk(7, func(chunk int) error {
		if chunk == 0 {
			// The writer is free between chunks (this would wait for it
			// until the timeout otherwise). The request is after the pool
			// in the log, though of another event.
			after = append(after, admit(other, "between-chunks", false).Request.ID)
		}
		if chunk == 2 {
			return crash
		}
		return nil
	})
	if _, err := q.Open(ctx, ev, reverseDraw); !errors.Is(err, crash) {
		t.Fatalf("Open cut short: %v", err)
	}
	// Admissions after the cut: queued behind the pool, which keeps its
	// positions and places in the log.
	e := admit(ev, "late", false)
	if e.Status != boxoffice.QueueQueued || e.Request.Position != 41 {
		t.Fatalf("a request after the opening: %s at %d, want queued at 41", e.Status, e.Request.Position)
	}
	after = append(after, e.Request.ID, admit(other, "late", false).Request.ID)
	p, err := q.Progress(ctx, ev)
	if err != nil || p.Admitted != 41 || p.Waiting != 0 || !p.Opened || p.Released {
		t.Fatalf("progress mid-draw: %+v, %v", p, err)
	}

	// The log stops where the draw did (3 chunks of 7), for every event.
	got, _, err := q.Next(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if want := slices.Concat(before, pool[:21]); !slices.Equal(ids(got), want) {
		t.Fatalf("the log mid-draw:\n%v\nwant the requests before the pool and its first 21\n%v", ids(got), want)
	}

	q.SetDrawChunk(7, nil)
	drawn, err := q.Open(ctx, ev, reverseDraw)
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	if !slices.Equal(ids(drawn), pool) {
		t.Fatalf("drawn %v, want %v", ids(drawn), pool)
	}
	for i, r := range drawn {
		if r.Position != int64(i+1) {
			t.Fatalf("drawn[%d] at %d", i, r.Position)
		}
	}
	if p, err := q.Progress(ctx, ev); err != nil || !p.Released {
		t.Fatalf("progress after the draw: %+v, %v", p, err)
	}
	// Opening again draws nothing more and changes nothing.
	if again, err := q.Open(ctx, ev, reverseDraw); err != nil || !slices.Equal(ids(again), pool) {
		t.Fatalf("a third Open: %v, %v", ids(again), err)
	}
	got, _, err = q.Next(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(before, pool, after)
	if !slices.Equal(ids(got), want) {
		t.Fatalf("the log after the draw:\n%v\nwant\n%v", ids(got), want)
	}
}

// A pre-queue larger than a chunk, drawn at once: the same positions as
// the draw gives, and the consumers wake to it.
func TestADrawInManyChunks(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "boxoffice.db"))
	q := s.Queue()
	ev := queuetest.QueuedEvent(t, s)
	as := preQueue(t, q, ev, 50)
	rotate := func(ids []boxoffice.ID) []boxoffice.ID { return append(slices.Clone(ids[17:]), ids[:17]...) }
	drawn, err := q.Open(ctx, ev, rotate)
	if err != nil {
		t.Fatal(err)
	}
	if len(drawn) != 50 {
		t.Fatalf("drawn %d of 50", len(drawn))
	}
	for i, r := range drawn {
		if want := as[(i+17)%50]; r.ID != want || r.Position != int64(i+1) {
			t.Fatalf("position %d: request %d, want %d", r.Position, r.ID, want)
		}
	}
	got, last, err := q.Next(ctx, 0, 1000)
	if err != nil || len(got) != 50 || got[0].ID != drawn[0].ID || got[49].ID != drawn[49].ID {
		t.Fatalf("the log: %d requests up to %d, %v", len(got), last, err)
	}
}

// A draw cut short holds every event's consumers at its fence, so the
// opener must come back to it whatever its show's time: it is due until
// it is finished, even once the show has started (when a draw is no
// longer due otherwise).
func TestADrawCutShortIsDueUntilFinished(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "boxoffice.db"))
	q := s.Queue()
	now := time.Now().UTC().Truncate(time.Second)
	e := &boxoffice.Event{ID: boxoffice.ID(time.Now().UnixNano() >> 8), Name: "Q", Venue: "V", SaleMode: boxoffice.SaleQueued,
		StartsAt: now.Add(time.Hour), SaleOpensAt: now, TicketLimit: 8, CreatedAt: now, DrawSeed: make([]byte, boxoffice.DrawSeedSize),
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "t", PriceCents: 100, Rows: 1, SeatsPerRow: 5}}}
	if err := s.CreateEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	preQueue(t, q, e.ID, 10)
	started := now.Add(2 * time.Hour)
	due := func() []boxoffice.ID {
		t.Helper()
		ids, err := s.DrawsDue(ctx, started, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if ids := due(); len(ids) != 0 {
		t.Fatalf("due after the show started, before the opening: %v", ids)
	}
	openCutShort(t, q, e.ID, 3, sameDraw)
	if ids := due(); !slices.Equal(ids, []boxoffice.ID{e.ID}) {
		t.Fatalf("due after the show started, the draw cut short: %v", ids)
	}
	if drawn, err := q.Open(ctx, e.ID, sameDraw); err != nil || len(drawn) != 10 {
		t.Fatalf("Open again: %d drawn, %v", len(drawn), err)
	}
	if ids := due(); len(ids) != 0 {
		t.Fatalf("due after the show started, the draw finished: %v", ids)
	}
}

// A draw cut short and done again in another order (a draw that is not a
// function of its pool) keeps what it wrote and gives the rest the
// positions after it: every request of the pool one, none twice, and the
// draw ends.
func TestADrawCutShortAndDrawnOtherwiseGivesEachPlaceOnce(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "boxoffice.db"))
	q := s.Queue()
	ev := queuetest.QueuedEvent(t, s)
	as := preQueue(t, q, ev, 20)
	openCutShort(t, q, ev, 6, reverseDraw)
	drawn, err := q.Open(ctx, ev, sameDraw)
	if err != nil {
		t.Fatalf("Open again in another order: %v", err)
	}
	var got []boxoffice.ID
	for i, r := range drawn {
		if r.Position != int64(i+1) {
			t.Fatalf("drawn[%d] at %d", i, r.Position)
		}
		got = append(got, r.ID)
	}
	// The first chunk of the first order, then the rest in the second.
	var first, rest []boxoffice.ID
	for i := len(as) - 1; i >= 0; i-- {
		if len(first) < 6 {
			first = append(first, as[i])
		}
	}
	for _, a := range as {
		if !slices.Contains(first, a) {
			rest = append(rest, a)
		}
	}
	if want := slices.Concat(first, rest); !slices.Equal(got, want) {
		t.Fatalf("drawn\n%v\nwant\n%v", got, want)
	}
	if p, err := q.Progress(ctx, ev); err != nil || !p.Released {
		t.Fatalf("progress: %+v, %v", p, err)
	}
	log, _, err := q.Next(ctx, 0, 100)
	if err != nil || len(log) != len(as) {
		t.Fatalf("the log: %d requests, %v", len(log), err)
	}
}

// A pool that lost a drawn request while its draw stayed cut short (one
// decided and purged) still draws to the end. The lost one's position
// stays a gap: the consumers may have read past its place in the log.
func TestADrawCutShortThatLostARequestStillEnds(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "boxoffice.db")
	s := open(t, path)
	q := s.Queue()
	ev := queuetest.QueuedEvent(t, s)
	as := preQueue(t, q, ev, 20)
	openCutShort(t, q, ev, 6, sameDraw)
	if _, err := rawDB(t, path).ExecContext(ctx, `DELETE FROM queue_requests WHERE event_id = ? AND position = 3`, ev); err != nil {
		t.Fatal(err)
	}
	drawn, err := q.Open(ctx, ev, sameDraw)
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	var positions []int64
	for _, r := range drawn {
		positions = append(positions, r.Position)
	}
	want := []int64{1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	if !slices.Equal(positions, want) {
		t.Fatalf("positions %v, want %v", positions, want)
	}
	if drawn[5].ID != as[6] {
		t.Fatalf("position 7 went to %d, want %d", drawn[5].ID, as[6])
	}
	if p, err := q.Progress(ctx, ev); err != nil || !p.Released {
		t.Fatalf("progress: %+v, %v", p, err)
	}
	log, _, err := q.Next(ctx, 0, 100)
	if err != nil || len(log) != 19 {
		t.Fatalf("the log: %d requests, %v", len(log), err)
	}
}

// preQueue admits n fresh users' requests to ev's pre-queue and returns
// their ids, in the order admitted (and so of ids).
func preQueue(t *testing.T, q *sqlite.Queue, ev boxoffice.ID, n int) []boxoffice.ID {
	t.Helper()
	as := make([]boxoffice.Admission, n)
	for i := range as {
		as[i] = boxoffice.Admission{Request: queuetest.Request(ev, "u"+strconv.Itoa(i)), MaxLive: 1, PreQueue: true}
	}
	if _, err := q.AdmitMany(t.Context(), as); err != nil {
		t.Fatal(err)
	}
	ids := make([]boxoffice.ID, n)
	for i, a := range as {
		ids[i] = a.Request.ID
	}
	return ids
}

// openCutShort opens ev with draws of size requests a chunk and cuts the
// draw short after its first chunk, as a crash would; q then draws in
// chunks of size to the end.
func openCutShort(t *testing.T, q *sqlite.Queue, ev boxoffice.ID, size int, draw func([]boxoffice.ID) []boxoffice.ID) {
	t.Helper()
	crash := errors.New("crash")
	q.SetDrawChunk(size, func(int) error { return crash })
	if _, err := q.Open(t.Context(), ev, draw); !errors.Is(err, crash) {
		t.Fatalf("Open cut short: %v", err)
	}
	q.SetDrawChunk(size, nil)
}

// sameDraw keeps the pool's order (by id); reverseDraw reverses it.
func sameDraw(ids []boxoffice.ID) []boxoffice.ID { return ids }

func reverseDraw(ids []boxoffice.ID) []boxoffice.ID {
	out := slices.Clone(ids)
	slices.Sort(out)
	slices.Reverse(out)
	return out
}
