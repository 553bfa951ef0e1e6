// Package notifytest is the contract suite of boxoffice.Notifier: every
// implementation (inmem.Notifier, redis.Notifier on one server and on a
// cluster) runs Run and passes it.
//
//	func TestNotifierContract(t *testing.T) {
//		notifytest.Run(t, func(t *testing.T) notifytest.Harness {
//			return notifytest.Harness{Notifier: inmem.NewNotifier()}
//		})
//	}
//
// What the port promises, and so what the suite checks: a notice given to
// Notify reaches every listener (every Listen still running, on any
// notifier of the same bus, that is any API process), whatever its event
// and user, unchanged; several notices in one call all arrive; Listen
// calls fn until its ctx ends, and then returns.
//
// Delivery is best effort and a subscription may take a moment to start
// (Redis pub/sub), so the suite first sends probe notices until every
// listener has heard one, and only then counts. It does not check the
// order of notices: the port does not promise one.
//
// Pinned here beyond the doc comment (every implementation keeps them):
//   - a Notify without any listener, or with no notices, is no error;
//   - once Listen has returned, fn is not called any more, not even by a
//     Notify running at that moment, nor while listeners come and go
//     under a storm of notices: a caller may drop what fn writes to;
//   - a notice arrives once per listener, whatever its fields hold (zero
//     ids, empty status, any user id);
//   - a Notify with an ended context returns, and the notifier keeps
//     working for the next one.
package notifytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// Harness is one fresh implementation under test.
type Harness struct {
	// Notifier is the notifier under test, on a bus of its own: notices
	// of other subtests never reach it.
	Notifier boxoffice.Notifier
	// Peer returns another notifier of the same bus, as another API
	// process holds one. Nil means Notifier itself (an in-process bus).
	Peer func() boxoffice.Notifier
}

// Run runs the whole contract, one fresh harness per subtest.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	specs := []struct {
		name string
		test func(t *testing.T, h Harness)
	}{
		{"EveryListenerHearsEveryNotice", testFanOut},
		{"NoticesArriveUnchanged", testUnchanged},
		{"AnyEventAnyUser", testAnyEventAnyUser},
		{"ManyInOneCall", testMany},
		{"FromAnyProcess", testPeers},
		{"ConcurrentNotify", testConcurrentNotify},
		{"NoListener", testNoListener},
		{"NoNotices", testNoNotices},
		{"CancelledListenerStops", testCancel},
		{"ListenWithEndedContext", testListenEnded},
		{"NoCallAfterListenReturns", testNoLateCall},
		{"ListenersComeAndGoInAStorm", testStorm},
		{"NotifyWithEndedContext", testNotifyEnded},
	}
	for _, s := range specs {
		t.Run(s.name, func(t *testing.T) {
			h := newHarness(t)
			if h.Peer == nil {
				n := h.Notifier
				h.Peer = func() boxoffice.Notifier { return n }
			}
			s.test(t, h)
		})
	}
}

const (
	// patience bounds every wait for something the contract promises
	// (a delivery, Listen returning): far above what it takes, so that
	// only a broken implementation runs into it.
	patience = 15 * time.Second
	// poll is the pace of waits and of probes.
	poll = 5 * time.Millisecond
	// probeUser marks the probe notices the suite sends to learn that a
	// subscription has started.
	probeUser = "notifytest-probe"
	// stormUser marks the notices of testStorm, which listeners count
	// rather than keep.
	stormUser = "notifytest-storm"
)

func newID() boxoffice.ID { return boxoffice.ID(rand.Int64N(1<<62) + 1) }

// notices returns n distinct notices of event, for users user-0...
func notices(event boxoffice.ID, n int) []boxoffice.QueueNotice {
	statuses := []boxoffice.QueueStatus{boxoffice.QueueHeld, boxoffice.QueueRejected, boxoffice.QueueQueued, boxoffice.QueueWaiting}
	out := make([]boxoffice.QueueNotice, n)
	base := newID() >> 16
	for i := range out {
		out[i] = boxoffice.QueueNotice{RequestID: base + boxoffice.ID(i), EventID: event, UserID: fmt.Sprintf("user-%d", i), Status: statuses[i%len(statuses)]}
	}
	return out
}

// listener is one Listen under test: it records what fn is given.
type listener struct {
	name     string
	cancel   context.CancelFunc
	done     chan struct{} // closed when Listen has returned
	err      error         // Listen's result, set before done is closed
	returned atomic.Bool   // set once Listen has returned
	late     atomic.Int64  // calls of fn that began after Listen returned

	mu     sync.Mutex
	got    []boxoffice.QueueNotice // everything but probes and the storm
	probes int
	storm  int
}

// listen starts Listen on n with ctx (a fresh one under the test's when
// ctx is nil). The test's end cancels it and waits for it.
func listen(t *testing.T, name string, n boxoffice.Notifier, ctx context.Context) *listener {
	t.Helper()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &listener{name: name, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.err = n.Listen(ctx, l.fn)
		l.returned.Store(true)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-l.done:
		case <-time.After(patience):
			t.Errorf("listener %s: Listen did not return %v after its context ended", name, patience)
		}
		if n := l.late.Load(); n > 0 {
			t.Errorf("listener %s: fn called %d times after Listen returned", name, n)
		}
	})
	return l
}

func (l *listener) fn(q boxoffice.QueueNotice) {
	if l.returned.Load() {
		l.late.Add(1)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch q.UserID {
	case probeUser:
		l.probes++
	case stormUser:
		l.storm++
	default:
		l.got = append(l.got, q)
	}
}

func (l *listener) heardProbe() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.probes > 0
}

func (l *listener) heardStorm() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.storm
}

func (l *listener) notices() []boxoffice.QueueNotice {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]boxoffice.QueueNotice(nil), l.got...)
}

// stop cancels the listener and waits for Listen to return.
func (l *listener) stop(t *testing.T) {
	t.Helper()
	l.cancel()
	select {
	case <-l.done:
	case <-time.After(patience):
		t.Fatalf("listener %s: Listen did not return %v after its context ended", l.name, patience)
	}
}

// ready sends probes through n until every listener has heard one: their
// subscriptions have started.
func ready(t *testing.T, n boxoffice.Notifier, ls ...*listener) {
	t.Helper()
	event := newID()
	deadline := time.Now().Add(patience)
	for seq := boxoffice.ID(1); ; seq++ {
		if err := n.Notify(context.Background(), boxoffice.QueueNotice{RequestID: seq, EventID: event, UserID: probeUser, Status: boxoffice.QueueWaiting}); err != nil {
			t.Fatalf("Notify(probe) = %v", err)
		}
		all := true
		for _, l := range ls {
			all = all && l.heardProbe()
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			for _, l := range ls {
				if !l.heardProbe() {
					t.Fatalf("listener %s heard none of %d probes in %v", l.name, seq, patience)
				}
			}
		}
		time.Sleep(poll)
	}
}

// notify sends ns through n in one call.
func notify(t *testing.T, n boxoffice.Notifier, ns ...boxoffice.QueueNotice) {
	t.Helper()
	if err := n.Notify(context.Background(), ns...); err != nil {
		t.Fatalf("Notify(%d notices) = %v", len(ns), err)
	}
}

// hears waits until l has heard every notice of want, then checks that
// it heard each exactly once and nothing else (probes aside), but for
// notices of earlier, sent before l began to listen: whether those reach
// it is left open (on a cluster a notice travels between nodes while a
// new subscription starts), but not more than once.
func hears(t *testing.T, l *listener, want []boxoffice.QueueNotice, earlier ...boxoffice.QueueNotice) {
	t.Helper()
	wantCount := map[boxoffice.QueueNotice]int{}
	for _, q := range want {
		wantCount[q]++
	}
	early := map[boxoffice.QueueNotice]bool{}
	for _, q := range earlier {
		early[q] = true
	}
	deadline := time.Now().Add(patience)
	for {
		got := l.notices()
		gotCount := map[boxoffice.QueueNotice]int{}
		for _, q := range got {
			gotCount[q]++
		}
		missing := 0
		for q, n := range wantCount {
			if gotCount[q] < n {
				missing += n - gotCount[q]
			}
		}
		if missing == 0 {
			var wrong []string
			for q, n := range gotCount {
				if n != wantCount[q] && !(early[q] && n == 1 && wantCount[q] == 0) {
					wrong = append(wrong, fmt.Sprintf("%+v %d times (want %d)", q, n, wantCount[q]))
				}
			}
			if len(wrong) > 0 {
				sort.Strings(wrong)
				if len(wrong) > 5 {
					wrong = append(wrong[:5], fmt.Sprintf("and %d more", len(wrong)-5))
				}
				t.Errorf("listener %s heard %d notices, want the %d sent, each once:\n%s", l.name, len(got), len(want), strings.Join(wrong, "\n"))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("listener %s heard %d of the %d notices sent in %v", l.name, len(want)-missing, len(want), patience)
		}
		time.Sleep(poll)
	}
}

// testFanOut: three listeners on one notifier each hear every notice,
// sent one per call and several per call.
func testFanOut(t *testing.T, h Harness) {
	ls := []*listener{listen(t, "a", h.Notifier, nil), listen(t, "b", h.Notifier, nil), listen(t, "c", h.Notifier, nil)}
	ready(t, h.Notifier, ls...)
	ns := notices(newID(), 6)
	notify(t, h.Notifier, ns[0])
	notify(t, h.Notifier, ns[1])
	notify(t, h.Notifier, ns[2:]...)
	for _, l := range ls {
		hears(t, l, ns)
	}
}

// testUnchanged: every field of a notice arrives as sent, whatever it
// holds: every status, the empty one (a waitlist offer's notice has
// none), zero ids, long and non-ASCII user ids, the largest id.
func testUnchanged(t *testing.T, h Harness) {
	l := listen(t, "l", h.Notifier, nil)
	ready(t, h.Notifier, l)
	event := newID()
	odd := []boxoffice.QueueNotice{
		{RequestID: newID(), EventID: event, UserID: "held", Status: boxoffice.QueueHeld},
		{RequestID: newID(), EventID: event, UserID: "rejected", Status: boxoffice.QueueRejected},
		{RequestID: newID(), EventID: event, UserID: "queued", Status: boxoffice.QueueQueued},
		{RequestID: newID(), EventID: event, UserID: "waiting", Status: boxoffice.QueueWaiting},
		{RequestID: newID(), EventID: event, UserID: "no-status"},
		{}, // the zero notice, mid-batch: what follows it must arrive too
		{RequestID: 1<<63 - 1, EventID: 1<<63 - 1, UserID: "max", Status: boxoffice.QueueHeld},
		{RequestID: newID(), EventID: event, UserID: "Zoë 🎫 \"quoted\" \\ [bracket] {brace}\n\t\x00", Status: boxoffice.QueueHeld},
		{RequestID: newID(), EventID: event, UserID: strings.Repeat("u", 4096), Status: boxoffice.QueueRejected},
		{RequestID: newID(), EventID: event, UserID: "", Status: boxoffice.QueueHeld},
		{RequestID: -newID(), EventID: -event, UserID: "negative ids", Status: boxoffice.QueueHeld},
	}
	// One by one, then all in one call.
	for _, q := range odd {
		notify(t, h.Notifier, q)
	}
	notify(t, h.Notifier, odd...)
	hears(t, l, append(append([]boxoffice.QueueNotice(nil), odd...), odd...))
}

// testAnyEventAnyUser: a listener hears the notices of every event and
// user; telling them apart is the caller's business.
func testAnyEventAnyUser(t *testing.T, h Harness) {
	l := listen(t, "l", h.Notifier, nil)
	ready(t, h.Notifier, l)
	var all []boxoffice.QueueNotice
	for range 3 {
		ns := notices(newID(), 3)
		notify(t, h.Notifier, ns...)
		all = append(all, ns...)
	}
	// The same request id in two events, the same user in both.
	id := newID()
	twins := []boxoffice.QueueNotice{
		{RequestID: id, EventID: newID(), UserID: "same", Status: boxoffice.QueueHeld},
		{RequestID: id, EventID: newID(), UserID: "same", Status: boxoffice.QueueHeld},
	}
	notify(t, h.Notifier, twins[0])
	notify(t, h.Notifier, twins[1])
	hears(t, l, append(all, twins...))
}

// testMany: a drained batch of thousands of notices in one call reaches
// every listener whole.
func testMany(t *testing.T, h Harness) {
	ls := []*listener{listen(t, "a", h.Notifier, nil), listen(t, "b", h.Notifier, nil)}
	ready(t, h.Notifier, ls...)
	ns := notices(newID(), 5000)
	notify(t, h.Notifier, ns...)
	for _, l := range ls {
		hears(t, l, ns)
	}
}

// testPeers: listeners on two notifiers of one bus (two processes) each
// hear what either sends.
func testPeers(t *testing.T, h Harness) {
	peer := h.Peer()
	a, b := listen(t, "on-notifier", h.Notifier, nil), listen(t, "on-peer", peer, nil)
	ready(t, h.Notifier, a, b)
	ready(t, peer, a, b)
	fromA, fromB := notices(newID(), 3), notices(newID(), 3)
	notify(t, h.Notifier, fromA...)
	notify(t, peer, fromB...)
	for _, l := range []*listener{a, b} {
		hears(t, l, append(append([]boxoffice.QueueNotice(nil), fromA...), fromB...))
	}
}

// testConcurrentNotify: notices sent from many goroutines at once all
// arrive.
func testConcurrentNotify(t *testing.T, h Harness) {
	ls := []*listener{listen(t, "a", h.Notifier, nil), listen(t, "b", h.Notifier, nil)}
	ready(t, h.Notifier, ls...)
	const senders, each = 8, 40
	var (
		wg  sync.WaitGroup
		all []boxoffice.QueueNotice
	)
	for i := range senders {
		ns := notices(newID(), each)
		all = append(all, ns...)
		wg.Go(func() {
			for j, q := range ns {
				var err error
				if i%2 == 0 {
					err = h.Notifier.Notify(context.Background(), q)
				} else if j%4 == 0 {
					err = h.Notifier.Notify(context.Background(), ns[j:j+4]...)
				}
				if err != nil {
					t.Errorf("sender %d: Notify = %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, l := range ls {
		hears(t, l, all)
	}
}

// testNoListener: nobody listening is no error, and the notifier still
// delivers once somebody is.
func testNoListener(t *testing.T, h Harness) {
	notify(t, h.Notifier, notices(newID(), 1)...)
	notify(t, h.Notifier, notices(newID(), 20)...)
	l := listen(t, "late", h.Notifier, nil)
	ready(t, h.Notifier, l)
	ns := notices(newID(), 2)
	notify(t, h.Notifier, ns...)
	// Whether the earlier notices reach a later listener is left open;
	// only ns must arrive.
	want := map[boxoffice.QueueNotice]bool{}
	for _, q := range ns {
		want[q] = true
	}
	deadline := time.Now().Add(patience)
	for {
		n := 0
		for _, q := range l.notices() {
			if want[q] {
				n++
			}
		}
		if n == len(ns) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a listener that started after unheard notices heard %d of the %d sent to it", n, len(ns))
		}
		time.Sleep(poll)
	}
}

// testNoNotices: a Notify of nothing is no error and delivers nothing.
func testNoNotices(t *testing.T, h Harness) {
	l := listen(t, "l", h.Notifier, nil)
	ready(t, h.Notifier, l)
	notify(t, h.Notifier)
	notify(t, h.Notifier, []boxoffice.QueueNotice{}...)
	// Something after it, so that what the empty calls sent would have
	// arrived by the time it has (it is on the same channel).
	ns := notices(newID(), 1)
	notify(t, h.Notifier, ns...)
	hears(t, l, ns)
}

// testCancel: a listener whose context ends returns and hears nothing
// more, while the others go on hearing everything.
func testCancel(t *testing.T, h Harness) {
	gone, stays := listen(t, "gone", h.Notifier, nil), listen(t, "stays", h.Notifier, nil)
	ready(t, h.Notifier, gone, stays)
	before := notices(newID(), 2)
	notify(t, h.Notifier, before...)
	hears(t, gone, before)
	hears(t, stays, before)

	gone.stop(t)
	after := notices(newID(), 3)
	notify(t, h.Notifier, after...)
	hears(t, stays, append(append([]boxoffice.QueueNotice(nil), before...), after...))
	hears(t, gone, before) // and nothing of after
	if n := gone.late.Load(); n > 0 {
		t.Errorf("fn of a returned Listen called %d times", n)
	}

	// A new listener on the same notifier hears what follows.
	again := listen(t, "again", h.Notifier, nil)
	ready(t, h.Notifier, again, stays)
	more := notices(newID(), 2)
	notify(t, h.Notifier, more...)
	hears(t, again, more, append(append([]boxoffice.QueueNotice(nil), before...), after...)...)
}

// testListenEnded: Listen with a context that has already ended returns
// at once and never calls fn.
func testListenEnded(t *testing.T, h Harness) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var calls atomic.Int64
	done := make(chan error, 1)
	go func() { done <- h.Notifier.Listen(ctx, func(boxoffice.QueueNotice) { calls.Add(1) }) }()
	select {
	case err := <-done:
		t.Logf("Listen(ended context) = %v", err)
	case <-time.After(patience):
		t.Fatalf("Listen(ended context) did not return in %v", patience)
	}
	// A live listener, so that a notice has surely travelled.
	l := listen(t, "live", h.Notifier, nil)
	ready(t, h.Notifier, l)
	ns := notices(newID(), 2)
	notify(t, h.Notifier, ns...)
	hears(t, l, ns)
	if n := calls.Load(); n > 0 {
		t.Errorf("Listen with an ended context called fn %d times", n)
	}

	// A deadline that has passed is an ended context too.
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	go func() { done <- h.Notifier.Listen(dctx, func(boxoffice.QueueNotice) { calls.Add(1) }) }()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatalf("Listen(past deadline) did not return in %v", patience)
	}
}

// testNoLateCall: Listen is the only caller of fn, so once it has
// returned fn is not called again, not even for the rest of a batch whose
// first notice fn was handling when the context ended.
func testNoLateCall(t *testing.T, h Harness) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		returned          atomic.Bool
		late, calls       atomic.Int64
		entered, released = make(chan struct{}), make(chan struct{})
		enteredOnce       sync.Once
		probes            atomic.Int64
	)
	event := newID()
	fn := func(q boxoffice.QueueNotice) {
		if returned.Load() {
			late.Add(1)
		}
		switch {
		case q.UserID == probeUser:
			probes.Add(1)
		case q.EventID == event && q.UserID == "slow":
			calls.Add(1)
			enteredOnce.Do(func() { close(entered) })
			// Slow until the context has ended, and a while after, so that
			// an eager Listen returns meanwhile.
			<-released
			time.Sleep(20 * time.Millisecond)
		default:
			calls.Add(1)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h.Notifier.Listen(ctx, fn)
		returned.Store(true)
	}()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(patience)
	for seq := boxoffice.ID(1); probes.Load() == 0; seq++ {
		if time.Now().After(deadline) {
			t.Fatalf("the listener heard no probe in %v", patience)
		}
		notify(t, h.Notifier, boxoffice.QueueNotice{RequestID: seq, EventID: newID(), UserID: probeUser})
		time.Sleep(poll)
	}

	batch := []boxoffice.QueueNotice{{RequestID: 1, EventID: event, UserID: "slow", Status: boxoffice.QueueHeld}}
	for i := range 50 {
		batch = append(batch, boxoffice.QueueNotice{RequestID: boxoffice.ID(i + 2), EventID: event, UserID: "after", Status: boxoffice.QueueHeld})
	}
	sent := make(chan error, 1)
	go func() { sent <- h.Notifier.Notify(context.Background(), batch...) }()
	select {
	case <-entered:
	case <-time.After(patience):
		close(released)
		t.Fatalf("the listener heard nothing of the batch in %v", patience)
	}
	cancel()
	close(released)
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatalf("Listen did not return %v after its context ended", patience)
	}
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("Notify = %v", err)
		}
	case <-time.After(patience):
		t.Fatalf("Notify did not return in %v", patience)
	}
	// What was still on its way has had the time to arrive.
	time.Sleep(20 * time.Millisecond)
	if n := late.Load(); n > 0 {
		t.Errorf("fn called %d times after Listen returned (%d calls for the batch of %d)", n, calls.Load(), len(batch))
	}
}

// testStorm: listeners that come and go while notices keep coming from
// several goroutines each hear the storm while they listen, and none of
// it once Listen has returned.
func testStorm(t *testing.T, h Harness) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	event := newID()
	for range 4 {
		wg.Go(func() {
			batch := make([]boxoffice.QueueNotice, 16)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				for j := range batch {
					batch[j] = boxoffice.QueueNotice{RequestID: boxoffice.ID(i*len(batch) + j + 1), EventID: event, UserID: stormUser, Status: boxoffice.QueueHeld}
				}
				_ = h.Notifier.Notify(context.Background(), batch...)
				if i%8 == 7 {
					time.Sleep(time.Millisecond) // a storm, not a flood: let the listeners keep up
				}
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for i := range 20 {
		l := listen(t, fmt.Sprintf("round-%d", i), h.Notifier, nil)
		deadline := time.Now().Add(patience)
		for l.heardStorm() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the listener heard nothing of the storm in %v", i, patience)
			}
			time.Sleep(poll)
		}
		l.stop(t)
		time.Sleep(2 * time.Millisecond)
		if n := l.late.Load(); n > 0 {
			t.Fatalf("round %d: fn called %d times after Listen returned", i, n)
		}
	}
}

// testNotifyEnded: a Notify with an ended context returns (an error, or
// nil having sent), and the notifier works for the next one.
func testNotifyEnded(t *testing.T, h Harness) {
	l := listen(t, "l", h.Notifier, nil)
	ready(t, h.Notifier, l)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ended := notices(newID(), 3)
	done := make(chan error, 1)
	go func() { done <- h.Notifier.Notify(ctx, ended...) }()
	var err error
	select {
	case err = <-done:
		t.Logf("Notify(ended context) = %v", err)
	case <-time.After(patience):
		t.Fatalf("Notify(ended context) did not return in %v", patience)
	}
	ns := notices(newID(), 2)
	notify(t, h.Notifier, ns...)
	want := ns
	if err == nil {
		want = append(append([]boxoffice.QueueNotice(nil), ended...), ns...) // nil means sent
	}
	// A failed Notify may or may not have sent its notices (best effort);
	// what arrives of them arrives once.
	deadline := time.Now().Add(patience)
	for {
		got := map[boxoffice.QueueNotice]int{}
		for _, q := range l.notices() {
			got[q]++
		}
		all := true
		for _, q := range want {
			all = all && got[q] == 1
		}
		for q, n := range got {
			if n > 1 {
				t.Fatalf("heard %+v %d times", q, n)
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a Notify with an ended context (err %v), heard %d notices, want %d of them: %+v", err, len(got), len(want), want)
		}
		time.Sleep(poll)
	}
}
