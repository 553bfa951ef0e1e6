// Package sqlite is the embedded boxoffice.Store: one SQLite file, pure Go
// (modernc.org/sqlite), no server.
//
// Concurrency: every write goes through one goroutine on one connection (a
// *sql.DB with MaxOpenConns(1)), which commits the writes queued for it in
// groups, one BEGIN IMMEDIATE transaction and a savepoint each (see
// writeCombiner). Writers queue in Go instead of in SQLite's busy handler,
// which sleeps and collapses throughput under contention, and a
// read-then-write transaction never fails with SQLITE_BUSY halfway. Reads
// go through a separate pool of read-only connections, which WAL mode lets
// run beside the writer.
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
	write     *sql.DB        // one connection, the writer's
	writer    *writeCombiner // runs every write transaction on it
	ckpt      *checkpointer  // checkpoints the WAL off the writer's path
	read      *sql.DB        // read-only connections
	readStmts *stmtCache

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

	// temp_store=memory keeps the writer's statement journal, which the
	// savepoints of a batch fill, in memory: past 64 KiB SQLite would spill
	// it to a temporary file, a write syscall per page.
	// wal_autocheckpoint: the checkpointer (checkpoint.go) does the
	// checkpoints; the writer's own is only a backstop.
	write, err := sql.Open("sqlite", path+"?"+common+"&_pragma=temp_store(memory)"+
		fmt.Sprintf("&_pragma=wal_autocheckpoint(%d)", walBackstop))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	oneConnection(write)
	if err := migrate(ctx, write); err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}
	ckpt, err := newCheckpointer(path)
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	writer, err := newWriteCombiner(ctx, write, ckpt.committed)
	if err != nil {
		ckpt.close()
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s := &Store{write: write, writer: writer, ckpt: ckpt}

	// The read pool is opened after the writer has created the file and
	// switched it to WAL (a persistent setting), so it needs no journal
	// pragma of its own.
	read, err := sql.Open("sqlite", path+"?"+fmt.Sprintf("_busy_timeout=%d&_query_only=1", busyTimeout.Milliseconds()))
	if err != nil {
		s.Close()
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

// oneConnection makes db a pool of one connection, kept for good: the
// writer's, and the checkpointer's.
func oneConnection(db *sql.DB) {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
}

// Close lets the writes already queued finish, refuses new ones
// (EUNAVAILABLE), and closes both pools.
func (s *Store) Close() error {
	s.writer.close()
	var errs []error
	errs = append(errs, s.ckpt.close())
	if s.read != nil {
		s.readStmts.close()
		errs = append(errs, s.read.Close())
	}
	errs = append(errs, s.write.Close())
	return errors.Join(errs...)
}

// Ping reports whether the database file can be read: EUNAVAILABLE if not.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	if err := s.queryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
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

// writeTx runs fn as one write transaction on the single writer connection
// (see writeCombiner): committed if fn returns nil, as if never run if it
// returns an error. fn must run its statements with the ctx it is given,
// not the caller's. fn's error is returned as it is; driver errors are
// translated.
func (s *Store) writeTx(ctx context.Context, fn func(ctx context.Context, tx *txn) error) error {
	return s.writer.do(ctx, fn)
}

// readTx runs fn in a read transaction on the read pool: one consistent
// snapshot for reads that take several queries.
func (s *Store) readTx(ctx context.Context, fn func(ctx context.Context, tx *txn) error) error {
	sqlTx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return translate(err, "database")
	}
	tx := &txn{raw: sqlTx, sqlTx: sqlTx, reads: s.readStmts}
	err = fn(ctx, tx)
	if err != nil {
		sqlTx.Rollback()
	} else {
		err = sqlTx.Commit()
	}
	s.readStmts.prepare(ctx, tx.missed...)
	return translate(err, "database")
}

// queryRow runs one prepared statement on the read pool, outside any
// transaction, and returns its first row.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := s.readStmts.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.read.QueryRowContext(ctx, query, args...)
}

// query runs one prepared statement on the read pool, outside any
// transaction.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := s.readStmts.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.read.QueryContext(ctx, query, args...)
}

// querier is what the unexported helpers read through: a *txn or a
// *sql.DB.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
