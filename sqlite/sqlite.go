// Package sqlite is the embedded boxoffice.Store: one SQLite file, pure Go
// (modernc.org/sqlite), no server.
//
// Concurrency: every write transaction goes through one connection (a
// *sql.DB with MaxOpenConns(1)) and starts with BEGIN IMMEDIATE, so writers
// queue in Go instead of in SQLite's busy handler, which sleeps and
// collapses throughput under contention, and a read-then-write transaction
// never fails with SQLITE_BUSY halfway. Reads go through a separate pool of
// read-only connections, which WAL mode lets run beside the writer.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Store is a boxoffice.Store in one SQLite file. It is safe for concurrent
// use.
type Store struct {
	write *sql.DB // one connection: all write transactions
	read  *sql.DB // read-only connections

	writeStmts, readStmts *stmtCache

	// Now is the clock for the timestamps the port does not pass in (the
	// capture time of a payment). Set it before first use; nil means
	// time.Now.
	Now func() time.Time
}

var _ boxoffice.Store = (*Store)(nil)

// busyTimeout bounds the wait for a lock held by another process on the
// same file (this process never contends with itself: one writer).
const busyTimeout = 5 * time.Second

// Open opens (creating it if need be) the database file at path and applies
// the migrations it has not seen yet. The path must name a file: the store
// needs WAL mode and two connection pools on one database, which an
// in-memory database cannot give; tests use a file in t.TempDir().
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite: open %q: need a plain file path", path)
	}
	// journal_mode=WAL with synchronous=NORMAL: a commit is durable across
	// a crash of the process (kill -9), which is what boxoffice promises;
	// an OS crash or power loss may lose the last transactions, never
	// corrupt the file. synchronous=FULL would add an fsync per commit.
	common := fmt.Sprintf("_busy_timeout=%d&_foreign_keys=1&_journal_mode=WAL&_synchronous=NORMAL",
		busyTimeout.Milliseconds())

	write, err := sql.Open("sqlite", path+"?"+common+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)

	s := &Store{write: write, writeStmts: newStmtCache(write)}
	if err := s.migrate(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}

	// The read pool is opened after the writer has created the file and
	// switched it to WAL (a persistent setting), so it needs no journal
	// pragma of its own.
	read, err := sql.Open("sqlite", path+"?"+fmt.Sprintf("_busy_timeout=%d&_query_only=1", busyTimeout.Milliseconds()))
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	s.read, s.readStmts = read, newStmtCache(read)
	if err := read.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return s, nil
}

// Close closes both pools.
func (s *Store) Close() error {
	var errs []error
	if s.read != nil {
		s.readStmts.close()
		errs = append(errs, s.read.Close())
	}
	s.writeStmts.close()
	errs = append(errs, s.write.Close())
	return errors.Join(errs...)
}

// Ping reports whether the database file can be read: EUNAVAILABLE if not.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	if err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		return boxoffice.Unavailable("database", err)
	}
	return nil
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// writeTx runs fn in a write transaction (BEGIN IMMEDIATE on the single
// writer connection) and commits it if fn returns nil. fn's error is
// returned as it is; driver errors are translated.
func (s *Store) writeTx(ctx context.Context, fn func(tx *txn) error) error {
	return s.transact(ctx, s.write, s.writeStmts, nil, fn)
}

// readTx runs fn in a read transaction on the read pool: one consistent
// snapshot for reads that take several queries.
func (s *Store) readTx(ctx context.Context, fn func(tx *txn) error) error {
	return s.transact(ctx, s.read, s.readStmts, &sql.TxOptions{ReadOnly: true}, fn)
}

func (s *Store) transact(ctx context.Context, db *sql.DB, stmts *stmtCache, opts *sql.TxOptions, fn func(tx *txn) error) error {
	sqlTx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return translate(err, "database")
	}
	tx := &txn{Tx: sqlTx, stmts: stmts}
	// Prepare what the transaction ran unprepared once its connection is
	// back in the pool: the writer has one connection, which this
	// transaction holds until then.
	defer func() { stmts.prepare(ctx, tx.missed) }()
	if err := fn(tx); err != nil {
		sqlTx.Rollback()
		return translate(err, "database")
	}
	if err := sqlTx.Commit(); err != nil {
		return translate(err, "database")
	}
	return nil
}

// querier is what the unexported helpers read through: a *txn or a
// *sql.DB.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
