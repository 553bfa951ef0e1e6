package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/snowflake"
)

// TestArchiveFlags: bad or missing flags fail before any database is
// opened (the URL here leads nowhere).
func TestArchiveFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	tomorrow := time.Now().UTC().AddDate(0, 0, 2).Format(time.DateOnly)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"archive", "--postgres", "postgres://nowhere", "--before", "2026-13-01", "--to", "d"}, "not a day"},
		{[]string{"archive", "--postgres", "postgres://nowhere", "--before", "01/02/2026", "--to", "d"}, "not a day"},
		{[]string{"archive", "--postgres", "postgres://nowhere", "--to", "d"}, "--before is required"},
		{[]string{"archive", "--before", "2026-01-01", "--to", "d"}, "--postgres is required"},
		{[]string{"archive", "--postgres", "postgres://nowhere", "--before", "2026-01-01"}, "--to is required"},
		{[]string{"archive", "--postgres", "postgres://nowhere", "--before", tomorrow, "--to", "d"}, "in the future"},
		{[]string{"archive", "--postgres", "postgres://nowhere", "--before", "2026-01-01", "--to", "d", "extra"}, "unexpected arguments"},
		{[]string{"archive", "restore", "--postgres", "postgres://nowhere"}, "--from is required"},
		{[]string{"archive", "restore", "--from", "d"}, "--postgres is required"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tc.args, noEnv, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestArchiveRestoreCommand restores, through the command, a partition the
// store archived (on a clock two years ahead: the command's is the real
// one, which no month partition is over by yet), then lists it, kept, in
// a dry run.
func TestArchiveRestoreCommand(t *testing.T) {
	pgURL, _, db := productionEnv(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	show := time.Date(time.Now().UTC().Year()+2, 1, 10, 19, 0, 0, 0, time.UTC)
	st.Now = func() time.Time { return show.AddDate(0, 1, 0) }
	e := &boxoffice.Event{
		ID: snowflake.OnDay(1, show), Name: "Show", Venue: "Hall", StartsAt: show, SaleOpensAt: show.AddDate(0, -1, 0),
		SaleMode: boxoffice.SaleDirect, TicketLimit: 4, CreatedAt: show.AddDate(0, -2, 0),
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 5000, Rows: 1, SeatsPerRow: 3}},
	}
	if err := st.CreateEvent(ctx, e); err != nil {
		t.Fatalf("CreateEvent: %v", err)
	}
	suffix, _, _ := postgres.MonthPartition(e.ID)
	m, err := st.ArchivePartition(ctx, suffix, t.TempDir(), show.Add(time.Hour))
	if err != nil {
		t.Fatalf("ArchivePartition: %v", err)
	}

	noEnv := func(string) string { return "" }
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"archive", "restore", "--postgres", pgURL, "--from", m.Dir}, noEnv, &out, &errOut); err != nil {
		t.Fatalf("archive restore: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"restored partition " + suffix, "1 events", "seats", "3 rows"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("archive restore printed %q, want %q in it", out.String(), want)
		}
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM events WHERE id = $1`, int64(e.ID)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the event after the restore: %d rows, %v", n, err)
	}

	out.Reset()
	today := time.Now().UTC().Format(time.DateOnly)
	if err := run(ctx, []string{"archive", "--postgres", pgURL, "--before", today, "--dry-run"}, noEnv, &out, &errOut); err != nil {
		t.Fatalf("archive --dry-run: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"partition " + suffix, "keep: its range ends after --before", "dry run: 0 of 2 partitions"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("archive --dry-run printed %q, want %q in it", out.String(), want)
		}
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM event_partitions`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("partitions after the dry run: %d, %v", n, err)
	}
}
