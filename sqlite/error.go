package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/boxoffice/boxoffice"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteCode returns the extended SQLite result code carried by err, or 0
// when err does not come from the driver.
func sqliteCode(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// isUniqueViolation reports whether err is a UNIQUE or PRIMARY KEY
// constraint failure. Callers know which constraint their statement can
// break and name the domain error themselves.
func isUniqueViolation(err error) bool {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return true
	}
	return false
}

// errDBClosed is database/sql's error for a call on a closed *sql.DB: a
// call still on its way when the store was closed at shutdown. The package
// does not export it, so this is that very value, taken from a DB closed
// on purpose, and compared by identity rather than by its text.
var errDBClosed = func() error {
	db := sql.OpenDB(noConnector{})
	db.Close()
	return db.PingContext(context.Background())
}()

// noConnector is the connector of the DB errDBClosed comes from; it is
// never asked for a connection.
type noConnector struct{}

func (noConnector) Connect(context.Context) (driver.Conn, error) { return nil, driver.ErrBadConn }
func (noConnector) Driver() driver.Driver                        { return nil }

// translate turns what is left of a driver error into the domain
// vocabulary: domain errors and context errors pass through, a locked or
// unreadable database or a closed store is EUNAVAILABLE, anything else
// stays an internal error (logged, shown as "internal error").
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var de *boxoffice.Error
	if errors.As(err, &de) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, errDBClosed) || errors.Is(err, sql.ErrConnDone) {
		return boxoffice.Unavailable(what, err)
	}
	switch sqliteCode(err) & 0xff { // the primary code of an extended one
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY:
		return boxoffice.Unavailable(what, err)
	}
	return fmt.Errorf("sqlite: %w", err)
}
