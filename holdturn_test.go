package boxoffice_test

import (
	"context"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

func TestHoldTurnsGoInOrder(t *testing.T) {
	first, p1 := boxoffice.NextHoldTurn(nil)
	second, p2 := boxoffice.NextHoldTurn(p1)
	third, _ := boxoffice.NextHoldTurn(p2)
	if err := first.Wait(t.Context()); err != nil {
		t.Fatalf("the first turn waits: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := second.Wait(ctx); err == nil {
		t.Fatal("the second turn did not wait for the first")
	}
	first.Done()
	first.Done() // twice is harmless
	if err := second.Wait(t.Context()); err != nil {
		t.Fatalf("second after first: %v", err)
	}
	second.Done()
	if err := third.Wait(t.Context()); err != nil {
		t.Fatalf("third after second: %v", err)
	}
}

func TestNoHoldTurnWaitsForNothing(t *testing.T) {
	turn := boxoffice.HoldTurnOf(t.Context())
	if turn != nil {
		t.Fatalf("a context without a turn has %v", turn)
	}
	if err := turn.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	turn.Done()
	mine, _ := boxoffice.NextHoldTurn(nil)
	if got := boxoffice.HoldTurnOf(boxoffice.WithHoldTurn(t.Context(), mine)); got != mine {
		t.Fatalf("HoldTurnOf = %p, want %p", got, mine)
	}
}
