package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// walBackstop is the writer's own automatic checkpoint threshold, in WAL
// frames (pages; SQLite's default is 1,000). The checkpointer copies the
// WAL into the database file off the writer's path; the writer checkpoints
// only when the WAL has grown this long anyway (a checkpointer that cannot
// keep up, or a WAL that never gets a quiet moment to start over), so the
// WAL stays bounded as before, at about 40 MB with 4 KiB pages.
const walBackstop = 10_000

// checkpointEvery is the least time between two background checkpoints:
// each syncs the WAL and the database file, so fewer, larger ones cost less.
const checkpointEvery = 100 * time.Millisecond

// checkpointer runs SQLite's WAL checkpoints on a connection of its own.
//
// Why: with the default automatic checkpoint, the commit that takes the
// WAL past 1,000 frames copies them into the database file and syncs both
// files, on the one writer connection, while every write queued behind it
// waits. Under a flash sale's admissions that was a stall of 2–20 ms every
// ~125 ms (the two fsyncs, measured with strace), and it went straight into
// the tail of every caller's round trip. A PASSIVE checkpoint on another
// connection never blocks the writer, which keeps appending to the WAL
// meanwhile; durability does not depend on checkpoints (a commit is in the
// WAL). The checkpointer is woken by commits and sleeps while nothing is
// written.
type checkpointer struct {
	db   *sql.DB
	kick chan struct{} // capacity 1: something was committed
	stop chan struct{}
	done chan struct{}
}

func newCheckpointer(path string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", path+"?"+fmt.Sprintf("_busy_timeout=%d", busyTimeout.Milliseconds()))
	if err != nil {
		return nil, err
	}
	oneConnection(db)
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

// committed tells the checkpointer that the WAL has grown; it never blocks.
func (c *checkpointer) committed() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		select {
		case <-c.stop:
			return
		case <-time.After(checkpointEvery):
		}
		// A failure (an I/O error, a full disk) leaves the frames in the
		// WAL, where the commits are durable anyway; the next kick tries
		// again, and the writer's backstop bounds the WAL meanwhile.
		_, _ = c.db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
	}
}

// close stops the goroutine and closes its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}
