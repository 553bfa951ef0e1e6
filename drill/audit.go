package drill

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/wait"
)

// Auditor reads a store's tables directly, bypassing the API under test,
// so that the verdict does not depend on the code it judges. Each store
// has its own implementation with its SQL in plain sight (SQLiteAuditor,
// PostgresAuditor); every query only reads.
type Auditor interface {
	// Oversold returns how many of the event's seats have more than one
	// valid ticket (the unique index forbids it; the audit checks anyway).
	Oversold(ctx context.Context, eventID boxoffice.ID) (int, error)
	// DoubleHeld returns how many of the event's seats two bookings
	// claimed at the same time: a pending hold overlapping another's hold
	// (until it ran out, or until its release or cancellation), or a seat
	// of a confirmed booking claimed by any other booking after it was
	// created.
	DoubleHeld(ctx context.Context, eventID boxoffice.ID) (int, error)
	// Sold returns the number of valid tickets and when the last one was
	// issued.
	Sold(ctx context.Context, eventID boxoffice.ID) (int, time.Time, error)
	// Bookings counts the event's bookings by status.
	Bookings(ctx context.Context, eventID boxoffice.ID) (map[string]int, error)
	// Confirmed returns the ids of the event's confirmed bookings.
	Confirmed(ctx context.Context, eventID boxoffice.ID) (map[string]bool, error)
	// MissingTickets counts the event's confirmed bookings with fewer valid
	// tickets than seats: a paid booking that lost its seats.
	MissingTickets(ctx context.Context, eventID boxoffice.ID) (int, error)
	Close() error
}

// AuditResult is what the store and the queue state say at the end.
type AuditResult struct {
	// Checked is the number of requests that got a 202, each looked up in
	// the queue state; Lost those without a final status (held or
	// rejected), or unknown to it. LostIDs names the first few.
	Checked, Lost int
	LostIDs       []string
	// Progress is the event's queue counters; Unserved is admitted plus
	// waiting minus served: requests the queue itself has not finished,
	// including any whose 202 the drill never read (a timeout).
	Progress boxoffice.QueueProgress
	Unserved int64
	// Settled reports that the queue had drained (or stopped moving)
	// before the audit; when it had not, a request without an outcome may
	// be slow rather than lost.
	Settled    bool
	SettleNote string

	Oversold       int
	DoubleHeld     int
	MissingTickets int
	// PaidLost counts bookings whose confirm answered 200 and which the
	// store does not have as confirmed.
	PaidLost   int
	Sold       int
	LastTicket time.Time
	Bookings   map[string]int
}

// stallAfter is how long a queue with requests in it may stand still
// before the drill calls them stuck rather than slow.
const stallAfter = 15 * time.Second

// settle waits, up to --settle, for the queue to serve every request it
// admitted, so that the audit can tell lost from not yet served.
func (r *runner) settle(ctx context.Context, res *Result) {
	defer func() {
		r.stopSampler()
		r.sampling.Wait()
	}()
	deadline := time.Now().Add(r.cfg.Settle)
	lastServed, moved := int64(-1), time.Now()
	for {
		p, err := r.t.Queue.Progress(ctx, r.event)
		now := time.Now()
		switch {
		case err != nil:
			res.Audit.SettleNote = "queue counters unreadable: " + err.Error()
		case p.Waiting == 0 && p.Served >= p.Admitted:
			// The sampler may not have seen the queue empty: record it.
			r.mu.Lock()
			r.queue = append(r.queue, QueueSample{At: now.Sub(r.t0), Admitted: p.Admitted, Served: p.Served, Waiting: p.Waiting})
			r.mu.Unlock()
			res.Audit.Settled, res.Audit.SettleNote = true, fmt.Sprintf("drained %.1fs after the load stopped", now.Sub(r.t0).Seconds()-res.LoadEnded.Seconds())
			return
		case p.Served != lastServed:
			lastServed, moved = p.Served, now
		case now.Sub(moved) > stallAfter:
			res.Audit.Settled = true
			res.Audit.SettleNote = fmt.Sprintf("the queue stopped moving with %d requests not served", p.Admitted+p.Waiting-p.Served)
			return
		}
		if now.After(deadline) || ctx.Err() != nil {
			res.Audit.SettleNote = fmt.Sprintf("still draining when --settle (%s) ran out: %d served of %d", r.cfg.Settle, p.Served, p.Admitted+p.Waiting)
			return
		}
		_ = wait.Sleep(ctx, 250*time.Millisecond)
	}
}

// audit reads the verdict from the stores.
func (r *runner) audit(ctx context.Context, res *Result) error {
	a := &res.Audit
	// Every 202's request, looked up in the queue state, eight at a time.
	work := make(chan *request)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		firstEr error
	)
	for range 8 {
		wg.Go(func() {
			for req := range work {
				id, err := boxoffice.ParseID(req.id)
				var e *boxoffice.QueueEntry
				if err == nil {
					e, err = r.t.Queue.Entry(ctx, id)
				}
				mu.Lock()
				switch {
				case err == nil && e.Status.Final():
					req.final, req.finishedAt = true, e.FinishedAt
				case err == nil || boxoffice.ErrorCode(err) == boxoffice.ENOTFOUND:
					a.Lost++
					if len(a.LostIDs) < 10 {
						a.LostIDs = append(a.LostIDs, req.id)
					}
				case firstEr == nil:
					firstEr = err
				}
				mu.Unlock()
			}
		})
	}
	for _, req := range r.reqs {
		work <- req
	}
	close(work)
	wg.Wait()
	if firstEr != nil {
		return firstEr
	}
	a.Checked = len(r.reqs)

	var err error
	if a.Progress, err = r.t.Queue.Progress(ctx, r.event); err != nil {
		return err
	}
	a.Unserved = a.Progress.Admitted + a.Progress.Waiting - a.Progress.Served
	st := r.t.Audit
	if a.Oversold, err = st.Oversold(ctx, r.event); err != nil {
		return err
	}
	if a.DoubleHeld, err = st.DoubleHeld(ctx, r.event); err != nil {
		return err
	}
	if a.MissingTickets, err = st.MissingTickets(ctx, r.event); err != nil {
		return err
	}
	if a.Sold, a.LastTicket, err = st.Sold(ctx, r.event); err != nil {
		return err
	}
	if a.Bookings, err = st.Bookings(ctx, r.event); err != nil {
		return err
	}
	confirmed, err := st.Confirmed(ctx, r.event)
	if err != nil {
		return err
	}
	for _, id := range r.paid {
		if !confirmed[id] {
			a.PaidLost++
		}
	}
	return nil
}

// rows is what the two auditors' drivers' result sets share (pgx.Rows,
// *sql.Rows); the caller closes them.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// countsOf reads (status, count) rows: Bookings.
func countsOf(rs rows) (map[string]int, error) {
	out := map[string]int{}
	for rs.Next() {
		var (
			status string
			n      int
		)
		if err := rs.Scan(&status, &n); err != nil {
			return nil, err
		}
		out[status] = n
	}
	return out, rs.Err()
}

// idsOf reads rows of one id: Confirmed.
func idsOf(rs rows) (map[string]bool, error) {
	out := map[string]bool{}
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, err
		}
		out[strconv.FormatInt(id, 10)] = true
	}
	return out, rs.Err()
}
