package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/boxoffice/boxoffice"
)

// maxBatch bounds how many write requests share one transaction, so that
// one commit never waits on an unbounded amount of work.
const maxBatch = 128

// writeCombiner runs every write of the store on one goroutine, committing
// them in groups (group commit).
//
// Why: SQLite has one writer at a time, and a good part of a small write
// is its COMMIT (a WAL frame, two write syscalls, for every page it
// dirtied), while the callers queued behind the writer sit idle. So the
// combiner takes whatever requests are queued (up to maxBatch), runs them
// in one BEGIN IMMEDIATE transaction, each inside a SAVEPOINT of its own,
// and commits once: the pages the requests share are written once, and the
// queue drains as fast as it fills. There is no timer: a request that finds
// the writer idle runs at once, alone, without a savepoint.
//
// Each request keeps the semantics of a transaction of its own:
//   - it runs after the requests before it in the batch and sees their
//     writes, as if they had committed (serial order, as with one writer);
//   - when it fails, ROLLBACK TO its savepoint undoes its writes, and only
//     its own;
//   - no request is answered before the COMMIT; when the COMMIT fails,
//     or SQLite drops the whole transaction (a full disk, an I/O error),
//     every request of the batch gets that error: nothing was written.
//
// A request whose context is done before it runs is answered with the
// context's error and never runs; once it runs, it runs to the end. Its
// statements run under the combiner's own context, never the caller's: a
// cancelled statement is interrupted, and SQLite may answer an interrupt by
// rolling back the whole transaction, the other requests' writes included.
type writeCombiner struct {
	conn  *sql.Conn  // the writer connection, the goroutine's alone
	stmts *connStmts // prepared on conn

	mu     sync.Mutex
	queue  []*writeReq
	closed bool

	wake chan struct{} // capacity 1: the queue may have work
	done chan struct{} // closed when the goroutine has returned

	committed func() // called after each COMMIT (the checkpointer's kick)
}

// writeReq is one call of a write method, waiting for its answer.
type writeReq struct {
	ctx   context.Context
	fn    func(ctx context.Context, tx *txn) error
	state atomic.Int32 // reqQueued, then reqRunning or reqAbandoned
	err   error        // the answer, set before answer is closed
	panic any          // what fn panicked with, re-raised in the caller
	ready chan struct{}
}

const (
	reqQueued int32 = iota
	reqRunning
	reqAbandoned // the caller left (its ctx is done): never run it
)

// errClosed is the answer to a write after Close.
var errClosed = errors.New("sqlite: store closed")

// newWriteCombiner takes db's connection for good and starts the goroutine.
// committed, if not nil, is called after each COMMIT and must not block.
func newWriteCombiner(ctx context.Context, db *sql.DB, committed func()) (*writeCombiner, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &writeCombiner{
		conn: conn, stmts: &connStmts{conn: conn, stmts: make(map[string]*sql.Stmt)},
		wake: make(chan struct{}, 1), done: make(chan struct{}), committed: committed,
	}
	go w.loop()
	return w, nil
}

// do runs fn once, as if in a write transaction of its own, and returns
// its error (translated), or the COMMIT's. fn must run its statements with
// the ctx it is given.
func (w *writeCombiner) do(ctx context.Context, fn func(ctx context.Context, tx *txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, ready: make(chan struct{})}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return boxoffice.Unavailable("database", errClosed)
	}
	w.queue = append(w.queue, r)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // already woken
	}

	select {
	case <-r.ready:
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err() // it will never run
		}
		<-r.ready // it is running: its answer is the truth
	}
	if r.panic != nil {
		panic(r.panic)
	}
	return r.err
}

// close refuses new requests, lets the queued ones run, and returns once
// the goroutine has stopped.
func (w *writeCombiner) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
}

func (w *writeCombiner) loop() {
	defer close(w.done)
	defer w.conn.Close()
	defer w.stmts.close()
	var batch []*writeReq
	for {
		w.mu.Lock()
		n := min(len(w.queue), maxBatch)
		batch = append(batch[:0], w.queue[:n]...)
		w.queue = append(w.queue[:0], w.queue[n:]...)
		closed := w.closed
		w.mu.Unlock()

		if n > 0 {
			w.run(batch)
			clear(batch) // let the requests be collected
			continue
		}
		if closed {
			return
		}
		<-w.wake
		// Woken by the first request after a pause: let the goroutines
		// that are already runnable go first, the next requests among
		// them, so that they join this batch rather than wait for the
		// next commit. When nothing else is runnable (an idle server) this
		// returns at once.
		runtime.Gosched()
	}
}

// run runs a batch in one transaction and answers each of its requests.
func (w *writeCombiner) run(batch []*writeReq) {
	// Drop the requests whose caller left or whose context is done.
	live := batch[:0]
	for _, r := range batch {
		if !r.state.CompareAndSwap(reqQueued, reqRunning) {
			continue // abandoned: the caller has its answer
		}
		if err := r.ctx.Err(); err != nil {
			r.answer(err)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}

	// Statements run under a context of their own (see the type's doc).
	ctx := context.Background()
	tx := &txn{raw: w.conn, writer: w.stmts}
	if _, err := tx.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		answerAll(live, translate(err, "database"))
		return
	}
	rollback := func() { _, _ = tx.ExecContext(ctx, `ROLLBACK`) }
	// A lone request needs no savepoint: the transaction is its own.
	if len(live) == 1 {
		r := live[0]
		err := r.call(ctx, tx)
		if err != nil {
			rollback()
		} else if _, err = tx.ExecContext(ctx, `COMMIT`); err != nil {
			rollback() // SQLite may have kept the transaction open
		} else {
			w.afterCommit()
		}
		r.answer(translate(err, "database"))
		return
	}
	errs := make([]error, len(live))
	for i, r := range live {
		var txErr error
		if errs[i], txErr = runInSavepoint(ctx, tx, r); txErr != nil {
			// The writes of the requests before this one are lost too.
			rollback()
			answerAll(live, translate(txErr, "database"))
			return
		}
	}
	if _, err := tx.ExecContext(ctx, `COMMIT`); err != nil {
		rollback()
		answerAll(live, translate(err, "database"))
		return
	}
	w.afterCommit()
	for i, r := range live {
		r.answer(translate(errs[i], "database"))
	}
}

func (w *writeCombiner) afterCommit() {
	if w.committed != nil {
		w.committed()
	}
}

// runInSavepoint runs r inside a savepoint of tx and returns r's error,
// having undone r's writes if there is one. A non-nil second error means
// the savepoint could not be released or rolled back to: the transaction
// is lost.
func runInSavepoint(ctx context.Context, tx *txn, r *writeReq) (reqErr, txErr error) {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT req`); err != nil {
		return nil, err
	}
	if reqErr = r.call(ctx, tx); reqErr != nil {
		// ROLLBACK TO undoes the writes since the savepoint but keeps it
		// open; the RELEASE below pops it.
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO req`); err != nil {
			// There is no savepoint left: SQLite rolled the whole
			// transaction back, as it does after some errors (a full
			// disk, an I/O error). Report that cause when it is one.
			if sqliteCode(reqErr) != 0 {
				return nil, reqErr
			}
			return nil, err
		}
	}
	if _, err := tx.ExecContext(ctx, `RELEASE req`); err != nil {
		return nil, err
	}
	return reqErr, nil
}

// call runs the request's fn, turning a panic into an error for the batch
// and a panic for the caller: the combiner's goroutine serves every caller
// and must not die with one.
func (r *writeReq) call(ctx context.Context, tx *txn) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.panic = p
			err = errPanicked
		}
	}()
	return r.fn(ctx, tx)
}

var errPanicked = errors.New("sqlite: write panicked")

func (r *writeReq) answer(err error) {
	r.err = err
	close(r.ready)
}

func answerAll(batch []*writeReq, err error) {
	for _, r := range batch {
		r.answer(err)
	}
}
