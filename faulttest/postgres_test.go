package faulttest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCluster is a PostgreSQL cluster of the test's own (Debian's
// pg_createcluster), on a spare loopback port, dropped at the end. Only
// with one of its own can the test stop PostgreSQL.
type pgCluster struct {
	version string
	name    string
	port    int
	logPath string
}

// clusterPrefix names the clusters this test makes: boxft_<pid>_<n>, so a
// later run can drop those whose test process died without its clean-up.
const clusterPrefix = "boxft_"

// newCluster creates and starts a cluster, or says why it cannot.
func newCluster() (*pgCluster, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("not root: pg_createcluster needs root")
	}
	for _, tool := range []string{"pg_createcluster", "pg_ctlcluster", "pg_dropcluster", "pg_lsclusters"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s missing: %v", tool, err)
		}
	}
	version := pgVersion()
	if version == "" {
		return nil, fmt.Errorf("no PostgreSQL server under /usr/lib/postgresql")
	}
	dropStaleClusters(version)
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &pgCluster{version: version, name: fmt.Sprintf("%s%d_%d", clusterPrefix, os.Getpid(), time.Now().UnixNano()%1e6), port: port}
	c.logPath = fmt.Sprintf("/var/log/postgresql/postgresql-%s-%s.log", version, c.name)
	// localhost: loopback only (127.0.0.1 and ::1). pg_createcluster
	// writes -o values unquoted, which an address with dots does not survive.
	if _, err := run(2*time.Minute, "pg_createcluster", version, c.name, "-p", strconv.Itoa(port),
		"--start-conf=manual", "-o", "listen_addresses=localhost", "-o", "max_connections=200",
		"--", "--auth=trust"); err != nil {
		c.drop()
		return nil, err
	}
	if err := c.start(); err != nil {
		c.drop()
		return nil, err
	}
	return c, nil
}

func (c *pgCluster) ctl(action string, extra ...string) error {
	args := append([]string{"--skip-systemctl-redirect", c.version, c.name, action}, extra...)
	_, err := run(time.Minute, "pg_ctlcluster", args...)
	return err
}

func (c *pgCluster) start() error {
	if err := c.ctl("start"); err != nil {
		return err
	}
	// pg_ctlcluster waits for the server; make sure TCP answers too.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.url("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster %s does not answer: %v", c.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopImmediate is the fault: no checkpoint, every session cut.
func (c *pgCluster) stopImmediate() error { return c.ctl("stop", "-m", "immediate") }

func (c *pgCluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// createDB makes the database the service uses.
func (c *pgCluster) createDB(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return c.url(name), nil
}

// drop stops and removes the cluster, and whatever pg_dropcluster leaves
// of its configuration.
func (c *pgCluster) drop() {
	_, _ = run(2*time.Minute, "pg_dropcluster", "--stop", c.version, c.name)
	_ = os.RemoveAll(filepath.Join("/etc/postgresql", c.version, c.name))
}

func (c *pgCluster) copyLog(to string) {
	if b, err := os.ReadFile(c.logPath); err == nil {
		_ = os.WriteFile(to, b, 0o644)
	}
}

// pgVersion is the newest server version installed, "15" preferred.
func pgVersion() string {
	if _, err := os.Stat("/usr/lib/postgresql/15/bin/postgres"); err == nil {
		return "15"
	}
	entries, _ := os.ReadDir("/usr/lib/postgresql")
	var vs []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join("/usr/lib/postgresql", e.Name(), "bin", "postgres")); err == nil {
			vs = append(vs, e.Name())
		}
	}
	sort.Slice(vs, func(i, j int) bool { a, _ := strconv.Atoi(vs[i]); b, _ := strconv.Atoi(vs[j]); return a < b })
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

var staleRE = regexp.MustCompile(`^` + clusterPrefix + `(\d+)_\d+$`)

// dropStaleClusters drops clusters of earlier runs of this test whose
// process is gone (a run killed by a timeout never ran its clean-up).
func dropStaleClusters(version string) {
	out, err := run(30*time.Second, "pg_lsclusters", "-h")
	if err != nil {
		return
	}
	names := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == version {
			names[f[1]] = true
		}
	}
	if entries, err := os.ReadDir(filepath.Join("/etc/postgresql", version)); err == nil {
		for _, e := range entries {
			names[e.Name()] = true
		}
	}
	for name := range names {
		m := staleRE.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if _, err := os.Stat("/proc/" + m[1]); err == nil {
			continue // its test is still running
		}
		(&pgCluster{version: version, name: name}).drop()
	}
}

// machineSchema gives the test a schema of its own on the machine's
// server, for when it cannot make a cluster: no PostgreSQL faults then.
func machineSchema(ctx context.Context) (serviceURL string, drop func(), err error) {
	base := os.Getenv("BOXOFFICE_TEST_POSTGRES")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(context.Background())
	schema := fmt.Sprintf("fault_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	}, nil
}
