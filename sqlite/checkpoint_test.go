package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A commit far below the writer's own checkpoint threshold still reaches
// the database file: the checkpointer copies the WAL on its own
// connection, and the writer's automatic checkpoint is only the backstop.
func TestCheckpointerCopiesTheWALOffTheWriter(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "boxoffice.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	var auto int
	if err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		return tx.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto)
	}); err != nil {
		t.Fatal(err)
	}
	if auto != walBackstop {
		t.Fatalf("the writer's wal_autocheckpoint = %d, want the backstop %d", auto, walBackstop)
	}

	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	// About 250 pages: a tenth of SQLite's default threshold, a fortieth
	// of the backstop.
	if err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE filler (b BLOB)`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 250)
			INSERT INTO filler SELECT randomblob(3000) FROM n`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second) // liveness only: it takes ~100 ms
	for size() < before+250*3000 {
		if time.Now().After(deadline) {
			t.Fatalf("the database file stayed at %d bytes (%d before the write): the WAL was not checkpointed", size(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
