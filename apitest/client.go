package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/httpapi"
)

// client is one user of the API.
type client struct {
	t     testing.TB
	base  string
	token string
	hc    *http.Client
}

func (s *Stack) client(t testing.TB, sub, role string) *client {
	return &client{t: t, base: s.URL, token: s.Token(t, sub, role), hc: sharedHTTP}
}

// scoped is a client whose token covers only these events (the events
// claim: an organiser or venue staff of those events alone).
func (s *Stack) scoped(t testing.TB, sub, role string, events ...string) *client {
	ids := make([]boxoffice.ID, len(events))
	for i, e := range events {
		ids[i] = parseID(t, e)
	}
	return &client{t: t, base: s.URL, token: s.Token(t, sub, role, ids...), hc: sharedHTTP}
}

func (s *Stack) anonymous(t testing.TB) *client {
	return &client{t: t, base: s.URL, hc: sharedHTTP}
}

var sharedHTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

// response is a decoded answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %d response %q: %v", r.Status, r.Body, err)
	}
}

func (r response) problem(t testing.TB) httpapi.Problem {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d with Content-Type %q, want application/problem+json; body %s", r.Status, ct, r.Body)
	}
	var p httpapi.Problem
	r.decode(t, &p)
	if p.Status != r.Status || p.Type == "" || p.Title == "" || p.Code == "" {
		t.Fatalf("incomplete problem %+v for status %d", p, r.Status)
	}
	return p
}

// do sends a request; body may be nil, a string (sent verbatim) or a value
// (sent as JSON). Extra headers come in pairs.
func (c *client) do(method, path string, body any, headers ...string) response {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

type reserved struct {
	BookingID  string    `json:"booking_id"`
	HeldUntil  time.Time `json:"held_until"`
	PaymentURL string    `json:"payment_url"`
}

func (c *client) reserve(eventID string, key string, seats ...string) response {
	c.t.Helper()
	return c.do("POST", "/bookings/reserve", map[string]any{"event_id": eventID, "seat_ids": seats, "idempotency_key": key})
}

// mustReserve reserves and fails the test unless it got 201.
func (c *client) mustReserve(eventID string, seats ...string) reserved {
	c.t.Helper()
	r := c.reserve(eventID, fmt.Sprintf("k-%d", keySeq.Add(1)), seats...)
	if r.Status != http.StatusCreated {
		c.t.Fatalf("reserve %v: %d %s", seats, r.Status, r.Body)
	}
	var out reserved
	r.decode(c.t, &out)
	return out
}

func (c *client) confirm(bookingID, token, key string) response {
	c.t.Helper()
	return c.do("POST", "/bookings/"+bookingID+"/confirm", map[string]any{"payment_token": token}, "Idempotency-Key", key)
}

type confirmation struct {
	BookingID        string `json:"booking_id"`
	ConfirmationCode string `json:"confirmation_code"`
	AmountCents      int64  `json:"amount_cents"`
	Tickets          []struct {
		TicketID string `json:"ticket_id"`
		SeatID   string `json:"seat_id"`
		Code     string `json:"code"`
		Status   string `json:"status"`
	} `json:"tickets"`
}

type bookingView struct {
	BookingID string   `json:"booking_id"`
	Status    string   `json:"status"`
	SeatIDs   []string `json:"seat_ids"`
	UserID    string   `json:"user_id"`
}

type seatMap struct {
	EventID string `json:"event_id"`
	Seats   []struct {
		SeatID    string `json:"seat_id"`
		Section   string `json:"section"`
		Row       string `json:"row"`
		Number    int    `json:"number"`
		Status    string `json:"status"`
		PriceTier string `json:"price_tier"`
	} `json:"seats"`
}

// statuses returns seat id → status from a fresh (uncached) seat map.
func (s *Stack) statuses(t testing.TB, eventID string) map[string]string {
	t.Helper()
	id := parseID(t, eventID)
	s.Seats.Invalidate(id)
	r := s.anonymous(t).do("GET", "/events/"+eventID+"/seats", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("seat map: %d %s", r.Status, r.Body)
	}
	var m seatMap
	r.decode(t, &m)
	out := make(map[string]string, len(m.Seats))
	for _, st := range m.Seats {
		out[st.SeatID] = st.Status
	}
	return out
}
