package storetest

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Promises of the pre-queue draws (Draw, RecordDraw) pinned here:
//   - CreateEvent with a DrawSeed commits to it at e.CreatedAt; Event does
//     not give the seed back (only Draw does); a seed that is not
//     DrawSeedSize bytes is EINVALID and writes nothing;
//   - Draw of an undrawn draw has a zero DrawnAt, FirstPosition 0 and no
//     Order; of an unknown event, ENOTFOUND;
//   - RecordDraw keeps the order exactly, whatever the ids (any int64, in
//     any order); an empty order is a draw all the same;
//   - the first RecordDraw wins: a later one returns nil and changes
//     nothing, seed, order, position or time;
//   - RecordDraw on an event without a draw with no seed of DrawSeedSize
//     bytes, or with a zero DrawnAt, is EINVALID and writes nothing;
//   - DrawsDue lists the draws not released of sales opened and shows
//     not started, drawn or not; MarkDrawReleased takes a drawn one off
//     (an undrawn one stays), any number of times; without a draw it is
//     ENOTFOUND.

func (s suite) draws(t *testing.T) {
	s.test(t, "CreateEventWithADrawSeedCommitsToIt", func(t *testing.T, f *fixture) {
		e := f.newEvent()
		e.SaleMode = boxoffice.SaleQueued
		e.DrawSeed = drawSeed(1)
		// Sub-millisecond digits and a zone other than UTC, as in
		// CreateEventThenEventReturnsItWithSections.
		e.CreatedAt = time.Date(2030, 5, 1, 9, 0, 0, 1_999_999, time.FixedZone("JST", 9*3600))
		if err := f.store.CreateEvent(f.ctx, e); err != nil {
			t.Fatalf("CreateEvent: %v", err)
		}
		want := &boxoffice.Draw{EventID: e.ID, Seed: drawSeed(1), CommittedAt: ms(e.CreatedAt)}
		if diff := cmp.Diff(want, f.draw(e.ID), opts); diff != "" {
			t.Errorf("Draw mismatch (-want +got):\n%s", diff)
		}
		got, err := f.store.Event(f.ctx, e.ID)
		if err != nil {
			t.Fatalf("Event: %v", err)
		}
		if got.DrawSeed != nil {
			t.Errorf("Event gives the seed back (%x): only Draw may", got.DrawSeed)
		}
		// Another event, without a seed, has no draw.
		other := f.createEvent()
		_, err = f.store.Draw(f.ctx, other.ID)
		wantCode(t, "Draw(event without a seed)", err, boxoffice.ENOTFOUND)
	})

	s.test(t, "CreateEventWithASeedOfTheWrongSizeIsInvalid", func(t *testing.T, f *fixture) {
		for _, n := range []int{0, boxoffice.DrawSeedSize - 1, boxoffice.DrawSeedSize + 1} {
			e := f.newEvent()
			e.SaleMode = boxoffice.SaleQueued
			e.DrawSeed = make([]byte, n)
			wantCode(t, "CreateEvent(seed of "+strconv.Itoa(n)+" bytes)", f.store.CreateEvent(f.ctx, e), boxoffice.EINVALID)
			_, err := f.store.Event(f.ctx, e.ID)
			wantCode(t, "Event(refused)", err, boxoffice.ENOTFOUND)
			_, err = f.store.Draw(f.ctx, e.ID)
			wantCode(t, "Draw(refused)", err, boxoffice.ENOTFOUND)
		}
	})

	s.test(t, "RecordDrawThenDrawReturnsTheOrder", func(t *testing.T, f *fixture) {
		e := f.createQueuedEvent(drawSeed(2))
		// Snowflake-size ids and the extremes of int64, in drawn (not
		// sorted) order: every byte of the encoding counts.
		var ids []boxoffice.ID
		for i := range 3000 {
			ids = append(ids, boxoffice.ID(1<<62)+boxoffice.ID(i*7919))
		}
		ids = append(ids, 1, 255, 256, 1<<32, math.MaxInt64, math.MinInt64, -1)
		order := boxoffice.DrawOrder(drawSeed(2), ids)
		drawnAt := t0.Add(123_456_789) // sub-millisecond digits, dropped
		f.recordDraw(&boxoffice.Draw{EventID: e.ID, Seed: drawSeed(2), DrawnAt: drawnAt, FirstPosition: 41, Order: order})
		want := &boxoffice.Draw{
			EventID: e.ID, Seed: drawSeed(2), CommittedAt: ms(e.CreatedAt),
			DrawnAt: ms(drawnAt), FirstPosition: 41, Order: order,
		}
		if diff := cmp.Diff(want, f.draw(e.ID), opts); diff != "" {
			t.Fatalf("Draw after RecordDraw mismatch (-want +got):\n%s", diff)
		}

		// A second draw, of other requests with another seed, changes
		// nothing.
		f.recordDraw(&boxoffice.Draw{
			EventID: e.ID, Seed: drawSeed(3), DrawnAt: drawnAt.Add(time.Hour), FirstPosition: 1,
			Order: []boxoffice.ID{9, 8, 7},
		})
		if diff := cmp.Diff(want, f.draw(e.ID), opts); diff != "" {
			t.Errorf("Draw after a second RecordDraw changed (-want +got):\n%s", diff)
		}
	})

	t.Run("RecordDrawKeepsTheSeedStoredAtCreateEvent", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			seed []byte
		}{
			{"AnotherSeed", drawSeed(4)},
			{"NoSeed", nil},
			{"ASeedOfTheWrongSize", []byte("short")},
		} {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createQueuedEvent(drawSeed(5))
				order := []boxoffice.ID{1 << 62, 3, 1<<62 + 1}
				f.recordDraw(&boxoffice.Draw{EventID: e.ID, Seed: tc.seed, DrawnAt: t0, FirstPosition: 1, Order: order})
				want := &boxoffice.Draw{
					EventID: e.ID, Seed: drawSeed(5), CommittedAt: ms(e.CreatedAt),
					DrawnAt: t0, FirstPosition: 1, Order: order,
				}
				if diff := cmp.Diff(want, f.draw(e.ID), opts); diff != "" {
					t.Errorf("Draw mismatch (-want +got):\n%s", diff)
				}
			})
		}
	})

	s.test(t, "RecordDrawOfAnEventWithoutADrawInsertsIt", func(t *testing.T, f *fixture) {
		e := f.createEvent() // created without a seed
		_, err := f.store.Draw(f.ctx, e.ID)
		wantCode(t, "Draw(before the draw)", err, boxoffice.ENOTFOUND)

		// Without a seed to commit to, there is nothing to record.
		for _, seed := range [][]byte{nil, make([]byte, boxoffice.DrawSeedSize-1)} {
			err := f.store.RecordDraw(f.ctx, &boxoffice.Draw{EventID: e.ID, Seed: seed, DrawnAt: t0, FirstPosition: 1, Order: []boxoffice.ID{1}})
			wantCode(t, "RecordDraw(seed of "+strconv.Itoa(len(seed))+" bytes)", err, boxoffice.EINVALID)
			_, err = f.store.Draw(f.ctx, e.ID)
			wantCode(t, "Draw(after a refused RecordDraw)", err, boxoffice.ENOTFOUND)
		}

		drawnAt := t0.Add(5*time.Minute + 999_999)
		order := []boxoffice.ID{1<<62 + 2, 1<<62 + 9, 1<<62 + 1}
		f.recordDraw(&boxoffice.Draw{EventID: e.ID, Seed: drawSeed(6), DrawnAt: drawnAt, FirstPosition: 3, Order: order})
		want := &boxoffice.Draw{
			EventID: e.ID, Seed: drawSeed(6), CommittedAt: ms(drawnAt),
			DrawnAt: ms(drawnAt), FirstPosition: 3, Order: order,
		}
		if diff := cmp.Diff(want, f.draw(e.ID), opts); diff != "" {
			t.Fatalf("Draw mismatch (-want +got):\n%s", diff)
		}
		f.recordDraw(&boxoffice.Draw{EventID: e.ID, Seed: drawSeed(7), DrawnAt: drawnAt.Add(time.Hour), FirstPosition: 1})
		if diff := cmp.Diff(want, f.draw(e.ID), opts); diff != "" {
			t.Errorf("Draw after a second RecordDraw changed (-want +got):\n%s", diff)
		}
	})

	s.test(t, "AnEmptyOrderIsADraw", func(t *testing.T, f *fixture) {
		e := f.createQueuedEvent(drawSeed(8))
		f.recordDraw(&boxoffice.Draw{EventID: e.ID, Seed: drawSeed(8), DrawnAt: t0, FirstPosition: 1})
		got := f.draw(e.ID)
		want := &boxoffice.Draw{EventID: e.ID, Seed: drawSeed(8), CommittedAt: ms(e.CreatedAt), DrawnAt: t0, FirstPosition: 1}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Fatalf("Draw mismatch (-want +got):\n%s", diff)
		}
		if !got.Drawn() || len(got.Order) != 0 {
			t.Fatalf("Draw: drawn %v with %d requests, want drawn with none", got.Drawn(), len(got.Order))
		}
		// Drawn all the same: a later draw of requests changes nothing.
		f.recordDraw(&boxoffice.Draw{EventID: e.ID, Seed: drawSeed(8), DrawnAt: t0.Add(time.Hour), FirstPosition: 1, Order: []boxoffice.ID{1, 2}})
		if diff := cmp.Diff(want, f.draw(e.ID), opts); diff != "" {
			t.Errorf("Draw after a second RecordDraw changed (-want +got):\n%s", diff)
		}
	})

	s.test(t, "RecordDrawWithoutDrawnAtIsInvalid", func(t *testing.T, f *fixture) {
		e := f.createQueuedEvent(drawSeed(9))
		err := f.store.RecordDraw(f.ctx, &boxoffice.Draw{EventID: e.ID, Seed: drawSeed(9), FirstPosition: 1, Order: []boxoffice.ID{1}})
		wantCode(t, "RecordDraw(zero DrawnAt)", err, boxoffice.EINVALID)
		if got := f.draw(e.ID); got.Drawn() || len(got.Order) != 0 {
			t.Errorf("Draw after a refused RecordDraw: drawn at %v with %d requests, want undrawn", got.DrawnAt, len(got.Order))
		}
	})

	s.test(t, "DrawAndRecordDrawOfAnUnknownEventAreNotFound", func(t *testing.T, f *fixture) {
		f.createQueuedEvent(drawSeed(10))
		const unknown = 424242
		_, err := f.store.Draw(f.ctx, unknown)
		wantCode(t, "Draw(unknown)", err, boxoffice.ENOTFOUND)
		for _, seed := range [][]byte{drawSeed(10), nil} {
			err = f.store.RecordDraw(f.ctx, &boxoffice.Draw{EventID: unknown, Seed: seed, DrawnAt: t0, FirstPosition: 1, Order: []boxoffice.ID{1}})
			wantCode(t, "RecordDraw(unknown, seed of "+strconv.Itoa(len(seed))+" bytes)", err, boxoffice.ENOTFOUND)
		}
		_, err = f.store.Draw(f.ctx, unknown)
		wantCode(t, "Draw(unknown, after RecordDraw)", err, boxoffice.ENOTFOUND)
	})

	s.test(t, "DrawsDueListsTheOpenedSalesNotReleased", func(t *testing.T, f *fixture) {
		queued := func(tag byte, opens, starts time.Duration) *boxoffice.Event {
			e := f.newEvent()
			e.SaleMode = boxoffice.SaleQueued
			e.DrawSeed = drawSeed(tag)
			e.SaleOpensAt, e.StartsAt = t0.Add(opens), t0.Add(starts)
			if err := f.store.CreateEvent(f.ctx, e); err != nil {
				t.Fatalf("CreateEvent: %v", err)
			}
			return e
		}
		const month = 30 * 24 * time.Hour
		due := queued(20, -time.Hour, month)
		dueFirst := queued(21, -2*time.Hour, month)
		opensLater := queued(22, time.Hour, month)
		drawn := queued(23, -time.Hour, month)
		f.recordDraw(&boxoffice.Draw{EventID: drawn.ID, DrawnAt: t0.Add(-time.Minute)})
		f.markDrawReleased(drawn.ID)
		started := queued(24, -3*time.Hour, 0) // the show starts at t0
		direct := f.createEvent()
		seedless := f.newEvent() // no row: not opened through DrawsDue
		seedless.SaleMode = boxoffice.SaleQueued
		if err := f.store.CreateEvent(f.ctx, seedless); err != nil {
			t.Fatalf("CreateEvent: %v", err)
		}
		byID := cmpopts.SortSlices(func(a, b boxoffice.ID) bool { return a < b })
		mine := map[boxoffice.ID]bool{due.ID: true, dueFirst.ID: true, opensLater.ID: true, drawn.ID: true,
			started.ID: true, direct.ID: true, seedless.ID: true}
		// dueAt lists this test's events due at now (the store may hold
		// others'). The order is not compared: a sharded store lists each
		// shard's oldest first, in turns.
		dueAt := func(now time.Time, limit int) []boxoffice.ID {
			t.Helper()
			ids, err := f.store.DrawsDue(f.ctx, now, limit)
			if err != nil {
				t.Fatalf("DrawsDue: %v", err)
			}
			if len(ids) > limit {
				t.Errorf("DrawsDue(limit %d) gave %d", limit, len(ids))
			}
			var out []boxoffice.ID
			for _, id := range ids {
				if mine[id] {
					out = append(out, id)
				}
			}
			return out
		}
		if diff := cmp.Diff([]boxoffice.ID{dueFirst.ID, due.ID}, dueAt(t0, 100), byID); diff != "" {
			t.Errorf("due at t0 (-want +got):\n%s", diff)
		}
		// An opening at exactly now is due.
		if diff := cmp.Diff([]boxoffice.ID{dueFirst.ID, due.ID, opensLater.ID}, dueAt(t0.Add(time.Hour), 100), byID); diff != "" {
			t.Errorf("due at t0+1h (-want +got):\n%s", diff)
		}
		// The show that starts at t0 was due while its sale ran.
		if diff := cmp.Diff([]boxoffice.ID{started.ID, dueFirst.ID}, dueAt(t0.Add(-90*time.Minute), 100), byID); diff != "" {
			t.Errorf("due at t0-90m (-want +got):\n%s", diff)
		}
		if got := dueAt(t0.Add(-3*time.Hour-time.Millisecond), 100); len(got) != 0 {
			t.Errorf("due before any opening: %v", got)
		}
		if got, err := f.store.DrawsDue(f.ctx, t0, 1); err != nil || len(got) != 1 || (got[0] != dueFirst.ID && got[0] != due.ID) {
			t.Errorf("DrawsDue(limit 1) = %v, %v; want one of %v", got, err, []boxoffice.ID{dueFirst.ID, due.ID})
		}
		if got, err := f.store.DrawsDue(f.ctx, t0, 0); err != nil || len(got) != 0 {
			t.Errorf("DrawsDue(limit 0) = %v, %v; want none", got, err)
		}
		// Marking an undrawn draw released changes nothing.
		f.markDrawReleased(due.ID)
		// Drawn, it is due until released (an opener that died in between
		// is finished by the next), then no longer, marked once or twice.
		f.recordDraw(&boxoffice.Draw{EventID: dueFirst.ID, DrawnAt: t0, FirstPosition: 1, Order: []boxoffice.ID{7}})
		if diff := cmp.Diff([]boxoffice.ID{dueFirst.ID, due.ID}, dueAt(t0, 100), byID); diff != "" {
			t.Errorf("due after a draw (-want +got):\n%s", diff)
		}
		f.markDrawReleased(dueFirst.ID)
		f.markDrawReleased(dueFirst.ID)
		if diff := cmp.Diff([]boxoffice.ID{due.ID}, dueAt(t0, 100), byID); diff != "" {
			t.Errorf("due after the release (-want +got):\n%s", diff)
		}
		if d := f.draw(dueFirst.ID); !d.Drawn() || !cmp.Equal(d.Order, []boxoffice.ID{7}) {
			t.Errorf("draw after the release: %+v", d)
		}
		wantCode(t, "MarkDrawReleased(event without a draw)", f.store.MarkDrawReleased(f.ctx, direct.ID), boxoffice.ENOTFOUND)
		wantCode(t, "MarkDrawReleased(unknown)", f.store.MarkDrawReleased(f.ctx, 424242), boxoffice.ENOTFOUND)
	})
}

// drawSeed returns a seed of DrawSeedSize bytes made from tag, with a zero
// byte and a 0xff byte in it.
func drawSeed(tag byte) []byte {
	seed := make([]byte, boxoffice.DrawSeedSize)
	for i := range seed {
		seed[i] = tag + byte(i*37)
	}
	seed[3], seed[boxoffice.DrawSeedSize-1] = 0, 0xff
	return seed
}

// createQueuedEvent saves a queued newEvent committed to seed and returns
// it.
func (f *fixture) createQueuedEvent(seed []byte) *boxoffice.Event {
	f.t.Helper()
	e := f.newEvent()
	e.SaleMode = boxoffice.SaleQueued
	e.DrawSeed = seed
	if err := f.store.CreateEvent(f.ctx, e); err != nil {
		f.t.Fatalf("CreateEvent: %v", err)
	}
	return e
}

// draw reads an event's draw, which must exist.
func (f *fixture) draw(eventID boxoffice.ID) *boxoffice.Draw {
	f.t.Helper()
	d, err := f.store.Draw(f.ctx, eventID)
	if err != nil {
		f.t.Fatalf("Draw(%d): %v", eventID, err)
	}
	return d
}

// markDrawReleased marks the event's draw released, which must succeed.
func (f *fixture) markDrawReleased(eventID boxoffice.ID) {
	f.t.Helper()
	if err := f.store.MarkDrawReleased(f.ctx, eventID); err != nil {
		f.t.Fatalf("MarkDrawReleased(%d): %v", eventID, err)
	}
}

// recordDraw records d, which must succeed.
func (f *fixture) recordDraw(d *boxoffice.Draw) {
	f.t.Helper()
	if err := f.store.RecordDraw(f.ctx, d); err != nil {
		f.t.Fatalf("RecordDraw(%d): %v", d.EventID, err)
	}
}
