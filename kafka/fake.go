package kafka

import (
	"fmt"
	"net"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/twmb/franz-go/pkg/kfake"
)

// StartFake runs an in-process Kafka broker (franz-go's kfake: one broker,
// memory only, no authentication) listening on addr, a loopback host:port
// (port 0 picks one), with boxoffice's topics created with partitions each
// (zero or less: DefaultPartitions). It returns the seeds to give Open and
// a stop func. Several processes can share it, which is what tests and the
// kafka-fake subcommand use it for; it is no production broker.
func StartFake(addr string, partitions int32) (seeds []string, stop func(), err error) {
	c, err := startFake(addr, partitions)
	if err != nil {
		return nil, nil, err
	}
	return c.ListenAddrs(), c.Close, nil
}

func startFake(addr string, partitions int32) (*kfake.Cluster, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("kafka: fake broker address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		// Anyone who can reach it can read and write everything.
		return nil, fmt.Errorf("kafka: fake broker address %q is not a loopback address", addr)
	}
	if partitions <= 0 {
		partitions = DefaultPartitions
	}
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		// kfake listens on 127.0.0.1 and the port; this puts it on the
		// address asked for, and it advertises whatever it listens on.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, addr) }),
		kfake.DefaultNumPartitions(int(partitions)),
		kfake.SeedTopics(partitions, TopicRequests, boxoffice.TopicBookingHeld,
			boxoffice.TopicBookingConfirmed, boxoffice.TopicBookingReleased, boxoffice.TopicBookingExpired,
			boxoffice.TopicBookingCancelled, boxoffice.TopicTicketResold),
		kfake.AllowAutoTopicCreation(),
		// Lets tests lower a group's session timeout below Kafka's 6s
		// minimum, so a killed member is noticed quickly.
		kfake.GroupMinSessionTimeout(time.Second),
	)
	if err != nil {
		return nil, fmt.Errorf("kafka: fake broker: %w", err)
	}
	return c, nil
}
