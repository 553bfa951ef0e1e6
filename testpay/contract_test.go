package testpay

import (
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/paytest"
)

func TestContract(t *testing.T) {
	tokens := paytest.Tokens{OK: TokenApprove, Declined: TokenDecline, Failed: TokenError, Slow: TokenSlow}
	paytest.Run(t, tokens, func(t *testing.T) boxoffice.PaymentGateway { return New() })
}
