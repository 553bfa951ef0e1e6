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

// auditURL is the database the audit reads: the one, or for a sharded
// topology a schema on the directory whose views are each table of every
// shard together (UNION ALL through postgres_fdw), so that the checks'
// queries read the deployment as one database. An event's rows are all on
// its shard and ids are unique across shards, so the union has each row
// once.
func (top *topology) auditURL(ctx context.Context) (string, error) {
	if len(top.shardURLs) == 0 {
		return top.pgURL, nil
	}
	conn, err := pgx.Connect(ctx, top.pgURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	stmts := []string{`CREATE EXTENSION IF NOT EXISTS postgres_fdw`, `DROP SCHEMA IF EXISTS audit CASCADE`, `CREATE SCHEMA audit`}
	for i, c := range top.shards {
		server, schema := fmt.Sprintf("shard%d", i+1), fmt.Sprintf("shard%d", i+1)
		stmts = append(stmts,
			`DROP SERVER IF EXISTS `+server+` CASCADE`,
			fmt.Sprintf(`CREATE SERVER %s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '%d', dbname 'boxoffice')`, server, c.Port()),
			`CREATE USER MAPPING FOR CURRENT_USER SERVER `+server+` OPTIONS (user 'postgres')`,
			`DROP SCHEMA IF EXISTS `+schema+` CASCADE`,
			`CREATE SCHEMA `+schema,
			`IMPORT FOREIGN SCHEMA public FROM SERVER `+server+` INTO `+schema)
	}
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
	}
	// Every table (a partitioned one as its parent) of the directory.
	rows, err := conn.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition`)
	if err != nil {
		return "", err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	for _, tb := range tables {
		q := "CREATE VIEW audit." + tb + " AS SELECT * FROM public." + tb
		for i := range top.shards {
			q += fmt.Sprintf(" UNION ALL SELECT * FROM shard%d.%s", i+1, tb)
		}
		if _, err := conn.Exec(ctx, q); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
	}
	u, err := url.Parse(top.pgURL)
	if err != nil {
		return "", err
	}
	qs := u.Query()
	qs.Set("search_path", "audit")
	u.RawQuery = qs.Encode()
	return u.String(), nil
}
