package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/queuetest"
)

func TestQueue(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Harness {
		s := open(t, filepath.Join(t.TempDir(), "boxoffice.db"))
		q := s.Queue()
		q.PollInterval = 10 * time.Millisecond
		return queuetest.Harness{State: q, Log: q, NewEvent: func(t *testing.T) boxoffice.ID { return queuetest.QueuedEvent(t, s) }}
	})
}
