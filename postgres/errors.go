package postgres

import (
	"context"
	"errors"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	codeTooManyConnections   = "53300"
	codeAdminShutdown        = "57P01"
	codeCrashShutdown        = "57P02"
	codeCannotConnectNow     = "57P03"
)

// pgCode returns the SQLSTATE of a server error in err's chain, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
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
// class, never by its text. Call sites that know what a constraint means
// (a taken seat, a used idempotency key) check pgCode first; this is the
// fallback for everything else. Domain errors and context errors pass
// through unchanged.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var de *boxoffice.Error
	if errors.As(err, &de) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &boxoffice.Error{Code: boxoffice.ENOTFOUND, Message: "not found", Err: err}
	}
	code := pgCode(err)
	switch {
	case code == codeUniqueViolation:
		return &boxoffice.Error{Code: boxoffice.ECONFLICT, Message: "already exists", Err: err}
	case code == codeForeignKeyViolation:
		return &boxoffice.Error{Code: boxoffice.ENOTFOUND, Message: "refers to something that does not exist", Err: err}
	case code == codeCheckViolation, code == codeNotNullViolation, len(code) == 5 && code[:2] == "22":
		// Class 22 is "data exception": a value the column cannot hold.
		return &boxoffice.Error{Code: boxoffice.EINVALID, Message: "invalid value", Err: err}
	case code == codeSerializationFailure, code == codeDeadlockDetected:
		// Still contended after the retries transact allows.
		return boxoffice.Unavailable("database (contended)", err)
	case code == codeTooManyConnections, code == codeAdminShutdown, code == codeCrashShutdown,
		code == codeCannotConnectNow, len(code) == 5 && code[:2] == "08":
		// Class 08 is "connection exception".
		return boxoffice.Unavailable("database", err)
	case code != "":
		return &boxoffice.Error{Code: boxoffice.EINTERNAL, Message: "internal error", Err: err}
	}
	// No SQLSTATE: the error happened on our side of the wire.
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return boxoffice.Unavailable("database", err)
	}
	return &boxoffice.Error{Code: boxoffice.EINTERNAL, Message: "internal error", Err: err}
}
