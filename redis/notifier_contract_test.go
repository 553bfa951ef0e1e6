package redis

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/notifytest"
)

// The contract on one server and on the cluster. Every subtest gets a
// fresh prefix, so a channel of its own; its peer is a second Notifier on
// the same prefix, as another API process would make.
func TestNotifierContract(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		notifytest.Run(t, func(t *testing.T) notifytest.Harness {
			prefix := newPrefix(t, client)
			return notifytest.Harness{
				Notifier: NewNotifier(client, prefix),
				Peer:     func() boxoffice.Notifier { return NewNotifier(client, prefix) },
			}
		})
	})
}
