package sale

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/lru"
)

// estimator turns an event's queue progress into waits: the drain rate is
// an exponentially weighted moving average of requests served per second,
// sampled from the shared counters (so every API process sees the workers
// of all processes), and a wait is the distance between a position and the
// served count, divided by that rate. It measures real time whatever clock
// the service runs on: it is about the machines' pace.
type estimator struct {
	s  *Queue
	mu sync.Mutex
	ev *lru.Cache[boxoffice.ID, *drain] // the Config.CacheEvents events sampled last
	// last is the latest rate measured for any event: the prior of an
	// event whose own drain has not been measured yet.
	last float64
}

type drain struct {
	mu      sync.Mutex
	asked   time.Time // when a request's ticket last read it
	fetched time.Time // when prog was read
	prog    boxoffice.QueueProgress
	at      time.Time // the last rate sample
	served  int64
	backlog bool    // requests were waiting at the last sample
	started bool    // the drain was seen moving: the next interval is a full one
	rate    float64 // requests/s, 0 until measured
}

const (
	// progressTTL bounds how often one process reads an event's counters,
	// however many clients poll.
	progressTTL = 250 * time.Millisecond
	// rateSample is the shortest interval a rate is measured over, and
	// rateTau the EWMA's time constant: about the last 3s count.
	rateSample = time.Second
	rateTau    = 3 * time.Second
)

func newEstimator(s *Queue) *estimator {
	return &estimator{s: s, ev: lru.New[boxoffice.ID, *drain](s.cfg.CacheEvents)}
}

func (e *estimator) drain(eventID boxoffice.ID) *drain {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, _ := e.ev.Get(eventID)
	if d == nil {
		d = &drain{}
		e.ev.Add(eventID, d)
	}
	return d
}

// estimate returns how many requests are ahead of position and the
// estimated seconds until its outcome (see wait).
func (e *estimator) estimate(prog boxoffice.QueueProgress, rate float64, position int64) (int64, *float64) {
	ahead, w := e.wait(prog, rate)(position)
	return ahead, &w
}

// wait returns the estimator of a position's wait on the progress and
// rate given: how many requests are ahead of it and the seconds until its
// outcome, tenths. Before the event's drain has been measured (rate 0) the
// wait is estimated with the prior: the last rate measured for another
// event, else Config.DrainPrior.
func (e *estimator) wait(prog boxoffice.QueueProgress, rate float64) func(position int64) (int64, float64) {
	if rate <= 0 {
		e.mu.Lock()
		rate = e.last
		e.mu.Unlock()
	}
	if rate <= 0 {
		rate = e.s.cfg.DrainPrior
	}
	return func(position int64) (int64, float64) {
		ahead := max(0, prog.Before(position)-prog.Served)
		return ahead, math.Round(float64(ahead+1)/rate*10) / 10
	}
}

// Rate returns the measured drain rate of an event's queue, requests/s.
func (s *Queue) QueueRate(ctx context.Context, eventID boxoffice.ID) (boxoffice.QueueProgress, float64, error) {
	return s.estimator.sample(ctx, eventID)
}

// QueueDepths calls yield with the progress and drain rate of each event
// whose queue a ticket of this process read within recent: the sales
// being served now. The progress is read afresh (at most progressTTL
// old), which also keeps the rates measured between clients' polls.
func (s *Queue) QueueDepths(ctx context.Context, recent time.Duration, yield func(eventID boxoffice.ID, p boxoffice.QueueProgress, rate float64)) {
	e := s.estimator
	type entry struct {
		id boxoffice.ID
		d  *drain
	}
	var all []entry
	e.mu.Lock() // never held while taking a drain's lock: sample takes them the other way round
	e.ev.Range(func(id boxoffice.ID, d *drain) bool {
		all = append(all, entry{id, d})
		return true
	})
	e.mu.Unlock()
	now := time.Now()
	for _, en := range all {
		en.d.mu.Lock()
		live := now.Sub(en.d.asked) < recent
		en.d.mu.Unlock()
		if !live {
			continue
		}
		if p, rate, err := e.read(ctx, en.id, false); err == nil {
			yield(en.id, p, rate)
		}
	}
}

func (e *estimator) sample(ctx context.Context, eventID boxoffice.ID) (boxoffice.QueueProgress, float64, error) {
	return e.read(ctx, eventID, true)
}

// read returns the event's progress and rate, reading the progress if the
// last read is older than progressTTL; asked says a request's ticket needs
// it (rather than a scrape of the metrics).
func (e *estimator) read(ctx context.Context, eventID boxoffice.ID, asked bool) (boxoffice.QueueProgress, float64, error) {
	d := e.drain(eventID)
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if asked {
		d.asked = now
	}
	if now.Sub(d.fetched) < progressTTL {
		return d.prog, d.rate, nil
	}
	p, err := e.s.queue.Progress(ctx, eventID)
	if err != nil {
		return p, 0, err
	}
	d.prog, d.fetched = p, now
	switch dt := now.Sub(d.at); {
	case d.at.IsZero():
		d.at, d.served, d.backlog = now, p.Served, p.Admitted > p.Served
	case dt >= rateSample:
		// An empty queue says nothing about the pace: keep the last rate.
		if d.backlog {
			inst := float64(p.Served-d.served) / dt.Seconds()
			if d.rate == 0 {
				// The first interval with progress started before the
				// drain did (it may have started anywhere in it): measure
				// from its end instead.
				if d.started {
					d.rate = inst
				}
				d.started = d.started || p.Served > d.served
			} else {
				a := 1 - math.Exp(-dt.Seconds()/rateTau.Seconds())
				d.rate = a*inst + (1-a)*d.rate
			}
			if d.rate > 0 {
				e.mu.Lock()
				e.last = d.rate
				e.mu.Unlock()
			}
		}
		d.at, d.served, d.backlog = now, p.Served, p.Admitted > p.Served
	}
	return p, d.rate, nil
}
