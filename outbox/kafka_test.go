package outbox_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/kafka"
	"github.com/boxoffice/boxoffice/outbox"
)

// failingOnce publishes through p, but its first call publishes only the
// first half of the batch and fails: a relay that died mid-publish.
type failingOnce struct {
	p     outbox.Publisher
	calls atomic.Int32
}

func (f *failingOnce) Publish(ctx context.Context, evs []boxoffice.OutboxEvent) error {
	if f.calls.Add(1) == 1 {
		if err := f.p.Publish(ctx, evs[:len(evs)/2]); err != nil {
			return err
		}
		return errors.New("the relay died mid-publish")
	}
	return f.p.Publish(ctx, evs)
}

// Through a real Kafka client and broker: every booking event reaches its
// topic, some twice after a crash mid-publish, each once after
// de-duplication by the event-id header.
func TestRelayToKafkaEveryEventOnceAfterDedup(t *testing.T) {
	seeds, stop, err := kafka.StartFake("127.0.0.1:0", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	kc, err := kafka.Open(kafka.Config{Seeds: seeds, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()

	s := openStore(t)
	sl := newSale(t, s, 30)
	sl.buyAll(0, 30)
	pub := &failingOnce{p: kafka.NewPublisher(kc)}
	// As in production: the topic keeps the events, the outbox drops them.
	r := &outbox.Relay{Store: s, Publisher: pub, Leases: inmem.NewLeases(nil), Log: quiet, BatchSize: 25, DropPublished: true}
	ctx := t.Context()
	for {
		n, err := r.RunOnce(ctx)
		if err == nil && n == 0 {
			break
		}
	}
	if pub.calls.Load() < 2 {
		t.Fatal("the failing publish was not retried")
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(boxoffice.TopicBookingHeld, boxoffice.TopicBookingConfirmed),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want := sl.wanted()
	seen := map[string]int{}
	deadline := time.Now().Add(20 * time.Second)
	for len(seen) < len(want) && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(rec *kgo.Record) {
			for _, h := range rec.Headers {
				if h.Key == kafka.HeaderEventID {
					seen[string(h.Value)]++
				}
			}
		})
	}
	dups := 0
	for id := range want {
		if seen[id] == 0 {
			t.Errorf("event %s never reached Kafka", id)
		}
		dups += seen[id] - 1
	}
	if len(seen) != len(want) {
		t.Errorf("%d distinct events on Kafka, want %d", len(seen), len(want))
	}
	if dups == 0 {
		t.Error("the crash mid-publish left no duplicate: the test did not test it")
	}
	t.Logf("%d events, %d duplicates from the crash, each once after de-duplication", len(want), dups)
}
