package boxoffice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice/internal/jsonappend"
	"github.com/boxoffice/boxoffice/internal/jsonscan"
)

// The flash-sale queue. A reserve for an event whose sale mode is queued is
// not served at once: the front door validates it, records it in the
// QueueState (idempotency, one live entry per user, a position), appends it
// to the RequestLog and answers 202 once the log has it. Booking workers
// drain the log in batches, hold the seats, create the pending booking and
// record the outcome, which the user polls or is pushed.
//
// Implementations: the embedded database keeps both the state and the log
// (sqlite.Queue); in production the state is in Redis and the log in Kafka.

// QueueStatus is where a queued request is.
type QueueStatus string

const (
	// QueueWaiting: admitted before the sale opened, in the pre-queue,
	// without a position yet; positions are drawn at random at opening.
	QueueWaiting QueueStatus = "waiting"
	// QueueQueued: has a position, not processed yet.
	QueueQueued QueueStatus = "queued"
	// QueueHeld: processed, seats held and a pending booking made.
	QueueHeld QueueStatus = "held"
	// QueueRejected: processed, no booking; Reason says why.
	QueueRejected QueueStatus = "rejected"
)

// Final reports whether the status is an outcome.
func (s QueueStatus) Final() bool { return s == QueueHeld || s == QueueRejected }

// QueuedRequest is one reserve waiting in the queue: what the worker needs
// to serve it without asking anyone else.
type QueuedRequest struct {
	// ID is the request id; the booking a worker makes for it has the same
	// id, so a redelivered request finds its booking instead of making a
	// second one.
	ID      ID       `json:"request_id"`
	EventID ID       `json:"event_id"`
	UserID  string   `json:"user_id"`
	SeatIDs []string `json:"seat_ids"`
	// Best, instead of SeatIDs, asks for the best seats left when the
	// worker serves the request.
	Best           *BestAvailable `json:"best_available,omitempty"`
	IdempotencyKey string         `json:"idempotency_key"`
	RequestHash    string         `json:"request_hash"`
	Position       int64          `json:"position"` // 0 while waiting for the sale to open
	EnqueuedAt     time.Time      `json:"enqueued_at"`
	// TraceParent is the W3C traceparent of the reserve that enqueued the
	// request ("" untraced): the worker's decision joins its trace.
	TraceParent string `json:"traceparent,omitempty"`
	// EstimatedWait is the wait (seconds) the front door told in its 202,
	// kept with the request so that the worker deciding it can measure the
	// estimate against the real wait. Nil for a request admitted to the
	// pre-queue, whose first answer was the opening time.
	EstimatedWait *float64 `json:"estimated_wait_seconds,omitempty"`
}

// AppendJSON appends r as encoding/json writes it, without reflection: the
// front door writes every request it admits twice (the queue state's entry
// and the request log's record), and reflection was a few per cent of its
// CPU. Rare values (text to escape, a best-available ask) still go through
// encoding/json; an enqueued time past year 9999 is written null where
// encoding/json would refuse the request.
func (r *QueuedRequest) AppendJSON(b []byte) []byte {
	b = append(b, `{"request_id":`...)
	b = jsonappend.QuotedInt(b, int64(r.ID))
	b = append(b, `,"event_id":`...)
	b = jsonappend.QuotedInt(b, int64(r.EventID))
	b = append(b, `,"user_id":`...)
	b = jsonappend.String(b, r.UserID)
	b = append(b, `,"seat_ids":`...)
	b = jsonappend.Strings(b, r.SeatIDs)
	if r.Best != nil {
		b = append(b, `,"best_available":`...)
		b = jsonappend.Value(b, r.Best)
	}
	b = append(b, `,"idempotency_key":`...)
	b = jsonappend.String(b, r.IdempotencyKey)
	b = append(b, `,"request_hash":`...)
	b = jsonappend.String(b, r.RequestHash)
	b = append(b, `,"position":`...)
	b = strconv.AppendInt(b, r.Position, 10)
	b = append(b, `,"enqueued_at":`...)
	b = jsonappend.Time(b, r.EnqueuedAt)
	b = jsonappend.OptionalString(b, `,"traceparent":`, r.TraceParent)
	if r.EstimatedWait != nil {
		b = append(b, `,"estimated_wait_seconds":`...)
		b = jsonappend.Float(b, *r.EstimatedWait)
	}
	return append(b, '}')
}

// DecodeQueuedRequest reads into r, a zero QueuedRequest, what AppendJSON
// or encoding/json wrote. The drain reads every request of the log, and
// encoding/json (a scan, then reflection, and the garbage of both) was a
// third of its worker's CPU: the records AppendJSON writes are read in one
// pass; anything else (a best-available ask, null, an escape, a non-ASCII
// byte, a repeated key, an id as a number) goes through encoding/json.
// What the one pass accepts encoding/json reads the same
// (TestDecodeQueuedRequestAgreesWithEncodingJSON).
func DecodeQueuedRequest(b []byte, r *QueuedRequest) error {
	if r.decodeFast(b) {
		return nil
	}
	return json.Unmarshal(b, r)
}

// decodeFast is DecodeQueuedRequest's one pass; it leaves r untouched when
// it reports false.
func (r *QueuedRequest) decodeFast(b []byte) bool {
	var out QueuedRequest
	text := func(at int, dst *string) (int, bool) { return jsonscan.Text(b, at, dst) }
	id := func(at int, dst *ID) (int, bool) {
		s, e, ok := jsonscan.String(b, at)
		if !ok {
			return 0, false
		}
		v, err := ParseID(string(b[s:e]))
		*dst = v
		return e + 1, err == nil
	}
	ok := jsonscan.Object(b, 0, func(key []byte, at int) (int, bool) {
		switch string(key) {
		case "request_id":
			return id(at, &out.ID)
		case "event_id":
			return id(at, &out.EventID)
		case "user_id":
			return text(at, &out.UserID)
		case "seat_ids":
			if bytes.HasPrefix(b[at:], []byte("null")) { // a best-available ask's
				return at + len("null"), true
			}
			ss, next, ok := jsonscan.Strings(b, at)
			out.SeatIDs = ss
			return next, ok
		case "idempotency_key":
			return text(at, &out.IdempotencyKey)
		case "request_hash":
			return text(at, &out.RequestHash)
		case "position":
			n, next, ok := jsonscan.Whole(b, at)
			out.Position = n
			return next, ok
		case "enqueued_at":
			// time.Time's UnmarshalJSON of a string without escapes is its
			// UnmarshalText of the text.
			s, e, ok := jsonscan.String(b, at)
			return e + 1, ok && out.EnqueuedAt.UnmarshalText(b[s:e]) == nil
		case "traceparent":
			return text(at, &out.TraceParent)
		case "estimated_wait_seconds":
			next, ok := jsonscan.Number(b, at)
			if !ok {
				return 0, false
			}
			f, err := strconv.ParseFloat(string(b[at:next]), 64)
			out.EstimatedWait = &f
			return next, err == nil
		}
		return 0, false
	})
	if ok {
		*r = out
	}
	return ok
}

// WaitEstimateWithin reports whether a wait estimate counts as accurate:
// off by at most 25% of the real wait plus 2 s (seconds both). It is the
// one rule the metrics (boxoffice_queue_wait_estimates_total) and the
// drill's report judge estimates by.
func WaitEstimateWithin(told, real float64) bool {
	return math.Abs(told-real) <= 0.25*real+2
}

// QueueEntry is a request with where it is.
type QueueEntry struct {
	Request *QueuedRequest
	Status  QueueStatus
	// Reason is the error code of a rejection (ESEATTAKEN, ELIMIT, ...).
	Reason     string
	Message    string
	BookingID  ID
	HeldUntil  time.Time
	FinishedAt time.Time
}

// QueueOutcome is what a worker records for a processed request.
type QueueOutcome struct {
	Status     QueueStatus // QueueHeld or QueueRejected
	Reason     string
	Message    string
	BookingID  ID
	HeldUntil  time.Time
	FinishedAt time.Time
}

// QueueRecord is the durable record of a queued request's outcome: what a
// cached QueueState (Redis) is rebuilt from, together with the request log,
// after it lost its data, and what answers GET /queue/{id} meanwhile.
type QueueRecord struct {
	RequestID ID
	EventID   ID
	UserID    string
	Position  int64
	QueueOutcome
}

// ErrQueueCold reports that a cached QueueState has lost the state of an
// event (a Redis restart without persistence, a failover to a replica that
// lagged) and must be rebuilt from the durable record before it answers
// for it again. It travels inside an EUNAVAILABLE *Error.
var ErrQueueCold = errors.New("the queue state is being restored")

// QueueColdError is the error a cached QueueState answers for an event
// it lost: EUNAVAILABLE (503 with Retry-After) wrapping ErrQueueCold.
func QueueColdError() error {
	return &Error{Code: EUNAVAILABLE, Message: "the flash-sale queue is being restored, retry shortly", Err: ErrQueueCold}
}

// QueueProgress is an event's queue at a glance.
type QueueProgress struct {
	// Admitted is the number of positions given (on one slot, also the
	// highest); Served the number of requests with an outcome. The distance
	// between a position and Served is what the wait estimate divides by
	// the drain rate.
	Admitted, Served int64
	// Waiting counts requests in the pre-queue.
	Waiting int64
	// Opened reports that the pre-queue was given its positions, Released
	// that the drawn requests are in the log too (MarkReleased). An opener
	// that died between the two is finished by the next one.
	Opened, Released bool
	// SoldOutUpTo is the highest position the event's sell-out answers
	// (MarkSoldOut): every request at or before it that has no outcome yet
	// is sold out, and is told so at once. 0 while it has not sold out.
	// On a queue spread over several slots, the highest of Slots' marks.
	SoldOutUpTo int64
	// Slots is set for a queue spread over k > 1 slots (redis.QueueState
	// with Slots > 1): slot j gives the positions j+1, j+1+k, j+1+2k, ...
	// and keeps its own sold-out mark. Empty for a queue in one sequence.
	Slots []QueueSlot
}

// QueueSlot is one slot of a queue spread over several: the highest
// position it gave and its sold-out mark (0: none), both positions of the
// event's queue.
type QueueSlot struct{ Last, SoldOutUpTo int64 }

// SoldOut reports whether the sell-out answers position pos: it was given
// before the event's (or its slot's) sold-out mark was set.
func (p QueueProgress) SoldOut(pos int64) bool {
	if pos <= 0 {
		return false
	}
	if k := int64(len(p.Slots)); k > 0 {
		return pos <= p.Slots[(pos-1)%k].SoldOutUpTo
	}
	return pos <= p.SoldOutUpTo
}

// Before returns how many positions below pos were given: on one
// sequence pos-1; on slots, each slot's positions below pos up to the last
// it gave. Less Served, it is the number of requests ahead of pos. A
// progress read before pos was given (its slot's Last is below it: a
// cached read) cannot tell a slot's gaps from its later admissions, and
// counts pos-1 as on one sequence.
func (p QueueProgress) Before(pos int64) int64 {
	k := int64(len(p.Slots))
	if k == 0 || pos < 1 || pos > p.Slots[(pos-1)%k].Last {
		return max(0, pos-1)
	}
	var n int64
	for j, s := range p.Slots {
		// Slot j's positions are j+1, j+1+k, ...: those up to m number
		// (m-j-1)/k + 1.
		if m := min(pos-1, s.Last); m >= int64(j)+1 {
			n += (m-int64(j)-1)/k + 1
		}
	}
	return n
}

// AllSoldOut reports whether the sold-out mark covers every position given.
func (p QueueProgress) AllSoldOut() bool {
	if len(p.Slots) > 0 {
		for _, s := range p.Slots {
			if s.SoldOutUpTo < s.Last {
				return false
			}
		}
		return true
	}
	return p.SoldOutUpTo >= p.Admitted
}

// QueueState is the front door's book of queued requests.
type QueueState interface {
	// Admit records r, giving it the event's next position (r.Position is
	// set), or, when the sale has not opened (r.Position == 0 on the way in
	// and opensAt after now), a place in the pre-queue. A request with the
	// same (user, key) already there is returned with replay true and
	// nothing changes (EIDEMMISMATCH if its hash differs); a user with
	// maxLive live entries for the event (waiting or queued) gets
	// ECONFLICT.
	Admit(ctx context.Context, r *QueuedRequest, maxLive int, preQueue bool) (e *QueueEntry, replay bool, err error)
	// AdmitMany is Admit for a batch, decided as if Admit were called for
	// each in turn, in slice order (two requests of one user in a batch
	// count against each other; a second with the same key is the first's
	// replay), in one round trip per store instead of one per request: the
	// front door's batched admission. out[i] answers as[i], its Err what
	// Admit would have returned; err fails the whole batch (the store is
	// unreachable), which may have admitted part of it: a retry with the
	// same key replays those.
	AdmitMany(ctx context.Context, as []Admission) (out []Admitted, err error)
	// Entry returns a request's entry, or ENOTFOUND.
	Entry(ctx context.Context, id ID) (*QueueEntry, error)
	// EntryByKey returns the entry of a user's request with an idempotency
	// key for an event, or ENOTFOUND: how a retry is recognised where no
	// new request may be admitted (a sold-out event).
	EntryByKey(ctx context.Context, eventID ID, userID, key string) (*QueueEntry, error)
	// Entries returns the entries of requests as the log delivered them,
	// in one round trip: out[i] is rs[i]'s entry, nil when there is none.
	// It is the drain's read of a whole batch.
	Entries(ctx context.Context, rs []*QueuedRequest) ([]*QueueEntry, error)
	// Finish records the outcome of a queued request (as the log delivered
	// it) once: it reports false, changing nothing, when the request
	// already has one or is still waiting for the draw. It frees the
	// user's live slot and counts the request as served.
	Finish(ctx context.Context, r *QueuedRequest, o QueueOutcome) (first bool, err error)
	// FinishMany is Finish for a batch (rs[i] gets os[i]; first[i] is
	// Finish's answer), in one round trip per store instead of one per
	// request: the queue drain's announcement. An error may leave part of
	// the batch finished; finishing again is harmless.
	FinishMany(ctx context.Context, rs []*QueuedRequest, os []QueueOutcome) (first []bool, err error)
	// Open gives the event's pre-queue its positions, following any
	// position already given, in the order that draw returns the ids of the
	// requests still waiting in (the draw, DrawOrder), and returns the
	// requests in position order, for the caller to append to the log. It
	// is idempotent: a second call returns the same requests again.
	Open(ctx context.Context, eventID ID, draw func(ids []ID) []ID) ([]*QueuedRequest, error)
	// MarkReleased records that the requests Open returned are in the log.
	MarkReleased(ctx context.Context, eventID ID) error
	// MarkSoldOut records that the event sold out with every position
	// given so far queued before the sell-out: SoldOutUpTo becomes the
	// highest position given, if that is higher. It returns the new mark.
	MarkSoldOut(ctx context.Context, eventID ID) (upTo int64, err error)
	// Progress returns the event's queue counters.
	Progress(ctx context.Context, eventID ID) (QueueProgress, error)
}

// EntriesFinisher is a QueueState that can finish a batch whose entries
// the caller has just read (Entries) without reading them again: the drain
// reads a batch's entries to skip its redeliveries, then decides the rest.
type EntriesFinisher interface {
	// FinishEntries is FinishMany for requests whose entries es (es[i] is
	// rs[i]'s, as Entries returned it) were read before. A request with
	// an entry is finished from it: the outcome's store checks again that
	// the request is undecided, so an entry decided since is not decided
	// twice. A request without one is read again (the cache may have been
	// rebuilt since).
	FinishEntries(ctx context.Context, rs []*QueuedRequest, es []*QueueEntry, os []QueueOutcome) (first []bool, err error)
}

// RequestLog is the durable queue the workers drain.
type RequestLog interface {
	// Append returns once every request is durable (acknowledged by all
	// in-sync replicas, or committed to the embedded database).
	Append(ctx context.Context, rs ...*QueuedRequest) error
	// Consume calls handle with batches of requests until ctx ends. A
	// batch is acknowledged (its offsets committed) only when handle
	// returns nil; a handler error or a crash delivers it again, so handle
	// must be idempotent. A nil error from Consume means ctx ended.
	Consume(ctx context.Context, handle func(ctx context.Context, batch []*QueuedRequest) error) error
}

// QueuePurger deletes a queue's requests decided before cutoff, up to
// limit a call, and says how many: the embedded queue (sqlite.Queue),
// whose rows nothing else ends; Redis's entries expire by themselves.
type QueuePurger interface {
	PurgeDecided(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// QueueNotice tells the live channel that a queued request changed: it has
// an outcome, or the pre-queue was drawn.
type QueueNotice struct {
	RequestID ID          `json:"request_id"`
	EventID   ID          `json:"event_id"`
	UserID    string      `json:"user_id"`
	Status    QueueStatus `json:"status"`
}

// Notifier fans notices out to every API process: in-process for the
// embedded default, Redis pub/sub in production. Delivery is best effort;
// the queue state stays the truth, and the live channel also polls it.
type Notifier interface {
	// Notify sends notices, several in one round trip.
	Notify(ctx context.Context, ns ...QueueNotice) error
	// Listen calls fn with every notice, from any process, until ctx ends.
	Listen(ctx context.Context, fn func(QueueNotice)) error
}

// CheckOutcomes is what FinishMany checks first, in every implementation:
// as many outcomes as requests, each of them final (EINVALID otherwise).
func CheckOutcomes(rs []*QueuedRequest, os []QueueOutcome) error {
	if len(rs) != len(os) {
		return Errorf(EINVALID, "%d outcomes for %d requests", len(os), len(rs))
	}
	for _, o := range os {
		if !o.Status.Final() {
			return Errorf(EINVALID, "outcome status %q is not final", o.Status)
		}
	}
	return nil
}

// Admission is one request to AdmitMany, with Admit's arguments.
type Admission struct {
	Request  *QueuedRequest
	MaxLive  int
	PreQueue bool
	// Wait, if set, is the wait estimate (seconds) the front door tells a
	// request given a position: a store that writes the request log itself
	// (the embedded one) keeps it as the request's EstimatedWait. It does
	// no I/O.
	Wait func(position int64) float64
}

// Admitted is AdmitMany's answer to one Admission: Admit's results.
type Admitted struct {
	Entry  *QueueEntry
	Replay bool
	Err    error
}

// AdmitOne is Admit as an AdmitMany of one request.
func AdmitOne(ctx context.Context, q interface {
	AdmitMany(ctx context.Context, as []Admission) ([]Admitted, error)
}, r *QueuedRequest, maxLive int, preQueue bool) (*QueueEntry, bool, error) {
	out, err := q.AdmitMany(ctx, []Admission{{Request: r, MaxLive: maxLive, PreQueue: preQueue}})
	if err != nil {
		return nil, false, err
	}
	return out[0].Entry, out[0].Replay, out[0].Err
}

// FinishWithEntries is q's FinishEntries where q takes entries read before
// (EntriesFinisher), and its FinishMany where it does not.
func FinishWithEntries(ctx context.Context, q QueueState, rs []*QueuedRequest, es []*QueueEntry, os []QueueOutcome) ([]bool, error) {
	if f, ok := q.(EntriesFinisher); ok {
		return f.FinishEntries(ctx, rs, es, os)
	}
	return q.FinishMany(ctx, rs, os)
}

// FinishOne is Finish as a FinishMany of one request.
func FinishOne(ctx context.Context, q interface {
	FinishMany(ctx context.Context, rs []*QueuedRequest, os []QueueOutcome) ([]bool, error)
}, r *QueuedRequest, o QueueOutcome) (bool, error) {
	first, err := q.FinishMany(ctx, []*QueuedRequest{r}, []QueueOutcome{o})
	if err != nil {
		return false, err
	}
	return first[0], nil
}

// HoldTurn keeps the queue order across batches that one log hands to
// several consumers at once (the embedded log's workers): a batch's holds
// wait until the batch before it has done its own, so an earlier position
// still gets the seat first, while the batches' reads and writes overlap.
// A log whose consumers never overlap on an event's requests passes none;
// its methods on nil do nothing.
type HoldTurn struct {
	prev <-chan struct{} // closed when the batch before has held
	done chan struct{}
	once sync.Once
}

// NextHoldTurn returns the turn after the one whose Done closes prev (nil:
// the first), and the channel its own Done closes.
func NextHoldTurn(prev <-chan struct{}) (*HoldTurn, <-chan struct{}) {
	t := &HoldTurn{prev: prev, done: make(chan struct{})}
	return t, t.done
}

// Wait returns when the batch before has held, or with ctx's error.
func (t *HoldTurn) Wait(ctx context.Context) error {
	if t == nil || t.prev == nil {
		return nil
	}
	select {
	case <-t.prev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done lets the next batch hold: the handler calls it once its batch has
// held, and the log when the handler returns, held or not. Safe to call
// more than once.
func (t *HoldTurn) Done() {
	if t != nil {
		t.once.Do(func() { close(t.done) })
	}
}

type holdTurnKey struct{}

// WithHoldTurn returns ctx carrying t, for the handler of a batch.
func WithHoldTurn(ctx context.Context, t *HoldTurn) context.Context {
	return context.WithValue(ctx, holdTurnKey{}, t)
}

// HoldTurnOf returns the turn ctx carries, or nil.
func HoldTurnOf(ctx context.Context) *HoldTurn {
	t, _ := ctx.Value(holdTurnKey{}).(*HoldTurn)
	return t
}
