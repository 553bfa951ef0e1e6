// Package paytest is the contract suite of boxoffice.PaymentGateway:
// every gateway (testpay.Gateway, and any real one in its sandbox) runs
// Run and passes it.
//
//	func TestContract(t *testing.T) {
//		paytest.Run(t, paytest.Tokens{OK: "tok_visa", Declined: "tok_chargeDeclined", Failed: "tok_error"},
//			func(t *testing.T) boxoffice.PaymentGateway { return testpay.New() })
//	}
//
// Which card declines and which makes the gateway fail is the gateway's
// own business, so the caller names its test tokens in Tokens.
//
// The suite sees the gateway from outside only: what money was taken it
// learns from what the gateway still lets one do. A refund may give back
// no more than is left of a payment, so after refunds of r cents a
// payment of a cents takes a refund of a-r cents more and not one cent
// beyond; a voided authorization is not captured nor refunded.
//
// Every subtest uses fresh random idempotency keys, so the suite can run
// against a sandbox shared with other runs.
//
// Pinned here beyond the doc comments (every implementation keeps them):
//   - a repeated Authorize returns the first authorization, its id and its
//     amount, whatever amount the repeat asks for;
//   - a declined or failed Authorize leaves nothing under its key: the
//     booking's retry with another card, same key, is authorized afresh;
//   - a voided authorization cannot be captured or refunded (an error);
//   - refunds by distinct keys add up, captured or still authorized, to
//     the payment's amount and no further; a refund past what is left is
//     an error and gives back nothing;
//   - an Authorize whose context has ended either authorizes or fails
//     with EPAYMENTFAILED; after the failure nothing is authorized.
package paytest

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// Tokens are a gateway's test card tokens.
type Tokens struct {
	// OK is authorized.
	OK string
	// Declined is refused as the card's issuer would (EPAYMENTDECLINED).
	Declined string
	// Failed makes the gateway fail (EPAYMENTFAILED).
	Failed string
	// Slow, when set, is authorized only after far longer than a second:
	// the suite checks that a deadline ending first fails the
	// authorization as EPAYMENTFAILED.
	Slow string
}

// Run runs the whole contract, one fresh gateway per subtest.
func Run(t *testing.T, tokens Tokens, newGateway func(t *testing.T) boxoffice.PaymentGateway) {
	if tokens.OK == "" || tokens.Declined == "" || tokens.Failed == "" {
		t.Fatalf("paytest.Tokens %+v: OK, Declined and Failed are all needed", tokens)
	}
	specs := []struct {
		name string
		test func(t *testing.T, c suite)
	}{
		{"Authorize", testAuthorize},
		{"AuthorizeIdempotent", testIdempotent},
		{"AuthorizeIdempotentConcurrently", testIdempotentConcurrent},
		{"Declined", testDeclined},
		{"Failed", testFailed},
		{"AuthorizeWithEndedContext", testEndedContext},
		{"Slow", testSlow},
		{"CaptureTwice", testCaptureTwice},
		{"Void", testVoid},
		{"RefundCaptured", testRefundCaptured},
		{"RefundIdempotent", testRefundIdempotent},
		{"PartialRefundsAddUp", testPartialRefunds},
		{"RefundPastWhatIsLeft", testRefundTooMuch},
		{"RefundAuthorized", testRefundAuthorized},
		{"PaymentsApart", testApart},
	}
	for _, s := range specs {
		t.Run(s.name, func(t *testing.T) { s.test(t, suite{g: newGateway(t), tok: tokens}) })
	}
}

type suite struct {
	g   boxoffice.PaymentGateway
	tok Tokens
}

var ctx = context.Background()

// key returns a fresh idempotency key.
func key(kind string) string { return "paytest:" + kind + ":" + rand.Text() }

func (c suite) request(token string, cents int64, key string) boxoffice.PaymentRequest {
	return boxoffice.PaymentRequest{Token: token, AmountCents: cents, Currency: "EUR", IdempotencyKey: key}
}

// authorize authorizes cents with the OK token under key.
func (c suite) authorize(t *testing.T, cents int64, key string) boxoffice.Authorization {
	t.Helper()
	a, err := c.g.Authorize(ctx, c.request(c.tok.OK, cents, key))
	if err != nil {
		t.Fatalf("Authorize(%s, %d cents, key %s) = %v", c.tok.OK, cents, key, err)
	}
	if a.ID == "" || a.AmountCents != cents {
		t.Fatalf("Authorize(%d cents) = %+v, want an id and the amount", cents, a)
	}
	return a
}

func (c suite) capture(t *testing.T, a boxoffice.Authorization) {
	t.Helper()
	if err := c.g.Capture(ctx, a.ID); err != nil {
		t.Fatalf("Capture(%s) = %v", a.ID, err)
	}
}

func (c suite) refund(t *testing.T, a boxoffice.Authorization, cents int64, key string) {
	t.Helper()
	if err := c.g.Refund(ctx, a.ID, cents, key); err != nil {
		t.Fatalf("Refund(%s, %d cents, key %s) = %v", a.ID, cents, key, err)
	}
}

func (c suite) refundFails(t *testing.T, a boxoffice.Authorization, cents int64, why string) {
	t.Helper()
	if err := c.g.Refund(ctx, a.ID, cents, key("refund")); err == nil {
		t.Errorf("Refund(%s, %d cents) = nil, want an error: %s", a.ID, cents, why)
	}
}

// left asserts that exactly left cents of a can still be refunded: a
// refund of one cent more fails, then one of left succeeds and empties
// it. It uses the payment up.
func (c suite) left(t *testing.T, a boxoffice.Authorization, left int64) {
	t.Helper()
	c.refundFails(t, a, left+1, "more than is left")
	if left > 0 {
		c.refund(t, a, left, key("refund-rest"))
	}
	c.refundFails(t, a, 1, "nothing is left")
}

// wantCode asserts the error code of err.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := boxoffice.ErrorCode(err); got != code {
		t.Errorf("%s = %v (code %q), want code %q", what, err, got, code)
	}
}

// testAuthorize: an approved card gives an authorization of the amount
// asked; distinct keys give distinct authorizations, even for one amount.
func testAuthorize(t *testing.T, c suite) {
	seen := map[string]bool{}
	for _, cents := range []int64{1, 500, 500, 123_456} {
		a := c.authorize(t, cents, key("auth"))
		if seen[a.ID] {
			t.Errorf("authorization id %s handed out twice", a.ID)
		}
		seen[a.ID] = true
	}
}

// testIdempotent: the same key returns the first authorization, even
// after it was captured and whatever amount the repeat asks for; one
// booking is never authorized twice.
func testIdempotent(t *testing.T, c suite) {
	k := key("booking")
	a := c.authorize(t, 700, k)
	for _, cents := range []int64{700, 900} {
		again, err := c.g.Authorize(ctx, c.request(c.tok.OK, cents, k))
		if err != nil {
			t.Fatalf("Authorize again (%d cents) = %v", cents, err)
		}
		if again != a {
			t.Errorf("Authorize again with the same key (%d cents) = %+v, want the first %+v", cents, again, a)
		}
	}
	c.capture(t, a)
	if again, err := c.g.Authorize(ctx, c.request(c.tok.OK, 700, k)); err != nil || again != a {
		t.Errorf("Authorize after the capture = %+v, %v; want the first %+v", again, err, a)
	}
	// Had the repeats authorized anything, the payment would hold more.
	c.left(t, a, 700)
	if b := c.authorize(t, 700, key("booking")); b.ID == a.ID {
		t.Errorf("another key got the first authorization %s", a.ID)
	}
}

// testIdempotentConcurrently: retries racing each other get one
// authorization.
func testIdempotentConcurrent(t *testing.T, c suite) {
	k := key("booking")
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids = map[string]int{}
	)
	for range 16 {
		wg.Go(func() {
			a, err := c.g.Authorize(ctx, c.request(c.tok.OK, 2500, k))
			if err != nil {
				t.Errorf("Authorize = %v", err)
				return
			}
			mu.Lock()
			ids[a.ID]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(ids) != 1 {
		t.Fatalf("16 concurrent Authorize with one key gave %d authorizations: %v", len(ids), ids)
	}
	for id := range ids {
		c.capture(t, boxoffice.Authorization{ID: id, AmountCents: 2500})
		c.left(t, boxoffice.Authorization{ID: id, AmountCents: 2500}, 2500)
	}
}

// testDeclined: a declined card is EPAYMENTDECLINED, every time, and
// authorizes nothing: the same booking then pays with another card.
func testDeclined(t *testing.T, c suite) {
	k := key("booking")
	for range 2 {
		_, err := c.g.Authorize(ctx, c.request(c.tok.Declined, 800, k))
		wantCode(t, "Authorize(declined card)", err, boxoffice.EPAYMENTDECLINED)
	}
	a := c.authorize(t, 800, k)
	c.capture(t, a)
	c.left(t, a, 800)
}

// testFailed: a failing gateway is EPAYMENTFAILED and authorizes nothing:
// the retry, same key, is authorized afresh.
func testFailed(t *testing.T, c suite) {
	k := key("booking")
	_, err := c.g.Authorize(ctx, c.request(c.tok.Failed, 650, k))
	wantCode(t, "Authorize(failing gateway)", err, boxoffice.EPAYMENTFAILED)
	// A first attempt that had authorized 650 would come back here.
	a := c.authorize(t, 640, k)
	c.capture(t, a)
	c.left(t, a, 640)
}

// testEndedContext: an Authorize whose context has ended either
// authorizes (the gateway answered) or fails as EPAYMENTFAILED with
// nothing authorized, never with another error.
func testEndedContext(t *testing.T, c suite) {
	ended, cancel := context.WithCancel(ctx)
	cancel()
	k := key("booking")
	a, err := c.g.Authorize(ended, c.request(c.tok.OK, 300, k))
	switch boxoffice.ErrorCode(err) {
	case "":
		if again := c.authorize(t, 300, k); again != a {
			t.Errorf("Authorize after one with an ended context = %+v, want its %+v", again, a)
		}
	case boxoffice.EPAYMENTFAILED:
		c.authorize(t, 290, k) // 290, not 300: nothing was left under k
	default:
		t.Errorf("Authorize(ended context) = %v (code %q), want an authorization or code %q", err, boxoffice.ErrorCode(err), boxoffice.EPAYMENTFAILED)
	}
}

// testSlow: an authorization still running when its deadline ends fails
// as EPAYMENTFAILED (the booking is not charged), and the retry, same
// key, is authorized.
func testSlow(t *testing.T, c suite) {
	if c.tok.Slow == "" {
		t.Skip("no slow test token")
	}
	k := key("booking")
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := c.g.Authorize(short, c.request(c.tok.Slow, 300, k))
	wantCode(t, "Authorize(slow, past its deadline)", err, boxoffice.EPAYMENTFAILED)
	a := c.authorize(t, 290, k)
	c.capture(t, a)
	c.left(t, a, 290)
}

// testCaptureTwice: a second capture is harmless and takes nothing more.
func testCaptureTwice(t *testing.T, c suite) {
	a := c.authorize(t, 1200, key("booking"))
	c.capture(t, a)
	c.capture(t, a)
	c.capture(t, a)
	c.left(t, a, 1200)
}

// testVoid: a voided authorization takes nothing: it is neither captured
// nor refunded after.
func testVoid(t *testing.T, c suite) {
	a := c.authorize(t, 450, key("booking"))
	if err := c.g.Void(ctx, a.ID); err != nil {
		t.Fatalf("Void = %v", err)
	}
	if err := c.g.Capture(ctx, a.ID); err == nil {
		t.Errorf("Capture after Void = nil, want an error: nothing may be taken")
	}
	c.refundFails(t, a, 450, "a voided authorization took nothing")
	c.refundFails(t, a, 1, "a voided authorization took nothing")

	// Voiding one authorization leaves the others alone.
	b := c.authorize(t, 450, key("booking"))
	d := c.authorize(t, 450, key("booking"))
	if err := c.g.Void(ctx, b.ID); err != nil {
		t.Fatalf("Void = %v", err)
	}
	c.capture(t, d)
	c.left(t, d, 450)
}

// testRefundCaptured: a captured payment is given back in full, once.
func testRefundCaptured(t *testing.T, c suite) {
	a := c.authorize(t, 800, key("booking"))
	c.capture(t, a)
	c.refund(t, a, 800, key("refund"))
	c.refundFails(t, a, 1, "all 800 cents were given back")
	c.refundFails(t, a, 800, "all 800 cents were given back")
}

// testRefundIdempotent: the same refund key gives back once: its
// repeats return the first one's result and give back nothing more.
func testRefundIdempotent(t *testing.T, c suite) {
	a := c.authorize(t, 1000, key("booking"))
	c.capture(t, a)
	k := key("refund")
	for range 3 {
		c.refund(t, a, 400, k)
	}
	c.left(t, a, 600)

	// A repeat after the payment was refunded in full, by other keys,
	// still returns the first result.
	b := c.authorize(t, 1000, key("booking"))
	c.capture(t, b)
	k = key("refund")
	c.refund(t, b, 1000, k)
	c.refund(t, b, 1000, k)
	c.refundFails(t, b, 1, "all was given back")
}

// testPartialRefunds: refunds by distinct keys add up to the captured
// amount.
func testPartialRefunds(t *testing.T, c suite) {
	a := c.authorize(t, 1000, key("booking"))
	c.capture(t, a)
	c.refund(t, a, 100, key("refund"))
	c.refund(t, a, 250, key("refund"))
	c.refund(t, a, 1, key("refund"))
	c.left(t, a, 649)
}

// testRefundTooMuch: a refund past what is left fails and gives back
// nothing, not even the part that was left.
func testRefundTooMuch(t *testing.T, c suite) {
	a := c.authorize(t, 500, key("booking"))
	c.capture(t, a)
	c.refundFails(t, a, 501, "more than was captured")
	c.refund(t, a, 200, key("refund"))
	c.refundFails(t, a, 301, "more than is left")
	c.left(t, a, 300)
}

// testRefundAuthorized: a still authorized payment can be refunded too,
// in full or in parts that add up to it, and no further; refunded in full
// it is not captured after.
func testRefundAuthorized(t *testing.T, c suite) {
	a := c.authorize(t, 900, key("booking"))
	c.refund(t, a, 900, key("refund"))
	c.refundFails(t, a, 1, "all 900 authorized cents were given back")
	if err := c.g.Capture(ctx, a.ID); err == nil {
		t.Errorf("Capture after a refund of the whole authorization = nil, want an error: nothing may be taken")
	}

	b := c.authorize(t, 900, key("booking"))
	c.refund(t, b, 300, key("refund"))
	c.refund(t, b, 200, key("refund"))
	c.left(t, b, 400)
}

// testApart: what is done to one payment changes nothing of another, even
// of the same amount.
func testApart(t *testing.T, c suite) {
	a := c.authorize(t, 600, key("booking"))
	b := c.authorize(t, 600, key("booking"))
	c.capture(t, a)
	c.capture(t, b)
	c.refund(t, a, 600, key("refund"))
	c.refundFails(t, a, 1, "a was given back in full")
	c.left(t, b, 600)
}
