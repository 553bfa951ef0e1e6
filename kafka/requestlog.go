package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/wait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultGroup is the consumer group of the booking workers.
const DefaultGroup = "booking-workers"

// RequestLogConfig configures a RequestLog; the zero value is the
// production setting.
type RequestLogConfig struct {
	// Topic is the log; default TopicRequests.
	Topic string
	// Group is the consumer group Consume joins; default DefaultGroup.
	Group string
	// MaxBatch bounds a batch handed to Consume's handler; default 500.
	MaxBatch int
	// RetryBackoff is the pause after a failed batch before it is
	// delivered again; it doubles with each failure in a row, up to 32
	// times. Default 250ms.
	RetryBackoff time.Duration
	// HeartbeatInterval, SessionTimeout and RebalanceTimeout tune the group
	// membership; zero keeps franz-go's (3s, 45s, 60s). A handler must
	// finish a batch well within RebalanceTimeout: a rebalance waits for
	// the batch in hand, and a member that keeps it waiting longer is
	// dropped from the group (its batch is then delivered again elsewhere).
	HeartbeatInterval, SessionTimeout, RebalanceTimeout time.Duration
}

// RequestLog is the flash-sale request log on Kafka. Append writes each
// request to the topic keyed by user id: a hot event spreads over every
// partition while one user's requests stay in order on one. Consume drains
// it as a member of the consumer group. It is safe for concurrent use, and
// Consume may run several times at once (one group member each).
type RequestLog struct {
	c   *Client
	cfg RequestLogConfig
}

var _ boxoffice.RequestLog = (*RequestLog)(nil)

// NewRequestLog returns the request log on c.
func NewRequestLog(c *Client, cfg RequestLogConfig) *RequestLog {
	if cfg.Topic == "" {
		cfg.Topic = TopicRequests
	}
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 500
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 250 * time.Millisecond
	}
	return &RequestLog{c: c, cfg: cfg}
}

// Append writes the requests and returns once all in-sync replicas have
// every one; any failure is EUNAVAILABLE. After a failure some of the
// requests may be in the log all the same: appending them again is safe,
// a request delivered twice is served once.
func (l *RequestLog) Append(ctx context.Context, rs ...*boxoffice.QueuedRequest) error {
	recs := make([]*kgo.Record, len(rs))
	// The batch's values back to back: one allocation, not one a record
	// (a request is about 300 bytes of JSON).
	buf := make([]byte, 0, 384*len(rs))
	for i, r := range rs {
		start := len(buf)
		buf = r.AppendJSON(buf)
		recs[i] = &kgo.Record{Topic: l.cfg.Topic, Key: []byte(r.UserID), Value: buf[start:len(buf):len(buf)]}
	}
	if err := l.c.produce(ctx, recs); err != nil {
		return boxoffice.Unavailable("the request log", err)
	}
	return nil
}

// Consume joins the group and hands handle batches of requests until ctx
// ends; it returns nil then, and an error only if it could not start.
//
// A batch's offsets are committed after handle returns nil, and only then.
// The consumer blocks rebalances from each poll until that batch is
// committed or rewound (kgo.BlockRebalanceOnPoll, then AllowRebalance):
// so a commit only ever covers partitions this member still owns, and no
// partition moves to another member in the middle of a batch. That is the
// pattern franz-go documents for committing and for SetOffsets in a group
// (the alternative, committing in OnPartitionsRevoked while a batch may be
// half done, would have to decide what of the batch counts). Because every
// handled batch is committed before a rebalance can run, a revoke finds
// nothing of ours uncommitted and needs no callback.
//
// When handle fails, nothing is committed and the batch's partitions are
// set back to their first record in it (SetOffsets, before rebalances are
// allowed again, which also drops what was fetched beyond), so the same
// member delivers the same records again after RetryBackoff; if the
// partition moves meanwhile, its new owner starts from the last commit,
// which is no later. A crash delivers the uncommitted records to the
// member that takes the partition over.
//
// A record that does not decode to a request is logged and skipped, and
// committed with its batch, so that it cannot wedge its partition.
func (l *RequestLog) Consume(ctx context.Context, handle func(ctx context.Context, batch []*boxoffice.QueuedRequest) error) error {
	cl, err := kgo.NewClient(l.consumerOpts()...)
	if err != nil {
		return boxoffice.Unavailable("the request log", err)
	}
	// Every batch was committed or deliberately left uncommitted; Close
	// leaves the group so the partitions move on at once.
	defer cl.CloseAllowingRebalance()

	failures, idle := 0, 0
	for {
		fetches := cl.PollRecords(ctx, l.cfg.MaxBatch)
		if ctx.Err() != nil {
			// Anything polled here was not handled, so not committed.
			return nil
		}
		if fetches.IsClientClosed() {
			return nil
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			l.c.log.Warn("kafka: consume", "topic", topic, "partition", partition, "err", err)
		})
		recs := fetches.Records()
		if len(recs) == 0 {
			cl.AllowRebalance()
			// Only errors: back off rather than spin on a failing broker.
			if fetches.Err() != nil {
				if idle++; wait.Sleep(ctx, l.backoff(idle)) != nil {
					return nil
				}
			}
			continue
		}
		idle = 0

		batch := l.decode(recs)
		var herr error
		if len(batch) > 0 {
			herr = handle(ctx, batch)
		}
		if herr != nil {
			cl.SetOffsets(firstOffsets(recs))
			cl.AllowRebalance()
			if ctx.Err() != nil {
				return nil
			}
			failures++
			l.c.log.Warn("kafka: batch failed, delivering it again", "topic", l.cfg.Topic,
				"records", len(recs), "failures", failures, "err", herr)
			if wait.Sleep(ctx, l.backoff(failures)) != nil {
				return nil
			}
			continue
		}
		failures = 0
		// The batch is handled: commit it even if ctx has just ended,
		// or it would be served again for nothing.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := cl.CommitRecords(cctx, recs...); err != nil {
			// Not fatal: a later commit covers these offsets, or, if we
			// were dropped from the group, the next owner serves them
			// again, which the handler tolerates.
			l.c.log.Warn("kafka: commit", "topic", l.cfg.Topic, "records", len(recs), "err", err)
		}
		cancel()
		cl.AllowRebalance()
	}
}

func (l *RequestLog) consumerOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.ConsumerGroup(l.cfg.Group),
		kgo.ConsumeTopics(l.cfg.Topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		// A new group starts at the beginning, and a partition whose
		// committed offset was lost restarts from the log start: a
		// request served twice is harmless, a skipped one is lost.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if d := l.cfg.HeartbeatInterval; d > 0 {
		opts = append(opts, kgo.HeartbeatInterval(d))
	}
	if d := l.cfg.SessionTimeout; d > 0 {
		opts = append(opts, kgo.SessionTimeout(d))
	}
	if d := l.cfg.RebalanceTimeout; d > 0 {
		opts = append(opts, kgo.RebalanceTimeout(d))
	}
	// The caller's options (in base) come last, so they can override ours.
	return append(opts, l.c.base...)
}

// decode returns the requests in recs, skipping (and logging) records that
// are not one.
func (l *RequestLog) decode(recs []*kgo.Record) []*boxoffice.QueuedRequest {
	batch := make([]*boxoffice.QueuedRequest, 0, len(recs))
	for _, rec := range recs {
		r := new(boxoffice.QueuedRequest)
		err := boxoffice.DecodeQueuedRequest(rec.Value, r)
		if err == nil && r.ID == 0 {
			err = errors.New("no request id")
		}
		if err != nil {
			l.c.log.Error("kafka: skipping a record that is not a request", "topic", rec.Topic,
				"partition", rec.Partition, "offset", rec.Offset, "err", err)
			continue
		}
		batch = append(batch, r)
	}
	return batch
}

// backoff is the pause after the nth failure in a row.
func (l *RequestLog) backoff(n int) time.Duration {
	return l.cfg.RetryBackoff << min(n-1, 5)
}

// firstOffsets returns, per partition, the first record in recs: where to
// resume to deliver them all again.
func firstOffsets(recs []*kgo.Record) map[string]map[int32]kgo.EpochOffset {
	first := make(map[string]map[int32]kgo.EpochOffset)
	for _, r := range recs {
		ps := first[r.Topic]
		if ps == nil {
			ps = make(map[int32]kgo.EpochOffset)
			first[r.Topic] = ps
		}
		if o, ok := ps[r.Partition]; !ok || r.Offset < o.Offset {
			ps[r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset}
		}
	}
	return first
}

// Lag returns how many requests in the log the group has not committed
// yet, over all partitions: the backlog, for metrics.
func (l *RequestLog) Lag(ctx context.Context) (int64, error) {
	lags, err := l.c.adm.Lag(ctx, l.cfg.Group)
	if err != nil {
		return 0, boxoffice.Unavailable("the request log", err)
	}
	g := lags[l.cfg.Group]
	// A group that never existed (no worker ran yet) has no lag of its
	// own; the whole log is counted below.
	if err := g.Error(); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return 0, boxoffice.Unavailable("the request log", err)
	}
	var total int64
	counted := map[int32]bool{}
	for p, pl := range g.Lag[l.cfg.Topic] {
		if pl.Err != nil {
			return 0, boxoffice.Unavailable("the request log", pl.Err)
		}
		total += pl.Lag
		counted[p] = true
	}
	// kadm counts the partitions the group has committed to or has
	// assigned. A partition with neither (no worker ever ran, or every
	// worker is gone before its first commit there) is not counted, yet
	// its whole log is waiting: exactly the backlog a metric must show.
	ends, err := l.c.adm.ListEndOffsets(ctx, l.cfg.Topic)
	if err != nil {
		return 0, boxoffice.Unavailable("the request log", err)
	}
	var missing []kadm.ListedOffset
	ends.Each(func(o kadm.ListedOffset) {
		if !counted[o.Partition] {
			missing = append(missing, o)
		}
	})
	if len(missing) == 0 {
		return total, nil
	}
	starts, err := l.c.adm.ListStartOffsets(ctx, l.cfg.Topic)
	if err != nil {
		return 0, boxoffice.Unavailable("the request log", err)
	}
	for _, end := range missing {
		start, ok := starts.Lookup(end.Topic, end.Partition)
		if !ok {
			start.Err = fmt.Errorf("no start offset for partition %d", end.Partition)
		}
		if err := errors.Join(end.Err, start.Err); err != nil {
			return 0, boxoffice.Unavailable("the request log", err)
		}
		total += max(end.Offset-start.Offset, 0)
	}
	return total, nil
}

// Replay reads the whole log as it stands when it is called, every
// partition from its first retained record to the end offset listed at the
// start, and hands fn the requests in chunks of at most MaxBatch (in log
// order within a partition). It joins no group and commits nothing: it is
// how a queue state that lost its cache (Redis restarted empty) is rebuilt.
// A record that does not decode is skipped, as Consume does.
func (l *RequestLog) Replay(ctx context.Context, fn func(batch []*boxoffice.QueuedRequest) error) error {
	var (
		from  map[int32]kgo.Offset
		until map[int32]int64
		err   error
	)
	// A broker that has just created the topic may not list it yet.
	for attempt := 1; ; attempt++ {
		if from, until, err = l.bounds(ctx); err == nil {
			break
		}
		if attempt == 10 || wait.Sleep(ctx, l.backoff(1)) != nil {
			return boxoffice.Unavailable("the request log", err)
		}
	}
	if len(from) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.cfg.Topic: from}),
	}, l.c.base...)...)
	if err != nil {
		return boxoffice.Unavailable("the request log", err)
	}
	defer cl.Close()
	for len(until) > 0 {
		fetches := cl.PollRecords(ctx, l.cfg.MaxBatch)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fetches.EachError(func(_ string, p int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("partition %d: %w", p, err))
		})
		if ferr != nil {
			return boxoffice.Unavailable("the request log", ferr)
		}
		var recs []*kgo.Record
		for _, r := range fetches.Records() {
			end, ok := until[r.Partition]
			if !ok {
				continue
			}
			if r.Offset >= end {
				// Past the end this replay is about (the offsets before
				// it were compacted or were control records).
				delete(until, r.Partition)
				continue
			}
			recs = append(recs, r)
			if r.Offset+1 >= end {
				delete(until, r.Partition)
			}
		}
		if batch := l.decode(recs); len(batch) > 0 {
			if err := fn(batch); err != nil {
				return err
			}
		}
	}
	return nil
}

// bounds returns, for every partition with records, where Replay starts
// and the end offset where it stops.
func (l *RequestLog) bounds(ctx context.Context) (map[int32]kgo.Offset, map[int32]int64, error) {
	starts, err := l.c.adm.ListStartOffsets(ctx, l.cfg.Topic)
	if err != nil {
		return nil, nil, err
	}
	ends, err := l.c.adm.ListEndOffsets(ctx, l.cfg.Topic)
	if err != nil {
		return nil, nil, err
	}
	if err := errors.Join(starts.Error(), ends.Error()); err != nil {
		return nil, nil, err
	}
	from := map[int32]kgo.Offset{}
	until := map[int32]int64{}
	var lerr error
	ends.Each(func(end kadm.ListedOffset) {
		start, ok := starts.Lookup(end.Topic, end.Partition)
		if !ok {
			lerr = errors.Join(lerr, fmt.Errorf("no start offset for partition %d", end.Partition))
			return
		}
		if end.Offset > start.Offset {
			from[end.Partition] = kgo.NewOffset().At(start.Offset)
			until[end.Partition] = end.Offset
		}
	})
	return from, until, lerr
}
