package boxoffice

import "context"

// PaymentRequest asks the gateway to authorize an amount.
type PaymentRequest struct {
	// Token is the card token the client got from the payment page.
	Token       string
	AmountCents int64
	Currency    string
	// IdempotencyKey makes a repeated authorization return the first one:
	// the booking id, so one booking is never authorized twice.
	IdempotencyKey string
}

// Authorization is money reserved on the card, not yet taken.
type Authorization struct {
	ID          string
	AmountCents int64
}

// PaymentGateway is the payment port. Confirm authorizes first, writes the
// tickets, then captures; when the tickets cannot be written it voids, so a
// booking that lost its seats is never charged.
//
// Errors: EPAYMENTDECLINED when the card is refused, EPAYMENTFAILED when the
// gateway could not answer (nothing was authorized).
type PaymentGateway interface {
	Authorize(ctx context.Context, req PaymentRequest) (Authorization, error)
	// Capture takes the authorized money. Capturing twice is harmless.
	Capture(ctx context.Context, authID string) error
	// Void drops an authorization so that nothing is taken.
	Void(ctx context.Context, authID string) error
	// Refund gives back amountCents of a captured (or still authorized)
	// payment. The same idempotencyKey returns the first refund's result,
	// so a retried refund pays back once.
	Refund(ctx context.Context, authID string, amountCents int64, idempotencyKey string) error
}
