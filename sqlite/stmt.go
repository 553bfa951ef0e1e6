package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// Parsing a statement costs about a third of a small write transaction in
// SQLite, so the store keeps its statements prepared: a transaction runs
// the statements it finds in its pool's cache, and those it does not find
// it runs unprepared and hands to the cache, which prepares them once the
// transaction is over. The SQL stays where it is used.

// maxStmts bounds a cache; the store's statements are constant strings
// but for VALUES lists that grow with the number of seats of a booking.
const maxStmts = 128

// stmtCache holds statements prepared on one pool, by query text.
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
// a transaction of the pool holds the writer's only connection. A query
// that fails to prepare is left to run unprepared.
func (c *stmtCache) prepare(ctx context.Context, queries []string) {
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

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.stmts {
		st.Close()
		delete(c.stmts, q)
	}
}

// txn is a transaction that runs its statements prepared when it can.
type txn struct {
	*sql.Tx
	stmts  *stmtCache
	missed []string
}

func (t *txn) stmt(ctx context.Context, query string) *sql.Stmt {
	if st := t.stmts.get(query); st != nil {
		return t.Tx.StmtContext(ctx, st)
	}
	t.missed = append(t.missed, query)
	return nil
}

func (t *txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t *txn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t *txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}
