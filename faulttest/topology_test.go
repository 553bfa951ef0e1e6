package faulttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/internal/pgcluster"
)

// Settings of every boxoffice process: a short hold and a short Kafka
// session, so that a SIGSTOP of a dozen seconds outlasts both.
const (
	holdTTL        = 8 * time.Second
	kafkaSession   = 3 * time.Second
	seatmapTTL     = 3 * time.Second
	reconcileEvery = 2 * time.Second
	authSecret     = "faulttest-secret-faulttest-secret-0123456789"
)

// topology is the production shape as separate processes.
type topology struct {
	t       *testing.T
	bin     string
	logDir  string
	redis   *proc
	redisAt string
	pg      *pgcluster.Cluster // nil: the machine's server, no PostgreSQL faults
	pgNote  string             // why there is no cluster of our own
	pgURL   string
	// shards are the other PostgreSQL shards (sharded by event, the
	// directory at pgURL), each on a cluster of its own; none by default.
	shards    []*pgcluster.Cluster
	shardURLs []string
	kafka     *proc
	seeds     string
	apis      []*proc
	apiURLs   []string
	workers   []*proc
	relay     *proc

	mu      sync.Mutex
	pgDown  bool
	redisUp bool
}

// skipOrFail skips the test, or fails it when CI=true: CI must run it.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and "+format, args...)
	}
	t.Skipf(format, args...)
}

// buildBinary builds cmd/boxoffice (a normal build, not -race) into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		skipOrFail(t, "no go tool to build the binary: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "boxoffice")
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/boxoffice")
	cmd.Dir = root
	// The test binary may run under -race; the processes under test are
	// a normal build, as deployed.
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/boxoffice: %v\n%s", err, out)
	}
	t.Logf("built %s in %s", bin, time.Since(start).Round(time.Millisecond))
	return bin
}

// startTopology starts Redis, PostgreSQL (a cluster of its own if it can),
// kafka-fake, two API processes, two workers and a relay. With shards > 1
// the events are spread over that many PostgreSQL databases, each on a
// cluster of its own (the first, the directory, is the one the PostgreSQL
// faults stop). Every process and the clusters are cleaned up when the
// test ends, however it ends.
func startTopology(t *testing.T, logDir string, shards int) *topology {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		skipOrFail(t, "redis-server missing: %v", err)
	}
	top := &topology{t: t, logDir: logDir}
	top.bin = buildBinary(t, t.TempDir())

	// Redis: its own, no persistence, so a restart is empty.
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	top.redisAt = fmt.Sprintf("127.0.0.1:%d", port)
	top.redis = &proc{name: "redis", bin: "redis-server", logPath: filepath.Join(logDir, "redis.log"),
		args: []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--daemonize", "no", "--protected-mode", "yes", "--dir", t.TempDir()},
		check: redisPing(top.redisAt)}
	t.Cleanup(top.redis.kill)
	if err := top.redis.start(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	top.redisUp = true

	// PostgreSQL: a cluster of our own, or a schema on the machine's
	// (BOXOFFICE_FAULT_NO_CLUSTER=1 asks for the latter).
	c, err := (*pgcluster.Cluster)(nil), fmt.Errorf("BOXOFFICE_FAULT_NO_CLUSTER=1")
	if os.Getenv("BOXOFFICE_FAULT_NO_CLUSTER") != "1" {
		c, err = pgcluster.New(clusterPrefix)
	}
	if err == nil {
		top.pg = c
		t.Cleanup(func() {
			copyClusterLog(c, filepath.Join(logDir, "postgresql.log"))
			c.Drop()
		})
		if top.pgURL, err = c.CreateDB("boxoffice"); err != nil {
			t.Fatalf("create database: %v", err)
		}
	} else {
		top.pgNote = err.Error()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		u, drop, err2 := machineSchema(ctx)
		cancel()
		if err2 != nil {
			skipOrFail(t, "no PostgreSQL cluster of its own (%v) and the machine's server is unreachable: %v", err, err2)
		}
		t.Cleanup(drop)
		top.pgURL = u
	}

	for i := 1; i < shards; i++ {
		if top.pg == nil {
			skipOrFail(t, "no PostgreSQL cluster of its own (%s): the sharded shape needs clusters", top.pgNote)
		}
		c, err := pgcluster.New(clusterPrefix)
		if err != nil {
			skipOrFail(t, "a cluster for shard %d: %v", i, err)
		}
		t.Cleanup(func() {
			copyClusterLog(c, filepath.Join(logDir, fmt.Sprintf("postgresql-shard%d.log", i)))
			c.Drop()
		})
		u, err := c.CreateDB("boxoffice")
		if err != nil {
			t.Fatalf("create database of shard %d: %v", i, err)
		}
		top.shards, top.shardURLs = append(top.shards, c), append(top.shardURLs, u)
	}

	env := []string{"BOXOFFICE_AUTH_SECRET=" + authSecret}
	top.kafka = &proc{name: "kafka-fake", bin: top.bin, env: env, logPath: filepath.Join(logDir, "kafka-fake.log"),
		args: []string{"kafka-fake", "--addr", "127.0.0.1:0"}, ready: regexp.MustCompile(`kafka-fake listening on (\S+)`)}
	t.Cleanup(top.kafka.kill)
	if err := top.kafka.start(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	top.seeds = top.kafka.match

	for _, u := range append([]string{top.pgURL}, top.shardURLs...) {
		if out, err := run(2*time.Minute, top.bin, "migrate", "--postgres", u); err != nil {
			t.Fatalf("migrate: %v\n%s", err, out)
		}
	}

	common := []string{"--postgres", top.pgURL, "--redis", "redis://" + top.redisAt + "/0", "--kafka", top.seeds,
		"--hold", holdTTL.String(), "--kafka-session-timeout", kafkaSession.String(), "--log-level", "info"}
	if len(top.shardURLs) > 0 {
		common = append(common, "--postgres-shards", strings.Join(top.shardURLs, " "))
	}
	mk := func(name string, args []string, ready *regexp.Regexp) *proc {
		p := &proc{name: name, bin: top.bin, env: env, logPath: filepath.Join(logDir, name+".log"), args: args, ready: ready}
		t.Cleanup(p.kill)
		return p
	}
	for i := range 2 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		p := mk(fmt.Sprintf("api%d", i+1), append([]string{"serve", "--addr", fmt.Sprintf("127.0.0.1:%d", port),
			"--data", t.TempDir(), "--workers", "0", "--relay=false", "--demo=false", "--seatmap-ttl", seatmapTTL.String()}, common...), nil)
		p.check = httpOK(base + "/healthz")
		top.apis = append(top.apis, p)
		top.apiURLs = append(top.apiURLs, base)
	}
	for i := range 2 {
		top.workers = append(top.workers, mk(fmt.Sprintf("worker%d", i+1),
			append([]string{"worker", "--data", t.TempDir()}, common...), regexp.MustCompile(`boxoffice worker running`)))
	}
	top.relay = mk("relay", append([]string{"relay", "--data", t.TempDir(), "--reconcile-every", reconcileEvery.String()}, common...),
		regexp.MustCompile(`boxoffice relay running`))
	for _, p := range top.all() {
		if err := p.start(90 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return top
}

// all is every boxoffice process, the APIs first.
func (top *topology) all() []*proc {
	out := append([]*proc{}, top.apis...)
	out = append(out, top.workers...)
	return append(out, top.relay)
}

// heal brings everything back: PostgreSQL and Redis up, every process
// continued or started again. It is safe to call at any time.
func (top *topology) heal() []string {
	var did []string
	top.mu.Lock()
	pgDown := top.pgDown
	top.mu.Unlock()
	if top.pg != nil && pgDown {
		if err := top.pg.Start(); err != nil {
			did = append(did, "postgres start failed: "+err.Error())
		} else {
			did = append(did, "postgres started")
			top.setPG(false)
		}
	}
	if !top.redis.running() {
		if err := top.redis.start(30 * time.Second); err != nil {
			did = append(did, "redis start failed: "+err.Error())
		} else {
			did = append(did, "redis started")
		}
	}
	for _, p := range top.all() {
		if p.running() && p.isStopped() {
			_ = p.signal(syscall.SIGCONT)
			did = append(did, p.name+" continued")
		}
		if !p.running() {
			if err := p.start(90 * time.Second); err != nil {
				did = append(did, p.name+" start failed: "+err.Error())
			} else {
				did = append(did, p.name+" started")
			}
		}
	}
	return did
}

func (top *topology) setPG(down bool) {
	top.mu.Lock()
	top.pgDown = down
	top.mu.Unlock()
}

// readyAll waits (bounded) until both APIs say the stores answer.
func (top *topology) readyAll(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, u := range top.apiURLs {
		check := httpOK(u + "/readyz")
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			err := check(ctx)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not ready after healing: %v", u, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// grepLogs returns the lines of every process log that match re, at most
// max per log, prefixed with the log's name.
func (top *topology) grepLogs(re *regexp.Regexp, max int) (lines []string, counts map[string]int) {
	counts = map[string]int{}
	files, _ := filepath.Glob(filepath.Join(top.logDir, "*.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".log")
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if re.MatchString(line) {
				counts[name]++
				if n < max {
					lines = append(lines, name+": "+truncate(line, 400))
					n++
				}
			}
		}
	}
	return lines, counts
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
