package sqlite

import (
	"context"
	"strings"
)

// multiInsert writes many rows of one table with a few multi-row INSERTs
// of fixed sizes, so that the writer prepares a handful of statements, not
// one per batch size. The rows are bound, not passed as JSON: SQLite's
// JSON functions (json_each, then ->> per column) cost more than the rows'
// B-tree inserts (BenchmarkAdmitMany). A statement's fixed cost in
// database/sql and the driver is most of a one-row INSERT's.
type multiInsert struct {
	cols  int
	sizes []int // largest first, ending with 1
	sql   map[int]string
}

// newMultiInsert is head ("INSERT INTO t (a, b)") with VALUES for rows of
// cols values, in chunks of sizes rows.
func newMultiInsert(head string, cols int, sizes ...int) *multiInsert {
	if sizes[len(sizes)-1] != 1 {
		sizes = append(sizes, 1)
	}
	row := ",(" + strings.Repeat(",?", cols)[1:] + ")"
	m := &multiInsert{cols: cols, sizes: sizes, sql: map[int]string{}}
	for _, n := range sizes {
		m.sql[n] = head + " VALUES " + strings.Repeat(row, n)[1:]
	}
	return m
}

// exec writes args, the rows' values one row after the other.
func (m *multiInsert) exec(ctx context.Context, tx *txn, args []any) error {
	for len(args) > 0 {
		rows := len(args) / m.cols
		n := 1
		for _, size := range m.sizes {
			if rows >= size {
				n = size
				break
			}
		}
		if _, err := tx.ExecContext(ctx, m.sql[n], args[:n*m.cols]...); err != nil {
			return err
		}
		args = args[n*m.cols:]
	}
	return nil
}
