package postgres

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/durable"
)

// The archive of a month of past shows (migrations/0010): every row of the
// partition <table>_<suffix> of each partitioned table, and the rows of the
// EventTables whose event is in the partition's id range, written to CSV
// files with a manifest, verified, and only then dropped from the database.
// RestorePartition puts them back.

// Partition is one row of event_partitions with the events it holds.
type Partition struct {
	Suffix   string
	Lo       *int64 // nil: from the smallest id (MINVALUE)
	Hi       int64  // exclusive
	Events   int
	LastShow time.Time // the latest show start; zero without events
}

// ArchiveManifest is manifest.json of an archived partition: its range and
// one entry per file.
type ArchiveManifest struct {
	Version int    `json:"version"`
	Suffix  string `json:"suffix"`
	Lo      *int64 `json:"lo"` // null: MINVALUE
	Hi      int64  `json:"hi"`
	// Created is when the archive was written (the Store's clock); Before
	// is the bound every archived show started before.
	Created time.Time      `json:"created"`
	Before  time.Time      `json:"before"`
	Events  int            `json:"events"`
	Tables  []ArchiveTable `json:"tables"`
	// Dir is the directory holding the manifest and the files.
	Dir string `json:"-"`
}

// ArchiveTable is one table's file in an archive.
type ArchiveTable struct {
	Table   string   `json:"table"`
	File    string   `json:"file"`
	Rows    int64    `json:"rows"`
	SHA256  string   `json:"sha256"`
	Columns []string `json:"columns"`
}

// manifestVersion is the layout of the archives this package writes and
// reads.
const manifestVersion = 1

// ManifestFile is the manifest's name in an archive directory.
const ManifestFile = "manifest.json"

// suffixRE is what a partition suffix may be: it becomes part of table
// names and a directory name.
var suffixRE = regexp.MustCompile(`^[a-z0-9_]{1,40}$`)

// archiveSettings make the CSV (and the rows' text, which the change check
// hashes) independent of the server's and the session's defaults.
const archiveSettings = `SELECT set_config('timezone', 'UTC', true), set_config('datestyle', 'ISO, YMD', true),
	set_config('intervalstyle', 'postgres', true), set_config('bytea_output', 'hex', true),
	set_config('extra_float_digits', '3', true)`

// lockTimeoutSQL bounds the waits for the parents' locks (DETACH's ACCESS
// EXCLUSIVE, boxoffice_partition's SHARE ROW EXCLUSIVE): while one waits,
// every request of every event queues behind it, so give up instead.
const lockTimeoutSQL = `SELECT set_config('lock_timeout', '10s', true)`

// partitionLockSQL is the advisory lock boxoffice_partition takes: holding
// it, no partition is created while one is dropped or restored.
const partitionLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('boxoffice.partition.' || current_schema(), 0))`

// Partitions lists the partitions, in id order, with their events.
func (s *Store) Partitions(ctx context.Context) ([]Partition, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT p.suffix, p.lo, p.hi, count(e.id), max(e.starts_at)
		FROM event_partitions p
		LEFT JOIN events e ON e.id >= coalesce(p.lo, '-9223372036854775808'::bigint) AND e.id < p.hi
		GROUP BY p.suffix, p.lo, p.hi
		ORDER BY p.hi`)
	if err != nil {
		return nil, translate(err)
	}
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Partition, error) {
		var (
			p    Partition
			last *time.Time
		)
		err := row.Scan(&p.Suffix, &p.Lo, &p.Hi, &p.Events, &last)
		if last != nil {
			p.LastShow = last.UTC()
		}
		return p, err
	})
	return ps, translate(err)
}

// archiveTable is one table of a partition's archive: the relation read,
// and the condition that picks the partition's rows ("" for a partition).
type archiveTable struct {
	name, from, where string
}

// partitionTables are the tables of the partition suffix, [lo, hi), in
// restore order: PartitionedTables then EventTables.
func partitionTables(suffix string, lo *int64, hi int64) []archiveTable {
	var ts []archiveTable
	for _, t := range PartitionedTables {
		ts = append(ts, archiveTable{name: t, from: t + "_" + suffix})
	}
	for _, t := range EventTables {
		ts = append(ts, archiveTable{name: t, from: t, where: idRange("event_id", lo, hi)})
	}
	return ts
}

// idRange is the SQL condition col in [lo, hi), literals inlined: COPY
// takes no parameters.
func idRange(col string, lo *int64, hi int64) string {
	c := col + " < " + strconv.FormatInt(hi, 10)
	if lo != nil {
		c = col + " >= " + strconv.FormatInt(*lo, 10) + " AND " + c
	}
	return c
}

func quoteIdent(name string) string { return pgx.Identifier{name}.Sanitize() }

// columnList is cols quoted, comma-separated.
func columnList(cols []string) string {
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = quoteIdent(c)
	}
	return strings.Join(quoted, ", ")
}

func (t archiveTable) selectSQL(cols []string) string {
	q := "SELECT " + columnList(cols) + " FROM " + quoteIdent(t.from)
	if t.where != "" {
		q += " WHERE " + t.where
	}
	return q
}

// digest is a table's rows at a moment: how many, and the sum of their
// texts' hashes. Comparing two tells whether a row was inserted, updated
// or deleted in between (up to a 64-bit hash collision).
type digest struct {
	rows int64
	sum  string
}

func digestSQL(sel string) string {
	return `SELECT count(*), coalesce(sum(hashtextextended(x::text, 0)), 0)::text FROM (` + sel + `) x`
}

// tableColumns returns rel's columns in order, generated ones left out
// (COPY FROM cannot write them).
func tableColumns(ctx context.Context, q querier, rel string) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT attname FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped AND attgenerated = ''
		ORDER BY attnum`, quoteIdent(rel))
	if err != nil {
		return nil, err
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no table %s", rel)
	}
	return cols, nil
}

// partitionBounds reads the range of partition suffix.
func partitionBounds(ctx context.Context, q querier, suffix string, lock bool) (lo *int64, hi int64, err error) {
	sql := `SELECT lo, hi FROM event_partitions WHERE suffix = $1`
	if lock {
		sql += ` FOR UPDATE`
	}
	err = q.QueryRow(ctx, sql, suffix).Scan(&lo, &hi)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, boxoffice.Errorf(boxoffice.ENOTFOUND, "no partition %q", suffix)
	}
	return lo, hi, err
}

func sameRange(lo1 *int64, hi1 int64, lo2 *int64, hi2 int64) bool {
	return hi1 == hi2 && (lo1 == nil) == (lo2 == nil) && (lo1 == nil || *lo1 == *lo2)
}

func checkSuffix(suffix string) error {
	if !suffixRE.MatchString(suffix) {
		return boxoffice.Errorf(boxoffice.EINVALID, "partition suffix %q is not of [a-z0-9_]", suffix)
	}
	return nil
}

// ArchivePartition exports the partition suffix to dir/<suffix>/ (one CSV
// file per table and manifest.json), verifies the files, then deletes the
// partition's rows from the database: the EventTables' rows of its events,
// then each partitioned table's partition, detached and dropped. It
// refuses (ECONFLICT) a partition with a show starting at or after before,
// and (EINVALID) a before later than s.Now(). The export reads one
// snapshot; the drop checks, with the partition locked against writes,
// that nothing changed since (ECONFLICT: run again). Nothing is dropped
// unless the files are complete and verified; an error after the files
// were written says whether the drop happened.
func (s *Store) ArchivePartition(ctx context.Context, suffix, dir string, before time.Time) (*ArchiveManifest, error) {
	if err := checkSuffix(suffix); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "an archive directory is required")
	}
	now := s.Now()
	if before.After(now) {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "before (%s) is later than now (%s): shows still to come would be archived",
			before.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	final := filepath.Join(dir, suffix)
	if _, err := os.Lstat(final); err == nil {
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "%s exists (an earlier archive of %s?): move it away to archive again", final, suffix)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// Written under a temporary name and renamed once complete: dir/<suffix>
	// is a whole archive or absent.
	tmp, err := os.MkdirTemp(dir, "."+suffix+".partial-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}()

	m, digests, err := s.exportPartition(ctx, suffix, tmp, before, now)
	if err != nil {
		return nil, err
	}
	if err := writeManifest(tmp, m); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, err
	}
	tmp = ""
	if err := durable.SyncDir(dir); err != nil {
		return nil, err
	}
	m.Dir = final

	// Read back what is on disk, not what was meant to be written.
	onDisk, err := ReadArchive(final)
	if err != nil {
		return nil, fmt.Errorf("verifying the archive %s (the partition is kept): %w", final, err)
	}
	for i, t := range onDisk.Tables {
		w := m.Tables[i]
		if t.SHA256 != w.SHA256 || t.Rows != w.Rows || !slices.Equal(t.Columns, w.Columns) || t.Rows != digests[t.Table].rows {
			return nil, boxoffice.Errorf(boxoffice.EINTERNAL, "verifying the archive %s (the partition is kept): %s has %d rows (SHA-256 %s); %d were written (%s), the database has %d",
				final, t.File, t.Rows, t.SHA256, w.Rows, w.SHA256, digests[t.Table].rows)
		}
	}

	if err := s.dropPartition(ctx, m, digests); err != nil {
		// Rolled back, unless the failure was the answer to COMMIT lost.
		return nil, fmt.Errorf("the archive in %s is complete, but dropping partition %s failed (check whether it is still listed; "+
			"move the directory away before archiving it again): %w", final, suffix, err)
	}
	// This process may create the month's partition again.
	s.parts.mu.Lock()
	delete(s.parts.known, suffix)
	s.parts.mu.Unlock()
	return m, nil
}

// exportPartition writes the files of partition suffix to dir, from one
// snapshot, and returns the manifest and each table's digest in that
// snapshot.
func (s *Store) exportPartition(ctx context.Context, suffix, dir string, before, now time.Time) (*ArchiveManifest, map[string]digest, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, translate(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, archiveSettings); err != nil {
		return nil, nil, translate(err)
	}
	lo, hi, err := partitionBounds(ctx, tx, suffix, false)
	if err != nil {
		return nil, nil, translate(err)
	}
	var (
		events, late int
		last         *time.Time
	)
	if err := tx.QueryRow(ctx, `
		SELECT count(*), count(*) FILTER (WHERE starts_at >= $1), max(starts_at) FROM `+quoteIdent("events_"+suffix),
		before).Scan(&events, &late, &last); err != nil {
		return nil, nil, translate(err)
	}
	if late > 0 {
		return nil, nil, boxoffice.Errorf(boxoffice.ECONFLICT, "partition %s has %d of %d events whose show starts at or after %s (the last at %s): not archived",
			suffix, late, events, before.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339))
	}
	m := &ArchiveManifest{
		Version: manifestVersion, Suffix: suffix, Lo: lo, Hi: hi,
		Created: ts(now), Before: before.UTC(), Events: events,
	}
	digests := map[string]digest{}
	for _, t := range partitionTables(suffix, lo, hi) {
		cols, err := tableColumns(ctx, tx, t.from)
		if err != nil {
			return nil, nil, translate(err)
		}
		sel := t.selectSQL(cols)
		var d digest
		if err := tx.QueryRow(ctx, digestSQL(sel)).Scan(&d.rows, &d.sum); err != nil {
			return nil, nil, translate(err)
		}
		digests[t.name] = d
		file := t.name + ".csv"
		rows, sum, err := copyToFile(ctx, tx, filepath.Join(dir, file), sel)
		if err != nil {
			return nil, nil, fmt.Errorf("exporting %s: %w", t.from, translate(err))
		}
		if rows != d.rows {
			return nil, nil, boxoffice.Errorf(boxoffice.EINTERNAL, "exporting %s: %d rows copied, %d counted in the same snapshot", t.from, rows, d.rows)
		}
		m.Tables = append(m.Tables, ArchiveTable{Table: t.name, File: file, Rows: rows, SHA256: sum, Columns: cols})
	}
	return m, digests, translate(tx.Commit(ctx))
}

// copyToFile writes the rows of sel to a new file at path as CSV with a
// header, synced, and returns how many rows and the file's SHA-256.
func copyToFile(ctx context.Context, tx pgx.Tx, path, sel string) (rows int64, sum string, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, "", err
	}
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	tag, err := tx.Conn().PgConn().CopyTo(ctx, w, "COPY ("+sel+") TO STDOUT WITH (FORMAT csv, HEADER)")
	if err != nil {
		return 0, "", err
	}
	if err := w.Flush(); err != nil {
		return 0, "", err
	}
	if err := f.Sync(); err != nil {
		return 0, "", err
	}
	err = f.Close()
	f = nil
	return tag.RowsAffected(), hex.EncodeToString(h.Sum(nil)), err
}

// writeManifest writes dir/manifest.json, synced, and syncs dir.
func writeManifest(dir string, m *ArchiveManifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, ManifestFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return durable.SyncDir(dir)
}

// dropPartition deletes what m archived, in one transaction: it locks the
// partitions against writes and checks their digests, deletes the
// EventTables' rows (checking that they are the ones archived), then
// detaches and drops each partition, referencing tables first, and forgets
// the partition. Any difference from the archive rolls it all back.
func (s *Store) dropPartition(ctx context.Context, m *ArchiveManifest, digests map[string]digest) error {
	changed := func(table string) error {
		return boxoffice.Errorf(boxoffice.ECONFLICT, "%s of partition %s changed while it was being archived: archive it again", table, m.Suffix)
	}
	return s.transact(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockTimeoutSQL); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, archiveSettings); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, partitionLockSQL); err != nil {
			return err
		}
		lo, hi, err := partitionBounds(ctx, tx, m.Suffix, true)
		if err != nil {
			return err
		}
		if !sameRange(lo, hi, m.Lo, m.Hi) {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "partition %s changed its range while it was being archived", m.Suffix)
		}
		tables := partitionTables(m.Suffix, lo, hi)
		cols := map[string][]string{}
		for _, t := range m.Tables {
			cols[t.Table] = t.Columns
		}
		// SHARE: writes to these partitions wait until the drop commits;
		// reads go on, and so do writes to other partitions (but for a
		// statement whose plan was not pruned to its own partition).
		var parts []string
		for _, t := range tables[:len(PartitionedTables)] {
			parts = append(parts, quoteIdent(t.from))
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(parts, ", ")+` IN SHARE MODE`); err != nil {
			return err
		}
		for _, t := range tables {
			var d digest
			if t.where == "" {
				err = tx.QueryRow(ctx, digestSQL(t.selectSQL(cols[t.name]))).Scan(&d.rows, &d.sum)
			} else {
				// Deleted and digested in one statement: exactly the rows
				// archived go, or none.
				err = tx.QueryRow(ctx, `WITH x AS (DELETE FROM `+quoteIdent(t.from)+` WHERE `+t.where+
					` RETURNING `+columnList(cols[t.name])+`)
					SELECT count(*), coalesce(sum(hashtextextended(x::text, 0)), 0)::text FROM x`).Scan(&d.rows, &d.sum)
			}
			if err != nil {
				return err
			}
			if d != digests[t.name] {
				return changed(t.from)
			}
		}
		for i := len(PartitionedTables) - 1; i >= 0; i-- {
			parent, part := quoteIdent(PartitionedTables[i]), quoteIdent(tables[i].from)
			if _, err := tx.Exec(ctx, `ALTER TABLE `+parent+` DETACH PARTITION `+part); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DROP TABLE `+part); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `DELETE FROM event_partitions WHERE suffix = $1`, m.Suffix)
		return err
	})
}

// ReadArchive reads dir/manifest.json and checks every file against it:
// its SHA-256, its header (the manifest's columns) and its number of rows.
// Errors: EINVALID for a manifest or a file that does not match.
func ReadArchive(dir string) (*ArchiveManifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &boxoffice.Error{Code: boxoffice.ENOTFOUND, Message: "no archive in " + dir, Err: err}
	}
	if err != nil {
		return nil, err
	}
	var m ArchiveManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "%s: %v", filepath.Join(dir, ManifestFile), err)
	}
	m.Dir = dir
	if err := m.check(); err != nil {
		return nil, err
	}
	for _, t := range m.Tables {
		f, err := os.Open(filepath.Join(dir, t.File))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &boxoffice.Error{Code: boxoffice.EINVALID, Message: "the archive in " + dir + " lacks " + t.File, Err: err}
		}
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		rows, err := countRows(io.TeeReader(f, h), t.Columns)
		f.Close()
		if err != nil {
			return nil, boxoffice.Errorf(boxoffice.EINVALID, "%s: %v", filepath.Join(dir, t.File), err)
		}
		if sum := hex.EncodeToString(h.Sum(nil)); sum != t.SHA256 {
			return nil, boxoffice.Errorf(boxoffice.EINVALID, "%s: SHA-256 is %s, the manifest says %s", filepath.Join(dir, t.File), sum, t.SHA256)
		}
		if rows != t.Rows {
			return nil, boxoffice.Errorf(boxoffice.EINVALID, "%s: %d rows, the manifest says %d", filepath.Join(dir, t.File), rows, t.Rows)
		}
	}
	return &m, nil
}

// countRows reads CSV with a header from r to its end and returns the
// number of data rows (a quoted field may span lines). The header must be
// cols.
func countRows(r io.Reader, cols []string) (int64, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return 0, fmt.Errorf("header: %w", err)
	}
	if !slices.Equal(header, cols) {
		return 0, fmt.Errorf("header %v is not the manifest's columns %v", header, cols)
	}
	var n int64
	for {
		_, err := cr.Read()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		n++
	}
}

// check validates a manifest read from disk: nothing in it may name a
// table, a file or a column outside the archive's own.
func (m *ArchiveManifest) check() error {
	bad := func(format string, args ...any) error {
		return boxoffice.Errorf(boxoffice.EINVALID, "%s: %s", filepath.Join(m.Dir, ManifestFile), fmt.Sprintf(format, args...))
	}
	if m.Version != manifestVersion {
		return bad("version %d, this build reads version %d", m.Version, manifestVersion)
	}
	if !suffixRE.MatchString(m.Suffix) {
		return bad("suffix %q is not of [a-z0-9_]", m.Suffix)
	}
	if m.Lo != nil && *m.Lo >= m.Hi {
		return bad("empty range [%d, %d)", *m.Lo, m.Hi)
	}
	want := append(slices.Clone(PartitionedTables), EventTables...)
	if len(m.Tables) != len(want) {
		return bad("%d tables, an archive has %d", len(m.Tables), len(want))
	}
	for i, t := range m.Tables {
		if t.Table != want[i] {
			return bad("table %d is %q, not %q", i, t.Table, want[i])
		}
		if t.File != t.Table+".csv" {
			return bad("the file of %s is %q, not %q", t.Table, t.File, t.Table+".csv")
		}
		if t.Rows < 0 || len(t.SHA256) != 2*sha256.Size || len(t.Columns) == 0 {
			return bad("%s: rows, sha256 or columns missing", t.Table)
		}
	}
	return nil
}

// RestorePartition puts back the partition archived in dir (a directory
// ArchivePartition wrote): it checks the files against the manifest,
// creates the partition and copies every file into its table, in one
// transaction, checking each table's rows against the manifest. Errors:
// EINVALID for an archive that does not check out, ECONFLICT if the
// partition exists with rows, or its range overlaps another partition,
// or rows of its events are in the EventTables. Nothing changes on error.
// The transaction holds boxoffice_partition's locks on the parent tables
// until it commits, so writes to every event wait for the copy: restore in
// a quiet hour.
func (s *Store) RestorePartition(ctx context.Context, dir string) (*ArchiveManifest, error) {
	m, err := ReadArchive(dir)
	if err != nil {
		return nil, err
	}
	tables := partitionTables(m.Suffix, m.Lo, m.Hi)
	err = s.transact(ctx, func(tx pgx.Tx) error {
		for _, sql := range []string{lockTimeoutSQL, archiveSettings, partitionLockSQL} {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
		}
		if err := restoreConflicts(ctx, tx, m, tables); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT boxoffice_partition($1, $2, $3)`, m.Suffix, m.Lo, m.Hi); err != nil {
			return err
		}
		for i, t := range tables {
			if err := restoreTable(ctx, tx, dir, m.Tables[i]); err != nil {
				return fmt.Errorf("restoring %s: %w", t.name, err)
			}
		}
		// Statistics now: a partition the planner knows nothing of gets bad
		// plans until autovacuum comes by (see SoldSeats).
		for _, t := range tables[:len(PartitionedTables)] {
			if _, err := tx.Exec(ctx, `ANALYZE `+quoteIdent(t.from)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// restoreConflicts refuses a restore that would mix the archive's rows with
// rows in the database: a partition of the suffix with rows, another
// partition overlapping the range, EventTables rows in the range.
func restoreConflicts(ctx context.Context, tx pgx.Tx, m *ArchiveManifest, tables []archiveTable) error {
	rows, err := tx.Query(ctx, `
		SELECT suffix, lo, hi FROM event_partitions
		WHERE suffix = $1 OR ((lo IS NULL OR lo < $3) AND ($2::bigint IS NULL OR $2 < hi))`,
		m.Suffix, m.Lo, m.Hi)
	if err != nil {
		return err
	}
	existing, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Partition, error) {
		var p Partition
		return p, row.Scan(&p.Suffix, &p.Lo, &p.Hi)
	})
	if err != nil {
		return err
	}
	for _, p := range existing {
		if p.Suffix != m.Suffix || !sameRange(p.Lo, p.Hi, m.Lo, m.Hi) {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "partition %s overlaps the archive's %s: not restored", p.Suffix, m.Suffix)
		}
	}
	if len(existing) > 0 {
		// The partition was created again (an event of its month): restore
		// into it only while it is empty.
		var probes []string
		for _, t := range tables[:len(PartitionedTables)] {
			probes = append(probes, `EXISTS (SELECT 1 FROM `+quoteIdent(t.from)+`)`)
		}
		var full bool
		if err := tx.QueryRow(ctx, `SELECT `+strings.Join(probes, " OR ")).Scan(&full); err != nil {
			return err
		}
		if full {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "partition %s exists and holds rows: not restored over them", m.Suffix)
		}
	}
	for _, t := range tables[len(PartitionedTables):] {
		var found bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+quoteIdent(t.from)+` WHERE `+t.where+`)`).Scan(&found); err != nil {
			return err
		}
		if found {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "%s holds rows of partition %s's events: not restored over them", t.from, m.Suffix)
		}
	}
	return nil
}

// restoreTable copies t's file into its table (the parent, which routes
// the rows to the partition), hashing what it sends: the file must still
// be the one checked. A table with an identity column gets its sequence
// moved past the restored ids.
func restoreTable(ctx context.Context, tx pgx.Tx, dir string, t ArchiveTable) error {
	have, err := tableColumns(ctx, tx, t.Table)
	if err != nil {
		return err
	}
	for _, c := range t.Columns {
		if !slices.Contains(have, c) {
			return boxoffice.Errorf(boxoffice.EINVALID, "column %s of %s is not in the database (an archive of another schema version?)", c, t.Table)
		}
	}
	f, err := os.Open(filepath.Join(dir, t.File))
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	src := io.TeeReader(bufio.NewReaderSize(f, 1<<20), h)
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, src,
		`COPY `+quoteIdent(t.Table)+` (`+columnList(t.Columns)+`) FROM STDIN WITH (FORMAT csv, HEADER)`)
	if err != nil {
		return err
	}
	// The sum covers the whole file, whatever COPY read of it.
	if _, err := io.Copy(io.Discard, src); err != nil {
		return err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != t.SHA256 {
		return boxoffice.Errorf(boxoffice.EINVALID, "%s changed while being restored (SHA-256 %s, the manifest says %s)", t.File, sum, t.SHA256)
	}
	if tag.RowsAffected() != t.Rows {
		return boxoffice.Errorf(boxoffice.EINVALID, "%d rows copied from %s, the manifest says %d", tag.RowsAffected(), t.File, t.Rows)
	}
	if t.Rows == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `
		SELECT attname FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped AND attidentity <> ''`, quoteIdent(t.Table))
	if err != nil {
		return err
	}
	idents, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, col := range idents {
		// A restore into a database whose sequence is behind (a new one)
		// would otherwise hand the restored ids out again.
		if _, err := tx.Exec(ctx, `
			SELECT setval(seq, greatest((SELECT max(`+quoteIdent(col)+`) FROM `+quoteIdent(t.Table)+`), nextval(seq)))
			FROM pg_get_serial_sequence($1, $2) AS seq`, quoteIdent(t.Table), col); err != nil {
			return err
		}
	}
	return nil
}
