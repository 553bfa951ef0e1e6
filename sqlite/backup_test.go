package sqlite_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sqlite"
)

// rowCounts are the rows a sale only ever adds: a backup taken during it
// holds at least what was there before it started and at most what was
// there after it ended.
type rowCounts struct{ events, bookings, tickets int64 }

func countRows(t *testing.T, db *sql.DB) rowCounts {
	t.Helper()
	var c rowCounts
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM bookings), (SELECT count(*) FROM tickets)`).
		Scan(&c.events, &c.bookings, &c.tickets); err != nil {
		t.Fatal(err)
	}
	return c
}

// saleEvent creates a direct-sale event of 1,000 seats.
func saleEvent(t *testing.T, s *sqlite.Store, id boxoffice.ID) *boxoffice.Event {
	t.Helper()
	now := time.Now()
	e := &boxoffice.Event{
		ID: id, Name: "Backed up", Venue: "Hall", StartsAt: now.Add(30 * 24 * time.Hour), SaleOpensAt: now.Add(-time.Hour),
		SaleMode: boxoffice.SaleDirect, TicketLimit: 1000, CreatedAt: now,
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 4500, Rows: 200, SeatsPerRow: 100}},
	}
	if err := s.CreateEvent(t.Context(), e); err != nil {
		t.Fatalf("CreateEvent: %v", err)
	}
	return e
}

// sale runs writers against the store through its methods until stop:
// each books two adjacent random seats, confirms most bookings (some lose
// the seat to another's ticket or newer hold, as the store decides),
// releases some, and cancels some of those it confirmed.
type sale struct {
	s      *sqlite.Store
	e      *boxoffice.Event
	seats  []boxoffice.Seat
	ids    atomic.Int64
	done   chan struct{}
	wg     sync.WaitGroup
	writes atomic.Int64
}

func startSale(t *testing.T, s *sqlite.Store, e *boxoffice.Event, writers int) *sale {
	sl := &sale{s: s, e: e, seats: e.Seats(), done: make(chan struct{})}
	sl.ids.Store(int64(e.ID) * 1_000_000)
	for w := range writers {
		sl.wg.Go(func() { sl.writer(t, w) })
	}
	return sl
}

func (sl *sale) stop() {
	close(sl.done)
	sl.wg.Wait()
}

func (sl *sale) writer(t *testing.T, w int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(w), 7))
	user := fmt.Sprint("fan-", w)
	// A refusal is the store doing its job; anything else fails the test.
	check := func(what string, err error) bool {
		switch boxoffice.ErrorCode(err) {
		case "":
			return true
		case boxoffice.ESEATTAKEN, boxoffice.EHOLDLOST, boxoffice.ECONFLICT:
			return false
		}
		t.Errorf("%s: %v", what, err)
		return false
	}
	for {
		select {
		case <-sl.done:
			return
		default:
		}
		j := rng.IntN(len(sl.seats) - 1)
		seats := []string{sl.seats[j].ID, sl.seats[j+1].ID}
		id := sl.ids.Add(1)
		now := time.Now()
		b := &boxoffice.Booking{
			ID: boxoffice.ID(id), EventID: sl.e.ID, UserID: user, SeatIDs: seats, Fence: id,
			AmountCents: sl.seats[j].PriceCents + sl.seats[j+1].PriceCents,
			HeldUntil:   now.Add(10 * time.Minute), CreatedAt: now, UpdatedAt: now,
		}
		sl.writes.Add(1)
		if !check("CreateBooking", sl.s.CreateBooking(ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 1_000_000})) {
			continue
		}
		if rng.IntN(10) == 0 {
			_, err := sl.s.ReleaseBooking(ctx, b.ID, boxoffice.BookingReleased, time.Now())
			check("ReleaseBooking", err)
			continue
		}
		t1, t2 := sl.ids.Add(1), sl.ids.Add(1)
		_, err := sl.s.ConfirmBooking(ctx, boxoffice.ConfirmBooking{
			BookingID: b.ID, Fence: b.Fence, Now: time.Now(), Code: fmt.Sprint("C", id),
			Tickets: []boxoffice.Ticket{{ID: boxoffice.ID(t1), SeatID: seats[0], Code: fmt.Sprint("T", t1)},
				{ID: boxoffice.ID(t2), SeatID: seats[1], Code: fmt.Sprint("T", t2)}},
			Payment: boxoffice.Payment{AuthID: fmt.Sprint("auth-", id), AmountCents: b.AmountCents},
		})
		if !check("ConfirmBooking", err) {
			continue
		}
		if rng.IntN(8) == 0 {
			_, err := sl.s.CancelBooking(ctx, boxoffice.CancelBooking{BookingID: b.ID, Now: time.Now()})
			check("CancelBooking", err)
		}
	}
}

// TestBackupUnderASale takes three backups while writers book, confirm,
// release and cancel: each is one consistent snapshot (it passes the
// integrity check and the audit, and holds between what was there before
// it started and after it ended), and one restored into a new file opens
// as a store with its events and bookings.
func TestBackupUnderASale(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "boxoffice.db")
	s := open(t, path)
	e := saleEvent(t, s, 1)
	db := rawDB(t, path)

	sl := startSale(t, s, e, 8)
	var backups []sqlite.BackupInfo
	for i := range 3 {
		time.Sleep(300 * time.Millisecond)
		before := countRows(t, db)
		to := filepath.Join(dir, fmt.Sprintf("backup-%d.db", i))
		info, err := sqlite.Backup(ctx, path, to)
		after := countRows(t, db)
		if err != nil {
			sl.stop()
			t.Fatalf("Backup %d: %v", i, err)
		}
		got := rowCounts{info.Events, info.Bookings, info.Tickets}
		t.Logf("backup %d: %d bytes in %s; before %+v, backup %+v, after %+v", i, info.Size, info.Took, before, got, after)
		if got.events != 1 || got.bookings < before.bookings || got.bookings > after.bookings ||
			got.tickets < before.tickets || got.tickets > after.tickets {
			t.Errorf("backup %d holds %+v, want between %+v and %+v", i, got, before, after)
		}
		if !info.Audit.OK() || len(info.Audit.Checks) != 6 {
			t.Errorf("backup %d audit: %+v", i, info.Audit)
		}
		if fi, err := os.Stat(to); err != nil || fi.Size() != info.Size || info.Path != to {
			t.Errorf("backup %d: %s is %v (%v), info says %s, %d bytes", i, to, fi, err, info.Path, info.Size)
		}
		// Checked again here, apart from Backup's own checks.
		if got := integrity(t, to); got != "ok" {
			t.Errorf("backup %d: integrity_check %q", i, got)
		}
		if r, err := sqlite.Audit(ctx, rawDB(t, to)); err != nil || !r.OK() {
			t.Errorf("backup %d: Audit = %+v, %v", i, r, err)
		}
		backups = append(backups, info)
	}
	time.Sleep(200 * time.Millisecond)
	sl.stop()
	final := countRows(t, db)
	t.Logf("the sale: %d bookings tried, final %+v", sl.writes.Load(), final)
	if final.tickets == 0 || backups[0].Bookings == final.bookings {
		t.Fatalf("the sale did not run beside the backups: first backup %d bookings, final %+v", backups[0].Bookings, final)
	}
	if r, err := sqlite.Audit(ctx, db); err != nil || !r.OK() {
		t.Errorf("the live database: Audit = %+v, %v", r, err)
	}
	var statuses []string
	rows, err := db.Query(`SELECT DISTINCT status FROM bookings ORDER BY status`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var st string
		rows.Scan(&st)
		statuses = append(statuses, st)
	}
	rows.Close()
	t.Logf("booking statuses in the sale: %v", statuses)

	// Restore the middle one into a file of its own and open it.
	b := backups[1]
	restored := filepath.Join(t.TempDir(), "restored.db")
	ri, err := sqlite.Restore(ctx, b.Path, restored, false)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if ri.Kept != "" || ri.Bookings != b.Bookings || ri.Tickets != b.Tickets || ri.Path != restored {
		t.Errorf("Restore = %+v, want the backup's counts %+v, nothing kept", ri, b)
	}
	s2 := open(t, restored)
	if got, err := s2.Event(ctx, e.ID); err != nil || got.Name != e.Name {
		t.Errorf("restored Event: %+v, %v", got, err)
	}
	rdb := rawDB(t, restored)
	if got := countRows(t, rdb); got != (rowCounts{b.Events, b.Bookings, b.Tickets}) {
		t.Errorf("restored database holds %+v, the backup %+v", got, b)
	}
	var id boxoffice.ID
	var status boxoffice.BookingStatus
	var tickets int
	if err := rdb.QueryRow(`SELECT id, status, (SELECT count(*) FROM tickets WHERE booking_id = bookings.id)
		FROM bookings WHERE status = 'confirmed' ORDER BY id DESC LIMIT 1`).Scan(&id, &status, &tickets); err != nil {
		t.Fatalf("a confirmed booking in the restored database: %v", err)
	}
	got, err := s2.Booking(ctx, id)
	if err != nil || got.Status != status || len(got.Tickets) != tickets || len(got.SeatIDs) != 2 {
		t.Errorf("restored Booking(%d) = %+v, %v; want %s with %d tickets", id, got, err, status, tickets)
	}
	// The restored store takes writes.
	if err := s2.CreateBooking(ctx, boxoffice.NewBooking{TicketLimit: 1000, Booking: &boxoffice.Booking{
		ID: 1, EventID: e.ID, UserID: "after", SeatIDs: []string{"A-A-1"}, Fence: 1,
		HeldUntil: time.Now().Add(time.Minute), CreatedAt: time.Now(),
	}}); err != nil && boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
		t.Errorf("CreateBooking on the restored store: %v", err)
	}
}

// integrity is PRAGMA integrity_check's first line for the file at path.
func integrity(t *testing.T, path string) string {
	t.Helper()
	var s string
	if err := rawDB(t, path).QueryRow(`PRAGMA integrity_check`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// smallDatabase makes a database at path with an event and one confirmed
// booking, and closes it.
func smallDatabase(t *testing.T, path string) {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := saleEvent(t, s, 1)
	confirmed(t, s, e, 10, "A-A-1")
}

// confirmed books seat for user "fan" as booking id and confirms it.
func confirmed(t *testing.T, s *sqlite.Store, e *boxoffice.Event, id boxoffice.ID, seat string) {
	t.Helper()
	ctx := t.Context()
	now := time.Now()
	if err := s.CreateBooking(ctx, boxoffice.NewBooking{TicketLimit: 1000, Booking: &boxoffice.Booking{
		ID: id, EventID: e.ID, UserID: "fan", SeatIDs: []string{seat}, Fence: int64(id), AmountCents: 4500,
		HeldUntil: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now,
	}}); err != nil {
		t.Fatalf("CreateBooking %d: %v", id, err)
	}
	if _, err := s.ConfirmBooking(ctx, boxoffice.ConfirmBooking{
		BookingID: id, Fence: int64(id), Now: now, Code: fmt.Sprint("C", id),
		Tickets: []boxoffice.Ticket{{ID: id + 1000, SeatID: seat, Code: fmt.Sprint("T", id)}},
		Payment: boxoffice.Payment{AuthID: fmt.Sprint("auth-", id), AmountCents: 4500},
	}); err != nil {
		t.Fatalf("ConfirmBooking %d: %v", id, err)
	}
}

// files lists dir's names, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestRestoreRefusesADatabaseInUse: while a store has the database open,
// even idle, Restore refuses it and changes nothing; once it is closed,
// Restore replaces it (only with force) and keeps the old one, with every
// commit of its WAL, beside it.
func TestRestoreRefusesADatabaseInUse(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "boxoffice.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	e := saleEvent(t, s, 1)
	confirmed(t, s, e, 10, "A-A-1")
	bk := filepath.Join(t.TempDir(), "backup.db")
	if _, err := sqlite.Backup(ctx, path, bk); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	// After the backup: in the old database only.
	confirmed(t, s, e, 20, "A-A-2")

	before := files(t, dir)
	if _, err := sqlite.Restore(ctx, bk, path, true); !errors.Is(err, sqlite.ErrInUse) {
		t.Fatalf("Restore while the store is open: %v, want ErrInUse", err)
	}
	if got := files(t, dir); !slices.Equal(got, before) {
		t.Errorf("files after the refused restore: %v, want %v", got, before)
	}
	// The store is unharmed: it still reads and writes.
	confirmed(t, s, e, 30, "A-A-3")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	if _, err := sqlite.Restore(ctx, bk, path, false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("Restore over a database without force: %v, want a refusal", err)
	}
	ri, err := sqlite.Restore(ctx, bk, path, true)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if !strings.HasPrefix(ri.Kept, path+".before-restore-") {
		t.Errorf("Kept = %q", ri.Kept)
	}
	// Nothing of the old database's WAL may be left beside the new one.
	if got, want := files(t, dir), []string{"boxoffice.db", filepath.Base(ri.Kept)}; !slices.Equal(got, want) {
		t.Errorf("files after the restore: %v, want %v", got, want)
	}
	has := func(path string, ids ...boxoffice.ID) []bool {
		s := open(t, path)
		var out []bool
		for _, id := range ids {
			_, err := s.Booking(ctx, id)
			if err != nil && boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
				t.Fatal(err)
			}
			out = append(out, err == nil)
		}
		return out
	}
	if got := has(path, 10, 20, 30); !slices.Equal(got, []bool{true, false, false}) {
		t.Errorf("restored database has bookings 10, 20, 30: %v, want only 10 (the backup's)", got)
	}
	if got := has(ri.Kept, 10, 20, 30); !slices.Equal(got, []bool{true, true, true}) {
		t.Errorf("the kept database has bookings 10, 20, 30: %v, want all (its WAL checkpointed into it)", got)
	}
}

// TestRestoreRefusesABadBackup: a backup with flipped bytes, one of a newer
// schema, or a file that is not a boxoffice database is refused, and the
// database and its directory are left exactly as they were.
func TestRestoreRefusesABadBackup(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "boxoffice.db")
	smallDatabase(t, path)
	good := filepath.Join(t.TempDir(), "good.db")
	if _, err := sqlite.Backup(ctx, path, good); err != nil {
		t.Fatal(err)
	}
	goodBytes, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	if len(goodBytes)%page != 0 || len(goodBytes) < 4*page {
		t.Fatalf("backup of %d bytes: want whole pages of %d, several", len(goodBytes), page)
	}

	for _, tc := range []struct {
		name string
		bad  func(t *testing.T, path string)
		want string
	}{
		{"header flipped", func(t *testing.T, path string) {
			flip(t, path, 0, 16)
		}, "not a readable SQLite database"},
		{"a page flipped", func(t *testing.T, path string) {
			flip(t, path, int64(len(goodBytes)/page/2*page), page)
		}, ""},
		{"the last page flipped", func(t *testing.T, path string) {
			flip(t, path, int64(len(goodBytes)-page), page)
		}, ""},
		{"truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, int64(len(goodBytes)-page)); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"a newer schema", func(t *testing.T, path string) {
			if _, err := rawDB(t, path).Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future', 0)`); err != nil {
				t.Fatal(err)
			}
		}, "newer than this binary's"},
		{"not boxoffice's", func(t *testing.T, path string) {
			if _, err := rawDB(t, path).Exec(`DROP TABLE schema_migrations`); err != nil {
				t.Fatal(err)
			}
		}, "not a boxoffice database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "bad.db")
			if err := os.WriteFile(bad, goodBytes, 0o600); err != nil {
				t.Fatal(err)
			}
			tc.bad(t, bad)
			before, hash := files(t, dir), fileHash(t, path)
			_, err := sqlite.Restore(ctx, bad, path, true)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore of a bad backup: %v, want a refusal with %q", err, tc.want)
			}
			t.Logf("refused: %v", err)
			if got := files(t, dir); !slices.Equal(got, before) || fileHash(t, path) != hash {
				t.Errorf("after the refusal: files %v (were %v), database changed: %v", got, before, fileHash(t, path) != hash)
			}
		})
	}
	// The good one is accepted.
	if _, err := sqlite.Restore(ctx, good, path, true); err != nil {
		t.Errorf("Restore of the good backup: %v", err)
	}
}

// flip inverts n bytes of the file at path from off.
func flip(t *testing.T, path string, off int64, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] ^= 0xff
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestBackupNeverOverwrites: an existing target is refused, and a missing
// database is not created.
func TestBackupNeverOverwrites(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "boxoffice.db")
	smallDatabase(t, path)
	to := filepath.Join(dir, "exists.db")
	if err := os.WriteFile(to, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := files(t, dir)
	if _, err := sqlite.Backup(ctx, path, to); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("Backup onto an existing file: %v", err)
	}
	if b, _ := os.ReadFile(to); !bytes.Equal(b, []byte("keep me")) {
		t.Errorf("the existing file was changed: %q", b)
	}
	if _, err := sqlite.Backup(ctx, filepath.Join(dir, "missing.db"), filepath.Join(dir, "new.db")); err == nil {
		t.Error("Backup of a missing database succeeded")
	}
	if got := files(t, dir); !slices.Equal(got, before) {
		t.Errorf("files: %v, want %v", got, before)
	}
}

// TestBackupRefusesADatabaseThatFailsTheAudit: a copy that fails the audit
// is not kept.
func TestBackupRefusesADatabaseThatFailsTheAudit(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "boxoffice.db")
	smallDatabase(t, path)
	if _, err := rawDB(t, path).Exec(`UPDATE payments SET amount_cents = amount_cents + 1`); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(dir, "backup.db")
	_, err := sqlite.Backup(ctx, path, to)
	if err == nil || !strings.Contains(err.Error(), "every payment is the booking's amount") {
		t.Errorf("Backup: %v, want the audit's refusal", err)
	}
	if _, err := os.Stat(to); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after a refused backup: %v", to, err)
	}
	for _, name := range files(t, dir) {
		if !strings.HasPrefix(name, "boxoffice.db") {
			t.Errorf("file left: %s", name)
		}
	}
}

// TestRestoreKeepsTheCommitsOfALeftoverWAL: a database whose process died
// (here, its files copied while it was open) has commits only in its WAL.
// The kept file must have them, and no WAL may stay beside the new one.
func TestRestoreKeepsTheCommitsOfALeftoverWAL(t *testing.T) {
	ctx := t.Context()
	live := filepath.Join(t.TempDir(), "boxoffice.db")
	s := open(t, live)
	e := saleEvent(t, s, 1)
	confirmed(t, s, e, 10, "A-A-1")
	bk := filepath.Join(t.TempDir(), "backup.db")
	if _, err := sqlite.Backup(ctx, live, bk); err != nil {
		t.Fatal(err)
	}
	confirmed(t, s, e, 20, "A-A-2")

	dir := t.TempDir()
	path := filepath.Join(dir, "boxoffice.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(live + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the crashed copy has no WAL: %v, %v", fi, err)
	}
	ri, err := sqlite.Restore(ctx, bk, path, true)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got, want := files(t, dir), []string{"boxoffice.db", filepath.Base(ri.Kept)}; !slices.Equal(got, want) {
		t.Errorf("files after the restore: %v, want %v", got, want)
	}
	kept := open(t, ri.Kept)
	if _, err := kept.Booking(ctx, 20); err != nil {
		t.Errorf("booking 20, only in the WAL, in the kept database: %v", err)
	}
	restored := open(t, path)
	if _, err := restored.Booking(ctx, 20); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		t.Errorf("booking 20 in the restored database: %v, want ENOTFOUND", err)
	}
}
