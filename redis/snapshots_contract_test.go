package redis

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice/seatmap"
	"github.com/boxoffice/boxoffice/seatmap/sharedtest"
)

var _ seatmap.Shared = (*Snapshots)(nil)

// The contract on one server and on the cluster, each subtest under a
// fresh prefix.
func TestSnapshotsContract(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		sharedtest.Run(t, func(t *testing.T) seatmap.Shared {
			return NewSnapshots(client, newPrefix(t, client))
		})
	})
}
