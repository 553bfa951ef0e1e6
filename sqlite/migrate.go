package sqlite

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

// migrations are the schema's history: NNNN_name.sql files applied in
// order, each once, each in its own transaction. Never edit one that has
// shipped; add the next number.
//
//go:embed migrations/*.sql
var migrations embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded migrations in version order.
func loadMigrations() ([]migration, error) {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := make(map[int]string)
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "migrations/"), ".sql")
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", f)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		b, err := migrations.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate applies the migrations the database has not recorded in
// schema_migrations. Each runs in a write transaction (BEGIN IMMEDIATE), so
// two processes opening a new file at once apply each migration once.
func (s *Store) migrate(ctx context.Context) error {
	if err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		_, err := tx.raw.ExecContext(ctx, `
			CREATE TABLE IF NOT EXISTS schema_migrations (
				version    INTEGER PRIMARY KEY,
				name       TEXT    NOT NULL,
				applied_at INTEGER NOT NULL
			) STRICT`)
		return err
	}); err != nil {
		return err
	}
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
			var applied bool
			if err := tx.QueryRowContext(ctx,
				`SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?)`, m.version,
			).Scan(&applied); err != nil {
				return err
			}
			if applied {
				return nil
			}
			// Unprepared: a migration is a script of many statements, run
			// once, never a statement to prepare.
			if _, err := tx.raw.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			_, err := tx.ExecContext(ctx,
				`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, millis(time.Now()))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
