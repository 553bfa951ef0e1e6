package queuestate_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/testredis"
	"github.com/boxoffice/boxoffice/kafka"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/queuestate"
	"github.com/boxoffice/boxoffice/queuetest"
	"github.com/boxoffice/boxoffice/redis"
)

// The production queue state passes the queue contract.
func TestContract(t *testing.T) {
	env := newEnv(t)
	// Every subtest's topic made at once: a client sees a new topic only
	// at its next metadata refresh (up to 5 s).
	topics := map[string]int32{}
	for i := 1; i <= 20; i++ {
		topics[fmt.Sprint("contract.requests.", i)] = 4
	}
	if err := env.kafka.EnsureTopics(t.Context(), topics); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	queuetest.Run(t, func(t *testing.T) queuetest.Harness {
		topic := fmt.Sprint("contract.requests.", n.Add(1))
		st, log := env.state(t, topic)
		return queuetest.Harness{State: st, Log: log, NewEvent: func(*testing.T) boxoffice.ID { return env.newID() }}
	})
}

// Redis restarts empty with a live queue: an event mid-sale (some requests
// decided, some not) and an event whose waiting room has not been drawn.
// Until the state is rebuilt nothing answers 404 and no position is given
// again; after it, every request has its position, status and outcome
// back, a retry replays, one live entry per user holds, new requests queue
// behind the old ones, the waiting room is drawn with all of its requests.
func TestRedisRestartsEmpty(t *testing.T) {
	t.Run("OneSlot", func(t *testing.T) { testRedisRestartsEmpty(t, 1) })
	t.Run("ThreeSlots", func(t *testing.T) { testRedisRestartsEmpty(t, 3) })
}

func testRedisRestartsEmpty(t *testing.T, slots int) {
	env := newEnv(t)
	env.slots = slots
	st, log := env.state(t, fmt.Sprint("restart.requests.", slots))
	ctx := t.Context()
	// A first start lost nothing, and says nothing alarming.
	if w := env.logs.take(); len(w) != 0 {
		t.Errorf("the first start warned: %q", w)
	}
	sale, room := env.newID(), env.newID()
	positions := queuetest.NewPositions(slots, func(user string) int { return redis.UserSlot(user, slots) })

	const n, decided, waiting = 60, 25, 30
	var reqs, early []*boxoffice.QueuedRequest
	var highest int64
	for i := range n {
		r := queuetest.Request(sale, fmt.Sprint("fan-", i), fmt.Sprint("A-A-", i+1))
		e := admit(t, st, log, r, false)
		if e.Request.Position != positions.Give(r.UserID) {
			t.Fatalf("%s at %d", r.UserID, e.Request.Position)
		}
		highest = max(highest, e.Request.Position)
		reqs = append(reqs, r)
	}
	for i := range waiting {
		r := queuetest.Request(room, fmt.Sprint("early-", i))
		admit(t, st, log, r, true)
		early = append(early, r)
	}
	want := map[boxoffice.ID]*boxoffice.QueueEntry{}
	for i, r := range reqs {
		if i < decided {
			o := boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, Reason: boxoffice.ESEATTAKEN, FinishedAt: time.Now()}
			if i%2 == 0 {
				o = boxoffice.QueueOutcome{Status: boxoffice.QueueHeld, BookingID: r.ID, HeldUntil: time.Now().Add(time.Minute), FinishedAt: time.Now()}
			}
			if first, err := st.Finish(ctx, r, o); err != nil || !first {
				t.Fatalf("Finish: %v %v", first, err)
			}
		}
		e, err := st.Entry(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		want[r.ID] = e
	}

	env.redis.Kill(t)
	env.redis.Start(t)

	// Cold: 503, never a 404 or a position from 1. (The first cold answer
	// starts a rebuild in the background, which may finish meanwhile: then
	// the right answer is the request as it was.)
	for i, r := range reqs {
		e, err := st.Entry(ctx, r.ID)
		switch {
		case err == nil:
			if e.Status != want[r.ID].Status || e.Request.Position != want[r.ID].Request.Position {
				t.Errorf("request %d after the restart: %s at %d, want %s at %d", i, e.Status, e.Request.Position,
					want[r.ID].Status, want[r.ID].Request.Position)
			}
		case boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE:
			t.Fatalf("Entry of request %d after the restart: %v, want it or EUNAVAILABLE", i, err)
		}
	}
	extra := int64(0) // admitted after the restart
	given := map[int64]bool{}
	for _, w := range want {
		given[w.Request.Position] = true
	}
	// A position never given before: on slots, one past the highest given
	// of its slot's own (a slot's counter is raised past every position of
	// its below the highest in the log, given or not).
	fresh := func(what string, pos int64) {
		t.Helper()
		if given[pos] || (slots == 1 && pos != highest+1) || pos <= highest-int64(slots) || pos > highest+int64(slots) {
			t.Fatalf("%s at %d: given before, or not next after %d", what, pos, highest)
		}
		given[pos] = true
		highest = max(highest, pos)
	}
	switch e, _, err := st.Admit(ctx, queuetest.Request(sale, "early-bird"), 1, false); {
	case err == nil:
		fresh("Admit after the restart", e.Request.Position)
		extra++
	case boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE:
		t.Fatalf("Admit before the rebuild: %v, want EUNAVAILABLE", err)
	}

	if err := st.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	// The rebuild after the loss warns that it restored requests.
	if w := env.logs.take(); !slices.Contains(w, "queue state: rebuilt") {
		t.Errorf("the rebuild after Redis restarted empty warned %q, want %q among them", w, "queue state: rebuilt")
	}

	for _, r := range reqs {
		e, err := st.Entry(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		w := want[r.ID]
		if e.Status != w.Status || e.Request.Position != w.Request.Position || e.BookingID != w.BookingID ||
			e.Reason != w.Reason || e.Request.UserID != r.UserID {
			t.Errorf("after the rebuild: %+v at %d, want %+v at %d", e, e.Request.Position, w, w.Request.Position)
		}
	}
	// A retry replays; the one live entry per user holds; newcomers queue behind.
	again := *reqs[decided]
	again.ID = env.newID()
	e, replay, err := st.Admit(ctx, &again, 1, false)
	if err != nil || !replay || e.Request.ID != reqs[decided].ID || e.Request.Position != want[reqs[decided].ID].Request.Position {
		t.Fatalf("retry after the rebuild: %+v replay=%v %v", e, replay, err)
	}
	if _, _, err := st.Admit(ctx, queuetest.Request(sale, reqs[decided].UserID), 1, false); boxoffice.ErrorCode(err) != boxoffice.ECONFLICT {
		t.Fatalf("a second live entry after the rebuild: %v, want ECONFLICT", err)
	}
	if e, _, err := st.Admit(ctx, queuetest.Request(sale, reqs[0].UserID), 1, false); err != nil {
		t.Fatalf("a user whose request was decided queues again: %v", err)
	} else {
		fresh("a decided user's new request", e.Request.Position)
	}
	e = admit(t, st, log, queuetest.Request(sale, "newcomer"), false)
	fresh("newcomer", e.Request.Position)
	p, err := st.Progress(ctx, sale)
	if err != nil || p.Admitted != n+2+extra || p.Served != decided {
		t.Fatalf("progress %+v %v, want admitted %d served %d", p, err, n+2+extra, decided)
	}
	// The rest are decided once each.
	for _, r := range reqs[decided:] {
		if first, err := st.Finish(ctx, r, boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, FinishedAt: time.Now()}); err != nil || !first {
			t.Fatalf("Finish after the rebuild: %v %v", first, err)
		}
	}
	// The waiting room is drawn with every one of its requests.
	p, err = st.Progress(ctx, room)
	if err != nil || p.Opened || p.Waiting != waiting {
		t.Fatalf("waiting room after the rebuild: %+v %v", p, err)
	}
	drawn, err := st.Open(ctx, room, func(ids []boxoffice.ID) []boxoffice.ID { return ids })
	if err != nil || len(drawn) != waiting {
		t.Fatalf("drawn %d, %v; want %d", len(drawn), err, waiting)
	}
	seen := map[boxoffice.ID]bool{}
	var users []string
	for _, r := range early {
		users = append(users, r.UserID)
	}
	reserved := queuetest.NewPositions(slots, func(user string) int { return redis.UserSlot(user, slots) }).Reserve(users)
	for i, r := range drawn {
		if r.Position != reserved[i] {
			t.Errorf("drawn request %d at %d, want %d", i, r.Position, reserved[i])
		}
		seen[r.ID] = true
	}
	for _, r := range early {
		if !seen[r.ID] {
			t.Errorf("request %d of the waiting room was not drawn", r.ID)
		}
	}
}

// The cache lost part of its data without a restart the admission script
// can see (a replica that lagged took over: its run id differs from the
// epoch's). The watcher notices and rebuilds; the lost entry is back.
func TestWatchRebuildsAfterFailover(t *testing.T) {
	env := newEnv(t)
	st, log := env.state(t, "failover.requests")
	ctx := t.Context()
	ev := env.newID()
	r := queuetest.Request(ev, "fan", "A-A-1")
	admit(t, st, log, r, false)
	// What a lagged replica lacks: the entry and its index. And another
	// run id than the epoch's.
	c := env.client
	keys, err := c.Do(ctx, c.B().Keys().Pattern(env.prefix+"q:*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k != env.prefix+"q:{q:"+ev.String()+"}:n" {
			c.Do(ctx, c.B().Del().Key(k).Build())
		}
	}
	c.Do(ctx, c.B().Set().Key(env.prefix+"q:epoch").Value("a-node-that-is-gone").Build())
	if _, err := st.Entry(ctx, r.ID); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Fatalf("Entry of the lost request before the rebuild: %v, want EUNAVAILABLE", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go st.Watch(wctx, 50*time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for {
		e, err := st.Entry(ctx, r.ID)
		if err == nil {
			if e.Request.Position != 1 || e.Status != boxoffice.QueueQueued {
				t.Fatalf("restored entry %+v", e)
			}
			break
		}
		if boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE || time.Now().After(deadline) {
			t.Fatalf("Entry while rebuilding: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FinishEntries finishes from entries read before, as the drain does with
// its batch's: one decided since keeps its first outcome, one the read did
// not find is read again, and the outcomes are on record even when Redis
// lost everything between the read and the finish.
func TestFinishEntries(t *testing.T) {
	env := newEnv(t)
	st, log := env.state(t, "finish-entries.requests")
	ctx := t.Context()
	ev := env.newID()
	var rs []*boxoffice.QueuedRequest
	for i := range 5 {
		r := queuetest.Request(ev, fmt.Sprint("fan-", i), fmt.Sprint("A-A-", i+1))
		admit(t, st, log, r, false)
		rs = append(rs, r)
	}
	es, err := st.Entries(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		if e == nil || e.Status != boxoffice.QueueQueued {
			t.Fatalf("entry %d: %+v", i, e)
		}
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	held := boxoffice.QueueOutcome{Status: boxoffice.QueueHeld, BookingID: rs[0].ID, HeldUntil: now.Add(time.Minute), FinishedAt: now}
	if first, err := st.Finish(ctx, rs[0], held); err != nil || !first {
		t.Fatalf("Finish: %v %v", first, err)
	}
	refused := boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, Reason: boxoffice.ESEATTAKEN, FinishedAt: now}
	outs := []boxoffice.QueueOutcome{refused, refused, refused, refused, refused}
	if _, err := st.FinishEntries(ctx, rs, es[:2], outs); boxoffice.ErrorCode(err) != boxoffice.EINVALID {
		t.Fatalf("FinishEntries with 2 entries for 5 requests: %v, want EINVALID", err)
	}
	stale := slices.Clone(es[:4])
	stale[2] = nil // a read that did not find it
	first, err := st.FinishEntries(ctx, rs[:4], stale, outs[:4])
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, true, true, true}; !slices.Equal(first, want) {
		t.Errorf("first %v, want %v (the request decided since the read keeps its outcome)", first, want)
	}
	for i, want := range []boxoffice.QueueStatus{boxoffice.QueueHeld, boxoffice.QueueRejected, boxoffice.QueueRejected, boxoffice.QueueRejected} {
		e, err := st.Entry(ctx, rs[i].ID)
		if err != nil || e.Status != want {
			t.Fatalf("request %d after FinishEntries: %+v %v, want %s", i, e, err, want)
		}
	}

	// Redis restarts empty between the read and the finish: the outcome
	// goes on record (or the call fails, and the batch comes again), and
	// the rebuilt state has it.
	last, err := st.Entries(ctx, rs[4:])
	if err != nil {
		t.Fatal(err)
	}
	env.redis.Kill(t)
	env.redis.Start(t)
	// The client's connections to the old server fail once each (EOF),
	// which is the lock store being away: the batch would come again.
	for range 5 {
		_, err = st.FinishEntries(ctx, rs[4:], last, outs[4:])
		if err == nil || !strings.Contains(err.Error(), "EOF") {
			break
		}
	}
	if err != nil && !errors.Is(err, boxoffice.ErrQueueCold) {
		t.Fatalf("FinishEntries after Redis restarted empty: %v, want done or cold", err)
	}
	t.Logf("FinishEntries after Redis restarted empty: %v", err)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := st.Rebuild(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	if e, err := st.Entry(ctx, rs[4].ID); err != nil || e.Status != boxoffice.QueueRejected || e.Reason != boxoffice.ESEATTAKEN {
		t.Fatalf("the request finished across the restart: %+v %v, want rejected (%s)", e, err, boxoffice.ESEATTAKEN)
	}
	if e, err := st.Entry(ctx, rs[0].ID); err != nil || e.Status != boxoffice.QueueHeld || e.BookingID != rs[0].ID {
		t.Fatalf("the request held before the restart: %+v %v", e, err)
	}
}

// admit admits r and appends it to the log, as the front door does.
func admit(t *testing.T, st *queuestate.State, log *kafka.RequestLog, r *boxoffice.QueuedRequest, pre bool) *boxoffice.QueueEntry {
	t.Helper()
	e, _, err := st.Admit(t.Context(), r, 1, pre)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if err := log.Append(t.Context(), e.Request); err != nil {
		t.Fatalf("Append: %v", err)
	}
	return e
}

// env is one PostgreSQL schema, one redis-server and one Kafka broker of
// the test's own.
type env struct {
	pg     *postgres.Store
	redis  *testredis.Server
	client rueidis.Client
	prefix string
	slots  int // of each event's queue (redis.QueueState.Slots)
	kafka  *kafka.Client
	ids    atomic.Int64
	logs   warnings // what the states' loggers said at Warn and above
}

// warnings is a slog.Handler that keeps the messages at Warn and above.
type warnings struct {
	mu   *sync.Mutex
	msgs *[]string
}

func newWarnings() warnings { return warnings{mu: &sync.Mutex{}, msgs: new([]string)} }

func (w warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.mu.Lock()
		*w.msgs = append(*w.msgs, r.Message)
		w.mu.Unlock()
	}
	return nil
}
func (w warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w warnings) WithGroup(string) slog.Handler      { return w }

// take returns the messages kept since the last take.
func (w warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	msgs := *w.msgs
	*w.msgs = nil
	return msgs
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{pg: openStore(t), redis: testredis.Start(t), logs: newWarnings()}
	e.ids.Store(time.Now().UnixNano() >> 8)
	client, err := redis.Dial(e.redis.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	e.client = client
	e.prefix = "qs:"
	seeds, stop, err := kafka.StartFake("127.0.0.1:0", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	kc, err := kafka.Open(kafka.Config{Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	e.kafka = kc
	return e
}

func (e *env) newID() boxoffice.ID { return boxoffice.ID(e.ids.Add(1)) }

// state returns a queue state on a topic of its own, its epoch recorded.
func (e *env) state(t *testing.T, topic string) (*queuestate.State, *kafka.RequestLog) {
	t.Helper()
	if err := e.kafka.EnsureTopics(t.Context(), map[string]int32{topic: 4}); err != nil {
		t.Fatal(err)
	}
	log := kafka.NewRequestLog(e.kafka, kafka.RequestLogConfig{Topic: topic, Group: topic + ".workers"})
	cache := redis.NewQueueState(e.client, e.prefix)
	cache.Slots = e.slots
	st := queuestate.New(cache, e.pg, log, redis.NewLeases(e.client, e.prefix), slog.New(e.logs))
	st.Settle = 50 * time.Millisecond
	// A topic just made may not be listed yet: the first rebuild (which
	// records the epoch) waits for it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := st.Rebuild(t.Context())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return st, log
}

// openStore opens PostgreSQL on a schema of its own, dropped at the end.
func openStore(t *testing.T) *postgres.Store {
	t.Helper()
	base := os.Getenv("BOXOFFICE_TEST_POSTGRES")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		skipOrFail(t, "PostgreSQL unreachable: %v", err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	schema := "qs_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	st, err := postgres.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true, so this fails)", args...)
	}
	t.Skipf(format, args...)
}
