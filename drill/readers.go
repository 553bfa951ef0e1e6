package drill

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/boxoffice/boxoffice/internal/wait"
)

// readMap reads the event's seat map at path ("/seats" or
// "/availability") in a loop, with If-None-Match and gzip as a CDN or a
// browser would, and counts what was served. With update, a changed
// compact view becomes the users' view. pace 0 reads flat out.
func (r *runner) readMap(ctx context.Context, path string, update bool, pace time.Duration) {
	url := r.c.base + "/events/" + r.eventID + path
	etag := ""
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept-Encoding", "gzip")
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := r.rc.hc.Do(req)
		now := time.Now()
		if err != nil {
			_ = wait.Sleep(ctx, 100*time.Millisecond)
			continue
		}
		switch resp.StatusCode {
		case http.StatusOK:
			etag = resp.Header.Get("ETag")
			if update {
				body, err := io.ReadAll(resp.Body)
				if err == nil {
					if n, err := r.view.Update(body, etag, now); err == nil {
						r.noteAvailable(now, n)
					}
				}
			} else {
				_, _ = io.Copy(io.Discard, resp.Body)
			}
			r.reads200.add(now, 1)
		case http.StatusNotModified:
			r.reads304.add(now, 1)
		default:
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = wait.Sleep(ctx, 100*time.Millisecond)
		}
		resp.Body.Close()
		if pace > 0 {
			_ = wait.Sleep(ctx, pace)
		}
	}
}

// noteAvailable records the map's available count; the first zero after
// the opening is the sell-out as the public sees it.
func (r *runner) noteAvailable(at time.Time, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.avail = append(r.avail, AvailSample{At: at.Sub(r.t0), Available: n})
	if n == 0 && r.soldAt < 0 && at.After(r.open) {
		r.soldAt = at.Sub(r.open)
	}
}

// sample reads the queue's counters from the queue state twice a second,
// for the depth and drain-rate series, and prints a progress line every
// five seconds.
func (r *runner) sample(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			p, err := r.t.Queue.Progress(ctx, r.event)
			if err != nil {
				continue
			}
			r.mu.Lock()
			r.queue = append(r.queue, QueueSample{At: now.Sub(r.t0), Admitted: p.Admitted, Served: p.Served, Waiting: p.Waiting})
			r.mu.Unlock()
			if r.t.Progress != nil && now.Sub(last) >= 5*time.Second {
				last = now
				fmt.Fprintf(r.t.Progress, "drill: t=%3.0fs arrived %d/%d, 202s %d, queue admitted %d served %d waiting %d, paid %d, map reads %d, user actions scheduled %d\n",
					now.Sub(r.t0).Seconds(), sum(r.arrivals), len(r.users), sum(r.admitted), p.Admitted, p.Served, p.Waiting,
					sum(r.confirmed), sum(r.reads200)+sum(r.reads304), r.sched.len())
			}
		}
	}
}

func sum(s *series) int64 {
	var n int64
	for i := range s.buckets {
		n += s.buckets[i].Load()
	}
	return n
}
