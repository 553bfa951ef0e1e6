// Package testpay is the built-in test payment gateway: a real
// boxoffice.PaymentGateway that moves no money. Its card tokens decide the
// outcome, as a card processor's test mode does:
//
//	tok_visa            approves
//	tok_chargeDeclined  declines (402; the hold stays, try another card)
//	tok_error           the gateway fails (502; nothing is authorized)
//	tok_slow            approves after Gateway.SlowDelay (default 3s)
//
// Any other token is refused as invalid. It keeps every authorization in
// memory so tests can check that nothing was charged twice or left behind.
package testpay

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
)

// The test tokens.
const (
	TokenApprove = "tok_visa"
	TokenDecline = "tok_chargeDeclined"
	TokenError   = "tok_error"
	TokenSlow    = "tok_slow"
)

// AuthStatus is the state of one authorization.
type AuthStatus string

const (
	Authorized AuthStatus = "authorized"
	Captured   AuthStatus = "captured"
	Voided     AuthStatus = "voided"
	// Refunded: captured, then paid back in full.
	Refunded AuthStatus = "refunded"
)

// Auth is one authorization as the gateway remembers it.
type Auth struct {
	ID          string
	Key         string
	AmountCents int64
	Status      AuthStatus
	// RefundedCents is what was paid back, or released before the
	// capture (refunds by distinct keys add up, never past AmountCents).
	RefundedCents int64
}

// Gateway is the test gateway. The zero value is not usable; call New.
type Gateway struct {
	// SlowDelay is how long tok_slow takes.
	SlowDelay time.Duration

	mu      sync.Mutex
	auths   map[string]*Auth  // by id
	byKey   map[string]string // idempotency key → auth id
	refunds map[string]bool   // refund idempotency keys seen
}

var _ boxoffice.PaymentGateway = (*Gateway)(nil)

// New returns a test gateway.
func New() *Gateway {
	return &Gateway{SlowDelay: 3 * time.Second, auths: map[string]*Auth{}, byKey: map[string]string{}, refunds: map[string]bool{}}
}

// Authorize implements boxoffice.PaymentGateway. The same IdempotencyKey
// returns the first approved authorization again.
func (g *Gateway) Authorize(ctx context.Context, req boxoffice.PaymentRequest) (boxoffice.Authorization, error) {
	switch req.Token {
	case TokenApprove:
	case TokenDecline:
		return boxoffice.Authorization{}, boxoffice.Errorf(boxoffice.EPAYMENTDECLINED, "the card was declined")
	case TokenError:
		return boxoffice.Authorization{}, boxoffice.Errorf(boxoffice.EPAYMENTFAILED, "the payment gateway failed; nothing was charged")
	case TokenSlow:
		t := time.NewTimer(g.SlowDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return boxoffice.Authorization{}, boxoffice.Errorf(boxoffice.EPAYMENTFAILED, "the payment gateway timed out; nothing was charged")
		}
	default:
		return boxoffice.Authorization{}, boxoffice.Errorf(boxoffice.EINVALID, "unknown payment token (test tokens: %s, %s, %s, %s)", TokenApprove, TokenDecline, TokenError, TokenSlow)
	}
	if req.AmountCents < 0 {
		return boxoffice.Authorization{}, boxoffice.Errorf(boxoffice.EINVALID, "negative amount")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if id, ok := g.byKey[req.IdempotencyKey]; ok && req.IdempotencyKey != "" {
		a := g.auths[id]
		return boxoffice.Authorization{ID: a.ID, AmountCents: a.AmountCents}, nil
	}
	a := &Auth{ID: newAuthID(), Key: req.IdempotencyKey, AmountCents: req.AmountCents, Status: Authorized}
	g.auths[a.ID] = a
	if req.IdempotencyKey != "" {
		g.byKey[req.IdempotencyKey] = a.ID
	}
	return boxoffice.Authorization{ID: a.ID, AmountCents: a.AmountCents}, nil
}

// newAuthID returns a random authorization id, "auth_" and 128 bits: unique
// across every process and restart that shares a database (payments are
// keyed by it), with no coordination.
func newAuthID() string {
	return "auth_" + rand.Text()
}

// Capture implements boxoffice.PaymentGateway. An authorization this
// gateway no longer knows (the process restarted) is taken as captured:
// the test gateway keeps no books across restarts.
func (g *Gateway) Capture(ctx context.Context, authID string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.auths[authID]
	if !ok {
		return nil
	}
	if a.Status == Voided {
		return boxoffice.Errorf(boxoffice.ECONFLICT, "authorization %s was voided", authID)
	}
	a.Status = Captured
	return nil
}

// Void implements boxoffice.PaymentGateway.
func (g *Gateway) Void(ctx context.Context, authID string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.auths[authID]
	if !ok {
		return nil
	}
	if a.Status == Captured {
		return boxoffice.Errorf(boxoffice.ECONFLICT, "authorization %s was captured", authID)
	}
	a.Status = Voided
	return nil
}

// Refund implements boxoffice.PaymentGateway. A captured payment is paid
// back; of a still-authorized one, amountCents is released (nothing was
// taken), and released in full it is voided. Either way refunds by
// distinct keys add up, never past the amount. The same idempotencyKey
// refunds once. An authorization this gateway no longer knows (the
// process restarted) is taken as refunded.
func (g *Gateway) Refund(ctx context.Context, authID string, amountCents int64, idempotencyKey string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if idempotencyKey != "" && g.refunds[idempotencyKey] {
		return nil
	}
	a, ok := g.auths[authID]
	if !ok {
		return nil
	}
	switch {
	case amountCents <= 0 || amountCents > a.AmountCents-a.RefundedCents:
		return boxoffice.Errorf(boxoffice.EINVALID, "refund of %d cents exceeds what is left of %s", amountCents, authID)
	case a.Status == Voided:
		return boxoffice.Errorf(boxoffice.ECONFLICT, "authorization %s was voided", authID)
	case a.Status == Authorized:
		a.RefundedCents += amountCents
		if a.RefundedCents == a.AmountCents {
			a.Status = Voided
		}
	default:
		a.RefundedCents += amountCents
		if a.RefundedCents == a.AmountCents {
			a.Status = Refunded
		}
	}
	if idempotencyKey != "" {
		g.refunds[idempotencyKey] = true
	}
	return nil
}

// Auths returns a copy of every authorization, for tests and audits.
func (g *Gateway) Auths() []Auth {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Auth, 0, len(g.auths))
	for _, a := range g.auths {
		out = append(out, *a)
	}
	return out
}

// Charged returns the total of captured plus still-authorized money, less
// refunds, per idempotency key: what a card holder would see on their
// statement. Keys whose money was all given back are left out.
func (g *Gateway) Charged() map[string]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]int64{}
	for _, a := range g.auths {
		if a.Status != Voided && a.Status != Refunded {
			out[a.Key] += a.AmountCents - a.RefundedCents
		}
	}
	return out
}
