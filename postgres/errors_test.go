package postgres_test

// translate over the errors pgx really returns when the connection, the
// server or the pool fails: produced by a real pgx client against a fake
// server that misbehaves on cue (so no PostgreSQL is needed), by a real
// pool that was closed, and by the driver's own error values.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
)

// fakeServer speaks just enough of the PostgreSQL protocol to let a pgx
// client connect, then does what misbehave says with the connection on the
// client's first message after the start-up.
type fakeServer struct {
	addr string
}

// misbehaviours of fakeServer.
const (
	closeAfterStartup = iota // close the socket: the client reads EOF
	resetAfterStartup        // close with SO_LINGER 0: the client reads ECONNRESET
	fatalAfterStartup        // FATAL 57P01 (what pg_terminate_backend sends), then close
	hangAfterStartup         // never answer
	refuseStartup            // refuse the start-up with FATAL 57P03 (the server is starting up)
)

func startFakeServer(t *testing.T, misbehave int) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveFake(c.(*net.TCPConn), misbehave, done)
		}
	}()
	return &fakeServer{addr: ln.Addr().String()}
}

func serveFake(c *net.TCPConn, misbehave int, done <-chan struct{}) {
	defer c.Close()
	be := pgproto3.NewBackend(c, c)
	for {
		msg, err := be.ReceiveStartupMessage()
		if err != nil {
			return
		}
		switch msg.(type) {
		case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
			if _, err := c.Write([]byte("N")); err != nil {
				return
			}
			continue
		}
		break
	}
	if misbehave == refuseStartup {
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "57P03", Message: "the database system is starting up"})
		_ = be.Flush()
		return
	}
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.ParameterStatus{Name: "server_version", Value: "17.0"})
	be.Send(&pgproto3.ParameterStatus{Name: "client_encoding", Value: "UTF8"})
	be.Send(&pgproto3.ParameterStatus{Name: "standard_conforming_strings", Value: "on"})
	be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if be.Flush() != nil {
		return
	}
	if _, err := be.Receive(); err != nil {
		return
	}
	switch misbehave {
	case resetAfterStartup:
		_ = c.SetLinger(0)
	case fatalAfterStartup:
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "57P01",
			Message: "terminating connection due to administrator command"})
		_ = be.Flush()
	case hangAfterStartup:
		<-done
	}
}

func (f *fakeServer) url() string {
	return "postgres://postgres@" + f.addr + "/test?sslmode=disable&connect_timeout=5"
}

// fakeQueryError connects a pgx.Conn to a fake server that misbehaves as
// asked and returns the errors of a first and of a second query.
func fakeQueryError(t *testing.T, misbehave int, timeout time.Duration) (first, second error) {
	t.Helper()
	f := startFakeServer(t, misbehave)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, f.url())
	if err != nil {
		t.Fatalf("connect to the fake server: %v", err)
	}
	defer conn.Close(context.Background())
	qctx, qcancel := context.WithTimeout(ctx, timeout)
	defer qcancel()
	var n int
	first = conn.QueryRow(qctx, `SELECT 1`).Scan(&n)
	second = conn.QueryRow(ctx, `SELECT 1`).Scan(&n)
	return first, second
}

// fakeBatchError sends a batch of two statements to a fake server that
// closes the connection, and returns the error of the second result.
func fakeBatchError(t *testing.T) error {
	t.Helper()
	f := startFakeServer(t, closeAfterStartup)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, f.url())
	if err != nil {
		t.Fatalf("connect to the fake server: %v", err)
	}
	defer conn.Close(context.Background())
	b := &pgx.Batch{}
	b.Queue(`SELECT 1`)
	b.Queue(`SELECT 2`)
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	_, _ = br.Exec()
	_, err = br.Exec()
	return err
}

func TestTranslateConnectionFailures(t *testing.T) {
	type tcase struct {
		name string
		err  error
	}
	var cases []tcase
	add := func(name string, err error) {
		if err == nil {
			t.Fatalf("%s: no error to translate", name)
		}
		cases = append(cases, tcase{name, err})
	}

	// What a pgx client reads when the server goes away under a query.
	eof, afterEOF := fakeQueryError(t, closeAfterStartup, 5*time.Second)
	if !errors.Is(eof, io.ErrUnexpectedEOF) {
		t.Logf("closed socket: %v (%T), not io.ErrUnexpectedEOF", eof, eof)
	}
	add("ServerClosedSocket", eof)
	add("QueryOnConnClosedByEarlierFailure", afterEOF)
	reset, afterReset := fakeQueryError(t, resetAfterStartup, 5*time.Second)
	add("ConnectionReset", reset)
	add("QueryAfterReset", afterReset)
	fatal, afterFatal := fakeQueryError(t, fatalAfterStartup, 5*time.Second)
	if pgCodeOf(fatal) != "57P01" {
		t.Logf("pg_terminate_backend: %v (%T), no 57P01", fatal, fatal)
	}
	add("TerminatedBackend57P01", fatal)
	add("QueryAfterTerminatedBackend", afterFatal)
	hung, _ := fakeQueryError(t, hangAfterStartup, 100*time.Millisecond)
	if !pgconn.Timeout(hung) {
		t.Logf("server that never answers: %v (%T), not pgconn.Timeout", hung, hung)
	}
	add("StatementTimeout", hung)
	add("BatchOnClosedSocket", fakeBatchError(t))

	// Connecting fails.
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	_, refused := pgx.Connect(cctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	add("ConnectRefused", refused)
	_, startingUp := pgx.Connect(cctx, startFakeServer(t, refuseStartup).url())
	add("ConnectWhileStartingUp57P03", startingUp)

	// The pool: closed, and out of connections for longer than the caller
	// waits.
	closed, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/test?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	_, closedErr := closed.Exec(context.Background(), `SELECT 1`)
	add("ClosedPool", closedErr)
	cfg, err := pgxpool.ParseConfig(startFakeServer(t, hangAfterStartup).url())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	full, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	held, err := full.Acquire(cctx)
	if err != nil {
		t.Fatalf("acquire from the fake server's pool: %v", err)
	}
	actx, acancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, acquireErr := full.Exec(actx, `SELECT 1`)
	acancel()
	held.Release()
	add("PoolAcquireTimeout", acquireErr)

	// The shapes the standard library and pgx give these, built directly.
	add("NetOpErrorECONNRESET", fmt.Errorf("read: %w", &net.OpError{Op: "read", Net: "tcp",
		Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}))
	add("NetOpErrorECONNREFUSED", &net.OpError{Op: "dial", Net: "tcp",
		Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}})
	add("EPIPE", fmt.Errorf("write: %w", &os.SyscallError{Syscall: "write", Err: syscall.EPIPE}))
	add("NetErrClosed", fmt.Errorf("write: %w", net.ErrClosed))
	add("UnexpectedEOF", io.ErrUnexpectedEOF)
	add("EOF", fmt.Errorf("receive message failed: %w", io.EOF))
	add("ErrConnClosed", fmt.Errorf("commit: %w", pgconn.ErrConnClosed))
	add("TxClosed", pgx.ErrTxClosed)
	add("TxCommitRollback", pgx.ErrTxCommitRollback)
	add("DeadlineExceeded", fmt.Errorf("acquire: %w", context.DeadlineExceeded))
	for _, code := range []string{"08000", "08001", "08003", "08006", "57P01", "57P02", "57P03", "57P05", "57014",
		"53300", "53200", "25006", "25P02", "25P03", "40003", "55P03", "58030"} {
		add("SQLSTATE"+code, &pgconn.PgError{Severity: "FATAL", Code: code})
	}

	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := postgres.Translate(tt.err)
			if code := boxoffice.ErrorCode(got); code != boxoffice.EUNAVAILABLE {
				t.Errorf("translate(%v) [%T] = %v: code %q, want %q", tt.err, tt.err, got, code, boxoffice.EUNAVAILABLE)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("translate(%v) = %v: the cause is lost", tt.err, got)
			}
		})
	}

	// What is not a failure of the connection keeps its meaning.
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&pgconn.PgError{Code: "42601"}, boxoffice.EINTERNAL}, // syntax error: a bug
		{&pgconn.PgError{Code: "XX000"}, boxoffice.EINTERNAL},
		{&pgconn.PgError{Code: "23505"}, boxoffice.ECONFLICT},
		{errors.New("boom"), boxoffice.EINTERNAL},
	} {
		if got := boxoffice.ErrorCode(postgres.Translate(tt.err)); got != tt.want {
			t.Errorf("translate(%v) code = %q, want %q", tt.err, got, tt.want)
		}
	}
	if err := fmt.Errorf("query: %w", context.Canceled); postgres.Translate(err) != err {
		t.Errorf("translate(cancelled) changed it: the caller went away, nothing failed")
	}
}

func pgCodeOf(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
