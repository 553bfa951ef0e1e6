package redis

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
)

// Notifier is boxoffice.Notifier on Redis pub/sub: one channel,
// <prefix>queue-notices, that every API process subscribes to once and fans
// out to its own streams. Pub/sub is fire-and-forget, which suits it: the
// queue state is the truth and the streams poll it too.
type Notifier struct {
	client  rueidis.Client
	channel string
}

var _ boxoffice.Notifier = (*Notifier)(nil)

// NewNotifier returns a Notifier under prefix.
func NewNotifier(client rueidis.Client, prefix string) *Notifier {
	checkPrefix(prefix)
	return &Notifier{client: client, channel: prefix + "queue-notices"}
}

// Notify publishes the notices: one as a JSON object, several (a drained
// batch) as one JSON array in one message, so a batch costs one PUBLISH
// and one delivery per listening process, not one per request.
func (n *Notifier) Notify(ctx context.Context, notices ...boxoffice.QueueNotice) error {
	var (
		b   []byte
		err error
	)
	switch len(notices) {
	case 0:
		return nil
	case 1:
		b, err = json.Marshal(notices[0])
	default:
		b, err = json.Marshal(notices)
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	if err := n.client.Do(ctx, n.client.B().Publish().Channel(n.channel).Message(string(b)).Build()).Error(); err != nil {
		return boxoffice.Unavailable("the notifier", err)
	}
	return nil
}

// Listen calls fn with every notice until ctx ends, subscribing again after
// a lost connection. Once it has returned, fn is not called again.
//
// It subscribes on a connection of its own (rueidis's Dedicated), which
// goes back to the pool unsubscribed when it returns. On a connection
// shared with other commands, as client.Receive alone would, a
// subscription outlives its Receive (rueidis does not unsubscribe), and a
// later Receive on that connection deadlocks it under traffic: the
// channel's messages fill the new subscriber's buffer before its
// SUBSCRIBE is confirmed, blocking the connection's reader, and so every
// command sent on it. On its own connection, a slow fn delays only the
// notices, never the holds or the queue.
func (n *Notifier) Listen(ctx context.Context, fn func(boxoffice.QueueNotice)) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		_ = n.client.Dedicated(func(c rueidis.DedicatedClient) error {
			return c.Receive(ctx, c.B().Subscribe().Channel(n.channel).Build(), func(m rueidis.PubSubMessage) {
				for _, notice := range decodeNotices(m.Message) {
					fn(notice)
				}
			})
		})
		if time.Since(start) > 10*time.Second {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
			backoff = min(2*backoff, 5*time.Second)
		}
	}
	return nil
}

// wireNotice is a QueueNotice as Notify publishes it, read back without
// boxoffice.ID's validation (positive ids only): Notify publishes any
// notice, so Listen must read any back, a zero or negative id included.
type wireNotice struct {
	RequestID int64                 `json:"request_id,string"`
	EventID   int64                 `json:"event_id,string"`
	UserID    string                `json:"user_id"`
	Status    boxoffice.QueueStatus `json:"status"`
}

// decodeNotices reads a message of Notify: one notice, or an array of
// them. An unreadable element is skipped alone, not with the rest of its
// batch.
func decodeNotices(msg string) []boxoffice.QueueNotice {
	var raws []json.RawMessage
	if strings.HasPrefix(msg, "[") {
		if json.Unmarshal([]byte(msg), &raws) != nil {
			return nil
		}
	} else {
		raws = []json.RawMessage{json.RawMessage(msg)}
	}
	notices := make([]boxoffice.QueueNotice, 0, len(raws))
	for _, raw := range raws {
		var w wireNotice
		if json.Unmarshal(raw, &w) != nil {
			continue
		}
		notices = append(notices, boxoffice.QueueNotice{RequestID: boxoffice.ID(w.RequestID), EventID: boxoffice.ID(w.EventID), UserID: w.UserID, Status: w.Status})
	}
	return notices
}
