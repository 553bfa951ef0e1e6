package kafka

import (
	"context"

	"github.com/boxoffice/boxoffice"
	"github.com/twmb/franz-go/pkg/kgo"
)

// HeaderEventID is the record header carrying OutboxEvent.ID, by which
// consumers de-duplicate the relay's at-least-once delivery.
const HeaderEventID = "event-id"

// Publisher writes outbox events to their topics, for the outbox relay.
// It is safe for concurrent use.
type Publisher struct{ c *Client }

// NewPublisher returns a publisher on c.
func NewPublisher(c *Client) *Publisher { return &Publisher{c: c} }

// Publish writes each event to ev.Topic with key ev.Key (the booking id, so
// one booking's events stay in order on one partition), value ev.Payload
// and the header event-id = ev.ID. It returns nil only when all in-sync
// replicas have every event; otherwise EUNAVAILABLE, and some events may
// be written all the same, so the relay publishes them again and the
// consumers see them twice.
func (p *Publisher) Publish(ctx context.Context, evs []boxoffice.OutboxEvent) error {
	recs := make([]*kgo.Record, len(evs))
	for i, ev := range evs {
		recs[i] = &kgo.Record{
			Topic:   ev.Topic,
			Key:     []byte(ev.Key),
			Value:   ev.Payload,
			Headers: []kgo.RecordHeader{{Key: HeaderEventID, Value: []byte(ev.ID)}},
		}
	}
	if err := p.c.produce(ctx, recs); err != nil {
		return boxoffice.Unavailable("the event log", err)
	}
	return nil
}
