package inmem

import (
	"testing"

	"github.com/boxoffice/boxoffice/notifytest"
)

// The in-process notifier is the whole bus of the embedded deployment: its
// peers are itself.
func TestNotifierContract(t *testing.T) {
	notifytest.Run(t, func(t *testing.T) notifytest.Harness {
		return notifytest.Harness{Notifier: NewNotifier()}
	})
}
