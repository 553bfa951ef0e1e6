package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/queuetest"
	"github.com/boxoffice/boxoffice/sqlite"
	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
)

var testLog = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// fake starts a broker for one test and returns a client on it.
func fake(t *testing.T) (*Client, []string) {
	t.Helper()
	seeds, stop, err := StartFake("127.0.0.1:0", DefaultPartitions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return open(t, seeds), seeds
}

func open(t *testing.T, seeds []string) *Client {
	t.Helper()
	c, err := Open(Config{Seeds: seeds, ClientID: "boxoffice-test", Logger: testLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newLog returns a request log with quick group membership and retries.
func newLog(c *Client, cfg RequestLogConfig) *RequestLog {
	cfg.HeartbeatInterval = 100 * time.Millisecond
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = 20 * time.Millisecond
	}
	return NewRequestLog(c, cfg)
}

var nextID atomic.Int64

func init() { nextID.Store(time.Now().UnixNano() >> 8) }

func request(user string, position int64) *boxoffice.QueuedRequest {
	id := boxoffice.ID(nextID.Add(1))
	wait := float64(position) / 10 // the wait the 202 told, which the worker measures
	return &boxoffice.QueuedRequest{ID: id, EventID: 7, UserID: user, SeatIDs: []string{"A-1-1", "A-1-2"},
		IdempotencyKey: "key-" + id.String(), RequestHash: "hash", Position: position,
		EnqueuedAt: time.Now().UTC().Truncate(time.Millisecond), EstimatedWait: &wait}
}

// appendRequests appends n requests of users user-0..user-(users-1), in
// chunks, and returns them in append order.
func appendRequests(t *testing.T, l *RequestLog, n, users int) []*boxoffice.QueuedRequest {
	t.Helper()
	var rs []*boxoffice.QueuedRequest
	for i := range n {
		rs = append(rs, request(fmt.Sprint("user-", i%users), int64(i+1)))
	}
	for chunk := range slices.Chunk(rs, 50) {
		if err := l.Append(t.Context(), chunk...); err != nil {
			t.Fatal(err)
		}
	}
	return rs
}

// tally counts deliveries by request id.
type tally struct {
	mu    sync.Mutex
	n     map[boxoffice.ID]int
	byID  map[boxoffice.ID]*boxoffice.QueuedRequest
	order map[string][]int64 // positions per user, in delivery order
}

func newTally() *tally {
	return &tally{n: map[boxoffice.ID]int{}, byID: map[boxoffice.ID]*boxoffice.QueuedRequest{}, order: map[string][]int64{}}
}

func (s *tally) add(batch []*boxoffice.QueuedRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range batch {
		s.n[r.ID]++
		s.byID[r.ID] = r
		s.order[r.UserID] = append(s.order[r.UserID], r.Position)
	}
}

func (s *tally) count(id boxoffice.ID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[id]
}

func (s *tally) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := 0
	for _, n := range s.n {
		sum += n
	}
	return sum
}

func (s *tally) hasAll(rs []*boxoffice.QueuedRequest) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rs {
		if s.n[r.ID] == 0 {
			return false
		}
	}
	return true
}

// consumer is one Consume running in the background.
type consumer struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

func consume(t *testing.T, l *RequestLog, handle func(ctx context.Context, batch []*boxoffice.QueuedRequest) error) *consumer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &consumer{cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- l.Consume(ctx, handle) }()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop ends the consumer as a shutdown or a crash would: its context ends,
// whatever its handler is doing.
func (c *consumer) stop(t *testing.T) {
	t.Helper()
	c.once.Do(func() {
		c.cancel()
		select {
		case err := <-c.done:
			if err != nil {
				t.Errorf("Consume: %v, want nil when its context ends", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("Consume did not return after its context ended")
		}
	})
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitLag(t *testing.T, l *RequestLog, want int64) {
	t.Helper()
	var got int64
	var err error
	waitFor(t, fmt.Sprintf("lag %d", want), func() bool {
		got, err = l.Lag(t.Context())
		return err == nil && got == want
	})
}

func TestAppendThenConsumeEverything(t *testing.T) {
	c, _ := fake(t)
	l := newLog(c, RequestLogConfig{MaxBatch: 100})
	const n, users = 1000, 60
	var rs []*boxoffice.QueuedRequest
	var mu sync.Mutex
	var wg sync.WaitGroup
	// Concurrent appenders, each with its own users, each in order.
	for g := range 6 {
		wg.Go(func() {
			for i := range n / 6 {
				r := request(fmt.Sprintf("user-%d-%d", g, i%(users/6)), int64(i+1))
				if err := l.Append(t.Context(), r); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				rs = append(rs, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Nobody consumed yet: the whole log is the backlog.
	if lag, err := l.Lag(t.Context()); err != nil || lag != int64(len(rs)) {
		t.Fatalf("lag before any worker: %d, %v; want %d", lag, err, len(rs))
	}

	seen := newTally()
	var maxBatch atomic.Int64
	w := consume(t, l, func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
		if int64(len(batch)) > maxBatch.Load() {
			maxBatch.Store(int64(len(batch)))
		}
		seen.add(batch)
		return nil
	})
	waitFor(t, "every request", func() bool { return seen.hasAll(rs) })
	w.stop(t)

	if seen.total() != len(rs) {
		t.Errorf("%d deliveries of %d requests, want each once", seen.total(), len(rs))
	}
	if maxBatch.Load() > 100 {
		t.Errorf("a batch of %d, over MaxBatch 100", maxBatch.Load())
	}
	for _, r := range rs {
		if diff := cmp.Diff(r, seen.byID[r.ID]); diff != "" {
			t.Fatalf("request %d came back different (-sent +got):\n%s", r.ID, diff)
		}
	}
	// One user's requests are on one partition: delivered in order.
	for user, positions := range seen.order {
		if !slices.IsSorted(positions) {
			t.Errorf("user %s delivered out of order: %v", user, positions)
		}
	}
	waitLag(t, l, 0)
}

func TestHandlerErrorDeliversTheBatchAgain(t *testing.T) {
	c, _ := fake(t)
	l := newLog(c, RequestLogConfig{MaxBatch: 40})
	rs := appendRequests(t, l, 200, 50)

	seen := newTally()
	var failed []*boxoffice.QueuedRequest
	var fails atomic.Int32
	consume(t, l, func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
		// Fail the first two batches (the second is the first again).
		if fails.Add(1) <= 2 {
			if failed == nil {
				failed = slices.Clone(batch)
			}
			return errors.New("the worker fails")
		}
		seen.add(batch)
		return nil
	})
	waitFor(t, "every request", func() bool { return seen.hasAll(rs) })
	if len(failed) == 0 {
		t.Fatal("no batch failed")
	}
	// Exactly the failed batch comes again; nothing is lost, nothing else
	// is delivered twice, not even what was fetched beyond the batch.
	if seen.total() != len(rs) {
		t.Errorf("%d successful deliveries of %d requests, want each once", seen.total(), len(rs))
	}
	for _, r := range failed {
		if seen.count(r.ID) != 1 {
			t.Errorf("request %d of the failed batch handled %d times after the failures, want once", r.ID, seen.count(r.ID))
		}
	}
	waitLag(t, l, 0)
}

// A worker dies in the middle of a batch: the next member of the group gets
// every request not committed, including that batch, and none committed.
func TestCrashMidBatchRedeliversOnlyTheUncommitted(t *testing.T) {
	c, seeds := fake(t)
	cfg := RequestLogConfig{MaxBatch: 20}
	rs := appendRequests(t, newLog(c, cfg), 300, 80)

	committed := newTally()
	var inFlight []*boxoffice.QueuedRequest
	blocked := make(chan struct{})
	var batches atomic.Int32
	first := consume(t, newLog(c, cfg), func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
		if batches.Add(1) <= 3 {
			committed.add(batch)
			return nil
		}
		inFlight = slices.Clone(batch)
		close(blocked)
		<-ctx.Done() // the worker hangs until it is killed
		return ctx.Err()
	})
	select {
	case <-blocked:
	case <-time.After(20 * time.Second):
		t.Fatal("the first worker never reached its fourth batch")
	}
	first.stop(t)
	if committed.total() == 0 || committed.total() > 60 {
		t.Fatalf("first worker committed %d requests, want 1..60", committed.total())
	}

	// Another process: its own client, same group.
	second := newLog(open(t, seeds), cfg)
	var want []*boxoffice.QueuedRequest
	for _, r := range rs {
		if committed.count(r.ID) == 0 {
			want = append(want, r)
		}
	}
	seen := newTally()
	consume(t, second, func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
		seen.add(batch)
		return nil
	})
	waitFor(t, "every uncommitted request", func() bool { return seen.hasAll(want) })
	for _, r := range inFlight {
		if seen.count(r.ID) == 0 {
			t.Errorf("request %d of the interrupted batch was not delivered again", r.ID)
		}
	}
	for _, r := range rs {
		if committed.count(r.ID) > 0 && seen.count(r.ID) > 0 {
			t.Errorf("committed request %d was delivered again", r.ID)
		}
	}
	if seen.total() != len(want) {
		t.Errorf("second worker handled %d deliveries, want %d (each uncommitted request once)", seen.total(), len(want))
	}
	waitLag(t, second, 0)
}

func TestTwoWorkersSharePartitions(t *testing.T) {
	c, seeds := fake(t)
	cfg := RequestLogConfig{MaxBatch: 25}
	producer := newLog(c, cfg)

	a, b := newTally(), newTally()
	consume(t, newLog(open(t, seeds), cfg), func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
		a.add(batch)
		return nil
	})
	before := appendRequests(t, producer, 200, 50)
	waitFor(t, "the first worker to drain the log", func() bool { return a.hasAll(before) })

	// Requests keep arriving while the second worker joins.
	var during []*boxoffice.QueuedRequest
	stopAppending := make(chan struct{})
	appended := make(chan struct{})
	go func() {
		defer close(appended)
		for i := 0; ; i++ {
			select {
			case <-stopAppending:
				return
			default:
			}
			r := request(fmt.Sprint("late-", i%97), int64(i+1))
			if err := producer.Append(context.Background(), r); err != nil {
				t.Error(err)
				return
			}
			during = append(during, r)
			time.Sleep(time.Millisecond)
		}
	}()
	consume(t, newLog(open(t, seeds), cfg), func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
		b.add(batch)
		return nil
	})
	waitForTwoMembers(t, c, cfg.groupOrDefault())
	time.Sleep(50 * time.Millisecond) // a few more appends after the rebalance
	close(stopAppending)
	<-appended
	if len(during) == 0 {
		t.Fatal("nothing was appended while the second worker joined")
	}
	after := appendRequests(t, producer, 300, 100)

	all := slices.Concat(before, during, after)
	waitFor(t, "every request", func() bool {
		for _, r := range all {
			if a.count(r.ID)+b.count(r.ID) == 0 {
				return false
			}
		}
		return true
	})
	var gotA, gotB int
	for _, r := range after {
		gotA += a.count(r.ID)
		gotB += b.count(r.ID)
	}
	if gotA == 0 || gotB == 0 {
		t.Errorf("after the rebalance the workers got %d and %d requests, want both some", gotA, gotB)
	}
	for _, r := range before {
		if b.count(r.ID) > 0 {
			t.Errorf("request %d, committed before the second worker joined, was delivered again", r.ID)
		}
	}
	// Batches are committed before a rebalance may run, so without
	// failures a rebalance duplicates nothing.
	if total := a.total() + b.total(); total != len(all) {
		t.Errorf("%d deliveries of %d requests, want each once", total, len(all))
	}
	waitLag(t, producer, 0)
}

func (cfg RequestLogConfig) groupOrDefault() string {
	if cfg.Group == "" {
		return DefaultGroup
	}
	return cfg.Group
}

// waitForTwoMembers waits for the group to be stable with two members that
// both own partitions.
func waitForTwoMembers(t *testing.T, c *Client, group string) {
	t.Helper()
	waitFor(t, "two members sharing the partitions", func() bool {
		gs, err := c.adm.DescribeGroups(t.Context(), group)
		if err != nil {
			return false
		}
		g := gs[group]
		if g.State != "Stable" || len(g.Members) != 2 {
			return false
		}
		for _, m := range g.Members {
			a, ok := m.Assigned.AsConsumer()
			if !ok || len(a.Topics) == 0 || len(a.Topics[0].Partitions) == 0 {
				return false
			}
		}
		return true
	})
}

// The log does not de-duplicate: that is the handler's job.
func TestDuplicateAppendIsDeliveredTwice(t *testing.T) {
	c, _ := fake(t)
	l := newLog(c, RequestLogConfig{})
	r := request("fan", 1)
	other := request("other", 1)
	for _, rs := range [][]*boxoffice.QueuedRequest{{r}, {r, other}} {
		if err := l.Append(t.Context(), rs...); err != nil {
			t.Fatal(err)
		}
	}
	seen := newTally()
	consume(t, l, func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
		seen.add(batch)
		return nil
	})
	waitFor(t, "both copies", func() bool { return seen.count(r.ID) == 2 && seen.count(other.ID) == 1 })
}

func TestUndecodableRecordIsSkippedAndCommitted(t *testing.T) {
	c, _ := fake(t)
	l := newLog(c, RequestLogConfig{})
	key := []byte("fan")
	if err := c.cl.ProduceSync(t.Context(),
		&kgo.Record{Topic: TopicRequests, Key: key, Value: []byte("not json")},
		&kgo.Record{Topic: TopicRequests, Key: key, Value: []byte(`{"user_id":"fan"}`)}, // no id
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := request("fan", 1) // same key, so after the bad ones on their partition
	if err := l.Append(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	seen := newTally()
	w := consume(t, l, func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
		seen.add(batch)
		return nil
	})
	waitFor(t, "the good request", func() bool { return seen.count(r.ID) == 1 })
	w.stop(t)
	if seen.total() != 1 {
		t.Errorf("%d deliveries, want only the good request", seen.total())
	}
	waitLag(t, l, 0) // the bad records were committed too
}

func TestPublishWritesKeyValueAndEventID(t *testing.T) {
	c, seeds := fake(t)
	p := NewPublisher(c)
	if err := p.Publish(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	evs := []boxoffice.OutboxEvent{
		{Seq: 1, ID: "booking.held:11", Topic: boxoffice.TopicBookingHeld, Key: "11", Payload: []byte(`{"booking_id":"11"}`), CreatedAt: now},
		{Seq: 2, ID: "booking.held:12", Topic: boxoffice.TopicBookingHeld, Key: "12", Payload: []byte(`{"booking_id":"12"}`), CreatedAt: now},
		{Seq: 3, ID: "booking.confirmed:11", Topic: boxoffice.TopicBookingConfirmed, Key: "11", Payload: []byte(`{"booking_id":"11","x":1}`), CreatedAt: now},
		{Seq: 4, ID: "booking.released:12", Topic: boxoffice.TopicBookingReleased, Key: "12", Payload: []byte(`{}`), CreatedAt: now},
		{Seq: 5, ID: "booking.expired:13", Topic: boxoffice.TopicBookingExpired, Key: "13", Payload: []byte(`{}`), CreatedAt: now},
	}
	if err := p.Publish(t.Context(), evs); err != nil {
		t.Fatal(err)
	}

	rd, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ConsumeTopics(boxoffice.TopicBookingHeld, boxoffice.TopicBookingConfirmed, boxoffice.TopicBookingReleased, boxoffice.TopicBookingExpired))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := map[string]*kgo.Record{}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for len(got) < len(evs) && ctx.Err() == nil {
		fs := rd.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == HeaderEventID {
					got[string(h.Value)] = r
				}
			}
		})
	}
	for _, ev := range evs {
		r := got[ev.ID]
		if r == nil {
			t.Errorf("event %s not found with its event-id header", ev.ID)
			continue
		}
		if r.Topic != ev.Topic || string(r.Key) != ev.Key || string(r.Value) != string(ev.Payload) {
			t.Errorf("event %s: topic %s key %q value %s; want %s %q %s", ev.ID, r.Topic, r.Key, r.Value, ev.Topic, ev.Key, ev.Payload)
		}
	}
}

func TestEnsureTopics(t *testing.T) {
	c, seeds := fake(t)
	if err := c.EnsureTopics(t.Context(), DefaultTopics()); err != nil {
		t.Fatalf("topics that exist: %v", err)
	}
	want := map[string]int32{"made.here": 3, "broker.default": 0}
	for range 2 { // the second time they exist
		if err := c.EnsureTopics(t.Context(), want); err != nil {
			t.Fatal(err)
		}
	}
	// A fresh client: c's metadata cache still remembers the topics as
	// missing.
	details, err := open(t, seeds).adm.ListTopics(t.Context(), "made.here", "broker.default", TopicRequests)
	if err != nil {
		t.Fatal(err)
	}
	for topic, n := range map[string]int{"made.here": 3, "broker.default": DefaultPartitions, TopicRequests: DefaultPartitions} {
		if d := details[topic]; d.Err != nil || len(d.Partitions) != n {
			t.Errorf("%s: %d partitions (%v), want %d", topic, len(d.Partitions), d.Err, n)
		}
	}
}

func TestBrokerDownIsUnavailable(t *testing.T) {
	seeds, stop, err := StartFake("127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	c := open(t, seeds)
	l := newLog(c, RequestLogConfig{})
	if err := l.Append(t.Context(), request("fan", 1)); err != nil {
		t.Fatal(err)
	}
	stop()
	for name, write := range map[string]func(context.Context) error{
		"Append": func(ctx context.Context) error { return l.Append(ctx, request("fan", 2)) },
		"Publish": func(ctx context.Context) error {
			return NewPublisher(c).Publish(ctx, []boxoffice.OutboxEvent{{ID: "x", Topic: boxoffice.TopicBookingHeld, Key: "1"}})
		},
		"Ping":         c.Ping,
		"EnsureTopics": func(ctx context.Context) error { return c.EnsureTopics(ctx, map[string]int32{"made.when.down": 1}) },
		"Lag":          func(ctx context.Context) error { _, err := l.Lag(ctx); return err },
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		start := time.Now()
		if err := write(ctx); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
			t.Errorf("%s with the broker down: %v, want EUNAVAILABLE", name, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s took %v to give up, the context allowed 300ms", name, d)
		}
		cancel()
	}
}

func TestStartFakeOnLoopbackOnly(t *testing.T) {
	if _, _, err := StartFake("0.0.0.0:0", 1); err == nil {
		t.Error("a fake broker on every interface was started")
	}
	seeds, stop, err := StartFake("localhost:0", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := open(t, seeds)
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// The queue contract, with the embedded store keeping the state and Kafka
// the log; each subtest gets its own topic and group.
func TestQueueContract(t *testing.T) {
	c, _ := fake(t)
	var n atomic.Int32
	queuetest.Run(t, func(t *testing.T) queuetest.Harness {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "boxoffice.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		i := n.Add(1)
		topic := fmt.Sprint("contract.requests.", i)
		if err := c.EnsureTopics(t.Context(), map[string]int32{topic: 4}); err != nil {
			t.Fatal(err)
		}
		return queuetest.Harness{
			State:    s.Queue(),
			Log:      newLog(c, RequestLogConfig{Topic: topic, Group: fmt.Sprint("contract-workers-", i)}),
			NewEvent: func(t *testing.T) boxoffice.ID { return queuetest.QueuedEvent(t, s) },
		}
	})
}
