package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/snowflake"
)

// archiveShows are the starts of a January and a February show two years
// ahead of the real clock: past the legacy partition, which ends the month
// after the migration ran, so each gets a month partition of its own.
func archiveShows() (jan, feb time.Time) {
	y := time.Now().UTC().Year() + 2
	return time.Date(y, 1, 10, 19, 0, 0, 0, time.UTC), time.Date(y, 2, 10, 19, 0, 0, 0, time.UTC)
}

// archiveStore is a fresh Store whose clock reads March 1st of the shows'
// year: both shows are over.
func archiveStore(t *testing.T) *postgres.Store {
	t.Helper()
	s := newStore(t)
	_, feb := archiveShows()
	now := time.Date(feb.Year(), 3, 1, 0, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	return s
}

// createShow writes an event starting at start, 2 rows of 4 seats (A-A-1
// .. A-B-4), its id minted as the catalog does: the show's start in its
// time bits. A queued show gets a draw seed (an event_draws row).
func createShow(t *testing.T, s *postgres.Store, start time.Time, mode boxoffice.SaleMode) *boxoffice.Event {
	t.Helper()
	e := &boxoffice.Event{
		ID: snowflake.OnDay(newID(), start), Name: "Show " + start.Format("Jan"), Venue: "Hall",
		StartsAt: start, SaleOpensAt: start.AddDate(0, -1, 0), SaleMode: mode, TicketLimit: 4,
		CreatedAt: start.AddDate(0, -2, 0),
		Sections:  []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 5000, Rows: 2, SeatsPerRow: 4}},
	}
	if mode == boxoffice.SaleQueued {
		e.DrawSeed = boxoffice.NewDrawSeed()
	}
	if err := s.CreateEvent(context.Background(), e); err != nil {
		t.Fatalf("CreateEvent: %v", err)
	}
	return e
}

// confirmedBooking creates and confirms a booking of seats by user.
func confirmedBooking(t *testing.T, s *postgres.Store, e *boxoffice.Event, user string, seats ...string) *boxoffice.Booking {
	t.Helper()
	b := createBooking(t, s, e, user, 1, seats...)
	out, err := s.ConfirmBooking(context.Background(), confirmation(b))
	if err != nil {
		t.Fatalf("ConfirmBooking: %v", err)
	}
	return out
}

// eventState is everything the store's readers say of one event.
type eventState struct {
	Event    *boxoffice.Event
	Bookings []*boxoffice.Booking
	Tickets  []*boxoffice.Ticket
	Payments []*boxoffice.Payment
	Sold     []string
	Draw     *boxoffice.Draw
	Returns  []boxoffice.SeatReturn
	Queue    map[boxoffice.ID]boxoffice.QueueRecord
}

// readState reads e and its bookings (and their tickets and payments),
// failing the test on any error.
func readState(t *testing.T, s *postgres.Store, e *boxoffice.Event, bookings []*boxoffice.Booking, requests []boxoffice.ID) eventState {
	t.Helper()
	ctx := context.Background()
	var st eventState
	var err error
	if st.Event, err = s.Event(ctx, e.ID); err != nil {
		t.Fatalf("Event: %v", err)
	}
	for _, b := range bookings {
		got, err := s.Booking(ctx, b.ID)
		if err != nil {
			t.Fatalf("Booking %s: %v", b.ID, err)
		}
		st.Bookings = append(st.Bookings, got)
		for _, tk := range got.Tickets {
			ticket, err := s.Ticket(ctx, tk.ID)
			if err != nil {
				t.Fatalf("Ticket %s: %v", tk.ID, err)
			}
			st.Tickets = append(st.Tickets, ticket)
		}
		if got.Status == boxoffice.BookingConfirmed {
			p, err := s.Payment(ctx, b.ID)
			if err != nil {
				t.Fatalf("Payment %s: %v", b.ID, err)
			}
			st.Payments = append(st.Payments, p)
		}
	}
	if st.Sold, err = s.SoldSeats(ctx, e.ID); err != nil {
		t.Fatalf("SoldSeats: %v", err)
	}
	if e.SaleMode == boxoffice.SaleQueued {
		if st.Draw, err = s.Draw(ctx, e.ID); err != nil {
			t.Fatalf("Draw: %v", err)
		}
	}
	st.Returns = eventReturns(t, s, e.ID)
	if st.Queue, err = s.QueueRecords(ctx, requests); err != nil {
		t.Fatalf("QueueRecords: %v", err)
	}
	return st
}

func eventReturns(t *testing.T, s *postgres.Store, eventID boxoffice.ID) []boxoffice.SeatReturn {
	t.Helper()
	all, err := s.PendingReturns(context.Background(), 1000)
	if err != nil {
		t.Fatalf("PendingReturns: %v", err)
	}
	var rs []boxoffice.SeatReturn
	for _, r := range all {
		if r.EventID == eventID {
			rs = append(rs, r)
		}
	}
	return rs
}

func suffixes(t *testing.T, s *postgres.Store) []string {
	t.Helper()
	ps, err := s.Partitions(context.Background())
	if err != nil {
		t.Fatalf("Partitions: %v", err)
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.Suffix)
	}
	return out
}

func wantErrorCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if boxoffice.ErrorCode(err) != code {
		t.Fatalf("%s: got %v, want %s", what, err, code)
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestArchiveAndRestorePartition archives January's partition (bookings,
// tickets, payments, a draw, a seat return and a queue outcome of its
// event), checks it is gone and February's untouched, refuses February
// (its show is not over), and restores January to what it was.
func TestArchiveAndRestorePartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := archiveStore(t)
	janStart, febStart := archiveShows()
	before := time.Date(febStart.Year(), 2, 1, 0, 0, 0, 0, time.UTC)

	jan := createShow(t, s, janStart, boxoffice.SaleQueued)
	b1 := confirmedBooking(t, s, jan, "ann", seat(1), seat(2))
	b2 := confirmedBooking(t, s, jan, "bob", seat(3))
	b3 := createBooking(t, s, jan, "cat", 1, seat(4))
	if _, err := s.ReleaseBooking(ctx, b3.ID, boxoffice.BookingReleased, t0.Add(2*time.Minute)); err != nil {
		t.Fatalf("ReleaseBooking: %v", err) // writes a seat return
	}
	request := newID()
	if _, err := s.RecordQueueOutcomes(ctx, []boxoffice.QueueRecord{{
		RequestID: request, EventID: jan.ID, UserID: "ann", Position: 1,
		QueueOutcome: boxoffice.QueueOutcome{Status: boxoffice.QueueHeld, BookingID: b1.ID, HeldUntil: t0.Add(10 * time.Minute), FinishedAt: t0},
	}}); err != nil {
		t.Fatalf("RecordQueueOutcomes: %v", err)
	}
	feb := createShow(t, s, febStart, boxoffice.SaleDirect)
	f1 := confirmedBooking(t, s, feb, "ann", seat(1))

	janBookings := []*boxoffice.Booking{b1, b2, b3}
	janBefore := readState(t, s, jan, janBookings, []boxoffice.ID{request})
	febBefore := readState(t, s, feb, []*boxoffice.Booking{f1}, nil)
	if len(janBefore.Returns) != 1 || len(janBefore.Queue) != 1 || len(janBefore.Sold) != 3 {
		t.Fatalf("fixture: %d returns, %d queue outcomes, %d seats sold; want 1, 1, 3", len(janBefore.Returns), len(janBefore.Queue), len(janBefore.Sold))
	}

	janSuffix, lo, hi := postgres.MonthPartition(jan.ID)
	febSuffix, _, _ := postgres.MonthPartition(feb.ID)
	ps, err := s.Partitions(ctx)
	if err != nil {
		t.Fatalf("Partitions: %v", err)
	}
	i := slices.IndexFunc(ps, func(p postgres.Partition) bool { return p.Suffix == janSuffix })
	if i < 0 {
		t.Fatalf("Partitions %+v: no %s", ps, janSuffix)
	}
	if p := ps[i]; p.Lo == nil || *p.Lo != lo || p.Hi != hi || p.Events != 1 || !p.LastShow.Equal(janStart) {
		t.Fatalf("partition %+v: want [%d, %d), 1 event, last show %s", p, lo, hi, janStart)
	}

	dir := t.TempDir()
	// Refused: February's show starts after before; before after now.
	_, err = s.ArchivePartition(ctx, febSuffix, dir, before)
	wantErrorCode(t, "archive February before its show", err, boxoffice.ECONFLICT)
	_, err = s.ArchivePartition(ctx, janSuffix, dir, s.Now().Add(time.Hour))
	wantErrorCode(t, "archive with before after now", err, boxoffice.EINVALID)
	_, err = s.ArchivePartition(ctx, "y1999m01", dir, before)
	wantErrorCode(t, "archive an unknown partition", err, boxoffice.ENOTFOUND)
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("refused archives left %v in the directory", left)
	}

	m, err := s.ArchivePartition(ctx, janSuffix, dir, before)
	if err != nil {
		t.Fatalf("ArchivePartition: %v", err)
	}
	out := filepath.Join(dir, janSuffix)
	if m.Dir != out || m.Suffix != janSuffix || m.Lo == nil || *m.Lo != lo || m.Hi != hi || m.Events != 1 {
		t.Fatalf("manifest %+v: want %s [%d, %d) with 1 event in %s", m, janSuffix, lo, hi, out)
	}
	wantRows := map[string]int64{
		"events": 1, "sections": 1, "seats": 8, "seat_holds": 0, "event_users": 3, "bookings": 3, "booking_seats": 4,
		"tickets": 3, "payments": 2, "listings": 0, "payouts": 0, "waitlist_entries": 0,
		"event_draws": 1, "seat_returns": 1, "queue_outcomes": 1,
	}
	var tables []string
	for _, tb := range m.Tables {
		tables = append(tables, tb.Table)
		if tb.Rows != wantRows[tb.Table] {
			t.Errorf("%s: %d rows archived, want %d", tb.Table, tb.Rows, wantRows[tb.Table])
		}
		if sum := fileSHA256(t, filepath.Join(out, tb.File)); sum != tb.SHA256 {
			t.Errorf("%s: SHA-256 %s, the manifest says %s", tb.File, sum, tb.SHA256)
		}
	}
	if want := append(slices.Clone(postgres.PartitionedTables), postgres.EventTables...); !slices.Equal(tables, want) {
		t.Fatalf("tables archived %v, want %v", tables, want)
	}
	var onDisk postgres.ArchiveManifest
	b, err := os.ReadFile(filepath.Join(out, postgres.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &onDisk); err != nil {
		t.Fatal(err)
	}
	onDisk.Dir = m.Dir
	if diff := cmp.Diff(m, &onDisk); diff != "" {
		t.Fatalf("manifest.json differs from the manifest returned (-returned +file):\n%s", diff)
	}

	// January is gone, all of it; February is as it was.
	_, err = s.Event(ctx, jan.ID)
	wantErrorCode(t, "Event after the archive", err, boxoffice.ENOTFOUND)
	for _, b := range janBookings {
		_, err = s.Booking(ctx, b.ID)
		wantErrorCode(t, "Booking after the archive", err, boxoffice.ENOTFOUND)
	}
	_, err = s.Ticket(ctx, janBefore.Tickets[0].ID)
	wantErrorCode(t, "Ticket after the archive", err, boxoffice.ENOTFOUND)
	_, err = s.Draw(ctx, jan.ID)
	wantErrorCode(t, "Draw after the archive", err, boxoffice.ENOTFOUND)
	if rs := eventReturns(t, s, jan.ID); len(rs) != 0 {
		t.Fatalf("seat returns after the archive: %v", rs)
	}
	if q, err := s.QueueRecords(ctx, []boxoffice.ID{request}); err != nil || len(q) != 0 {
		t.Fatalf("queue outcomes after the archive: %v, %v", q, err)
	}
	if got := suffixes(t, s); slices.Contains(got, janSuffix) || !slices.Contains(got, febSuffix) {
		t.Fatalf("partitions after the archive: %v", got)
	}
	if diff := cmp.Diff(febBefore, readState(t, s, feb, []*boxoffice.Booking{f1}, nil)); diff != "" {
		t.Fatalf("February changed (-before +after):\n%s", diff)
	}
	_, err = s.ArchivePartition(ctx, janSuffix, t.TempDir(), before)
	wantErrorCode(t, "archive January again", err, boxoffice.ENOTFOUND)

	// Back as it was; a second restore is refused.
	rm, err := s.RestorePartition(ctx, out)
	if err != nil {
		t.Fatalf("RestorePartition: %v", err)
	}
	if diff := cmp.Diff(m, rm); diff != "" {
		t.Fatalf("restore's manifest differs (-archive +restore):\n%s", diff)
	}
	if diff := cmp.Diff(janBefore, readState(t, s, jan, janBookings, []boxoffice.ID{request})); diff != "" {
		t.Fatalf("January restored differs (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(febBefore, readState(t, s, feb, []*boxoffice.Booking{f1}, nil)); diff != "" {
		t.Fatalf("February changed by the restore (-before +after):\n%s", diff)
	}
	_, err = s.RestorePartition(ctx, out)
	wantErrorCode(t, "restore over the restored partition", err, boxoffice.ECONFLICT)
	// The restored event takes bookings again: its keys and constraints
	// came back with it.
	confirmedBooking(t, s, jan, "dan", boxoffice.SeatID("A", "B", 1))
	again := booking(jan, "eve", 2, seat(1))
	err = s.CreateBooking(ctx, boxoffice.NewBooking{Booking: again, TicketLimit: jan.TicketLimit})
	if err == nil {
		_, err = s.ConfirmBooking(ctx, confirmation(again))
	}
	wantErrorCode(t, "sell a restored sold seat again", err, boxoffice.ESEATTAKEN)
}

// TestRestoreRefusesATamperedArchive changes one digit of a file (the CSV
// stays well-formed: only the hash can tell) and finds the restore
// refused with nothing changed; with the digit back, the archive restores.
func TestRestoreRefusesATamperedArchive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := archiveStore(t)
	janStart, _ := archiveShows()
	jan := createShow(t, s, janStart, boxoffice.SaleDirect)
	b := confirmedBooking(t, s, jan, "ann", seat(1), seat(2))
	want := readState(t, s, jan, []*boxoffice.Booking{b}, nil)
	suffix, _, _ := postgres.MonthPartition(jan.ID)
	m, err := s.ArchivePartition(ctx, suffix, t.TempDir(), janStart.Add(time.Hour))
	if err != nil {
		t.Fatalf("ArchivePartition: %v", err)
	}
	path := filepath.Join(m.Dir, "tickets.csv")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tampered := slices.Clone(orig)
	i := len(tampered) - 1
	for i >= 0 && (tampered[i] < '0' || tampered[i] > '8') {
		i--
	}
	tampered[i]++
	if err := os.WriteFile(path, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	partitionsBefore := suffixes(t, s)

	_, err = s.RestorePartition(ctx, m.Dir)
	wantErrorCode(t, "restore a tampered archive", err, boxoffice.EINVALID)
	if got := suffixes(t, s); !slices.Equal(got, partitionsBefore) {
		t.Fatalf("partitions after the refused restore: %v, want %v", got, partitionsBefore)
	}
	_, err = s.Event(ctx, jan.ID)
	wantErrorCode(t, "Event after the refused restore", err, boxoffice.ENOTFOUND)
	var absent bool
	if err := s.Transact(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT to_regclass($1) IS NULL`, "events_"+suffix).Scan(&absent)
	}); err != nil || !absent {
		t.Fatalf("events_%s after the refused restore: absent %v, %v", suffix, absent, err)
	}

	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RestorePartition(ctx, m.Dir); err != nil {
		t.Fatalf("RestorePartition of the untampered archive: %v", err)
	}
	if diff := cmp.Diff(want, readState(t, s, jan, []*boxoffice.Booking{b}, nil)); diff != "" {
		t.Fatalf("restored differs (-before +after):\n%s", diff)
	}
}

// TestRestoreRefusesAMonthMadeAgain archives a month, creates an event of
// that month again (the partition comes back, with a row) and finds the
// restore refused rather than mixed into it.
func TestRestoreRefusesAMonthMadeAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := archiveStore(t)
	janStart, _ := archiveShows()
	jan := createShow(t, s, janStart, boxoffice.SaleDirect)
	suffix, _, _ := postgres.MonthPartition(jan.ID)
	m, err := s.ArchivePartition(ctx, suffix, t.TempDir(), janStart.Add(time.Hour))
	if err != nil {
		t.Fatalf("ArchivePartition: %v", err)
	}
	late := createShow(t, s, janStart.Add(24*time.Hour), boxoffice.SaleDirect)
	_, err = s.RestorePartition(ctx, m.Dir)
	wantErrorCode(t, "restore over a month made again", err, boxoffice.ECONFLICT)
	if _, err := s.Event(ctx, late.ID); err != nil {
		t.Fatalf("the new event after the refused restore: %v", err)
	}
	_, err = s.Event(ctx, jan.ID)
	wantErrorCode(t, "the archived event after the refused restore", err, boxoffice.ENOTFOUND)
}

// TestArchiveLegacyPartition archives and restores the legacy partition,
// whose range starts at MINVALUE, on the real clock: a show of 2025 is in
// it. (Whether its range is over is the command's rule, not the store's.)
func TestArchiveLegacyPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	e := createShow(t, s, time.Date(2025, 6, 1, 20, 0, 0, 0, time.UTC), boxoffice.SaleDirect)
	b := confirmedBooking(t, s, e, "ann", seat(1))
	want := readState(t, s, e, []*boxoffice.Booking{b}, nil)
	ps, err := s.Partitions(ctx)
	if err != nil || len(ps) != 1 || ps[0].Suffix != "legacy" || ps[0].Lo != nil || ps[0].Events != 1 {
		t.Fatalf("Partitions: %+v, %v; want legacy alone, from MINVALUE, with the event", ps, err)
	}
	m, err := s.ArchivePartition(ctx, "legacy", t.TempDir(), time.Now())
	if err != nil {
		t.Fatalf("ArchivePartition: %v", err)
	}
	if m.Lo != nil || m.Hi != ps[0].Hi || m.Events != 1 {
		t.Fatalf("manifest: lo %v, hi %d, %d events; want nil, %d, 1", m.Lo, m.Hi, m.Events, ps[0].Hi)
	}
	_, err = s.Event(ctx, e.ID)
	wantErrorCode(t, "Event after the archive", err, boxoffice.ENOTFOUND)
	if _, err := s.RestorePartition(ctx, m.Dir); err != nil {
		t.Fatalf("RestorePartition: %v", err)
	}
	if diff := cmp.Diff(want, readState(t, s, e, []*boxoffice.Booking{b}, nil)); diff != "" {
		t.Fatalf("restored differs (-before +after):\n%s", diff)
	}
}
