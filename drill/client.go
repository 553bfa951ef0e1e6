package drill

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
)

// CheckLoopback refuses a target that is not on this machine's loopback:
// the drill is a load generator, and pointing it at someone else's server
// is an attack, not a drill.
func CheckLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url %q: want http://127.0.0.1:PORT", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--url %q: the drill only runs against a loopback address (127.0.0.1, ::1, localhost)", raw)
}

// newTransport is the HTTP transport of every drill client, the ceiling's
// included, so that the ceiling is measured through the same client code.
// Compression is off: the seat-map readers ask for gzip themselves and
// never decode it, as a CDN in front would not.
func newTransport(conns int) *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: 2 * conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// client speaks the HTTP contract for the users.
type client struct {
	base    string
	hc      *http.Client
	timeout time.Duration // per attempt
	retries int           // further attempts after a timeout, 5xx or 409 in flight
	// attempt records each attempt's time from send to answer, with the
	// request's method and path.
	attempt func(method, path string, d time.Duration)
}

// answer is what one call came back with.
type answer struct {
	Status int
	Body   []byte
	Header http.Header
	Code   string // the problem's code for an error answer
	Err    error  // a transport error or timeout of the last attempt
	Tries  int
}

// label names an answer for the tallies: "202", "409 seat_taken",
// "timeout", ...
func (a answer) label() string {
	switch {
	case a.Err != nil && errors.Is(a.Err, context.DeadlineExceeded):
		return "timeout"
	case a.Err != nil:
		return "transport error"
	case a.Code != "":
		return strconv.Itoa(a.Status) + " " + a.Code
	}
	return strconv.Itoa(a.Status)
}

// retryable reports whether an answer is worth another attempt with the
// same idempotency key: the request may not have been taken (a timeout, a
// dropped connection, a 5xx), or its first copy is still running (409
// idempotency_in_flight). A 502 from confirm is the gateway's failure,
// which the server reports after voiding: retrying it is what a shop does.
func (a answer) retryable() bool {
	if a.Err != nil {
		return true
	}
	return a.Status >= 500 || a.Status == http.StatusTooManyRequests ||
		(a.Status == http.StatusConflict && a.Code == boxoffice.EIDEMINFLIGHT)
}

// call sends a request, retrying a retryable answer with the same body and
// key (that is the point of the key) after Retry-After or a short backoff.
func (c *client) call(ctx context.Context, method, path, token string, body any, key string) answer {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	var a answer
	for try := 0; ; try++ {
		a = c.once(ctx, method, path, token, raw, key)
		a.Tries = try + 1
		if !a.retryable() || try >= c.retries || ctx.Err() != nil {
			return a
		}
		wait := time.Duration(100<<try) * time.Millisecond
		if s, err := strconv.Atoi(a.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		// Jitter, so that a crowd told "retry in 1 s" does not come back
		// in one wave.
		wait = min(wait, 2*time.Second)
		wait = wait/2 + time.Duration(rand.Int64N(int64(wait)))
		select {
		case <-ctx.Done():
			return a
		case <-time.After(wait):
		}
	}
}

// once is one attempt, bounded by the client's timeout.
func (c *client) once(ctx context.Context, method, path, token string, body []byte, key string) answer {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return answer{Err: err, Header: http.Header{}}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{Err: err, Header: http.Header{}}
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return answer{Err: err, Header: resp.Header}
	}
	if c.attempt != nil {
		c.attempt(method, path, time.Since(start))
	}
	a := answer{Status: resp.StatusCode, Body: b, Header: resp.Header}
	if resp.StatusCode >= 400 {
		var p struct {
			Code string `json:"code"`
		}
		if json.Unmarshal(b, &p) == nil {
			a.Code = p.Code
		}
	}
	return a
}

// ticketJSON is the queue's answer: the 202 of a reserve, GET
// /queue/{id}, and each event of the live stream.
type ticketJSON struct {
	RequestID string   `json:"request_id"`
	Status    string   `json:"status"`
	Position  int64    `json:"queue_position"`
	Ahead     int64    `json:"ahead"`
	Wait      *float64 `json:"estimated_wait_seconds"`
	Reason    string   `json:"reason"`
	BookingID string   `json:"booking_id"`
	EventsURL string   `json:"events_url"`
}

func (t ticketJSON) final() bool { return t.Status == "held" || t.Status == "rejected" }

// streamURL is the live stream of a request, with the token in the query
// as an EventSource sends it (it cannot set headers).
func streamURL(base, eventsURL, token string) string {
	return base + eventsURL + "?access_token=" + url.QueryEscape(token)
}

// scanSSE reads a Server-Sent Events stream and calls fn with the data of
// each event until fn returns false or the stream ends.
func scanSSE(r io.Reader, fn func(data []byte) bool) error {
	sc := bufio.NewScanner(r)
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):]...)
		case line == "" && len(data) > 0:
			if !fn(data) {
				return nil
			}
			data = data[:0]
		}
	}
	return sc.Err()
}
