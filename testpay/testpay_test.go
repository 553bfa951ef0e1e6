package testpay

import (
	"context"
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
