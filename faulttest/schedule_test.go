package faulttest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The fault schedule repeats every cycleLen; the short form is one cycle.
// Offsets within a cycle (the delayed queued sale of the cycle opens at
// delayedOpens):
//
//	+4  PostgreSQL stopped (-m immediate)     +8  started again
//	+12 Redis kill -9 (pre-queue filled)      +15 restarted empty, same port
//	+23 kill -9 of an API                     +26 restarted on the same port
//	+29 kill -9 of a worker                   +32 restarted
//	+35 SIGSTOP of the other worker           +47 SIGCONT (past hold and session)
//	+38 kill -9 of the relay                  +41 restarted
//	+50 SIGSTOP of the other API              +62 SIGCONT
//	+64 Redis kill -9 (mid-sale)              +67 restarted empty
const (
	cycleLen     = 70 * time.Second
	delayedOpens = 20 * time.Second
	stopFor      = 12 * time.Second // > holdTTL and > kafkaSession
)

// fault is one step of the schedule.
type fault struct {
	At   time.Duration // from the start of the load
	Name string
	do   func() error
}

// done is a step as it happened.
type done struct {
	fault
	When time.Duration
	Took time.Duration
	Err  error
}

// window is a stretch of time a part was down.
type window struct {
	What       string
	From, To   time.Time
	open       bool
	Cycle      int
	BeforeOpen bool // a Redis outage before the cycle's delayed sale opened
}

// injector runs the schedule against a topology and keeps the outage
// windows.
type injector struct {
	top    *topology
	faults []fault

	mu      sync.Mutex
	log     []done
	windows []*window
}

func (in *injector) begin(what string, cycle int, beforeOpen bool) {
	in.mu.Lock()
	in.windows = append(in.windows, &window{What: what, From: time.Now(), open: true, Cycle: cycle, BeforeOpen: beforeOpen})
	in.mu.Unlock()
}

func (in *injector) end(what string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for i := len(in.windows) - 1; i >= 0; i-- {
		if w := in.windows[i]; w.What == what && w.open {
			w.To, w.open = time.Now(), false
			return
		}
	}
}

// closeAll ends every window still open (healing).
func (in *injector) closeAll() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, w := range in.windows {
		if w.open {
			w.To, w.open = time.Now(), false
		}
	}
}

func (in *injector) outages(what string) []*window {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []*window
	for _, w := range in.windows {
		if w.What == what {
			out = append(out, w)
		}
	}
	return out
}

// down reports whether what was down at some moment of [from, to].
func (in *injector) down(what string, from, to time.Time) bool {
	for _, w := range in.outages(what) {
		end := w.To
		if w.open {
			end = time.Now()
		}
		if from.Before(end) && w.From.Before(to) {
			return true
		}
	}
	return false
}

// plan builds the schedule for a load of length d.
func plan(top *topology, d time.Duration) *injector {
	in := &injector{top: top}
	cycles := max(1, int(d/cycleLen))
	add := func(at time.Duration, name string, do func() error) {
		if at < d-3*time.Second { // leave the end of the load to heal
			in.faults = append(in.faults, fault{At: at, Name: name, do: do})
		}
	}
	for c := range cycles {
		base := time.Duration(c) * cycleLen
		// The API killed first is api2 in the first cycle: after the
		// PostgreSQL restart every node id lease is gone, and the first
		// free id a restarted process takes is 0, api1's. Two APIs on one
		// node id hand out the same ids if nothing stops them.
		api, other := top.apis[(c+1)%2], top.apis[c%2]
		w, otherW := top.workers[c%2], top.workers[(c+1)%2]
		if top.pg != nil {
			add(base+4*time.Second, "postgres stop -m immediate", func() error {
				in.begin("postgres", c, false)
				top.setPG(true)
				return top.pg.StopImmediate()
			})
			add(base+8*time.Second, "postgres start", func() error {
				err := top.pg.Start()
				if err == nil {
					top.setPG(false)
				}
				in.end("postgres")
				return err
			})
		}
		add(base+12*time.Second, "redis kill -9 (before the delayed sale opens)", func() error {
			in.begin("redis", c, true)
			return top.redis.signal(syscall.SIGKILL)
		})
		add(base+15*time.Second, "redis restart (empty)", func() error {
			in.end("redis") // from here on it may answer
			return top.redis.start(30 * time.Second)
		})
		add(base+23*time.Second, "kill -9 "+api.name, func() error {
			in.begin(api.name, c, false)
			return api.signal(syscall.SIGKILL)
		})
		add(base+26*time.Second, "restart "+api.name+" (same port)", func() error {
			err := api.start(60 * time.Second)
			in.end(api.name)
			return err
		})
		add(base+29*time.Second, "kill -9 "+w.name, func() error {
			in.begin(w.name, c, false)
			return w.signal(syscall.SIGKILL)
		})
		add(base+32*time.Second, "restart "+w.name, func() error {
			err := w.start(60 * time.Second)
			in.end(w.name)
			return err
		})
		add(base+35*time.Second, "SIGSTOP "+otherW.name, func() error {
			in.begin(otherW.name, c, false)
			return otherW.signal(syscall.SIGSTOP)
		})
		add(base+35*time.Second+stopFor, "SIGCONT "+otherW.name, func() error {
			err := otherW.signal(syscall.SIGCONT)
			in.end(otherW.name)
			return err
		})
		add(base+38*time.Second, "kill -9 relay", func() error {
			in.begin("relay", c, false)
			return top.relay.signal(syscall.SIGKILL)
		})
		add(base+41*time.Second, "restart relay", func() error {
			err := top.relay.start(60 * time.Second)
			in.end("relay")
			return err
		})
		add(base+50*time.Second, "SIGSTOP "+other.name, func() error {
			in.begin(other.name, c, false)
			return other.signal(syscall.SIGSTOP)
		})
		add(base+50*time.Second+stopFor, "SIGCONT "+other.name, func() error {
			err := other.signal(syscall.SIGCONT)
			in.end(other.name)
			return err
		})
		add(base+64*time.Second, "redis kill -9 (mid-sale)", func() error {
			in.begin("redis", c, false)
			return top.redis.signal(syscall.SIGKILL)
		})
		add(base+67*time.Second, "redis restart (empty)", func() error {
			in.end("redis")
			return top.redis.start(30 * time.Second)
		})
	}
	sort.SliceStable(in.faults, func(i, j int) bool { return in.faults[i].At < in.faults[j].At })
	return in
}

// describe prints the schedule, with the delayed sales' openings.
func (in *injector) describe(d time.Duration, events []*event, t0 time.Time) string {
	type line struct {
		at   time.Duration
		text string
	}
	var ls []line
	for _, f := range in.faults {
		ls = append(ls, line{f.At, f.Name})
	}
	for _, e := range events {
		if e.Kind == "delayed" {
			ls = append(ls, line{e.OpensAt.Sub(t0), fmt.Sprintf("(delayed queued sale %s of cycle %d opens)", e.ID, e.Cycle)})
		}
	}
	ls = append(ls, line{d, "load stops; heal; quiescence; checks"})
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].at < ls[j].at })
	var b strings.Builder
	for _, l := range ls {
		fmt.Fprintf(&b, "  +%6.1fs  %s\n", l.at.Seconds(), l.text)
	}
	return b.String()
}

// run executes the schedule from t0 until it is done or stop closes.
func (in *injector) run(t0 time.Time, stop <-chan struct{}) {
	for _, f := range in.faults {
		select {
		case <-stop:
			return
		case <-time.After(time.Until(t0.Add(f.At))):
		}
		start := time.Now()
		err := f.do()
		in.mu.Lock()
		in.log = append(in.log, done{fault: f, When: start.Sub(t0), Took: time.Since(start), Err: err})
		in.mu.Unlock()
	}
}

func (in *injector) executed() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var b strings.Builder
	for _, d := range in.log {
		status := "ok"
		if d.Err != nil {
			status = "ERROR: " + d.Err.Error()
		}
		fmt.Fprintf(&b, "  +%6.1fs  %-48s took %5.2fs  %s\n", d.When.Seconds(), d.Name, d.Took.Seconds(), status)
	}
	return b.String()
}
