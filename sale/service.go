// Package sale holds the box office's use cases: create and read events,
// reserve seats, confirm (pay), release, and the reconciler. It drives the
// ports of package boxoffice (Store, Holds, Leases, PaymentGateway) and
// knows no driver and no HTTP.
package sale

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/lru"
	"github.com/boxoffice/boxoffice/layout"
)

// Config is the service's policy.
type Config struct {
	// HoldTTL is how long a reserve holds its seats (default 10m).
	HoldTTL time.Duration
	// PendingGrace is how long after its hold ran out a pending booking is
	// left before the reconciler marks it expired (default 5m).
	PendingGrace time.Duration
	// IdempotencyTTL is how long idempotency keys are kept: at least 24h and
	// never shorter than HoldTTL + PendingGrace.
	IdempotencyTTL time.Duration
	// MaxSeatsPerRequest caps the seats of one reserve request.
	MaxSeatsPerRequest int
	// PaymentTimeout bounds one authorization at the gateway.
	PaymentTimeout time.Duration
	// Currency of all prices.
	Currency string
	// PreQueueWindow is how long before a queued sale opens its waiting
	// room takes requests (default 1h).
	PreQueueWindow time.Duration
	// DrainPrior is the drain rate (requests/s) waits are estimated with
	// before this process has measured one (default 2,000: a little under
	// two workers' batched drain on a small machine, docs/benchmarks.md).
	// Once any event's drain was measured, its last rate is the prior.
	DrainPrior float64
	// AdmitDeadline bounds the time from a queued request's admission to
	// its 202: a request the log has not taken by then is answered 503
	// (its retry replays it). A queue state rebuilt after Redis lost it
	// reads the log only after waiting this long (queuestate.State.Settle),
	// so every request answered 202 is in what it reads. Zero means no
	// deadline: right where admission and log are one commit (embedded).
	// Production uses DefaultAdmitDeadline.
	AdmitDeadline time.Duration
	// MaxLivePerUser is how many queued requests one user may have waiting
	// for an event at once (default 1).
	MaxLivePerUser int
	// HandoverGrace is how much longer than its booking a hold lasts in the
	// lock layer (default 30s). Seats that come back (a hold that ran out,
	// a release) stay held under the old booking for that long, so the
	// returns pass can offer them to the waitlist before anyone else can
	// take them; if the pass does not run in time, the seats go back to
	// the public by themselves.
	HandoverGrace time.Duration
	// OfferWindow is how long a waitlist offer holds its seats for the
	// user (default 10m).
	OfferWindow time.Duration
	// PublicFirst gives returned seats back to the public at once and
	// offers the waitlist only what it can still hold afterwards, instead
	// of the default: the waitlist first, the public only what nobody on
	// it takes.
	PublicFirst bool
	// CacheEvents bounds each in-process cache kept per event (layouts,
	// inventories, queue drain rates, seats seen taken): the least
	// recently used event's entry goes when one more is needed (default
	// DefaultCacheEvents). Events in use stay; an evicted one is read again.
	CacheEvents int
}

// DefaultCacheEvents is Config.CacheEvents' default.
const DefaultCacheEvents = 1000

// LeaseTTL is how long an in-flight lease lasts (a reserve's, after its
// grant too): longer than the slowest request, a payment's timeout and
// more.
func (c Config) LeaseTTL() time.Duration { return c.PaymentTimeout + c.HoldTTL/10 }

func (c *Config) setDefaults() {
	if c.HoldTTL <= 0 {
		c.HoldTTL = 10 * time.Minute
	}
	if c.PendingGrace <= 0 {
		c.PendingGrace = 5 * time.Minute
	}
	if c.IdempotencyTTL < 24*time.Hour {
		c.IdempotencyTTL = 24 * time.Hour
	}
	if min := c.HoldTTL + c.PendingGrace; c.IdempotencyTTL < min {
		c.IdempotencyTTL = min
	}
	if c.MaxSeatsPerRequest <= 0 {
		c.MaxSeatsPerRequest = boxoffice.MaxSeatsPerRequest
	}
	if c.PaymentTimeout <= 0 {
		c.PaymentTimeout = 30 * time.Second
	}
	if c.Currency == "" {
		c.Currency = "USD"
	}
	if c.PreQueueWindow <= 0 {
		c.PreQueueWindow = time.Hour
	}
	if c.DrainPrior <= 0 {
		c.DrainPrior = 2000
	}
	if c.MaxLivePerUser <= 0 {
		c.MaxLivePerUser = 1
	}
	if c.HandoverGrace <= 0 {
		c.HandoverGrace = 30 * time.Second
	}
	if c.OfferWindow <= 0 {
		c.OfferWindow = 10 * time.Minute
	}
	if c.CacheEvents <= 0 {
		c.CacheEvents = DefaultCacheEvents
	}
}

// idFor mints the id of a row of event eventID: on a sharded store it
// names the event's shard (boxoffice.EventIDGenerator).
func (c *core) idFor(ctx context.Context, eventID boxoffice.ID) (boxoffice.ID, error) {
	if g, ok := c.ids.(boxoffice.EventIDGenerator); ok {
		return g.NextIDFor(ctx, eventID)
	}
	return c.ids.NextID()
}

// DefaultAdmitDeadline is Config.AdmitDeadline's default.
const DefaultAdmitDeadline = 5 * time.Second

// core is what the use cases share: the ports other than the store, the
// policy and the per-event caches. Each use case adds the narrow store it
// needs (ports.go).
type core struct {
	holds    boxoffice.Holds
	leases   boxoffice.Leases
	payments boxoffice.PaymentGateway
	ids      boxoffice.IDGenerator
	now      func() time.Time
	log      *slog.Logger
	cfg      Config
	// idem reads the answers recorded for idempotency keys; answers
	// encodes and decodes them (Deps.Answers).
	idem    IdempotencyReader
	answers AnswerCodec

	// The flash-sale queue; nil queue means queued sales are refused.
	queue    boxoffice.QueueState
	reqLog   boxoffice.RequestLog
	notifier boxoffice.Notifier

	// layouts are the events' seat layouts, shared with the seat
	// map.
	layouts *layout.Cache
	// returnsKick wakes RunReturns at once when this process freed seats.
	returnsKick chan struct{}
	// avail is the seat map best available picks from (Deps.Availability);
	// taken, the seats this process saw taken since.
	avail Availability
	taken takenSeats
	// invs counts what is left of each event (inventory.go).
	invs inventories
	// captures are the payments being captured after their confirms'
	// answers (capture.go).
	captures *captures
}

// Service is every use case of the box office, each a type of its own
// over the narrow store it declares: Catalog (create and read events),
// Bookings (reserve, confirm, release), Queue (the front door, the
// drain, the opener, the estimates, the draw), Waitlist (the waitlist and
// the returns pass that offers it returned seats), Resale (fan-to-fan
// listings), Tickets (tickets, check-in, cancel) and Upkeep (the
// reconciler). Service embeds them all, so one value serves a process;
// a consumer takes the interface of the part it uses. Create it with New.
type Service struct {
	*Catalog
	*Bookings
	*Queue
	*Waitlist
	*Resale
	*Tickets
	*Upkeep
	core *core
}

// Deps are the ports the service drives.
type Deps struct {
	Store    boxoffice.Store
	Holds    boxoffice.Holds
	Leases   boxoffice.Leases
	Payments boxoffice.PaymentGateway
	IDs      boxoffice.IDGenerator
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
	// Queue, RequestLog and Notifier run queued sales; without Queue and
	// RequestLog a queued sale's reserve answers 503.
	Queue      boxoffice.QueueState
	RequestLog boxoffice.RequestLog
	Notifier   boxoffice.Notifier
	// QueuePurge deletes the queue's requests decided long ago, for a
	// queue whose entries do not expire by themselves (the embedded one);
	// nil: they do (Redis's TTL).
	QueuePurge boxoffice.QueuePurger
	// Layouts are the events' seat layouts, shared with the seat map; nil:
	// a cache of Config.CacheEvents layouts over Store.
	Layouts *layout.Cache
	// Availability is the seat map best available and the inventory counts
	// read; nil: candidates come from the store and the lock layer
	// directly.
	Availability Availability
	// Answers encodes the answers kept in idempotency records. A node
	// always gives the API's codec (httpapi.Answers), so that records stay
	// the API's JSON, readable by every release; nil: plain JSON of
	// sale's own types (goAnswers), fine for tests and library use but
	// not for a store that API servers share.
	Answers AnswerCodec
}

// New returns a Service.
func New(d Deps, cfg Config) *Service {
	cfg.setDefaults()
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Answers == nil {
		d.Answers = goAnswers{}
	}
	c := &core{holds: d.Holds, leases: d.Leases, payments: d.Payments, idem: d.Store, answers: d.Answers,
		ids: d.IDs, now: d.Now, log: d.Log, cfg: cfg, notifier: d.Notifier, returnsKick: make(chan struct{}, 1),
		layouts: d.Layouts, avail: d.Availability,
		taken:    takenSeats{seats: lru.New[boxoffice.ID, map[int]time.Time](cfg.CacheEvents)},
		invs:     inventories{ev: lru.New[boxoffice.ID, *inventoryEntry](cfg.CacheEvents)},
		captures: newCaptures(maxBackgroundCaptures)}
	if c.layouts == nil {
		c.layouts = layout.NewCache(d.Store, cfg.CacheEvents)
		c.layouts.SetClock(d.Now)
	}
	if d.Queue != nil && d.RequestLog != nil {
		c.queue, c.reqLog = d.Queue, d.RequestLog
	}
	s := &Service{core: c}
	s.Catalog = &Catalog{core: c, store: d.Store}
	s.Bookings = &Bookings{core: c, store: d.Store}
	s.Queue = &Queue{core: c, store: d.Store, bookings: s.Bookings}
	s.Queue.estimator = newEstimator(s.Queue)
	if c.queue != nil {
		s.Queue.admitter = newAdmitter(s.Queue)
	}
	s.Tickets = &Tickets{core: c, store: d.Store}
	s.Waitlist = &Waitlist{core: c, store: d.Store, bookings: s.Bookings}
	s.Resale = &Resale{core: c, store: d.Store, bookings: s.Bookings}
	s.Upkeep = &Upkeep{core: c, store: d.Store, tickets: s.Tickets, queuePurge: d.QueuePurge}
	s.Bookings.resale, s.Bookings.returns, s.Tickets.returns = s.Resale, s.Waitlist, s.Waitlist
	return s
}

// Config returns the effective configuration (defaults applied).
func (s *Service) Config() Config { return s.core.cfg }

// Layout returns the event's layout (layout.Cache.Get). ENOTFOUND for an
// unknown event.
func (s *Service) Layout(ctx context.Context, eventID boxoffice.ID) (*layout.Layout, error) {
	return s.core.Layout(ctx, eventID)
}

// Layout is Service.Layout for the use cases.
func (c *core) Layout(ctx context.Context, eventID boxoffice.ID) (*layout.Layout, error) {
	return c.layouts.Get(ctx, eventID)
}

// randomCode returns n random bytes in unpadded base32: ticket codes and
// confirmation codes, unguessable and easy to read out.
func randomCode(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)
}

// requestHash fingerprints a request for idempotency: the operation and its
// decoded fields, so JSON whitespace or field order never count as "another
// body", while another seat or token does.
func requestHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// MaxIdempotencyKeyLen bounds an idempotency key.
const MaxIdempotencyKeyLen = 255

func checkKey(key string) error {
	if key == "" {
		return boxoffice.Errorf(boxoffice.EIDEMMISSING, "an idempotency key is required (Idempotency-Key header or idempotency_key field)")
	}
	if len(key) > MaxIdempotencyKeyLen {
		return boxoffice.Errorf(boxoffice.EINVALID, "idempotency key longer than %d bytes", MaxIdempotencyKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return boxoffice.Errorf(boxoffice.EINVALID, "idempotency key must be printable ASCII")
		}
	}
	return nil
}

func isCode(err error, code string) bool { return boxoffice.ErrorCode(err) == code }

// detach keeps the request's values but not its cancellation, for the
// clean-up that must run even when the client has gone away (releasing a
// hold, voiding an authorization).
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

var errNoRecord = errors.New("no idempotency record")
