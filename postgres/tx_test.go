package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A transaction of batches (BEGIN with the first, COMMIT with the last)
// commits all or nothing, whichever step fails, and leaves its connection
// idle: the pool has one connection, so a transaction left open would be
// met by the next call.
func TestPipelinedTransactionAllOrNothing(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, withParam(t, freshSchema(t), "pool_max_conns", "1"))
	if _, err := st.Pool().Exec(ctx, `CREATE TABLE pipe (k int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	insert := func(ks ...int) *pgx.Batch {
		b := &pgx.Batch{}
		for _, k := range ks {
			b.Queue(`INSERT INTO pipe VALUES ($1)`, k)
		}
		return b
	}
	// reads sends a batch that writes k and reads the table's size.
	reads := func(send func(*pgx.Batch) pgx.BatchResults, k int) (int, error) {
		b := insert(k)
		b.Queue(`SELECT count(*) FROM pipe`)
		br := send(b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return 0, err
		}
		var n int
		if err := br.QueryRow().Scan(&n); err != nil {
			return 0, err
		}
		return n, br.Close()
	}
	rows := func() []int {
		t.Helper()
		rs, err := st.Pool().Query(ctx, `SELECT k FROM pipe ORDER BY k`)
		if err != nil {
			t.Fatal(err)
		}
		ks, err := pgx.CollectRows(rs, pgx.RowTo[int])
		if err != nil {
			t.Fatal(err)
		}
		return ks
	}
	idle := func(step string) {
		t.Helper()
		c, err := st.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		if s := c.Conn().PgConn().TxStatus(); s != 'I' {
			t.Fatalf("%s: the connection went back to the pool in transaction state %q", step, s)
		}
	}
	boom := errors.New("boom")

	// Reads, then writes: both committed, the reads seeing their own write.
	committing, err := st.Pipelined(ctx, func(send func(*pgx.Batch) pgx.BatchResults) (*pgx.Batch, error) {
		n, err := reads(send, 1)
		if err == nil && n != 1 {
			err = errors.New("the reads did not see their own write")
		}
		return insert(2, 3), err
	})
	if err != nil || !committing {
		t.Fatalf("committed transaction: committing %v, err %v", committing, err)
	}
	if got := rows(); len(got) != 3 {
		t.Fatalf("after a committed transaction: %v, want [1 2 3]", got)
	}
	idle("committed")

	cases := []struct {
		name       string
		fn         func(send func(*pgx.Batch) pgx.BatchResults) (*pgx.Batch, error)
		committing bool
	}{
		{"fn fails after its reads", func(send func(*pgx.Batch) pgx.BatchResults) (*pgx.Batch, error) {
			_, err := reads(send, 10)
			return insert(11), errors.Join(err, boom)
		}, false},
		{"a read fails", func(send func(*pgx.Batch) pgx.BatchResults) (*pgx.Batch, error) {
			_, err := reads(send, 1) // a duplicate key
			return insert(12), err
		}, false},
		{"nothing to write", func(send func(*pgx.Batch) pgx.BatchResults) (*pgx.Batch, error) {
			_, err := reads(send, 13)
			return nil, err
		}, false},
		{"the writes fail", func(send func(*pgx.Batch) pgx.BatchResults) (*pgx.Batch, error) {
			_, err := reads(send, 14)
			return insert(15, 2), err // 2 is taken: the batch fails, its COMMIT is never run
		}, true},
	}
	for _, c := range cases {
		committing, err := st.Pipelined(ctx, c.fn)
		if c.name != "nothing to write" && err == nil {
			t.Errorf("%s: no error", c.name)
		}
		if committing != c.committing {
			t.Errorf("%s: committing %v, want %v", c.name, committing, c.committing)
		}
		if got := rows(); len(got) != 3 {
			t.Fatalf("%s: rows %v, want [1 2 3]: a failed or empty transaction wrote", c.name, got)
		}
		idle(c.name)
	}

	// Only writes: BEGIN travels with them.
	if committing, err := st.Pipelined(ctx, func(func(*pgx.Batch) pgx.BatchResults) (*pgx.Batch, error) {
		return insert(4, 5), nil
	}); err != nil || !committing {
		t.Fatalf("writes alone: committing %v, err %v", committing, err)
	}
	if got := rows(); len(got) != 5 {
		t.Fatalf("after writes alone: %v, want [1 2 3 4 5]", got)
	}
	idle("writes alone")
}
