package wait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/internal/wait"
)

func TestSleep(t *testing.T) {
	if err := wait.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep(1ms) = %v; want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// An hour: only the context can end it.
	if err := wait.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(hour) with a cancelled context = %v; want context.Canceled", err)
	}
}
