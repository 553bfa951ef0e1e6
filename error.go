package boxoffice

import (
	"errors"
	"fmt"
)

// Error codes: the one vocabulary every layer speaks. The HTTP layer maps
// each code to a status and a problem+json type in a single table
// (httpapi/problem.go); adapters translate driver errors into these codes
// by error code, never by matching strings.
const (
	EINVALID         = "invalid"                 // malformed or semantically bad input (400/422)
	ENOTFOUND        = "not_found"               // no such thing, or not yours to see (404)
	ECONFLICT        = "conflict"                // the state does not allow it (409)
	ESEATTAKEN       = "seat_taken"              // a seat is held or sold by someone else (409)
	EHOLDLOST        = "hold_lost"               // the hold expired or was taken over (410)
	ELIMIT           = "limit_exceeded"          // per-user or per-request ticket limit (422)
	ESALECLOSED      = "sale_not_open"           // the sale has not opened or is over (409)
	ESOLDOUT         = "sold_out"                // every seat (of the ask) is held or sold; the waitlist is open (409)
	EIDEMMISMATCH    = "idempotency_mismatch"    // key reused with another request (422)
	EIDEMINFLIGHT    = "idempotency_in_flight"   // the first request with this key is still running (409)
	EIDEMMISSING     = "idempotency_key_missing" // state-changing request without a key (400)
	EUNAUTHORIZED    = "unauthorized"            // no valid credentials (401)
	EFORBIDDEN       = "forbidden"               // valid credentials, not allowed (403)
	EPAYMENTDECLINED = "payment_declined"        // the gateway declined the card (402)
	EPAYMENTFAILED   = "payment_failed"          // the gateway failed; nothing was charged (502)
	EUNAVAILABLE     = "unavailable"             // a store is down; fail closed, retry later (503)
	ETOOLARGE        = "too_large"               // request body over the limit (413)
	ETICKETVOID      = "ticket_void"             // the ticket was resold or cancelled: its code admits nobody (410)
	ECHECKEDIN       = "already_checked_in"      // the ticket was admitted before (409)
	ECANCELCLOSED    = "cancellation_closed"     // the event's refund policy does not allow it (now) (409)
	ERATELIMITED     = "rate_limited"            // too many requests from this user or address; retry later (429)
	EINTERNAL        = "internal"                // a bug or an unexpected failure (500)
)

// Error is a domain error: a code from the vocabulary above, a message fit
// to show the caller, and optional detail (such as the seats in conflict).
type Error struct {
	Code    string
	Message string
	// Seats lists the seat ids a conflict is about, when there are any.
	Seats []string
	// Waitlist, when set, is the event whose waitlist the caller can join
	// instead (a sold-out answer).
	Waitlist ID
	// Err is the underlying cause, kept for logs; never shown to callers.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unavailable wraps a store or network failure as EUNAVAILABLE, keeping the
// cause for the log.
func Unavailable(what string, err error) *Error {
	return &Error{Code: EUNAVAILABLE, Message: what + " is unavailable", Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-safe message of err: the *Error message,
// or "internal error" for anything else.
func ErrorMessage(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Message
	}
	return "internal error"
}

// ErrorSeats returns the seats an error is about, if any.
func ErrorSeats(err error) []string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Seats
	}
	return nil
}

// ErrorWaitlist returns the event whose waitlist an error points to, if any.
func ErrorWaitlist(err error) ID {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Waitlist
	}
	return 0
}

// WaitlistURL is where a user joins an event's waitlist.
func WaitlistURL(eventID ID) string { return "/events/" + eventID.String() + "/waitlist" }

// SoldOutError is the answer to an ask that no seat is left for: the event
// (or the part of it asked for) has every seat held or sold.
func SoldOutError(eventID ID, message string) *Error {
	return &Error{Code: ESOLDOUT, Message: message, Waitlist: eventID}
}
