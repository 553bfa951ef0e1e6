package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/auth"
)

// TestMain lets the test binary play the boxoffice binary: the crash tests
// start it as a child process with BOXOFFICE_TEST_MAIN=1 and kill it.
func TestMain(m *testing.M) {
	if os.Getenv("BOXOFFICE_TEST_MAIN") == "1" {
		ctx, stop := signalContext()
		err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "boxoffice:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// server is a boxoffice serve child process.
type server struct {
	cmd      *exec.Cmd
	base     string
	customer string
	admin    string
	event    string
	metrics  string // --metrics-addr's URL
	profiles string // --pprof-addr's URL
	done     chan error
}

var (
	listenRE   = regexp.MustCompile(`listening on (http://\S+)`)
	customerRE = regexp.MustCompile(`customer token \(demo-customer, 7 days\): (\S+)`)
	adminRE    = regexp.MustCompile(`admin token +\(demo-admin, 7 days\): +(\S+)`)
	eventRE    = regexp.MustCompile(`demo event (\d+):`)
	metricsRE  = regexp.MustCompile(`metrics at (http://\S+)`)
	profilesRE = regexp.MustCompile(`profiles at (http://\S+)`)
)

func startServer(t *testing.T, dataDir string, extra ...string) *server {
	t.Helper()
	return startServerEnv(t, dataDir, []string{"BOXOFFICE_AUTH_SECRET="}, extra...)
}

func startServerEnv(t *testing.T, dataDir string, env []string, extra ...string) *server {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dataDir, "--log-level", "warn"}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "BOXOFFICE_TEST_MAIN=1"), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan error, 1)}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var once sync.Once
		for sc.Scan() {
			line := sc.Text()
			if m := listenRE.FindStringSubmatch(line); m != nil {
				s.base = m[1]
			}
			if m := metricsRE.FindStringSubmatch(line); m != nil {
				s.metrics = m[1]
			}
			if m := profilesRE.FindStringSubmatch(line); m != nil {
				s.profiles = m[1]
			}
			if m := customerRE.FindStringSubmatch(line); m != nil {
				s.customer = m[1]
			}
			if m := adminRE.FindStringSubmatch(line); m != nil {
				s.admin = m[1]
			}
			if m := eventRE.FindStringSubmatch(line); m != nil {
				s.event = m[1]
				once.Do(func() { close(found) })
			}
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	select {
	case <-found:
	case err := <-s.done:
		t.Fatalf("server exited at start: %v", err)
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("server did not print its address")
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return s
}

func (s *server) call(t *testing.T, method, path, token string, body any, headers ...string) (int, []byte) {
	t.Helper()
	st, b, err := s.send(context.Background(), method, path, token, body, headers...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return st, b
}

// send is call for any goroutine: it returns the transport's error
// instead of failing the test, and its request carries ctx (a trace).
func (s *server) send(ctx context.Context, method, path, token string, body any, headers ...string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, nil
}

// TestKillNineLosesNoConfirmedBooking confirms bookings, kills the server
// with SIGKILL, starts it again on the same data and finds every one.
func TestKillNineLosesNoConfirmedBooking(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	s := startServer(t, dir)
	a, err := authenticator("", dir, auth.Options{}, nil) // the secret the server keeps in --data
	if err != nil {
		t.Fatal(err)
	}
	type booked struct{ id, code, token string }
	var confirmed []booked
	for i := 1; i <= 20; i++ {
		tok, _ := a.Issue(fmt.Sprintf("fan-%d", i), "", time.Hour)
		st, b := s.call(t, "POST", "/bookings/reserve", tok,
			map[string]any{"event_id": s.event, "seat_ids": []string{fmt.Sprintf("Floor-B-%d", i)}, "idempotency_key": fmt.Sprintf("r%d", i)})
		if st != 201 {
			t.Fatalf("reserve: %d %s", st, b)
		}
		var r struct {
			BookingID string `json:"booking_id"`
		}
		_ = json.Unmarshal(b, &r)
		st, b = s.call(t, "POST", "/bookings/"+r.BookingID+"/confirm", tok, map[string]any{"payment_token": "tok_visa"}, "Idempotency-Key", fmt.Sprintf("c%d", i))
		if st != 200 {
			t.Fatalf("confirm: %d %s", st, b)
		}
		var c struct {
			Code string `json:"confirmation_code"`
		}
		_ = json.Unmarshal(b, &c)
		confirmed = append(confirmed, booked{r.BookingID, c.Code, tok})
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.done

	s2 := startServer(t, dir)
	if s2.event != s.event {
		t.Errorf("after restart the demo event is %s, was %s (created twice?)", s2.event, s.event)
	}
	if s2.customer == "" {
		t.Fatal("no customer token after restart")
	}
	for _, c := range confirmed {
		st, b := s2.call(t, "GET", "/bookings/"+c.id, c.token, nil) // an old token: the secret persisted
		if st != 200 {
			t.Fatalf("booking %s after kill -9: %d %s", c.id, st, b)
		}
		var v struct {
			Status string `json:"status"`
			Code   string `json:"confirmation_code"`
		}
		_ = json.Unmarshal(b, &v)
		if v.Status != "confirmed" || v.Code != c.code {
			t.Errorf("booking %s after kill -9: %+v, want confirmed %s", c.id, v, c.code)
		}
	}
	// A retry of a confirmed request after the crash replays, not re-books.
	st, b := s2.call(t, "POST", "/bookings/reserve", confirmed[0].token,
		map[string]any{"event_id": s.event, "seat_ids": []string{"Floor-B-1"}, "idempotency_key": "r1"})
	if st != 201 || !strings.Contains(string(b), confirmed[0].id) {
		t.Errorf("retry after restart: %d %s, want the first booking %s", st, b, confirmed[0].id)
	}
	st, b = s2.call(t, "GET", "/events/"+s.event+"/availability", "", nil)
	if st != 200 || !strings.Contains(string(b), `"sold":20`) {
		t.Errorf("availability after restart: %d %s", st, b)
	}
}

// TestSIGTERMDrainsAndExitsCleanly stops the server with SIGTERM while a
// slow payment is in flight: the payment finishes, the process exits 0.
func TestSIGTERMDrainsAndExitsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	s := startServer(t, t.TempDir(), "--slow-payment", "1s")
	st, b := s.call(t, "POST", "/bookings/reserve", s.customer,
		map[string]any{"event_id": s.event, "seat_ids": []string{"Floor-A-1"}, "idempotency_key": "r"})
	if st != 201 {
		t.Fatalf("reserve: %d %s", st, b)
	}
	var r struct {
		BookingID string `json:"booking_id"`
	}
	_ = json.Unmarshal(b, &r)
	// SIGTERM goes once the confirm is on the wire, and a moment more: a
	// fixed pause alone, on a loaded machine, could signal before the
	// connection is made, and the closed listener would refuse it.
	wrote := make(chan struct{})
	trace := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) },
	})
	result := make(chan int, 1)
	go func() {
		st, _, err := s.send(trace, "POST", "/bookings/"+r.BookingID+"/confirm", s.customer, map[string]any{"payment_token": "tok_slow"}, "Idempotency-Key", "c")
		if err != nil {
			t.Errorf("confirm: %v", err)
		}
		result <- st
	}()
	select {
	case <-wrote:
	case st := <-result:
		t.Fatalf("the confirm ended before it was sent: %d", st)
	}
	time.Sleep(200 * time.Millisecond) // let the confirm reach the gateway (it takes 1 s there)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if st := <-result; st != 200 {
		t.Errorf("in-flight confirm during shutdown: %d, want 200", st)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}

func TestHelpPrintsFlagsWithDefaultsAndEnv(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"serve", "--help"}, func(string) string { return "" }, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "help") {
		t.Fatalf("serve --help: %v", err)
	}
	for _, want := range []string{"--addr", "127.0.0.1:8080", "BOXOFFICE_ADDR", "--data", "--postgres", "--redis", "--kafka", "--hold", "10m0s", "BOXOFFICE_HOLD", "BOXOFFICE_AUTH_SECRET"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestEnvironmentFillsFlags(t *testing.T) {
	var c config
	fs := newServeFlagSet(&c)
	env := map[string]string{"BOXOFFICE_HOLD": "90s", "BOXOFFICE_ADDR": "127.0.0.1:9999"}
	if err := parseFlags(fs, []string{"--addr", "127.0.0.1:7777"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.Hold != 90*time.Second || c.Addr != "127.0.0.1:7777" {
		t.Errorf("hold=%s addr=%s: want the env hold and the flag addr", c.Hold, c.Addr)
	}
	env["BOXOFFICE_HOLD"] = "soon"
	if err := parseFlags(newServeFlagSet(&c), nil, func(k string) string { return env[k] }); err == nil {
		t.Error("a bad BOXOFFICE_HOLD was accepted")
	}
}

func TestTokenCommand(t *testing.T) {
	var out, errb bytes.Buffer
	env := map[string]string{"BOXOFFICE_AUTH_SECRET": strings.Repeat("s", 32)}
	if err := run(context.Background(), []string{"token", "--sub", "u1", "--role", "admin"}, func(k string) string { return env[k] }, &out, &errb); err != nil {
		t.Fatal(err, errb.String())
	}
	a, err := authenticator(env["BOXOFFICE_AUTH_SECRET"], "", auth.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := a.Verify(strings.TrimSpace(out.String()))
	if err != nil || u.ID != "u1" || !u.IsAdmin() {
		t.Fatalf("token verifies as %+v, %v", u, err)
	}
	if err := run(context.Background(), []string{"token"}, func(k string) string { return env[k] }, &out, &errb); err == nil {
		t.Error("token without --sub succeeded")
	}
}

// The served binary answers /metrics with the requests it served, and
// limits one user's bursts of state-changing requests.
func TestServeMetricsAndRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	s := startServer(t, t.TempDir(), "--rate-per-user", "1", "--rate-user-burst", "3")
	codes := map[int]int{}
	for i := range 6 {
		st, _ := s.call(t, "POST", "/bookings/reserve", s.customer,
			map[string]any{"event_id": s.event, "seat_ids": []string{fmt.Sprintf("Floor-B-%d", i+1)}, "idempotency_key": fmt.Sprint("m", i)})
		codes[st]++
	}
	if codes[201] < 3 || codes[429] < 2 {
		t.Errorf("six quick reserves at 1/s with a burst of 3: %v, want the burst through and the rest 429", codes)
	}
	// On the API's address the metrics are an organiser's to read.
	for who, tok := range map[string]string{"anyone": "", "a customer": s.customer} {
		if st, _ := s.call(t, "GET", "/metrics", tok, nil); st != http.StatusUnauthorized {
			t.Errorf("GET /metrics by %s: %d, want 401", who, st)
		}
	}
	st, body := s.call(t, "GET", "/metrics", s.admin, nil)
	if st != 200 || !strings.Contains(string(body), `boxoffice_http_requests_total{method="POST",route="/bookings/reserve",status="429"}`) {
		t.Errorf("GET /metrics: %d, without the refused reserves:\n%.2000s", st, body)
	}
}

// With --metrics-addr the metrics are served there, to anyone who can
// reach it, and not on the API's address.
func TestServeMetricsOnTheirOwnAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	s := startServer(t, t.TempDir(), "--metrics-addr", "127.0.0.1:0")
	if s.metrics == "" {
		t.Fatal("no metrics address printed")
	}
	resp, err := http.Get(s.metrics)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "boxoffice_http_requests_total") && !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("GET %s: %d\n%.500s", s.metrics, resp.StatusCode, body)
	}
	if st, _ := s.call(t, "GET", "/metrics", s.admin, nil); st != http.StatusNotFound {
		t.Errorf("GET /metrics on the API's address: %d, want 404", st)
	}
}

// With --pprof-addr Go's profiles are served there, and never on the
// API's address.
func TestServeProfilesOnTheirOwnAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	s := startServer(t, t.TempDir(), "--pprof-addr", "127.0.0.1:0")
	if s.profiles == "" {
		t.Fatal("no profiles address printed")
	}
	for path, want := range map[string]string{"": "goroutine", "goroutine?debug=1": "goroutine profile", "heap?debug=1": "heap profile"} {
		resp, err := http.Get(s.profiles + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s%s: %d\n%.500s", s.profiles, path, resp.StatusCode, body)
		}
	}
	if st, _ := s.call(t, "GET", "/debug/pprof/", s.admin, nil); st != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ on the API's address: %d, want 404", st)
	}
}
