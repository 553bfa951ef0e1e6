package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/internal/durable"
	sqlite3 "modernc.org/sqlite/lib"
)

// DatabaseInfo is what a verified database file holds.
type DatabaseInfo struct {
	Path          string
	Size          int64 // bytes
	SchemaVersion int   // the last migration it has (schema_migrations)
	Events        int64
	Bookings      int64 // of every status
	Tickets       int64 // valid and void
	Audit         AuditReport
}

// BackupInfo is what Backup wrote.
type BackupInfo struct {
	DatabaseInfo
	Took time.Duration
}

// RestoreInfo is what Restore put in place.
type RestoreInfo struct {
	DatabaseInfo
	// Kept is where the database it replaced now is ("" when there was
	// none): dbPath + ".before-restore-<UTC time>".
	Kept string
	Took time.Duration
}

// ErrInUse is Restore's answer when another connection, in this process or
// another (a running boxoffice serve), has the database open.
var ErrInUse = errors.New("the database is in use (stop boxoffice serve first)")

// inUseTimeout is how long Restore waits for the locks of the database it
// replaces. A running server holds its lock for as long as it runs, so
// waiting longer would not help; the short wait only lets a passing
// reader (a backup) finish.
const inUseTimeout = 250 * time.Millisecond

// Backup writes a consistent copy of the database at dbPath to the new file
// to, while other processes (a running boxoffice serve) may be writing it,
// and verifies the copy before it appears at to.
//
// The copy is VACUUM INTO: one read transaction, so it is the database as of
// one commit, and in WAL mode it neither waits for the writer nor holds it
// up. It is written to a temporary file beside to, synced, checked
// (PRAGMA integrity_check and foreign_key_check, a boxoffice schema, Audit)
// and only then linked to to, which must not exist (it is never
// overwritten, even if it appears meanwhile). The database at dbPath is
// opened read-only: the backup never writes it.
func Backup(ctx context.Context, dbPath, to string) (BackupInfo, error) {
	start := time.Now()
	if err := isFile(dbPath); err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	if _, err := os.Lstat(to); err == nil {
		return BackupInfo{}, fmt.Errorf("backup: %s exists: a backup never overwrites a file", to)
	} else if !errors.Is(err, os.ErrNotExist) {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	tmp, err := tempFile(to, ".tmp-")
	if err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	defer removeDatabaseFiles(tmp) // a no-op once it is linked and removed

	src, err := sql.Open("sqlite", readOnlyDSN(dbPath))
	if err != nil {
		return BackupInfo{}, fmt.Errorf("backup: open %s: %w", dbPath, err)
	}
	defer src.Close()
	// VACUUM INTO accepts an empty file as its target: the one tempFile
	// made, so that the name is ours.
	if _, err := src.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return BackupInfo{}, fmt.Errorf("backup: copy %s: %w", dbPath, err)
	}
	if err := src.Close(); err != nil {
		return BackupInfo{}, fmt.Errorf("backup: close %s: %w", dbPath, err)
	}
	if err := syncFile(tmp); err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	info, err := verifyCopy(ctx, tmp, 0)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("backup: the copy of %s: %w", dbPath, err)
	}
	if err := placeNew(tmp, to); err != nil {
		if errors.Is(err, os.ErrExist) {
			return BackupInfo{}, fmt.Errorf("backup: %s appeared during the backup: left as it is", to)
		}
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	if err := durable.SyncDir(filepath.Dir(to)); err != nil {
		return BackupInfo{}, fmt.Errorf("backup: %w", err)
	}
	info.Path = to
	return BackupInfo{DatabaseInfo: info, Took: time.Since(start)}, nil
}

// Restore puts the backup from in place of the database at dbPath, which
// must not be in use: boxoffice serve must be stopped.
//
// The backup is copied to a temporary file beside dbPath and that copy is
// verified as Backup verifies its own (integrity, schema, Audit), and its
// schema must not be newer than this binary's migrations (an older one is
// migrated when the store opens it). Only then is dbPath touched. When a
// database is there, force is required, and the old one is kept as
// dbPath + ".before-restore-<UTC time>", with the contents of its WAL
// checkpointed into it, so it is one self-contained file. The copy is
// renamed over dbPath, so dbPath names the old database or the new one
// at every moment, never neither.
//
// Whether the database is in use: a connection to a database in WAL mode
// holds a shared lock on it for as long as it is open, even idle, and
// leaving WAL mode needs an exclusive one. So Restore switches the old
// database to journal_mode=DELETE: it succeeds only if no other
// connection, in any process, has the file open, and it checkpoints the
// WAL into the file and deletes it (a WAL must never be left beside the
// new file: SQLite would apply it to the wrong database). A BEGIN
// EXCLUSIVE alone would not do: in WAL mode it excludes only writers, and
// an idle server writes nothing. Restore then holds the write lock on the
// old file until the new one is in place. It cannot stop a server started
// during those few milliseconds that opened the old file by name just
// before the rename: SQLite's locks follow the file, not the name.
func Restore(ctx context.Context, from, dbPath string, force bool) (RestoreInfo, error) {
	start := time.Now()
	if err := isFile(from); err != nil {
		return RestoreInfo{}, fmt.Errorf("restore: %w", err)
	}
	// A WAL beside from holds commits its main file lacks: from is a live
	// database, or a copy of one taken without its WAL.
	if fi, err := os.Stat(from + "-wal"); err == nil && fi.Size() > 0 {
		return RestoreInfo{}, fmt.Errorf("restore: %s has a WAL beside it (%s-wal): it is a live database, not a backup; take one with boxoffice backup", from, from)
	}
	exists := true
	if fi, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		exists = false
	} else if err != nil {
		return RestoreInfo{}, fmt.Errorf("restore: %w", err)
	} else if !fi.Mode().IsRegular() {
		return RestoreInfo{}, fmt.Errorf("restore: %s is not a file", dbPath)
	} else if fromFi, err := os.Stat(from); err == nil && os.SameFile(fi, fromFi) {
		return RestoreInfo{}, fmt.Errorf("restore: %s is the database itself", from)
	}
	if exists && !force {
		return RestoreInfo{}, fmt.Errorf("restore: %s exists: force replaces it (the old one is kept beside it)", dbPath)
	}
	if !exists {
		if fi, err := os.Stat(dbPath + "-wal"); err == nil && fi.Size() > 0 {
			return RestoreInfo{}, fmt.Errorf("restore: %s-wal exists without its database: move it away first", dbPath)
		}
	}
	latest, err := latestMigration()
	if err != nil {
		return RestoreInfo{}, fmt.Errorf("restore: %w", err)
	}

	tmp, err := tempFile(dbPath, ".restore-")
	if err != nil {
		return RestoreInfo{}, fmt.Errorf("restore: %w", err)
	}
	defer removeDatabaseFiles(tmp) // a no-op once it is renamed
	if err := copyFile(from, tmp); err != nil {
		return RestoreInfo{}, fmt.Errorf("restore: %w", err)
	}
	info, err := verifyCopy(ctx, tmp, latest)
	if err != nil {
		return RestoreInfo{}, fmt.Errorf("restore: %s: %w", from, err)
	}
	info.Path = dbPath

	if !exists {
		if err := placeNew(tmp, dbPath); err != nil {
			if errors.Is(err, os.ErrExist) {
				return RestoreInfo{}, fmt.Errorf("restore: %s appeared during the restore: left as it is", dbPath)
			}
			return RestoreInfo{}, fmt.Errorf("restore: %w", err)
		}
		if err := durable.SyncDir(filepath.Dir(dbPath)); err != nil {
			return RestoreInfo{}, fmt.Errorf("restore: %w", err)
		}
		return RestoreInfo{DatabaseInfo: info, Took: time.Since(start)}, nil
	}

	old, err := lockForRestore(ctx, dbPath)
	if err != nil {
		return RestoreInfo{}, fmt.Errorf("restore: %w", err)
	}
	defer old.release()
	kept, err := keepAside(dbPath, start)
	if err != nil {
		return RestoreInfo{}, fmt.Errorf("restore: %w", err)
	}
	if err := os.Rename(tmp, dbPath); err != nil {
		return RestoreInfo{}, fmt.Errorf("restore: %w (the old database is at %s as well)", err, kept)
	}
	if err := durable.SyncDir(filepath.Dir(dbPath)); err != nil {
		return RestoreInfo{}, fmt.Errorf("restore: %w", err)
	}
	return RestoreInfo{DatabaseInfo: info, Kept: kept, Took: time.Since(start)}, nil
}

// heldDatabase is the old database, locked by lockForRestore.
type heldDatabase struct {
	db   *sql.DB
	conn *sql.Conn
}

func (h *heldDatabase) release() {
	_, _ = h.conn.ExecContext(context.Background(), `ROLLBACK`)
	h.conn.Close()
	h.db.Close()
}

// lockForRestore makes sure nothing else has the database at path open,
// leaves it one self-contained file (its WAL checkpointed into it and
// deleted) and holds its write lock (see Restore for why this way).
func lockForRestore(ctx context.Context, path string) (*heldDatabase, error) {
	db, err := sql.Open("sqlite", fmt.Sprintf("%s?_busy_timeout=%d", path, inUseTimeout.Milliseconds()))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	h := &heldDatabase{db: db, conn: conn}
	var mode string
	err = conn.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode)
	switch {
	case isBusy(err):
		h.release()
		return nil, fmt.Errorf("%s: %w", path, ErrInUse)
	case err != nil:
		h.release()
		return nil, fmt.Errorf("%s: %w", path, err)
	case mode != "delete":
		h.release()
		return nil, fmt.Errorf("%s: %w (it stays in journal mode %s)", path, ErrInUse, mode)
	}
	// RESERVED: nobody else can write the old file or take it back to WAL
	// until the new one is in place; nothing is written, so no journal.
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		h.release()
		if isBusy(err) {
			return nil, fmt.Errorf("%s: %w", path, ErrInUse)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		h.release()
		return nil, fmt.Errorf("%s-wal is still there after a checkpoint: left as it is", path)
	}
	return h, nil
}

// keepAside gives the database at path (locked, its WAL checkpointed) a
// second name, path.before-restore-<time>, and removes what is left of its
// WAL files, which must not meet the new database: an empty -wal, and the
// -shm, an index of the WAL that holds no data.
func keepAside(path string, at time.Time) (string, error) {
	base := path + ".before-restore-" + at.UTC().Format("20060102T150405Z")
	kept := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(kept); errors.Is(err, os.ErrNotExist) {
			break
		}
		if i > 100 {
			return "", fmt.Errorf("keep the old database: %s and 99 more names are taken", base)
		}
		kept = fmt.Sprintf("%s-%d", base, i)
	}
	// A second name for the same file, so that path names a database at
	// every moment; a copy where the file system has no links (the file
	// is locked and self-contained, so the copy is the whole of it).
	if err := os.Link(path, kept); err != nil {
		tmp, terr := tempFile(kept, ".tmp-")
		if terr != nil {
			return "", fmt.Errorf("keep the old database as %s: %w", kept, err)
		}
		if err := copyFile(path, tmp); err != nil {
			os.Remove(tmp)
			return "", fmt.Errorf("keep the old database as %s: %w", kept, err)
		}
		if err := placeNew(tmp, kept); err != nil {
			os.Remove(tmp)
			return "", fmt.Errorf("keep the old database as %s: %w", kept, err)
		}
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	return kept, durable.SyncDir(filepath.Dir(path))
}

// placeNew gives the file tmp the name to, which must not exist. A hard
// link fails if to exists, atomically, where a rename would replace it;
// where the file system has no links (FAT, some network file systems) it
// falls back to a check and a rename, which a file created in between
// would lose to.
func placeNew(tmp, to string) error {
	err := os.Link(tmp, to)
	switch {
	case err == nil:
		return os.Remove(tmp)
	case errors.Is(err, os.ErrExist):
		return err
	}
	if _, lerr := os.Lstat(to); lerr == nil {
		return fmt.Errorf("%s: %w", to, os.ErrExist)
	} else if !errors.Is(lerr, os.ErrNotExist) {
		return lerr
	}
	return os.Rename(tmp, to)
}

// verifyCopy checks the database file at path, a copy this package made and
// owns: PRAGMA integrity_check and foreign_key_check, a boxoffice schema no
// newer than maxVersion (0: any), and Audit; and counts what it holds. It
// leaves the file in rollback-journal mode (the store puts it back in WAL
// mode when it opens it), so it stays one file with nothing beside it.
func verifyCopy(ctx context.Context, path string, maxVersion int) (DatabaseInfo, error) {
	info := DatabaseInfo{Path: path}
	db, err := sql.Open("sqlite", fmt.Sprintf("%s?_busy_timeout=%d", path, busyTimeout.Milliseconds()))
	if err != nil {
		return info, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode); err != nil {
		return info, fmt.Errorf("not a readable SQLite database: %w", err)
	}
	// From here on only reads: the checks cannot change the copy.
	if _, err := db.ExecContext(ctx, `PRAGMA query_only = 1`); err != nil {
		return info, err
	}
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check(10)`)
	if err != nil {
		return info, fmt.Errorf("integrity check: %w", err)
	}
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return info, fmt.Errorf("integrity check: %w", err)
		}
		problems = append(problems, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return info, fmt.Errorf("integrity check: %w", err)
	}
	if len(problems) != 1 || problems[0] != "ok" {
		return info, fmt.Errorf("integrity check failed: %s", strings.Join(problems, "; "))
	}
	var orphans int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&orphans); err != nil {
		return info, fmt.Errorf("foreign key check: %w", err)
	}
	if orphans > 0 {
		return info, fmt.Errorf("foreign key check failed: %d rows point nowhere", orphans)
	}
	var hasMigrations bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations')`).Scan(&hasMigrations); err != nil {
		return info, err
	}
	if !hasMigrations {
		return info, errors.New("not a boxoffice database (no schema_migrations table)")
	}
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&info.SchemaVersion); err != nil {
		return info, err
	}
	if maxVersion > 0 && info.SchemaVersion > maxVersion {
		return info, fmt.Errorf("its schema is version %d, newer than this binary's (%d): restore it with a newer boxoffice", info.SchemaVersion, maxVersion)
	}
	if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM bookings), (SELECT count(*) FROM tickets)`).
		Scan(&info.Events, &info.Bookings, &info.Tickets); err != nil {
		return info, err
	}
	if info.Audit, err = Audit(ctx, db); err != nil {
		return info, err
	}
	if err := info.Audit.Err(); err != nil {
		return info, err
	}
	if err := db.Close(); err != nil {
		return info, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return info, err
	}
	info.Size = fi.Size()
	return info, nil
}

// latestMigration is the version of this binary's last migration.
func latestMigration() (int, error) {
	ms, err := loadMigrations()
	if err != nil || len(ms) == 0 {
		return 0, fmt.Errorf("the embedded migrations: %v", err)
	}
	return ms[len(ms)-1].version, nil
}

// readOnlyDSN opens path read-only (mode=ro, which needs a file: URI): it
// cannot create the file nor write it. VACUUM INTO still works on it.
func readOnlyDSN(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	u := url.URL{Path: filepath.ToSlash(abs)}
	return fmt.Sprintf("file:%s?mode=ro&_busy_timeout=%d", u.EscapedPath(), busyTimeout.Milliseconds())
}

// isFile reports an error unless path is a regular file.
func isFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a file", path)
	}
	return nil
}

// tempFile creates an empty file beside path, named after it, and returns
// its name. Beside it, so that renaming or linking it to path stays on one
// file system.
func tempFile(path, infix string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+infix+"*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// removeDatabaseFiles removes a database file of ours and whatever SQLite
// may have left beside it.
func removeDatabaseFiles(path string) {
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

// copyFile copies from to the existing file to and syncs it.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// isBusy reports whether err is SQLITE_BUSY (another connection holds
// the lock), extended codes included.
func isBusy(err error) bool {
	return sqliteCode(err)&0xff == sqlite3.SQLITE_BUSY
}
