package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A client that hangs up mid-request is no internal error: nothing is
// logged above debug.
func TestCancelledRequestIsNotAnInternalError(t *testing.T) {
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest("POST", "/bookings/reserve", nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	writeError(rec, req, log, fmt.Errorf("reserve: %w", context.Canceled))
	if rec.Code == http.StatusInternalServerError || logged.Len() > 0 {
		t.Errorf("a cancelled request: status %d, logged %q", rec.Code, logged.String())
	}
}
