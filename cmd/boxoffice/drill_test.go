package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noEnv keeps the machine's BOXOFFICE_* variables out of a test.
func noEnv(string) string { return "" }

// TestDrillEmbedded runs a tiny drill end to end on the embedded default,
// in this process: a queued event, a crowd through the pre-queue and the
// opening, polls, streams, payments, seat-map readers, then the audit of
// the SQLite file and the queue state. It asserts the verdict only: no
// figure of speed.
func TestDrillEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a load drill")
	}
	dir := t.TempDir()
	svg, md := filepath.Join(dir, "drill.svg"), filepath.Join(dir, "drill.md")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"drill",
		"--users", "2000", "--seats", "2000", "--section-size", "250",
		"--opens-in", "2s", "--burst", "2s", "--tail", "3s", "--duration", "90s", "--settle", "90s",
		"--think-min", "100ms", "--think-max", "500ms", "--conns", "64", "--readers", "1", "--sse", "20",
		"--ceiling", "200ms", "--data", filepath.Join(dir, "data"), "--svg", svg, "--out", md,
	}, noEnv, &stdout, &stderr)
	if err != nil {
		t.Fatalf("drill: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	report := stdout.String()
	for _, want := range []string{
		"## Verdict: PASS",
		"| seats with two valid tickets (oversold) | 0 | 0 |",
		"| seats claimed by two bookings at once | 0 | 0 |",
		"| requests the queue counts as not served (admitted + waiting - served) | 0 | 0 |",
		"| paid bookings (confirm 200) not confirmed in the store | 0 | 0 |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if !strings.Contains(report, "(lost), of ") || strings.Contains(report, "(lost), of 0 checked") {
		t.Errorf("no request was checked for loss:\n%s", report)
	}
	if b, err := os.ReadFile(md); err != nil || string(b) != report {
		t.Errorf("--out holds another report (%v)", err)
	}
	f, err := os.Open(svg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the chart is not XML: %v", err)
		}
	}
}

// TestDrillRefusesRemoteTargets: a load generator only points at this
// machine.
func TestDrillRefusesRemoteTargets(t *testing.T) {
	for _, url := range []string{"http://10.1.2.3:8080", "http://example.com", "https://boxoffice.example:443"} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"drill", "--url", url, "--data", t.TempDir()}, noEnv, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("--url %s: %v, want a refusal naming loopback", url, err)
		}
	}
}

// TestDrillFlags: bad sizes are refused before anything starts.
func TestDrillFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--users", "0"},
		{"--seats", "300000"},
		{"--pre-share", "0.8", "--tail-share", "0.5"},
		{"--tail", "5m", "--duration", "1m"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), append([]string{"drill"}, args...), noEnv, &stdout, &stderr); err == nil {
			t.Errorf("drill %v accepted", args)
		}
	}
}
