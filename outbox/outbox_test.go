package outbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/outbox"
	"github.com/boxoffice/boxoffice/sqlite"
)

// t0 is the bookings' clock; the relay runs on the real one.
var t0 = time.Now().UTC().Truncate(time.Millisecond)

// quiet drops the relay's logs; a test that reads them makes its own.
var quiet = slog.New(slog.DiscardHandler)

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "boxoffice.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sale makes bookings on one event of a store and knows which events they
// must have produced.
type sale struct {
	t     *testing.T
	store *sqlite.Store
	event *boxoffice.Event
	seats []boxoffice.Seat
	next  atomic.Int64 // ids and fences

	mu   sync.Mutex
	want map[string]bool // event ids
}

func newSale(t *testing.T, s *sqlite.Store, seats int) *sale {
	t.Helper()
	sl := &sale{t: t, store: s, want: map[string]bool{}}
	sl.next.Store(1000)
	sl.event = &boxoffice.Event{
		ID: sl.nextID(), Name: "Relay", Venue: "Hall", StartsAt: t0.Add(24 * time.Hour), SaleOpensAt: t0.Add(-time.Hour),
		SaleMode: boxoffice.SaleDirect, TicketLimit: boxoffice.MaxTicketLimit, CreatedAt: t0,
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 2500, Rows: 1, SeatsPerRow: seats}},
	}
	if err := s.CreateEvent(t.Context(), sl.event); err != nil {
		t.Fatalf("CreateEvent: %v", err)
	}
	sl.seats = sl.event.Seats()
	return sl
}

func (sl *sale) nextID() boxoffice.ID { return boxoffice.ID(sl.next.Add(1)) }

// buy books seat i and confirms it. It is safe for concurrent use and
// returns the error instead of failing the test.
func (sl *sale) buy(ctx context.Context, i int) error {
	b := &boxoffice.Booking{
		ID: sl.nextID(), EventID: sl.event.ID, UserID: fmt.Sprint("user-", i), SeatIDs: []string{sl.seats[i].ID},
		Fence: int64(sl.nextID()), AmountCents: 2500, HeldUntil: t0.Add(10 * time.Minute), CreatedAt: t0, UpdatedAt: t0,
	}
	if err := sl.store.CreateBooking(ctx, boxoffice.NewBooking{Booking: b, TicketLimit: boxoffice.MaxTicketLimit}); err != nil {
		return err
	}
	sl.expect(boxoffice.TopicBookingHeld, b.ID)
	ticket := sl.nextID()
	if _, err := sl.store.ConfirmBooking(ctx, boxoffice.ConfirmBooking{
		BookingID: b.ID, Fence: b.Fence, Now: t0.Add(time.Minute), Code: fmt.Sprint("C", b.ID),
		Tickets: []boxoffice.Ticket{{ID: ticket, SeatID: b.SeatIDs[0], Code: fmt.Sprint("T", ticket)}},
		Payment: boxoffice.Payment{AuthID: fmt.Sprint("auth-", b.ID), AmountCents: b.AmountCents},
	}); err != nil {
		return err
	}
	sl.expect(boxoffice.TopicBookingConfirmed, b.ID)
	return nil
}

func (sl *sale) expect(topic string, id boxoffice.ID) {
	sl.mu.Lock()
	sl.want[topic+":"+id.String()] = true
	sl.mu.Unlock()
}

// buyAll buys seats [from, to) one after the other.
func (sl *sale) buyAll(from, to int) {
	sl.t.Helper()
	for i := from; i < to; i++ {
		if err := sl.buy(sl.t.Context(), i); err != nil {
			sl.t.Fatalf("buy seat %d: %v", i, err)
		}
	}
}

// wanted returns a copy of the events expected so far.
func (sl *sale) wanted() map[string]bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	out := make(map[string]bool, len(sl.want))
	for id := range sl.want {
		out[id] = true
	}
	return out
}

// broker is a Publisher that records every event it was given, duplicates
// included, as a consumer would receive them. fail, when set, is asked
// before each call how many events of the batch to publish before
// failing (-1: publish all, succeed). It is safe for concurrent use, and
// several relays may share one.
type broker struct {
	fail  func(call int) int
	delay time.Duration // per call, to give rival relays a chance to overlap

	mu       sync.Mutex
	calls    int
	got      []boxoffice.OutboxEvent
	inFlight int
	overlap  bool // two Publish calls were ever in flight at once
}

var errBroker = errors.New("broker: leader not available")

func (b *broker) Publish(ctx context.Context, evs []boxoffice.OutboxEvent) error {
	b.mu.Lock()
	b.calls++
	call := b.calls
	b.inFlight++
	if b.inFlight > 1 {
		b.overlap = true
	}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.inFlight--
		b.mu.Unlock()
	}()

	if b.delay > 0 {
		time.Sleep(b.delay)
	}
	k := -1
	if b.fail != nil {
		k = b.fail(call)
	}
	if k < 0 || k > len(evs) {
		k = len(evs)
	}
	b.mu.Lock()
	b.got = append(b.got, evs[:k]...)
	b.mu.Unlock()
	if k < len(evs) {
		return errBroker
	}
	return nil
}

// received returns every event received, in order, duplicates included.
func (b *broker) received() []boxoffice.OutboxEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]boxoffice.OutboxEvent(nil), b.got...)
}

// dedupe is the consumer's side: the first copy of each event ID, in the
// order received, and how many copies were dropped.
func dedupe(evs []boxoffice.OutboxEvent) (unique []boxoffice.OutboxEvent, dups int) {
	seen := map[string]bool{}
	for _, ev := range evs {
		if seen[ev.ID] {
			dups++
			continue
		}
		seen[ev.ID] = true
		unique = append(unique, ev)
	}
	return unique, dups
}

func ids(evs []boxoffice.OutboxEvent) map[string]bool {
	out := make(map[string]bool, len(evs))
	for _, ev := range evs {
		out[ev.ID] = true
	}
	return out
}

// wantExactlyOnce fails unless, after de-duplication, the broker received
// each expected event once and nothing else, and nothing is left pending.
// It returns the de-duplicated events.
func wantExactlyOnce(t *testing.T, s boxoffice.OutboxStore, sl *sale, b *broker) []boxoffice.OutboxEvent {
	t.Helper()
	unique, _ := dedupe(b.received())
	if diff := cmp.Diff(sl.wanted(), ids(unique)); diff != "" {
		t.Errorf("events received, de-duplicated (-want +got):\n%s", diff)
	}
	if pending, err := s.PendingOutbox(t.Context(), 1000); err != nil || len(pending) != 0 {
		t.Errorf("PendingOutbox = %d events, %v; want none left", len(pending), err)
	}
	return unique
}

// wantKept fails unless the outbox keeps the published events (every one
// of sl's, a relay that marks) or none of them (one that drops them). A
// purge far in the future counts them, and deletes them.
func wantKept(t *testing.T, s boxoffice.OutboxStore, sl *sale, drop bool) {
	t.Helper()
	want := len(sl.wanted())
	if drop {
		want = 0
	}
	if n, err := s.PurgeOutbox(t.Context(), time.Now().Add(1000*24*time.Hour)); err != nil || n != want {
		t.Errorf("published events kept in the outbox: %d, %v; want %d (DropPublished %v)", n, err, want, drop)
	}
}

// wantInSeqOrder fails unless the first copies arrived in seq order, so
// that one booking's events reach its consumers in the order they happened.
func wantInSeqOrder(t *testing.T, unique []boxoffice.OutboxEvent) {
	t.Helper()
	for i := 1; i < len(unique); i++ {
		if unique[i].Seq <= unique[i-1].Seq {
			t.Fatalf("event %s (seq %d) first received after %s (seq %d)",
				unique[i].ID, unique[i].Seq, unique[i-1].ID, unique[i-1].Seq)
		}
	}
}

// waitFor polls until the broker has every expected event or the deadline
// passes.
func waitFor(t *testing.T, sl *sale, b *broker, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		unique, _ := dedupe(b.received())
		if cmp.Equal(sl.wanted(), ids(unique)) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("after %v the broker has %d distinct events of %d", within, len(ids(b.received())), len(sl.wanted()))
}

// waitMarked polls until no outbox event is left pending, or the deadline
// passes (wantExactlyOnce then says how many are).
func waitMarked(t *testing.T, s boxoffice.OutboxStore, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if pending, err := s.PendingOutbox(t.Context(), 1); err == nil && len(pending) == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// modes runs test with a relay that marks its batches and with one that
// deletes them (DropPublished): the same promises hold.
func modes(t *testing.T, test func(t *testing.T, drop bool)) {
	t.Run("Mark", func(t *testing.T) { test(t, false) })
	t.Run("Drop", func(t *testing.T) { test(t, true) })
}

func TestRelayPublishesEveryEventOnceAfterDedupDespitePartialPublishes(t *testing.T) {
	modes(t, testPartialPublishes)
}

func testPartialPublishes(t *testing.T, drop bool) {
	s := openStore(t)
	sl := newSale(t, s, 30)
	sl.buyAll(0, 30) // 60 events
	// Every other call publishes 3 events of its batch and fails: a broker
	// that went away mid-batch, or a relay that crashed there.
	b := &broker{fail: func(call int) int {
		if call%2 == 1 {
			return 3
		}
		return -1
	}}
	r := &outbox.Relay{Store: s, Publisher: b, Leases: inmem.NewLeases(nil), Log: quiet, BatchSize: 7, DropPublished: drop}

	failures := 0
	for {
		_, err := r.Drain(t.Context())
		if err == nil {
			break
		}
		if got := boxoffice.ErrorCode(err); got != boxoffice.EUNAVAILABLE || !errors.Is(err, errBroker) {
			t.Fatalf("Drain: %v (code %s), want the broker's error as %s", err, got, boxoffice.EUNAVAILABLE)
		}
		if failures++; failures > 100 {
			t.Fatal("Drain keeps failing")
		}
	}
	unique := wantExactlyOnce(t, s, sl, b)
	wantInSeqOrder(t, unique)
	wantKept(t, s, sl, drop)
	if _, dups := dedupe(b.received()); dups != 3*failures {
		t.Errorf("%d duplicates received, want %d (3 per failed batch, published again)", dups, 3*failures)
	}
}

// crashedLeases hands out leases that are never released: the process that
// held one died, so it ends only with its ttl.
type crashedLeases struct{ boxoffice.Leases }

func (l crashedLeases) TryLease(ctx context.Context, key string, ttl time.Duration) (func(), error) {
	if _, err := l.Leases.TryLease(ctx, key, ttl); err != nil {
		return nil, err
	}
	return func() {}, nil
}

func TestRelayCrashMidBatchThenANewRelayTakesOver(t *testing.T) {
	modes(t, testCrashMidBatch)
}

func testCrashMidBatch(t *testing.T, drop bool) {
	s := openStore(t)
	sl := newSale(t, s, 40)
	sl.buyAll(0, 20)
	leases := inmem.NewLeases(nil)

	// The first relay's third batch publishes 4 events, then hangs until
	// the process dies (its context is cancelled). It never releases its
	// lease.
	stuck := make(chan struct{})
	var first broker
	hang := &hangingPublisher{broker: &first, after: 2, k: 4, stuck: stuck}
	ctx, crash := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		r := &outbox.Relay{Store: s, Publisher: hang, Leases: crashedLeases{leases}, Log: quiet,
			BatchSize: 6, Interval: 5 * time.Millisecond, LeaseTTL: 300 * time.Millisecond, DropPublished: drop}
		done <- r.Run(ctx)
	}()
	select {
	case <-stuck:
	case <-time.After(10 * time.Second):
		t.Fatal("the first relay never reached its third batch")
	}
	crash()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	// The sale goes on; a new relay (another process, on the same broker)
	// waits out the dead one's lease and publishes the rest.
	restarted := &broker{}
	restarted.got = first.received()
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	go func() {
		r := &outbox.Relay{Store: s, Publisher: restarted, Leases: leases, Log: quiet,
			BatchSize: 6, Interval: 5 * time.Millisecond, LeaseTTL: 300 * time.Millisecond, DropPublished: drop}
		done <- r.Run(ctx)
	}()
	sl.buyAll(20, 40)
	waitFor(t, sl, restarted, 30*time.Second)
	// As in the two-relays test: the last batch reaches the broker before
	// the relay marks it, and stopping in between would leave it pending.
	waitMarked(t, s, 30*time.Second)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	unique := wantExactlyOnce(t, s, sl, restarted)
	wantInSeqOrder(t, unique)
	wantKept(t, s, sl, drop)
	if _, dups := dedupe(restarted.received()); dups != 4 {
		t.Errorf("%d duplicates received, want 4 (the crashed batch's published part)", dups)
	}
}

// hangingPublisher publishes through broker; its call after+1 publishes k
// events, closes stuck and blocks until ctx ends, and so does every call
// after it, publishing nothing. One relay uses it.
type hangingPublisher struct {
	*broker
	after, k int
	stuck    chan struct{}
	calls    int
}

func (p *hangingPublisher) Publish(ctx context.Context, evs []boxoffice.OutboxEvent) error {
	if p.calls++; p.calls <= p.after {
		return p.broker.Publish(ctx, evs)
	}
	if p.calls == p.after+1 {
		p.broker.Publish(ctx, evs[:min(p.k, len(evs))])
		close(p.stuck)
	}
	<-ctx.Done()
	return ctx.Err()
}

func TestTwoRelaysAtOnceYieldEveryEventOnceAfterDedup(t *testing.T) {
	s := openStore(t)
	sl := newSale(t, s, 48)
	leases := inmem.NewLeases(nil)
	b := &broker{delay: time.Millisecond}

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var relays sync.WaitGroup
	for range 2 {
		relays.Go(func() {
			r := &outbox.Relay{Store: s, Publisher: b, Leases: leases, Log: quiet,
				BatchSize: 5, Interval: 2 * time.Millisecond, LeaseTTL: 10 * time.Second}
			if err := r.Run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	// Four buyers at once, while both relays run.
	var buyers sync.WaitGroup
	for w := range 4 {
		buyers.Go(func() {
			for i := w; i < 48; i += 4 {
				if err := sl.buy(t.Context(), i); err != nil {
					t.Errorf("buy seat %d: %v", i, err)
				}
			}
		})
	}
	buyers.Wait()
	waitFor(t, sl, b, 30*time.Second)
	// The last batch is on the broker before the relay marks it: stopping
	// the relays in between would leave it pending (it would be published
	// again by the next relay, which is the point, but not in this test).
	waitMarked(t, s, 30*time.Second)
	stop()
	relays.Wait()

	// At least once, and exactly once after de-duplication.
	wantExactlyOnce(t, s, sl, b)
	if b.overlap {
		t.Error("two relays published at the same time: the lease did not hold")
	}
}

// purges records the cutoffs of PurgeOutbox.
type purges struct {
	boxoffice.OutboxStore
	mu      sync.Mutex
	cutoffs []time.Time
	deleted int
}

func (p *purges) PurgeOutbox(ctx context.Context, cutoff time.Time) (int, error) {
	n, err := p.OutboxStore.PurgeOutbox(ctx, cutoff)
	p.mu.Lock()
	p.cutoffs = append(p.cutoffs, cutoff)
	p.deleted += n
	p.mu.Unlock()
	return n, err
}

func TestRunPurgesWhatWasPublishedADayAgo(t *testing.T) {
	s := openStore(t)
	sl := newSale(t, s, 5)
	sl.buyAll(0, 5)
	published := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	first := &outbox.Relay{Store: s, Publisher: &broker{}, Leases: inmem.NewLeases(nil), Log: quiet,
		Now: func() time.Time { return published }}
	if n, err := first.Drain(t.Context()); err != nil || n != 10 {
		t.Fatalf("Drain = %d, %v; want 10 events", n, err)
	}

	for _, tc := range []struct {
		name    string
		now     time.Time
		deleted int
	}{
		{"ADayLater", published.Add(outbox.Retention), 0},
		{"MoreThanADayLater", published.Add(outbox.Retention + time.Millisecond), 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &purges{OutboxStore: s}
			r := &outbox.Relay{Store: p, Publisher: &broker{}, Leases: inmem.NewLeases(nil), Log: quiet,
				Now: func() time.Time { return tc.now }}
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			if err := r.Run(ctx); err != nil {
				t.Fatalf("Run: %v", err)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if len(p.cutoffs) != 1 || !p.cutoffs[0].Equal(tc.now.Add(-outbox.Retention)) {
				t.Errorf("PurgeOutbox cutoffs %v, want one at %v (the start, then hourly)", p.cutoffs, tc.now.Add(-outbox.Retention))
			}
			if p.deleted != tc.deleted {
				t.Errorf("purged %d events, want %d", p.deleted, tc.deleted)
			}
		})
	}
}

func TestRunBacksOffWhilePublishingFails(t *testing.T) {
	s := openStore(t)
	newSale(t, s, 1).buyAll(0, 1)
	b := &broker{fail: func(int) int { return 0 }}
	r := &outbox.Relay{Store: s, Publisher: b, Leases: inmem.NewLeases(nil), Log: quiet, Interval: 10 * time.Millisecond}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	// At a fixed 10ms that would be some 50 calls; waiting 20, 40, 80, 160
	// and 320ms after the failures it is at most 5.
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.calls < 2 || b.calls > 6 {
		t.Errorf("%d publish calls in 500ms, want 2 to 6 (exponential backoff from 10ms)", b.calls)
	}
}

func TestBackoffDoublesUpToFiveSeconds(t *testing.T) {
	var got []time.Duration
	for failures := 1; failures <= 8; failures++ {
		got = append(got, outbox.Backoff(200*time.Millisecond, failures))
	}
	want := []time.Duration{400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond,
		5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
}

func TestRunOnceSkipsWhileAnotherRelayHoldsTheLease(t *testing.T) {
	s := openStore(t)
	newSale(t, s, 1).buyAll(0, 1)
	leases := inmem.NewLeases(nil)
	release, err := leases.TryLease(t.Context(), outbox.LeaseKey, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{}
	r := &outbox.Relay{Store: s, Publisher: b, Leases: leases, Log: quiet}
	n, err := r.RunOnce(t.Context())
	if n != 0 || boxoffice.ErrorCode(err) != boxoffice.EIDEMINFLIGHT {
		t.Fatalf("RunOnce under another relay's lease = %d, %v; want 0, %s", n, err, boxoffice.EIDEMINFLIGHT)
	}
	if len(b.received()) != 0 {
		t.Fatal("published without the lease")
	}
	release()
	if n, err := r.RunOnce(t.Context()); n != 2 || err != nil {
		t.Fatalf("RunOnce once the lease is free = %d, %v; want 2, nil", n, err)
	}
}

func TestRelayWithoutItsPartsIsInvalid(t *testing.T) {
	for _, r := range []*outbox.Relay{
		{},
		{Store: openStore(t), Publisher: &broker{}},
		{Store: openStore(t), Leases: inmem.NewLeases(nil)},
		{Publisher: &broker{}, Leases: inmem.NewLeases(nil)},
	} {
		if err := r.Run(t.Context()); boxoffice.ErrorCode(err) != boxoffice.EINVALID {
			t.Errorf("Run(%+v) = %v, want %s", r, err, boxoffice.EINVALID)
		}
		if _, err := r.RunOnce(t.Context()); boxoffice.ErrorCode(err) != boxoffice.EINVALID {
			t.Errorf("RunOnce(%+v) = %v, want %s", r, err, boxoffice.EINVALID)
		}
	}
}

func TestLogPublisherLogsAtDebugAndTheEventsCountAsPublished(t *testing.T) {
	for _, tc := range []struct {
		name   string
		level  slog.Level
		logged int
	}{
		{"AtDebug", slog.LevelDebug, 4},
		{"AboveDebug", slog.LevelInfo, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			sl := newSale(t, s, 2)
			sl.buyAll(0, 2)
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: tc.level}))
			r := &outbox.Relay{Store: s, Publisher: outbox.LogPublisher{Log: log}, Leases: inmem.NewLeases(nil), Log: quiet}
			if n, err := r.Drain(t.Context()); err != nil || n != 4 {
				t.Fatalf("Drain = %d, %v; want 4 events", n, err)
			}
			if pending, err := s.PendingOutbox(t.Context(), 10); err != nil || len(pending) != 0 {
				t.Errorf("PendingOutbox = %d, %v; want none: logged is published", len(pending), err)
			}
			got := map[string]bool{}
			for line := range strings.Lines(buf.String()) {
				var rec struct {
					Msg, ID, Topic, Key, Payload string
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				var p boxoffice.BookingEvent
				if err := json.Unmarshal([]byte(rec.Payload), &p); err != nil || p.ID != rec.ID || p.Type != rec.Topic {
					t.Errorf("logged payload %q of %s: %v", rec.Payload, rec.ID, err)
				}
				got[rec.ID] = true
			}
			if len(got) != tc.logged {
				t.Errorf("%d events logged, want %d:\n%s", len(got), tc.logged, buf.String())
			}
			if tc.logged > 0 {
				if diff := cmp.Diff(sl.wanted(), got); diff != "" {
					t.Errorf("events logged (-want +got):\n%s", diff)
				}
			}
		})
	}
}
