package sale

import (
	"context"
	"errors"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/combine"
)

// The front door admits in batches: the requests that arrive while a batch
// is being made durable form the next one, decided by the queue state in
// one round trip per store (QueueState.AdmitMany) and appended to the log
// in one produce (RequestLog.Append). There is no timer: a request that
// finds an admitter idle goes at once, alone, so a quiet front door waits
// for nothing, and a busy one makes batches as large as its load. Each
// request still gets its 202 only once the log has it.

// admitters is how many batches are made durable at once: while one waits
// for the log's acknowledgement the next is being decided.
const admitters = 4

// maxAdmitBatch bounds a batch: one script's run on the queue's Redis
// shard, one produce request.
const maxAdmitBatch = 256

type admission struct {
	r        *boxoffice.QueuedRequest
	preQueue bool
}

type admitted struct {
	e      *boxoffice.QueueEntry
	replay bool
	err    error
}

func newAdmitter(s *Queue) *combine.Combiner[admission, admitted] {
	return combine.New(s.admitBatch, admitters, maxAdmitBatch)
}

// admit admits r to the queue state and the log, through the next batch.
func (s *Queue) admit(ctx context.Context, r *boxoffice.QueuedRequest, preQueue bool) (*boxoffice.QueueEntry, bool, error) {
	a, err := s.admitter.Call(ctx, admission{r: r, preQueue: preQueue})
	if err != nil {
		return nil, false, err
	}
	return a.e, a.replay, a.err
}

// admitBatch decides a batch in the queue state and appends the requests
// not yet served to the log. A replay of a request not yet served is
// appended again: its first attempt may have died between the state and
// the log, and the worker takes a request once however often it comes.
// The batch runs under none of its callers' contexts (see combine): a
// request the state admitted but the log never got would hold its user's
// live slot with nothing to serve it until a retry with its key.
func (s *Queue) admitBatch(ctx context.Context, as []admission) ([]admitted, error) {
	reqs := make([]boxoffice.Admission, len(as))
	waits := map[boxoffice.ID]func(int64) float64{}
	for i, a := range as {
		reqs[i] = boxoffice.Admission{Request: a.r, MaxLive: s.cfg.MaxLivePerUser, PreQueue: a.preQueue}
		if !a.preQueue {
			reqs[i].Wait = s.waitOf(ctx, waits, a.r.EventID)
		}
	}
	// Measured on the monotonic clock, which a paused process (SIGSTOP) or
	// a clock step does not fool.
	start := time.Now()
	res, err := s.queue.AdmitMany(ctx, reqs)
	if err != nil {
		return nil, err
	}
	out := make([]admitted, len(as))
	var logged []*boxoffice.QueuedRequest
	var of []int
	for i, o := range res {
		out[i] = admitted{e: o.Entry, replay: o.Replay, err: o.Err}
		if o.Err == nil && !o.Replay && o.Entry.Status == boxoffice.QueueQueued && o.Entry.Request.EstimatedWait == nil {
			if wait := reqs[i].Wait; wait != nil {
				w := wait(o.Entry.Request.Position)
				o.Entry.Request.EstimatedWait = &w
			}
		}
		if o.Err == nil && !o.Entry.Status.Final() {
			logged, of = append(logged, o.Entry.Request), append(of, i)
		}
	}
	if len(logged) == 0 {
		return out, nil
	}
	actx, cancel := detach(ctx)
	if d := s.cfg.AdmitDeadline; d > 0 {
		cancel()
		actx, cancel = context.WithDeadline(context.WithoutCancel(ctx), start.Add(d))
	}
	err = s.reqLog.Append(actx, logged...)
	cancel()
	if d := s.cfg.AdmitDeadline; err == nil && d > 0 && time.Since(start) > d {
		err = errors.New("the log took the requests after the admission deadline")
	}
	if err != nil {
		// No 202 past the deadline: a queue state rebuilt meanwhile may
		// not have read these requests (see Config.AdmitDeadline).
		for _, i := range of {
			out[i] = admitted{err: boxoffice.Unavailable("the flash-sale queue", err)}
		}
	}
	return out, nil
}

// waitOf returns the wait estimate of a position in eventID's queue, from
// the drain as this process last sampled it (cached in waits for the
// batch), or nil if the queue's progress cannot be read: the estimate the
// 202 tells, kept with the request (QueuedRequest.EstimatedWait).
func (s *Queue) waitOf(ctx context.Context, waits map[boxoffice.ID]func(int64) float64, eventID boxoffice.ID) func(int64) float64 {
	if w, ok := waits[eventID]; ok {
		return w
	}
	var w func(int64) float64
	if p, err := s.estimator.sample(ctx, eventID); err == nil {
		at := s.estimator.wait(p)
		w = func(pos int64) float64 { _, wait := at(pos); return wait }
	}
	waits[eventID] = w
	return w
}
