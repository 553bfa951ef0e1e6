package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/auth"
)

// startProc starts the test binary as boxoffice with args and waits for a
// line of its stdout matching ready; it returns the process and the
// match's first group.
func startProc(t *testing.T, env []string, ready *regexp.Regexp, args ...string) (*exec.Cmd, string, chan error) {
	t.Helper()
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
	done := make(chan error, 1)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := ready.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[len(m)-1]:
				default:
				}
			}
		}
	}()
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case v := <-found:
		return cmd, v, done
	case err := <-done:
		t.Fatalf("%s exited at start: %v", args[0], err)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not start", args[0])
	}
	return nil, "", nil
}

// TestKafkaWorkersKilledMidBatch runs the production queue across
// processes: a Kafka broker (kafka-fake), an API process that only takes
// requests, and booking worker processes. The first worker is killed with
// SIGKILL mid-drain; two more join (a rebalance) and finish. Every 202
// reaches its outcome, none twice, no seat held twice.
func TestKafkaWorkersKilledMidBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	pgURL, redisURL, db := productionEnv(t)
	_ = db
	_, seeds, _ := startProc(t, nil, regexp.MustCompile(`kafka-fake listening on (\S+)`), "kafka-fake", "--addr", "127.0.0.1:0", "--partitions", "6")
	secret := strings.Repeat("k", 40)
	env := []string{"BOXOFFICE_AUTH_SECRET=" + secret}
	args := []string{"--postgres", pgURL, "--redis", redisURL, "--kafka", seeds, "--log-level", "warn",
		"--kafka-session-timeout", "3s"}
	api := startServerEnv(t, t.TempDir(), env, append(args, "--workers", "0")...)
	a, _ := auth.New([]byte(secret), nil)
	q := &queueClient{t: t, tokens: map[string]string{}, issue: func(u string) string { tok, _ := a.Issue(u, "", time.Hour); return tok }}
	admin, _ := a.Issue("organiser", "admin", time.Hour)
	const rows = 10
	ev := createQueuedEvent(t, api, admin, rows)
	reqs := flood(t, api, q, ev, 900, rows*20)

	workerReady := regexp.MustCompile(`boxoffice (worker) running`)
	w1, _, w1done := startProc(t, env, workerReady, append([]string{"worker", "--data", t.TempDir()}, args...)...)
	time.Sleep(400 * time.Millisecond) // mid-drain
	if err := w1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-w1done
	startProc(t, env, workerReady, append([]string{"worker", "--data", t.TempDir()}, args...)...)
	startProc(t, env, workerReady, append([]string{"worker", "--data", t.TempDir()}, args...)...)
	audit(t, api, q, reqs, rows*20)
}
