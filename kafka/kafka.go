// Package kafka is the production request log and event bus on Kafka,
// through franz-go: RequestLog (the flash-sale queue's boxoffice.RequestLog
// on topic sale.requests, drained by the consumer group booking-workers),
// Publisher (the outbox relay's sink for the booking.* topics), EnsureTopics
// for start-up, and StartFake, an in-process broker for tests and demos.
//
// Every write is synchronous and durable before it returns: acks from all
// in-sync replicas, through an idempotent producer, so a retried batch is
// never written twice by the client itself. Delivery to consumers is at
// least once; the booking workers and the event consumers de-duplicate by
// request id and event id.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicRequests is the flash-sale request log; DefaultPartitions is the
// partition count EnsureTopics is given by DefaultTopics.
const (
	TopicRequests     = "sale.requests"
	DefaultPartitions = 12
)

// DefaultTopics returns every topic boxoffice uses with its default
// partition count, for EnsureTopics.
func DefaultTopics() map[string]int32 {
	return map[string]int32{
		TopicRequests:                   DefaultPartitions,
		boxoffice.TopicBookingHeld:      DefaultPartitions,
		boxoffice.TopicBookingConfirmed: DefaultPartitions,
		boxoffice.TopicBookingReleased:  DefaultPartitions,
		boxoffice.TopicBookingExpired:   DefaultPartitions,
		boxoffice.TopicBookingCancelled: DefaultPartitions,
		boxoffice.TopicTicketResold:     DefaultPartitions,
	}
}

// Config configures a Client. Only Seeds is required.
type Config struct {
	// Seeds are the bootstrap brokers, host:port.
	Seeds []string
	// ClientID names this process to the brokers (logs, quotas); default
	// "boxoffice".
	ClientID string
	// Linger is how long a partition's batch waits for more records before
	// it is sent; default 5ms. Append and Publish stop lingering for their
	// own records, so this only gathers what concurrent callers produce.
	Linger time.Duration
	// DeliveryTimeout bounds how long a record may wait to be written
	// (kgo.RecordDeliveryTimeout); default 30s. A caller that gives up
	// earlier gets its answer at once (see Append); this bounds the rest.
	DeliveryTimeout time.Duration
	// Logger receives franz-go's warnings and errors and this package's own;
	// default slog.Default().
	Logger *slog.Logger
	// Options are more franz-go options (TLS, SASL, tuning), applied last to
	// the producer and to every consumer.
	Options []kgo.Opt
}

// Client is one connection pool to the cluster: the producer shared by
// RequestLog.Append and Publisher, and the admin client. Consume opens a
// client of its own per call, since each call is one group member.
type Client struct {
	cl  *kgo.Client
	adm *kadm.Client
	log *slog.Logger
	// base is what every consumer shares with the producer: brokers,
	// client id, logger and the caller's options.
	base []kgo.Opt
}

// Open returns a client for the cluster at cfg.Seeds. Like franz-go it
// connects lazily: a bad address shows at the first call (Ping to check
// at start-up).
func Open(cfg Config) (*Client, error) {
	if len(cfg.Seeds) == 0 {
		return nil, errors.New("kafka: no seed brokers")
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "boxoffice"
	}
	if cfg.Linger <= 0 {
		cfg.Linger = 5 * time.Millisecond
	}
	if cfg.DeliveryTimeout <= 0 {
		cfg.DeliveryTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(cfg.Seeds...),
		kgo.ClientID(cfg.ClientID),
		kgo.WithLogger(slogAdapter{cfg.Logger}),
	}
	producer := append(slices.Clone(base),
		// Durable means written to every in-sync replica. Idempotent
		// writes are franz-go's default and stay on: retries cannot
		// duplicate or reorder a partition's records.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(cfg.Linger),
		kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout),
		// The default partitioner hashes a record's key (murmur2, as
		// Kafka's Java client does), so one key stays on one partition,
		// in order; this is said here because RequestLog relies on it.
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(64<<10, true, true, nil)),
	)
	producer = append(producer, cfg.Options...)
	base = append(base, cfg.Options...)
	cl, err := kgo.NewClient(producer...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return &Client{cl: cl, adm: kadm.NewClient(cl), log: cfg.Logger, base: base}, nil
}

// Close flushes nothing: every Append and Publish has already waited for
// its records. It closes the connections; records still in flight for
// callers that gave up fail.
func (c *Client) Close() { c.cl.Close() }

// Ping checks that a broker answers.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.cl.Ping(ctx); err != nil {
		return boxoffice.Unavailable("Kafka", err)
	}
	return nil
}

// EnsureTopics creates the topics that do not exist yet, each with its
// partition count (zero or less: the broker's default) and the broker's
// default replication factor. A topic that exists is left as it is, even
// with another partition count; one created meanwhile by another process
// is fine. Brokers that do not answer, or answer with a retriable error,
// are EUNAVAILABLE; a refusal (authorization, policy) is returned as it is.
func (c *Client) EnsureTopics(ctx context.Context, topics map[string]int32) error {
	if len(topics) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(topics))
	// Look first, so that a deployment whose brokers refuse CreateTopics
	// to this principal still starts when the topics are there.
	details, err := c.adm.ListTopics(ctx, names...)
	if err != nil {
		return boxoffice.Unavailable("Kafka", fmt.Errorf("list topics: %w", err))
	}
	for _, name := range names {
		if details.Has(name) {
			continue
		}
		partitions := topics[name]
		if partitions <= 0 {
			partitions = -1
		}
		resp, err := c.adm.CreateTopics(ctx, partitions, -1, nil, name)
		if err != nil {
			return boxoffice.Unavailable("Kafka", fmt.Errorf("create topic %s: %w", name, err))
		}
		if r, ok := resp[name]; ok && r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			err := fmt.Errorf("kafka: create topic %s: %w %s", name, r.Err, r.ErrMessage)
			if kerr.IsRetriable(r.Err) {
				return boxoffice.Unavailable("Kafka", err)
			}
			return err
		}
	}
	return nil
}

// produce writes recs and waits until every one is acknowledged or ctx
// ends. The records themselves are produced under a context the caller's
// cancellation does not reach: franz-go fails a partition's whole buffered
// batch when the context of its first record ends, so one caller giving up
// (a client that hung up) would fail other callers' records with it.
// DeliveryTimeout bounds what is left behind. A caller that gave up may
// still find its records written; the log's consumers are idempotent.
func (c *Client) produce(ctx context.Context, recs []*kgo.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		// ProduceSync also stops lingering for these partitions once
		// the records are buffered: nobody waits for the linger timer.
		done <- c.cl.ProduceSync(context.WithoutCancel(ctx), recs...).FirstErr()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// slogAdapter sends franz-go's log to slog, at the level the handler has.
type slogAdapter struct{ l *slog.Logger }

var kgoLevels = []struct {
	kgo  kgo.LogLevel
	slog slog.Level
}{
	{kgo.LogLevelDebug, slog.LevelDebug},
	{kgo.LogLevelInfo, slog.LevelInfo},
	{kgo.LogLevelWarn, slog.LevelWarn},
	{kgo.LogLevelError, slog.LevelError},
}

func (a slogAdapter) Level() kgo.LogLevel {
	for _, lv := range kgoLevels {
		if a.l.Enabled(context.Background(), lv.slog) {
			return lv.kgo
		}
	}
	return kgo.LogLevelNone
}

func (a slogAdapter) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	sl := slog.LevelDebug
	for _, lv := range kgoLevels {
		if lv.kgo == level {
			sl = lv.slog
		}
	}
	a.l.Log(context.Background(), sl, "kafka: "+msg, keyvals...)
}
