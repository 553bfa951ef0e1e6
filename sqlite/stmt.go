package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// Parsing a statement costs about a third of a small write transaction in
// SQLite, so the store keeps its statements prepared. The SQL stays where
// it is used: a transaction looks each statement up by its text.
//
//   - The writer's statements are prepared on its one connection, which
//     the write combiner's goroutine alone uses, on first use (connStmts).
//   - The read pool's are prepared on the pool (stmtCache). A read
//     transaction runs those it finds and hands the others to the cache,
//     which prepares them once the transaction is over: preparing needs a
//     connection of the pool, and the transaction holds one.

// maxStmts bounds a cache; the store's statements are constant strings
// but for VALUES lists that grow with the number of seats of a booking.
const maxStmts = 128

// stmtCache holds statements prepared on the read pool, by query text.
// database/sql prepares each again on every connection that runs it, once.
type stmtCache struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: make(map[string]*sql.Stmt)}
}

func (c *stmtCache) get(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[query]
}

// prepare prepares the queries not cached yet. It must not be called while
// the caller holds a transaction of the pool. A query that fails to prepare
// is left to run unprepared.
func (c *stmtCache) prepare(ctx context.Context, queries ...string) {
	for _, q := range queries {
		c.mu.Lock()
		_, have := c.stmts[q]
		full := len(c.stmts) >= maxStmts
		c.mu.Unlock()
		if have || full {
			continue
		}
		st, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if _, raced := c.stmts[q]; raced {
			st.Close()
		} else {
			c.stmts[q] = st
		}
		c.mu.Unlock()
	}
}

// stmt returns query prepared, preparing it first if need be, or nil when
// the cache is full. The caller must hold no transaction of the pool.
func (c *stmtCache) stmt(ctx context.Context, query string) *sql.Stmt {
	if st := c.get(query); st != nil {
		return st
	}
	c.prepare(ctx, query)
	return c.get(query)
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.stmts {
		st.Close()
		delete(c.stmts, q)
	}
}

// connStmts holds statements prepared on the writer's connection. Only the
// write combiner's goroutine uses it, so it needs no lock, and it prepares
// a statement on first use, inside a transaction or not: nobody else waits
// for that connection.
type connStmts struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
}

// stmt returns query prepared on the connection, or nil when it is not
// (the cache is full, or preparing failed: running it unprepared reports
// the error).
func (c *connStmts) stmt(ctx context.Context, query string) *sql.Stmt {
	if st, ok := c.stmts[query]; ok {
		return st
	}
	if len(c.stmts) >= maxStmts {
		return nil
	}
	st, err := c.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.stmts[query] = st
	return st
}

func (c *connStmts) close() {
	for q, st := range c.stmts {
		st.Close()
		delete(c.stmts, q)
	}
}

// sqlRunner runs SQL text: a read's *sql.Tx, or the writer's *sql.Conn
// inside the BEGIN of its batch.
type sqlRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// txn is a transaction that runs its statements prepared when it can.
type txn struct {
	// raw runs what is not prepared, and what should not be (scripts,
	// statements run once).
	raw sqlRunner

	// A write runs on the writer's connection; a read in sqlTx, with the
	// read pool's statements.
	writer *connStmts
	sqlTx  *sql.Tx
	reads  *stmtCache
	missed []string // read statements to prepare once the transaction is over
}

func (t *txn) stmt(ctx context.Context, query string) *sql.Stmt {
	if t.writer != nil {
		return t.writer.stmt(ctx, query)
	}
	if st := t.reads.get(query); st != nil {
		return t.sqlTx.StmtContext(ctx, st)
	}
	t.missed = append(t.missed, query)
	return nil
}

func (t *txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.raw.ExecContext(ctx, query, args...)
}

func (t *txn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.raw.QueryContext(ctx, query, args...)
}

func (t *txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.raw.QueryRowContext(ctx, query, args...)
}
