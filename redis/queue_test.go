package redis

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/queuetest"
)

var queueEvents atomic.Int64

func TestQueueState(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		queuetest.Run(t, func(t *testing.T) queuetest.Harness {
			return queuetest.Harness{State: NewQueueState(client, newPrefix(t, client)), NewEvent: func(*testing.T) boxoffice.ID {
				return boxoffice.ID(time.Now().UnixNano()/1000 + queueEvents.Add(1))
			}}
		})
	})
}
