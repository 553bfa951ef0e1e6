package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sqlite"
)

// backupFixture writes an embedded database in data/boxoffice.db as serve
// would: an event and a confirmed booking.
func backupFixture(t *testing.T, data string) *boxoffice.Event {
	t.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx, filepath.Join(data, "boxoffice.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	e := &boxoffice.Event{
		ID: 1, Name: "Backed up", Venue: "Hall", StartsAt: now.Add(24 * time.Hour), SaleOpensAt: now.Add(-time.Hour),
		SaleMode: boxoffice.SaleDirect, TicketLimit: 4, CreatedAt: now,
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 5000, Rows: 1, SeatsPerRow: 10}},
	}
	if err := s.CreateEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	bookConfirmed(t, s, 10, "A-A-1")
	return e
}

func bookConfirmed(t *testing.T, s *sqlite.Store, id boxoffice.ID, seat string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	if err := s.CreateBooking(ctx, boxoffice.NewBooking{TicketLimit: 4, Booking: &boxoffice.Booking{
		ID: id, EventID: 1, UserID: "fan", SeatIDs: []string{seat}, Fence: int64(id), AmountCents: 5000,
		HeldUntil: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now,
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConfirmBooking(ctx, boxoffice.ConfirmBooking{
		BookingID: id, Fence: int64(id), Now: now, Code: "C" + id.String(),
		Tickets: []boxoffice.Ticket{{ID: id + 100, SeatID: seat, Code: "T" + id.String()}},
		Payment: boxoffice.Payment{AuthID: "auth-" + id.String(), AmountCents: 5000},
	}); err != nil {
		t.Fatal(err)
	}
}

// TestBackupAndRestoreCommands runs the commands end to end: a backup of
// the database in --data (and, through BOXOFFICE_DATA, a second one), a
// restore over a database that moved on since (refused without --force,
// the old one kept with it), and a restore into a new data directory.
func TestBackupAndRestoreCommands(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	backupFixture(t, data)
	noEnv := func(string) string { return "" }
	cmd := func(getenv func(string) string, args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(ctx, args, getenv, &out, &errOut)
		return out.String(), err
	}

	bk := filepath.Join(dir, "backup.db")
	out, err := cmd(noEnv, "backup", "--data", data, "--to", bk)
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	t.Logf("backup:\n%s", out)
	for _, want := range []string{"backed up " + filepath.Join(data, "boxoffice.db") + " to " + bk,
		"1 events, 1 bookings, 1 tickets", "integrity ok", "audit ok (6 checks)", "- no seat with two valid tickets"} {
		if !strings.Contains(out, want) {
			t.Errorf("backup printed %q, want %q in it", out, want)
		}
	}
	if _, err := cmd(noEnv, "backup", "--data", data, "--to", bk); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("backup onto an existing file: %v", err)
	}
	bk2 := filepath.Join(dir, "backup2.db")
	env := func(k string) string {
		if k == "BOXOFFICE_DATA" {
			return data
		}
		return ""
	}
	if _, err := cmd(env, "backup", "--to", bk2); err != nil {
		t.Errorf("backup with BOXOFFICE_DATA: %v", err)
	}

	// The database moves on after the backup.
	s, err := sqlite.Open(ctx, filepath.Join(data, "boxoffice.db"))
	if err != nil {
		t.Fatal(err)
	}
	bookConfirmed(t, s, 20, "A-A-2")
	if _, err := cmd(noEnv, "restore", "--data", data, "--from", bk, "--force"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("restore while the store is open: %v, want in use", err)
	}
	s.Close()
	if _, err := cmd(noEnv, "restore", "--data", data, "--from", bk); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("restore over a database without --force: %v, want a pointer to --force", err)
	}
	out, err = cmd(noEnv, "restore", "--data", data, "--from", bk, "--force")
	if err != nil {
		t.Fatalf("restore --force: %v", err)
	}
	t.Logf("restore:\n%s", out)
	for _, want := range []string{"restored " + bk, "1 events, 1 bookings, 1 tickets", "audit ok", "kept as " + filepath.Join(data, "boxoffice.db.before-restore-")} {
		if !strings.Contains(out, want) {
			t.Errorf("restore printed %q, want %q in it", out, want)
		}
	}
	s, err = sqlite.Open(ctx, filepath.Join(data, "boxoffice.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Booking(ctx, 10); err != nil {
		t.Errorf("booking 10 after the restore: %v", err)
	}
	if _, err := s.Booking(ctx, 20); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		t.Errorf("booking 20, made after the backup, after the restore: %v, want ENOTFOUND", err)
	}
	s.Close()

	// A new data directory needs no --force.
	fresh := filepath.Join(dir, "fresh")
	if out, err := cmd(noEnv, "restore", "--data", fresh, "--from", bk2); err != nil || strings.Contains(out, "kept as") {
		t.Errorf("restore into a new directory: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(fresh, "boxoffice.db")); err != nil {
		t.Error(err)
	}
}

// TestBackupRestoreFlags: bad or missing flags fail before any file is
// touched.
func TestBackupRestoreFlags(t *testing.T) {
	dir := t.TempDir()
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"backup", "--data", dir}, "--to is required"},
		{[]string{"backup", "--data", dir, "--to", "x.db", "extra"}, "unexpected arguments"},
		{[]string{"backup", "--data", "", "--to", "x.db"}, "--data may not be empty"},
		{[]string{"backup", "--data", dir, "--to", filepath.Join(dir, "x.db")}, "no embedded database to back up"},
		{[]string{"backup", "--bogus"}, "flag provided but not defined"},
		{[]string{"restore", "--data", dir}, "--from is required"},
		{[]string{"restore", "--data", dir, "--from", "x.db", "extra"}, "unexpected arguments"},
		{[]string{"restore", "--data", dir, "--from", filepath.Join(dir, "missing.db")}, "no such file"},
		{[]string{"restore", "--data", dir, "--from", "x.db", "--force=maybe"}, "invalid boolean"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tc.args, noEnv, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error with %q", tc.args, err, tc.want)
		}
	}
	if got, _ := os.ReadDir(dir); len(got) != 0 {
		t.Errorf("files made by the failed commands: %v", got)
	}
}
