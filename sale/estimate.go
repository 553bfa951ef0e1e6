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
//
// While requests are still arriving the drain may run below its capacity
// (on the embedded default the front door and the workers share one
// database writer and the cores; on small hosts the same cores), and a
// request far back is served mostly after the burst, at the capacity. So
// during a burst the wait is the burst's remaining time at the measured
// rate, then the rest at the capacity: the remaining time is taken to be
// as long as the burst has lasted so far, and the capacity is the best
// rate this process measured in the last hour, or Config.DrainPrior if
// that is higher.
type estimator struct {
	s   *Queue
	now func() time.Time
	mu  sync.Mutex
	ev  *lru.Cache[boxoffice.ID, *drain] // the Config.CacheEvents events sampled last
	// last is the latest rate measured for any event: the prior of an
	// event whose own drain has not been measured yet.
	last float64
	// best is the highest rate measured for any event since bestAt (kept
	// for an hour): the drain's capacity as measured.
	best   float64
	bestAt time.Time
}

// pace is an event's queue as the estimator last saw it.
type pace struct {
	prog boxoffice.QueueProgress
	rate float64 // requests/s, 0 until measured
	// burst is how long requests have been arriving without a pause (0:
	// none arrived in the last interval).
	burst time.Duration
}

type drain struct {
	// fetching is held by the one caller reading the progress afresh.
	fetching   sync.Mutex
	mu         sync.Mutex
	asked      time.Time // when a request's ticket last read it
	fetched    time.Time // when prog was read
	prog       boxoffice.QueueProgress
	at         time.Time // the last rate sample
	served     int64
	admitted   int64     // Admitted at the last rate sample
	burstStart time.Time // since when every interval saw arrivals; zero: the last one saw none
	backlog    bool      // requests were waiting at the last sample
	started    bool      // the drain was seen moving: the next interval is a full one
	rate       float64   // requests/s, 0 until measured
}

// capacityKept is how long the best rate measured stands as the capacity.
const capacityKept = time.Hour

const (
	// progressTTL bounds how often one process reads an event's counters,
	// however many clients poll.
	progressTTL = 250 * time.Millisecond
	// progressStale is how old a read may be that callers answer from
	// while another caller reads afresh; past it they wait for that read.
	progressStale = 2 * time.Second
	// rateSample is the shortest interval a rate is measured over, and
	// rateTau the EWMA's time constant: about the last 3s count.
	rateSample = time.Second
	rateTau    = 3 * time.Second
)

func newEstimator(s *Queue) *estimator {
	return &estimator{s: s, now: time.Now, ev: lru.New[boxoffice.ID, *drain](s.cfg.CacheEvents)}
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
func (e *estimator) estimate(p pace, position int64) (int64, *float64) {
	ahead, w := e.wait(p)(position)
	return ahead, &w
}

// wait returns the estimator of a position's wait on the pace given: how
// many requests are ahead of it and the seconds until its outcome, tenths.
// Before the event's drain has been measured (rate 0) the rate is the
// prior: the last rate measured for another event, else Config.DrainPrior.
// During a burst of arrivals, what is not served in the burst's expected
// remaining time (as long as it has lasted) is served at the capacity.
func (e *estimator) wait(p pace) func(position int64) (int64, float64) {
	e.mu.Lock()
	rate, capacity := p.rate, e.s.cfg.DrainPrior
	if rate <= 0 {
		rate = e.last
	}
	if e.now().Sub(e.bestAt) < capacityKept {
		capacity = max(capacity, e.best)
	}
	e.mu.Unlock()
	if rate <= 0 {
		rate = e.s.cfg.DrainPrior
	}
	burst := p.burst.Seconds()
	inBurst := rate * burst // served before the burst is expected to end
	return func(position int64) (int64, float64) {
		ahead := max(0, p.prog.Before(position)-p.prog.Served)
		n := float64(ahead + 1)
		w := n / rate
		if burst > 0 && capacity > rate && n > inBurst {
			w = burst + (n-inBurst)/capacity
		}
		return ahead, math.Round(w*10) / 10
	}
}

// QueueRate returns an event's queue progress and its measured drain rate,
// requests/s.
func (s *Queue) QueueRate(ctx context.Context, eventID boxoffice.ID) (boxoffice.QueueProgress, float64, error) {
	p, err := s.estimator.sample(ctx, eventID)
	return p.prog, p.rate, err
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
	now := e.now()
	for _, en := range all {
		en.d.mu.Lock()
		live := now.Sub(en.d.asked) < recent
		en.d.mu.Unlock()
		if !live {
			continue
		}
		if p, err := e.read(ctx, en.id, false); err == nil {
			yield(en.id, p.prog, p.rate)
		}
	}
}

func (e *estimator) sample(ctx context.Context, eventID boxoffice.ID) (pace, error) {
	return e.read(ctx, eventID, true)
}

// read returns the event's pace, reading the progress if the last read is
// older than progressTTL; asked says a request's ticket needs it (rather
// than a scrape of the metrics). One caller reads while the others answer
// from the read before, up to progressStale old: a poll or an admission
// batch never waits for another caller's round trip to the queue state.
func (e *estimator) read(ctx context.Context, eventID boxoffice.ID, asked bool) (pace, error) {
	d := e.drain(eventID)
	younger := func(age time.Duration) (pace, bool) { return d.younger(e.now(), age, asked) }
	return readThrough(&d.fetching, younger, progressTTL, progressStale, func() (pace, error) { return e.fetch(ctx, eventID, d) })
}

// fetch reads the event's progress into d and measures the rate from it.
func (e *estimator) fetch(ctx context.Context, eventID boxoffice.ID, d *drain) (pace, error) {
	now := e.now()
	p, err := e.s.queue.Progress(ctx, eventID)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		return pace{prog: p}, err
	}
	d.prog, d.fetched = p, now
	switch dt := now.Sub(d.at); {
	case d.at.IsZero():
		d.at, d.served, d.admitted, d.backlog = now, p.Served, p.Admitted, p.Admitted > p.Served
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
				if d.rate > e.best || now.Sub(e.bestAt) >= capacityKept {
					e.best, e.bestAt = d.rate, now
				}
				e.mu.Unlock()
			}
		}
		switch {
		case p.Admitted == d.admitted: // no arrival (the pre-queue arrives at the draw)
			d.burstStart = time.Time{}
		case d.burstStart.IsZero():
			d.burstStart = d.at
		}
		d.at, d.served, d.admitted, d.backlog = now, p.Served, p.Admitted, p.Admitted > p.Served
	}
	return d.pace(now), nil
}

// younger returns the pace of the last read if it is younger than age;
// asked records that a request's ticket wanted it (now).
func (d *drain) younger(now time.Time, age time.Duration, asked bool) (pace, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if asked {
		d.asked = now
	}
	if d.fetched.IsZero() || now.Sub(d.fetched) >= age {
		return pace{}, false
	}
	return d.pace(now), true
}

// pace is the drain's pace as of now (d.mu held).
func (d *drain) pace(now time.Time) pace {
	p := pace{prog: d.prog, rate: d.rate}
	if !d.burstStart.IsZero() {
		p.burst = now.Sub(d.burstStart)
	}
	return p
}
