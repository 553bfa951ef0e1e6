package faulttest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/internal/pgcluster"
)

// clusterPrefix names the PostgreSQL clusters this test makes (see
// internal/pgcluster): boxft_<pid>_<n>, so a later run can drop those
// whose test process died without its clean-up.
const clusterPrefix = "boxft_"

// copyClusterLog copies the cluster's server log to the test's log
// directory, if there is one to copy.
func copyClusterLog(c *pgcluster.Cluster, to string) {
	if b, err := os.ReadFile(c.LogPath()); err == nil {
		_ = os.WriteFile(to, b, 0o644)
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
