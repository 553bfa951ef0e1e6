package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/auth"
)

// A user's state-changing requests beyond the burst are refused with 429
// and a Retry-After; another user, and polling, are not affected.
func TestRateLimitPerUser(t *testing.T) {
	a, err := auth.New([]byte("rate-limit-test-secret-rate-limit-test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := New(nil, nil, a, slog.New(slog.DiscardHandler))
	s.SetLimits(Limits{PerUser: 0.5, UserBurst: 2})
	srv := httptest.NewServer(s)
	defer srv.Close()
	token := func(sub string) string { tok, _ := a.Issue(sub, "", time.Hour); return tok }
	do := func(method, path, tok string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	alice, bob := token("alice"), token("bob")
	// The route answers 404 for a bad id: what matters is that the limit
	// runs before it.
	for i := range 2 {
		if r := do("DELETE", "/waitlist/x", alice); r.StatusCode != http.StatusNotFound {
			t.Fatalf("request %d within the burst: %d", i+1, r.StatusCode)
		}
	}
	req, _ := http.NewRequest("DELETE", srv.URL+"/waitlist/x", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var p Problem
	_ = json.NewDecoder(resp.Body).Decode(&p)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || p.Code != boxoffice.ERATELIMITED {
		t.Fatalf("past the burst: %d %+v, want 429 rate_limited", resp.StatusCode, p)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 2 {
		t.Errorf("Retry-After = %q, want 1-2 s at 0.5 requests/s", resp.Header.Get("Retry-After"))
	}
	if r := do("DELETE", "/waitlist/x", bob); r.StatusCode != http.StatusNotFound {
		t.Errorf("another user: %d, want not limited", r.StatusCode)
	}
	if r := do("GET", "/waitlist/x", alice); r.StatusCode != http.StatusNotFound {
		t.Errorf("alice polling: %d, want not limited", r.StatusCode)
	}
}

func TestRateLimitPerAddressIsOffUnlessSet(t *testing.T) {
	s := New(nil, nil, nil, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(s)
	defer srv.Close()
	for range 50 {
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("no limits configured: %d", resp.StatusCode)
		}
	}
	limited := New(nil, nil, nil, slog.New(slog.DiscardHandler))
	limited.SetLimits(Limits{PerAddress: 1, AddressBurst: 3})
	lsrv := httptest.NewServer(limited)
	defer lsrv.Close()
	codes := map[int]int{}
	for range 6 {
		resp, err := http.Get(lsrv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[http.StatusOK] < 3 || codes[http.StatusTooManyRequests] < 1 {
		t.Errorf("per-address limit 1/s burst 3 over 6 quick requests: %v", codes)
	}
}
