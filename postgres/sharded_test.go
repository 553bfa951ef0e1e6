package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/snowflake"
	"github.com/boxoffice/boxoffice/storetest"
)

// TestShardedStore runs the store contract on two shards (two schemas of
// the test server, which is all the contract can tell apart from two
// servers; apitest runs the service on two clusters). The suite's events
// alternate between the shards (the placement weighs seats), and its
// rows' ids are minted for their event's shard (PlaceID).
func TestShardedStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) boxoffice.Store {
		t.Parallel()
		return newSharded(t, 2)
	})
}

// newSharded opens a sharded store over n fresh schemas.
func newSharded(tb testing.TB, n int) *postgres.Sharded {
	tb.Helper()
	urls := make([]string, n)
	for i := range urls {
		urls[i] = freshSchema(tb)
	}
	s, err := postgres.OpenSharded(context.Background(), urls, postgres.ShardedConfig{})
	if err != nil {
		tb.Fatalf("OpenSharded: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func shardedEvent(id boxoffice.ID, seats int, mode boxoffice.SaleMode) *boxoffice.Event {
	return &boxoffice.Event{
		ID: id, Name: "Show", Venue: "Hall", StartsAt: time.Now().Add(48 * time.Hour).UTC(),
		SaleOpensAt: time.Now().Add(-time.Hour).UTC(), SaleMode: mode, TicketLimit: boxoffice.DefaultTicketLimit,
		Sections:  []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 1000, Rows: 1, SeatsPerRow: seats}},
		CreatedAt: time.Now().UTC(),
	}
}

// TestShardedPlacement: a hot event (a queued sale) gets a primary of its
// own, the other events go around it, and every request finds the event's
// rows on its shard by the event or by an id alone.
func TestShardedPlacement(t *testing.T) {
	ctx := t.Context()
	s := newSharded(t, 3)
	gen, err := snowflake.New(7, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := postgres.ShardedIDs{IDs: gen, Store: s}
	create := func(seats int, mode boxoffice.SaleMode) *boxoffice.Event {
		t.Helper()
		id, err := ids.NextID()
		if err != nil {
			t.Fatal(err)
		}
		e := shardedEvent(id, seats, mode)
		if err := s.CreateEvent(ctx, e); err != nil {
			t.Fatalf("CreateEvent: %v", err)
		}
		return e
	}
	shardOf := func(e *boxoffice.Event) int {
		t.Helper()
		k, err := s.ShardOf(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	hot := create(100, boxoffice.SaleQueued)
	hotShard := shardOf(hot)
	used := map[int]int{}
	for range 6 {
		e := create(100, boxoffice.SaleDirect)
		k := shardOf(e)
		if k == hotShard {
			t.Fatalf("a direct sale was placed on shard %d, the hot event's, while two others had no hot event", k)
		}
		used[k]++
	}
	if len(used) != 2 || used[0]+used[1]+used[2] != 6 {
		t.Fatalf("direct sales per shard = %v, want spread over the two shards without the hot event", used)
	}
	hot2 := create(100, boxoffice.SaleQueued)
	if shardOf(hot2) == hotShard {
		t.Fatalf("a second hot event went to the first one's shard while others had none")
	}

	// An event's rows are on its shard, and found there by id alone.
	for _, e := range []*boxoffice.Event{hot, hot2} {
		bid, err := ids.NextIDFor(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if postgres.ShardOfID(bid) != shardOf(e) {
			t.Fatalf("booking id %d names shard %d, its event is on %d", bid, postgres.ShardOfID(bid), shardOf(e))
		}
		b := &boxoffice.Booking{ID: bid, EventID: e.ID, UserID: "u", SeatIDs: []string{"A-A-1"}, Status: boxoffice.BookingPending,
			Fence: 1, AmountCents: 1000, HeldUntil: time.Now().Add(time.Minute), CreatedAt: time.Now(), UpdatedAt: time.Now()}
		if err := s.CreateBooking(ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8}); err != nil {
			t.Fatalf("CreateBooking: %v", err)
		}
		got, err := s.Booking(ctx, bid)
		if err != nil || got.EventID != e.ID {
			t.Fatalf("Booking(%d) = %v, %v", bid, got, err)
		}
		// The other shards do not have it: the row lives on one database.
		for k, st := range s.Shards() {
			_, err := st.Booking(ctx, bid)
			if found := err == nil; found != (k == shardOf(e)) {
				t.Fatalf("shard %d has booking %d: %v (event on shard %d)", k, bid, found, shardOf(e))
			}
		}
	}

	// A taken event id is ECONFLICT across shards: the directory's key.
	again := shardedEvent(hot.ID, 10, boxoffice.SaleDirect)
	if err := s.CreateEvent(ctx, again); boxoffice.ErrorCode(err) != boxoffice.ECONFLICT {
		t.Fatalf("CreateEvent(taken id) = %v, want ECONFLICT", err)
	}
	// The listing merges the shards, newest first.
	evs, err := s.Events(ctx, boxoffice.EventFilter{Limit: 5})
	if err != nil || len(evs) != 5 {
		t.Fatalf("Events = %d, %v", len(evs), err)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].ID >= evs[i-1].ID {
			t.Fatalf("Events not newest first: %d then %d", evs[i-1].ID, evs[i].ID)
		}
	}
}

// TestShardedJoinRefusesAWrongConfiguration: a process given the shards
// in another order, only some of them, or a database with events of its
// own as a new shard, refuses to start; given the same ones again, it
// starts.
func TestShardedJoinRefusesAWrongConfiguration(t *testing.T) {
	ctx := t.Context()
	a, b, c := freshSchema(t), freshSchema(t), freshSchema(t)
	open := func(urls ...string) error {
		s, err := postgres.OpenSharded(ctx, urls, postgres.ShardedConfig{})
		if err == nil {
			s.Close()
		}
		return err
	}
	if err := open(a, b); err != nil {
		t.Fatalf("first join: %v", err)
	}
	if err := open(a, b); err != nil {
		t.Fatalf("same shards again: %v", err)
	}
	for name, urls := range map[string][]string{
		"swapped":        {b, a},
		"directory only": {a},
		"shard alone":    {b},
	} {
		if err := open(urls...); boxoffice.ErrorCode(err) != boxoffice.EINVALID {
			t.Errorf("%s: OpenSharded = %v, want EINVALID", name, err)
		}
	}
	// A database with events of its own does not join as a new shard.
	st := openStore(t, c)
	gen, _ := snowflake.New(1, nil)
	id, _ := gen.NextID()
	if err := st.CreateEvent(ctx, shardedEvent(id, 10, boxoffice.SaleDirect)); err != nil {
		t.Fatal(err)
	}
	err := open(a, b, c)
	var be *boxoffice.Error
	if !errors.As(err, &be) || be.Code != boxoffice.EINVALID {
		t.Fatalf("joining a database with events = %v, want EINVALID", err)
	}
	if err := open(a, b); err != nil {
		t.Fatalf("after a refused join, the deployment opens as before: %v", err)
	}
	// The one database given alone says it is a shard.
	if k, ok, err := openStore(t, b).ShardIdentity(ctx); err != nil || !ok || k != 1 {
		t.Fatalf("ShardIdentity = %d, %v, %v; want shard 1", k, ok, err)
	}
}

// TestShardedSweepsPassOverADownShard: with one shard unreachable, the
// others' holds still expire; a read that needs the down shard is
// EUNAVAILABLE.
func TestShardedSweepsPassOverADownShard(t *testing.T) {
	ctx := t.Context()
	s := newSharded(t, 2)
	gen, _ := snowflake.New(3, nil)
	ids := postgres.ShardedIDs{IDs: gen, Store: s}
	var evs [2]*boxoffice.Event
	for i := range evs {
		id, _ := ids.NextID()
		evs[i] = shardedEvent(id, 10, boxoffice.SaleDirect)
		if err := s.CreateEvent(ctx, evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	k0, _ := s.ShardOf(ctx, evs[0].ID)
	k1, _ := s.ShardOf(ctx, evs[1].ID)
	if k0 == k1 {
		t.Fatalf("two equal events placed on one shard (%d) of two empty ones", k0)
	}
	past := time.Now().Add(-time.Hour)
	for _, e := range evs {
		bid, _ := ids.NextIDFor(ctx, e.ID)
		b := &boxoffice.Booking{ID: bid, EventID: e.ID, UserID: "u", SeatIDs: []string{"A-A-1"}, Status: boxoffice.BookingPending,
			Fence: 1, AmountCents: 1000, HeldUntil: past.Add(time.Minute), CreatedAt: past, UpdatedAt: past}
		if err := s.CreateBooking(ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8}); err != nil {
			t.Fatal(err)
		}
	}
	// Shard 1's pool closed: every statement there fails as an outage does.
	s.Shards()[1].Close()
	onZero := evs[0]
	if k0 != 0 {
		onZero = evs[1]
	}
	got, err := s.ExpireBookings(ctx, time.Now(), 100)
	if err != nil || len(got) != 1 || got[0].EventID != onZero.ID {
		t.Fatalf("ExpireBookings with shard 1 down = %v, %v; want shard 0's one booking", got, err)
	}
	if _, err := s.UserTickets(ctx, "u"); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Fatalf("UserTickets with a shard down = %v, want EUNAVAILABLE (a list with holes is not an answer)", err)
	}
}
