// Package pgcluster makes throwaway PostgreSQL clusters with Debian's
// pg_createcluster, on a spare loopback port, for tests that must stop or
// restart PostgreSQL: the machine's shared server must never see that.
package pgcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a PostgreSQL cluster of a test's own, with trust
// authentication for user postgres on 127.0.0.1:Port(). Drop removes it.
type Cluster struct {
	version string
	name    string
	port    int
	logPath string
}

var tools = []string{"pg_createcluster", "pg_ctlcluster", "pg_dropcluster", "pg_lsclusters"}

// prefixRE is what New accepts as a prefix. It must not end in a digit,
// so that one caller's prefix cannot match another's clusters when stale
// ones are dropped.
var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_]*[A-Za-z_]$`)

// Available says why clusters cannot be made here (not root, a tool
// missing, no server installed), or nil; it makes none.
func Available() error {
	_, err := available()
	return err
}

func available() (version string, err error) {
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("not root: pg_createcluster needs root")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s missing: %v", tool, err)
		}
	}
	version = pgVersion()
	if version == "" {
		return "", fmt.Errorf("no PostgreSQL server under /usr/lib/postgresql")
	}
	return version, nil
}

// nameMu and used keep two New calls of one process off one name.
var (
	nameMu sync.Mutex
	used   = map[string]bool{}
)

// New creates and starts a cluster named <prefix><pid>_<n>, or says why
// it cannot. It first drops the clusters with this prefix whose process
// is gone (a test killed by a timeout never runs its clean-up), so each
// caller should use a prefix of its own, such as "boxft_".
func New(prefix string) (*Cluster, error) {
	if !prefixRE.MatchString(prefix) {
		return nil, fmt.Errorf("pgcluster: prefix %q: want letters, digits and _, not ending in a digit", prefix)
	}
	version, err := available()
	if err != nil {
		return nil, err
	}
	dropStaleClusters(version, prefix)
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	c := &Cluster{version: version, name: newName(version, prefix), port: port}
	c.logPath = fmt.Sprintf("/var/log/postgresql/postgresql-%s-%s.log", version, c.name)
	// localhost: loopback only (127.0.0.1 and ::1). pg_createcluster
	// writes -o values unquoted, which an address with dots does not survive.
	if _, err := Run(2*time.Minute, "pg_createcluster", version, c.name, "-p", strconv.Itoa(port),
		"--start-conf=manual", "-o", "listen_addresses=localhost", "-o", "max_connections=200",
		"--", "--auth=trust"); err != nil {
		c.Drop()
		return nil, err
	}
	if err := c.Start(); err != nil {
		c.Drop()
		return nil, err
	}
	return c, nil
}

// newName picks <prefix><pid>_<n>, n below a million, not taken in this
// process nor by a cluster on disk.
func newName(version, prefix string) string {
	nameMu.Lock()
	defer nameMu.Unlock()
	n := time.Now().UnixNano() % 1e6
	for {
		name := fmt.Sprintf("%s%d_%d", prefix, os.Getpid(), n)
		if _, err := os.Stat(filepath.Join("/etc/postgresql", version, name)); !used[name] && os.IsNotExist(err) {
			used[name] = true
			return name
		}
		n = (n + 1) % 1e6
	}
}

// Name is the cluster's name, as pg_lsclusters shows it.
func (c *Cluster) Name() string { return c.name }

// Version is the server's major version, such as "15".
func (c *Cluster) Version() string { return c.version }

// Port is the TCP port the server listens on, on loopback.
func (c *Cluster) Port() int { return c.port }

// LogPath is the server's log file.
func (c *Cluster) LogPath() string { return c.logPath }

func (c *Cluster) ctl(action string, extra ...string) error {
	args := append([]string{"--skip-systemctl-redirect", c.version, c.name, action}, extra...)
	_, err := Run(time.Minute, "pg_ctlcluster", args...)
	return err
}

// Start starts the server (again) and waits until it answers on TCP.
func (c *Cluster) Start() error {
	if err := c.ctl("start"); err != nil {
		return err
	}
	// pg_ctlcluster waits for the server; make sure TCP answers too.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
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

// StopImmediate stops the server the hard way: no checkpoint, every
// session cut.
func (c *Cluster) StopImmediate() error { return c.ctl("stop", "-m", "immediate") }

// URL is the connection URL of database db, as user postgres.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// CreateDB creates database name and returns its URL.
func (c *Cluster) CreateDB(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return c.URL(name), nil
}

// Drop stops and removes the cluster, and whatever pg_dropcluster leaves
// of its configuration. It never fails; a nil Cluster is fine.
func (c *Cluster) Drop() {
	if c == nil {
		return
	}
	_, _ = Run(2*time.Minute, "pg_dropcluster", "--stop", c.version, c.name)
	_ = os.RemoveAll(filepath.Join("/etc/postgresql", c.version, c.name))
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

// dropStaleClusters drops the clusters named <prefix><pid>_<n> whose
// process is gone.
func dropStaleClusters(version, prefix string) {
	staleRE := regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `(\d+)_\d+$`)
	out, err := Run(30*time.Second, "pg_lsclusters", "-h")
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
			continue // its process is still running
		}
		(&Cluster{version: version, name: name}).Drop()
	}
}

// FreePort returns a loopback port that was free a moment ago, below
// Linux's ephemeral range (32768 up) when it can: a server restarted on
// its port must not find it taken by some outgoing connection meanwhile.
func FreePort() (int, error) {
	for range 50 {
		port := 20000 + rand.IntN(12000)
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			ln.Close()
			return port, nil
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Run runs a command to its end (bounded) and returns its combined output.
func Run(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
