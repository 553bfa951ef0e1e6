package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/jsonappend"
)

// problemTypeBase prefixes every problem type. The types are stable: clients
// may switch on them. docs/problems.md describes each.
const problemTypeBase = "urn:boxoffice:problem:"

// problemKind is the HTTP face of one error code.
type problemKind struct {
	status int
	slug   string
	title  string
}

// problems is THE table from the domain's error vocabulary to HTTP.
var problems = map[string]problemKind{
	boxoffice.EINVALID:         {http.StatusBadRequest, "invalid-request", "The request is invalid"},
	boxoffice.ENOTFOUND:        {http.StatusNotFound, "not-found", "Not found"},
	boxoffice.ECONFLICT:        {http.StatusConflict, "conflict", "The request conflicts with the current state"},
	boxoffice.ESEATTAKEN:       {http.StatusConflict, "seat-taken", "A seat is already held or sold"},
	boxoffice.EHOLDLOST:        {http.StatusGone, "hold-lost", "The hold expired or was taken over"},
	boxoffice.ELIMIT:           {http.StatusUnprocessableEntity, "limit-exceeded", "Ticket limit exceeded"},
	boxoffice.ESALECLOSED:      {http.StatusConflict, "sale-not-open", "The sale is not open"},
	boxoffice.ESOLDOUT:         {http.StatusConflict, "sold-out", "Sold out"},
	boxoffice.EIDEMMISMATCH:    {http.StatusUnprocessableEntity, "idempotency-key-reused", "Idempotency key reused with a different request"},
	boxoffice.EIDEMINFLIGHT:    {http.StatusConflict, "idempotency-key-in-flight", "A request with this idempotency key is still in progress"},
	boxoffice.EIDEMMISSING:     {http.StatusBadRequest, "idempotency-key-missing", "Idempotency key missing"},
	boxoffice.EUNAUTHORIZED:    {http.StatusUnauthorized, "unauthorized", "Authentication required"},
	boxoffice.EFORBIDDEN:       {http.StatusForbidden, "forbidden", "Not allowed"},
	boxoffice.EPAYMENTDECLINED: {http.StatusPaymentRequired, "payment-declined", "The payment was declined"},
	boxoffice.EPAYMENTFAILED:   {http.StatusBadGateway, "payment-failed", "The payment gateway failed"},
	boxoffice.EUNAVAILABLE:     {http.StatusServiceUnavailable, "unavailable", "Temporarily unavailable"},
	boxoffice.ETOOLARGE:        {http.StatusRequestEntityTooLarge, "too-large", "Request too large"},
	boxoffice.ETICKETVOID:      {http.StatusGone, "ticket-void", "The ticket is void"},
	boxoffice.ECHECKEDIN:       {http.StatusConflict, "already-checked-in", "The ticket was already admitted"},
	boxoffice.ECANCELCLOSED:    {http.StatusConflict, "cancellation-closed", "Cancellation is not allowed"},
	boxoffice.ERATELIMITED:     {http.StatusTooManyRequests, "rate-limited", "Too many requests"},
	boxoffice.EINTERNAL:        {http.StatusInternalServerError, "internal", "Internal error"},
	codeMethod:                 {http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed"},
	codeUnsupported:            {http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type"},
	codeTimeout:                {http.StatusRequestTimeout, "request-timeout", "Request timeout"},
}

// HTTP-only codes, for what never reaches the domain.
const (
	codeMethod      = "method_not_allowed"
	codeUnsupported = "unsupported_media_type"
	codeTimeout     = "request_timeout"
)

// retryAfter is what a 503 or an in-flight 409 tells the client to wait.
const retryAfter = 2

// Problem is an RFC 9457 problem details body.
type Problem struct {
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Status   int      `json:"status"`
	Detail   string   `json:"detail,omitempty"`
	Instance string   `json:"instance,omitempty"`
	Code     string   `json:"code"`
	Seats    []string `json:"seats,omitempty"`
	// WaitlistURL is where to join the waitlist instead (sold-out).
	WaitlistURL string `json:"waitlist_url,omitempty"`
}

// ProblemType returns the stable type URI of an error code.
func ProblemType(code string) string {
	k, ok := problems[code]
	if !ok {
		k = problems[boxoffice.EINTERNAL]
	}
	return problemTypeBase + k.slug
}

// writeError answers with the problem for err. Internal errors are logged
// with their cause and shown only as "internal error". A context that ran
// out or was cancelled under a store call while the client still waits is
// not a bug but a store that did not answer in time: EUNAVAILABLE, 503 with
// Retry-After (see problemCode). A client that hung up gets the same 503,
// which nobody reads, and is logged at debug level only.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if clientGone(r, err) {
		// The client hung up: nobody reads the answer, and it is not the
		// server's fault. Say so at debug level, not as an internal error.
		log.DebugContext(r.Context(), "client gone", "method", r.Method, "path", r.URL.Path)
		err = boxoffice.Errorf(boxoffice.EUNAVAILABLE, "the request was cancelled")
		k := problems[boxoffice.EUNAVAILABLE]
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		writeAppended(w, k.status, "application/problem+json", &Problem{Type: problemTypeBase + k.slug, Title: k.title, Status: k.status,
			Detail: boxoffice.ErrorMessage(err), Instance: r.URL.Path, Code: boxoffice.EUNAVAILABLE})
		return
	}
	if code := problemCode(err); code == boxoffice.EUNAVAILABLE && boxoffice.ErrorCode(err) != code {
		err = &boxoffice.Error{Code: boxoffice.EUNAVAILABLE, Message: "the request timed out", Err: err}
	}
	code := boxoffice.ErrorCode(err)
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		code = boxoffice.ETOOLARGE
		err = boxoffice.Errorf(boxoffice.ETOOLARGE, "request body larger than %d bytes", mbe.Limit)
	}
	k, ok := problems[code]
	if !ok {
		code, k = boxoffice.EINTERNAL, problems[boxoffice.EINTERNAL]
	}
	detail := boxoffice.ErrorMessage(err)
	switch code {
	case boxoffice.EINTERNAL:
		log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		detail = "internal error"
	case boxoffice.EUNAVAILABLE:
		log.WarnContext(r.Context(), "unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if code == boxoffice.EUNAVAILABLE || code == boxoffice.EIDEMINFLIGHT {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	if rl, ok := errors.AsType[*rateLimitedError](err); ok {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(rl.wait)))
	}
	if code == boxoffice.EUNAUTHORIZED {
		w.Header().Set("WWW-Authenticate", `Bearer realm="boxoffice"`)
	}
	p := Problem{Type: problemTypeBase + k.slug, Title: k.title, Status: k.status, Detail: detail,
		Instance: r.URL.Path, Code: code, Seats: boxoffice.ErrorSeats(err)}
	if ev := boxoffice.ErrorWaitlist(err); ev != 0 {
		p.WaitlistURL = boxoffice.WaitlistURL(ev)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeAppended(w, k.status, "application/problem+json", &p)
}

// appendJSON writes the problem as encoding/json does (a refusal is most
// answers of a hot sale; TestProblemJSONIsEncodingJSONs compares them).
func (p *Problem) appendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = jsonappend.String(b, p.Type)
	b = append(b, `,"title":`...)
	b = jsonappend.String(b, p.Title)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(p.Status), 10)
	b = jsonappend.OptionalString(b, `,"detail":`, p.Detail)
	b = jsonappend.OptionalString(b, `,"instance":`, p.Instance)
	b = append(b, `,"code":`...)
	b = jsonappend.String(b, p.Code)
	if len(p.Seats) > 0 {
		b = jsonappend.Strings(append(b, `,"seats":`...), p.Seats)
	}
	b = jsonappend.OptionalString(b, `,"waitlist_url":`, p.WaitlistURL)
	return append(b, '}')
}

// clientGone reports whether err is the end of a request whose client hung
// up: the request's context was cancelled (net/http cancels it when the
// connection closes) and err is that cancellation. A request context past
// its deadline is not a client gone: a deadline is the server's own.
func clientGone(r *http.Request, err error) bool {
	return errors.Is(r.Context().Err(), context.Canceled) &&
		(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// problemCode is the code err is answered with: its own, except that an
// error that is internal only because a context ended under it (a store
// call that ran out of time: context.DeadlineExceeded, or a context the
// server cancelled) is EUNAVAILABLE. Every answer that carries a code
// should take it from here.
func problemCode(err error) string {
	code := boxoffice.ErrorCode(err)
	if code == boxoffice.EINTERNAL && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return boxoffice.EUNAVAILABLE
	}
	return code
}
