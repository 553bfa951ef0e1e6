package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/boxoffice/boxoffice/sqlite"
)

const backupUsage = `Usage: boxoffice backup --to FILE [--data DIR]

backup copies the embedded database (DIR/boxoffice.db, serve's --data) to
FILE, a new file, while boxoffice serve may be running: one consistent
snapshot (SQLite's VACUUM INTO), checked (integrity, schema, the audit: no
seat with two valid tickets, payments match tickets) before it is put at
FILE. The auth secret in DIR is not copied: keep it apart.

Flags:`

const restoreUsage = `Usage: boxoffice restore --from FILE [--data DIR] [--force]

restore puts a backup in place of the embedded database (DIR/boxoffice.db,
serve's --data) after checking it as backup does. Stop boxoffice serve
first: a database in use is refused. A database already there is replaced
only with --force, and kept beside it as boxoffice.db.before-restore-<time>.

Flags:`

// backup copies the embedded database to a file (sqlite.Backup).
func backup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// The same flag, default and variable as serve's, so that the command
	// finds the database serve uses.
	data := fs.String("data", "boxoffice-data", "directory of the embedded database, as serve's --data")
	to := fs.String("to", "", "the backup file to write; it must not exist (required)")
	fs.Usage = usage(stderr, fs, backupUsage)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if err := checkDBFlags(fs, "--to", *to, *data); err != nil {
		return err
	}
	dbPath := filepath.Join(*data, "boxoffice.db")
	if _, err := os.Stat(dbPath); err != nil {
		return fmt.Errorf("no embedded database to back up in --data %s: %w", *data, err)
	}
	info, err := sqlite.Backup(ctx, dbPath, *to)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s in %s\n", dbPath, info.Path, info.Took.Round(time.Millisecond))
	printDatabase(stdout, info.DatabaseInfo)
	fmt.Fprintf(stdout, "restore it with: boxoffice restore --data DIR --from %s (boxoffice serve stopped)\n", info.Path)
	return nil
}

// restore puts a backup in place of the embedded database (sqlite.Restore).
func restore(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "boxoffice-data", "directory of the embedded database, as serve's --data")
	from := fs.String("from", "", "the backup file to restore (required)")
	force := fs.Bool("force", false, "replace the database that is there (it is kept beside it)")
	fs.Usage = usage(stderr, fs, restoreUsage)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if err := checkDBFlags(fs, "--from", *from, *data); err != nil {
		return err
	}
	// A new data directory, as serve would make it.
	if err := os.MkdirAll(*data, 0o700); err != nil {
		return err
	}
	dbPath := filepath.Join(*data, "boxoffice.db")
	if _, err := os.Stat(dbPath); err == nil && !*force {
		return fmt.Errorf("%s exists: run again with --force to replace it (it is kept beside it)", dbPath)
	}
	info, err := sqlite.Restore(ctx, *from, dbPath, *force)
	if errors.Is(err, sqlite.ErrInUse) {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s to %s in %s\n", *from, dbPath, info.Took.Round(time.Millisecond))
	printDatabase(stdout, info.DatabaseInfo)
	if info.Kept != "" {
		fmt.Fprintf(stdout, "the database it replaced is kept as %s\n", info.Kept)
	}
	return nil
}

// checkDBFlags validates backup's and restore's flags before any file is
// touched: the file flag is required, --data may not be empty, and there
// are no arguments.
func checkDBFlags(fs *flag.FlagSet, name, file, data string) error {
	switch {
	case fs.NArg() > 0:
		fs.Usage()
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case file == "":
		fs.Usage()
		return fmt.Errorf("%s is required", name)
	case data == "":
		fs.Usage()
		return errors.New("--data may not be empty")
	}
	return nil
}

// printDatabase writes what a backup holds and what was checked.
func printDatabase(w io.Writer, info sqlite.DatabaseInfo) {
	fmt.Fprintf(w, "  %s, schema version %d: %d events, %d bookings, %d tickets\n",
		sizeString(info.Size), info.SchemaVersion, info.Events, info.Bookings, info.Tickets)
	fmt.Fprintf(w, "  checked: integrity ok, foreign keys ok, audit ok (%d checks):\n", len(info.Audit.Checks))
	for _, c := range info.Audit.Checks {
		fmt.Fprintf(w, "    - %s\n", c.Name)
	}
}

// sizeString is n bytes in the largest binary unit that keeps it >= 1.
func sizeString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
