package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSteadyEmbedded runs a tiny steady drill end to end on the embedded
// default, in this process: 20 events of 40 seats created over HTTP, 8 s
// of reads, holds, payments, releases and cancellations sampled every
// 2 s, then the audit of every event in the SQLite file. It asserts the
// verdict and that intervals were sampled: no figure of speed.
func TestSteadyEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a load drill")
	}
	dir := t.TempDir()
	md := filepath.Join(dir, "steady.md")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"steady",
		"--events", "20", "--seats", "40", "--duration", "8s", "--interval", "2s",
		"--conns", "16", "--users", "200", "--cancel-after", "1s", "--cancel-share", "0.3",
		"--ceiling", "200ms", "--data", filepath.Join(dir, "data"), "--out", md,
	}, noEnv, &stdout, &stderr)
	if err != nil {
		t.Fatalf("steady: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	report := stdout.String()
	for _, want := range []string{
		"## Verdict: PASS",
		"for each of the 20 events.",
		"| seats with two valid tickets (oversold) | 0 | 0 |",
		"| seats claimed by two bookings at once | 0 | 0 |",
		"| confirmed bookings missing tickets | 0 | 0 |",
		"## Flat over time",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if m := regexp.MustCompile(`not confirmed in the store, of ([0-9,]+) paid \| 0 \| 0 \|`).FindStringSubmatch(report); m == nil || m[1] == "0" {
		t.Errorf("no paid booking was checked:\n%s", report)
	}
	if !regexp.MustCompile(`still confirmed, of [0-9,]+ \| 0 \| 0 \|`).MatchString(report) {
		t.Errorf("cancellations not checked:\n%s", report)
	}
	// Intervals: a row each, with the heap sampled (the resident set only
	// where /proc tells it).
	rows := regexp.MustCompile(`(?m)^\| [0-9]+s \| .* \| [0-9]+ \| ([0-9]+|n/a) \|$`).FindAllString(report, -1)
	if len(rows) < 3 {
		t.Errorf("%d intervals sampled with memory, want at least 3:\n%s", len(rows), report)
	}
	if b, err := os.ReadFile(md); err != nil || string(b) != report {
		t.Errorf("--out holds another report (%v)", err)
	}
}

// TestSteadyRefusesRemoteTargets: a load generator only points at this
// machine.
func TestSteadyRefusesRemoteTargets(t *testing.T) {
	for _, url := range []string{"http://10.1.2.3:8080", "http://example.com"} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"steady", "--url", url, "--data", t.TempDir()}, noEnv, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("--url %s: %v, want a refusal naming loopback", url, err)
		}
	}
}

// TestSteadyFlags: bad sizes are refused before anything starts.
func TestSteadyFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--events", "0"},
		{"--seats", "300000"},
		{"--confirm-share", "0.9", "--release-share", "0.2"},
		{"--duration", "5s", "--interval", "5s"},
		{"--map-reads", "0"},
		{"--kafka", "127.0.0.1:9092"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), append([]string{"steady"}, args...), noEnv, &stdout, &stderr); err == nil {
			t.Errorf("steady %v accepted", args)
		}
	}
}
