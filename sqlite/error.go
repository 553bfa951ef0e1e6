package sqlite

import (
	"context"
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

// isForeignKeyViolation reports whether err is a FOREIGN KEY constraint
// failure.
func isForeignKeyViolation(err error) bool {
	return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// translate turns what is left of a driver error into the domain
// vocabulary: domain errors and context errors pass through, a locked or
// unreadable database is EUNAVAILABLE, anything else stays an internal
// error (logged, shown as "internal error").
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var de *boxoffice.Error
	if errors.As(err, &de) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	switch sqliteCode(err) & 0xff { // the primary code of an extended one
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY:
		return boxoffice.Unavailable(what, err)
	}
	return fmt.Errorf("sqlite: %w", err)
}
