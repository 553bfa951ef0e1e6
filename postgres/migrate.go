package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boxoffice/boxoffice"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered file of migrations/: NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, f := range files {
		base := strings.TrimSuffix(path.Base(f), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", f)
		}
		b, err := migrationFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migration version %d used twice", ms[i].version)
		}
	}
	return ms, nil
}

// Migrate applies the embedded migrations that the database (the first
// schema of the connection's search_path) has not seen yet, each in its own
// transaction, recording each in schema_migrations. It holds a session
// advisory lock keyed by the schema while it works, so several processes
// starting at once apply each migration exactly once; the ones that wait
// find nothing left to do.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return migrateTo(ctx, pool, 1<<30)
}

// migrateTo is Migrate up to version last (the upgrade tests stop short).
func migrateTo(ctx context.Context, pool *pgxpool.Pool, last int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return boxoffice.Unavailable("database", err)
	}
	defer conn.Release()

	const lock = `SELECT pg_advisory_lock(hashtextextended('boxoffice.migrate.' || coalesce(current_schema(), ''), 0))`
	const unlock = `SELECT pg_advisory_unlock(hashtextextended('boxoffice.migrate.' || coalesce(current_schema(), ''), 0))`
	if _, err := conn.Exec(ctx, lock); err != nil {
		return translate(err)
	}
	defer func() {
		// Unlock even when ctx is done; if that fails too, closing the
		// connection is what ends the session and so frees the lock.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, unlock); err != nil {
			conn.Conn().Close(uctx)
		}
	}()

	if _, err := conn.Exec(ctx, `
		CREATE TABLE IF NOT EXISTS schema_migrations (
		    version    integer     PRIMARY KEY,
		    name       text        NOT NULL,
		    applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
		return translate(err)
	}
	rows, err := conn.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return translate(err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return translate(err)
	}
	for _, m := range ms {
		if slices.Contains(applied, int32(m.version)) || m.version > last {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, translate(err))
		}
	}
	return nil
}
