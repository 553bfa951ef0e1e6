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
// a lost connection.
func (n *Notifier) Listen(ctx context.Context, fn func(boxoffice.QueueNotice)) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		_ = n.client.Receive(ctx, n.client.B().Subscribe().Channel(n.channel).Build(), func(m rueidis.PubSubMessage) {
			var notices []boxoffice.QueueNotice
			if strings.HasPrefix(m.Message, "[") {
				_ = json.Unmarshal([]byte(m.Message), &notices)
			} else {
				var notice boxoffice.QueueNotice
				if json.Unmarshal([]byte(m.Message), &notice) == nil {
					notices = append(notices, notice)
				}
			}
			for _, notice := range notices {
				fn(notice)
			}
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
