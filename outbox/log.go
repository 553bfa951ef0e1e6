package outbox

import (
	"context"
	"log/slog"

	"github.com/boxoffice/boxoffice"
)

// LogPublisher is the Publisher of the embedded mode, where no broker runs:
// it logs each event at debug level and reports success. So in the embedded
// mode an event counts as published once it was logged: the relay marks it
// published right after, and purges it after Retention. Nothing else ever
// receives it; with the log level above debug it is not even logged.
type LogPublisher struct {
	// Log receives the events; nil is slog.Default().
	Log *slog.Logger
}

var _ Publisher = LogPublisher{}

// Publish logs the events and returns nil.
func (p LogPublisher) Publish(ctx context.Context, events []boxoffice.OutboxEvent) error {
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	if !log.Enabled(ctx, slog.LevelDebug) {
		return nil // a flash sale writes many: skip building the records
	}
	for _, ev := range events {
		log.LogAttrs(ctx, slog.LevelDebug, "booking event",
			slog.Int64("seq", ev.Seq), slog.String("id", ev.ID), slog.String("topic", ev.Topic),
			slog.String("key", ev.Key), slog.String("payload", string(ev.Payload)))
	}
	return nil
}
