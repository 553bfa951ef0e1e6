package holdtest

import (
	"context"
	"testing"
)

var pingSpecs = []spec{
	{"Reachable", func(t *testing.T, h Harness) {
		if err := h.Holds.Ping(context.Background()); err != nil {
			t.Errorf("Ping = %v, want nil", err)
		}
	}},
}
