package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/boxoffice/boxoffice"
)

// SQLSTATE codes this package acts on
// (https://www.postgresql.org/docs/current/errcodes-appendix.html).
const (
	codeUniqueViolation      = "23505"
	codeForeignKeyViolation  = "23503"
	codeCheckViolation       = "23514"
	codeNotNullViolation     = "23502"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeCompletionUnknown    = "40003" // statement_completion_unknown
	codeReadOnlyTransaction  = "25006" // read_only_sql_transaction: a standby (after a failover)
	codeInFailedTransaction  = "25P02" // in_failed_sql_transaction
	codeIdleInTransaction    = "25P03" // idle_in_transaction_session_timeout: the session was ended
	codeLockNotAvailable     = "55P03" // lock_not_available (lock_timeout)
	codeIOError              = "58030"
)

// pgCode returns the SQLSTATE of a server error in err's chain, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// noPartition reports whether err is a row for which no partition exists:
// an event id outside every partition, so an unknown event (a check
// violation naming no constraint).
func noPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == codeCheckViolation && pe.ConstraintName == ""
}

// retryable reports whether a transaction that failed with err may be run
// again from the start and succeed.
func retryable(err error) bool {
	switch pgCode(err) {
	case codeSerializationFailure, codeDeadlockDetected:
		return true
	}
	return false
}

// translate turns a driver error into the domain vocabulary by SQLSTATE
// class and by the driver's error values, never by their text. Call sites
// that know what a constraint means (a taken seat, a used idempotency key)
// check pgCode first; this is the fallback for everything else. Domain
// errors and a cancelled context pass through unchanged.
//
// Every failure of the connection, the pool or the server's availability
// is EUNAVAILABLE (503, Retry-After), never EINTERNAL: the transaction did
// not commit, or (a COMMIT whose answer was lost) its outcome is unknown,
// and either way the client's retry with its idempotency key replays or
// redoes it.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var de *boxoffice.Error
	if errors.As(err, &de) || errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &boxoffice.Error{Code: boxoffice.ENOTFOUND, Message: "not found", Err: err}
	}
	if connectionFailure(err) {
		// Before the SQLSTATE: a failed connection attempt may carry the
		// server's refusal (57P03 starting up, 53300 too many clients).
		return boxoffice.Unavailable("database", err)
	}
	code := pgCode(err)
	switch {
	case code == codeUniqueViolation:
		return &boxoffice.Error{Code: boxoffice.ECONFLICT, Message: "already exists", Err: err}
	case code == codeForeignKeyViolation:
		return &boxoffice.Error{Code: boxoffice.ENOTFOUND, Message: "refers to something that does not exist", Err: err}
	case code == codeCheckViolation, code == codeNotNullViolation, class(code) == "22":
		// Class 22 is "data exception": a value the column cannot hold.
		return &boxoffice.Error{Code: boxoffice.EINVALID, Message: "invalid value", Err: err}
	case code == codeSerializationFailure, code == codeDeadlockDetected, code == codeLockNotAvailable:
		// Still contended after the retries transact allows.
		return boxoffice.Unavailable("database (contended)", err)
	case unavailableCode(code):
		return boxoffice.Unavailable("database", err)
	}
	return &boxoffice.Error{Code: boxoffice.EINTERNAL, Message: "internal error", Err: err}
}

// class is the two-character class of a SQLSTATE, "" for none.
func class(code string) string {
	if len(code) != 5 {
		return ""
	}
	return code[:2]
}

// unavailableCode reports whether the server answered with a SQLSTATE
// that means "not now" rather than "never": the connection or the server
// is going away or refusing work, or the transaction was broken by such a
// failure. None of them committed anything.
func unavailableCode(code string) bool {
	switch class(code) {
	case "08", // connection exception
		"53", // insufficient resources: 53300 too many connections, out of memory, disk full
		"57": // operator intervention: 57P01 admin shutdown, 57P02 crash shutdown,
		// 57P03 cannot connect now (starting up, shutting down), 57P05 idle
		// session timeout, 57014 query cancelled (statement_timeout)
		return true
	}
	switch code {
	case codeCompletionUnknown, codeReadOnlyTransaction, codeInFailedTransaction, codeIdleInTransaction, codeIOError:
		return true
	}
	return false
}

// connectionFailure reports whether err is a failure of the connection to
// the server, of the pool, or of a transaction the connection's loss broke,
// as pgx and the standard library report them (error values and types;
// pgx gives every one of these a value or a type to test, so no text is
// matched):
//
//   - no connection could be made (*pgconn.ConnectError), or the pool is
//     closed (puddle.ErrClosedPool, what pgxpool returns after Close);
//   - the pool's wait for a connection ran out (context.DeadlineExceeded,
//     also the bound of a statement: pgconn.Timeout);
//   - the connection broke: the server closed it (io.EOF,
//     io.ErrUnexpectedEOF, which pgx returns unwrapped from a read), the
//     network did (ECONNRESET, ECONNREFUSED, EPIPE, ECONNABORTED,
//     ETIMEDOUT, EHOSTUNREACH, ENETUNREACH, any net.Error), or it was
//     closed under the call (net.ErrClosed; pgconn.ErrConnClosed, "conn
//     closed", after an earlier failure of the same connection);
//   - the error happened before anything was sent (pgconn.SafeToRetry);
//   - the transaction was left unusable by one of these: pgx.ErrTxClosed
//     (its connection was closed) or pgx.ErrTxCommitRollback (the server
//     rolled it back instead of committing).
func connectionFailure(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce),
		errors.Is(err, puddle.ErrClosedPool),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed), errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH),
		errors.As(err, &ne),
		pgconn.Timeout(err), pgconn.SafeToRetry(err),
		errors.Is(err, pgx.ErrTxClosed), errors.Is(err, pgx.ErrTxCommitRollback):
		return true
	}
	return false
}
