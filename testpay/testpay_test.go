package testpay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

func TestTokens(t *testing.T) {
	g := New()
	g.SlowDelay = 10 * time.Millisecond
	ctx := context.Background()
	for tok, want := range map[string]string{TokenApprove: "", TokenSlow: "", TokenDecline: boxoffice.EPAYMENTDECLINED,
		TokenError: boxoffice.EPAYMENTFAILED, "tok_unknown": boxoffice.EINVALID} {
		_, err := g.Authorize(ctx, boxoffice.PaymentRequest{Token: tok, AmountCents: 100, IdempotencyKey: tok})
		if got := boxoffice.ErrorCode(err); got != want {
			t.Errorf("%s: code %q, want %q", tok, got, want)
		}
	}
	slow, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	g.SlowDelay = time.Minute
	if _, err := g.Authorize(slow, boxoffice.PaymentRequest{Token: TokenSlow, AmountCents: 1}); boxoffice.ErrorCode(err) != boxoffice.EPAYMENTFAILED {
		t.Errorf("tok_slow past its deadline: %v", err)
	}
}

func TestIdempotentAuthorizeCaptureVoid(t *testing.T) {
	g := New()
	ctx := context.Background()
	a1, _ := g.Authorize(ctx, boxoffice.PaymentRequest{Token: TokenApprove, AmountCents: 500, IdempotencyKey: "b1"})
	a2, _ := g.Authorize(ctx, boxoffice.PaymentRequest{Token: TokenApprove, AmountCents: 500, IdempotencyKey: "b1"})
	if a1.ID != a2.ID {
		t.Fatalf("same key, two authorizations: %s %s", a1.ID, a2.ID)
	}
	if err := g.Capture(ctx, a1.ID); err != nil {
		t.Fatal(err)
	}
	if err := g.Void(ctx, a1.ID); boxoffice.ErrorCode(err) != boxoffice.ECONFLICT {
		t.Errorf("voiding a capture: %v", err)
	}
	b, _ := g.Authorize(ctx, boxoffice.PaymentRequest{Token: TokenApprove, AmountCents: 300, IdempotencyKey: "b2"})
	_ = g.Void(ctx, b.ID)
	if err := g.Capture(ctx, b.ID); boxoffice.ErrorCode(err) != boxoffice.ECONFLICT {
		t.Errorf("capturing a void: %v", err)
	}
	if got := g.Charged(); got["b1"] != 500 || got["b2"] != 0 {
		t.Errorf("Charged = %v", got)
	}
}

func TestRefund(t *testing.T) {
	ctx := context.Background()
	t.Run("CapturedIsPaidBackOncePerKey", func(t *testing.T) {
		g := New()
		a, _ := g.Authorize(ctx, boxoffice.PaymentRequest{Token: TokenApprove, AmountCents: 800, IdempotencyKey: "b1"})
		_ = g.Capture(ctx, a.ID)
		for range 3 {
			if err := g.Refund(ctx, a.ID, 800, "refund:b1"); err != nil {
				t.Fatalf("Refund: %v", err)
			}
		}
		if got := g.Charged(); got["b1"] != 0 {
			t.Errorf("Charged after a refund = %v, want nothing for b1", got)
		}
		if err := g.Refund(ctx, a.ID, 1, "refund:again"); boxoffice.ErrorCode(err) != boxoffice.EINVALID {
			t.Errorf("refunding past the amount: %v, want invalid", err)
		}
	})
	t.Run("AuthorizedIsVoided", func(t *testing.T) {
		g := New()
		a, _ := g.Authorize(ctx, boxoffice.PaymentRequest{Token: TokenApprove, AmountCents: 300, IdempotencyKey: "b2"})
		if err := g.Refund(ctx, a.ID, 300, "refund:b2"); err != nil {
			t.Fatal(err)
		}
		if err := g.Capture(ctx, a.ID); boxoffice.ErrorCode(err) != boxoffice.ECONFLICT {
			t.Errorf("capture after the refund voided it: %v", err)
		}
	})
	t.Run("PartialRefundsAddUp", func(t *testing.T) {
		g := New()
		a, _ := g.Authorize(ctx, boxoffice.PaymentRequest{Token: TokenApprove, AmountCents: 1000, IdempotencyKey: "b3"})
		_ = g.Capture(ctx, a.ID)
		_ = g.Refund(ctx, a.ID, 400, "r1")
		if got := g.Charged()["b3"]; got != 600 {
			t.Errorf("Charged after refunding 400 of 1000 = %d, want 600", got)
		}
	})
}

// Two gateways stand for two processes (or one restarted): their
// authorization ids must never collide, since payments are keyed by them.
func TestAuthIDsUniqueAcrossGateways(t *testing.T) {
	ctx := context.Background()
	seen := map[string]bool{}
	for range 2 {
		g := New()
		for i := range 500 {
			a, err := g.Authorize(ctx, boxoffice.PaymentRequest{Token: TokenApprove, AmountCents: 100, IdempotencyKey: fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			if seen[a.ID] {
				t.Fatalf("authorization id %s handed out twice", a.ID)
			}
			seen[a.ID] = true
		}
	}
}
