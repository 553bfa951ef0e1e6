package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
)

// The reserve's hot statements read only the rows they are about (this
// user's, this event's seats), whatever plan the server picks: custom or
// generic (plan_cache_mode=force_generic_plan, what a prepared statement
// switches to after five executions), on an empty table and on one full of
// other users' live holds in this and other events, other months'
// partitions among them. The check counts the
// rows every scan node of EXPLAIN ANALYZE touched, so it holds for any
// plan, not one we expect.
func TestHotPathsReadOnlyTheirRows(t *testing.T) {
	// The second round must run the generic plans made on the young
	// tables. A CREATE or DROP SCHEMA anywhere in the database (any test's
	// freshSchema, of a package running alongside) makes every backend drop
	// every cached plan (an invalidation of pg_namespace does), and plans
	// made again on the full tables hide the young ones' faults: a run
	// whose generic plans changed between the rounds is run again.
	for attempt := 1; ; attempt++ {
		remade := hotPathsReadOnlyTheirRows(t)
		if len(remade) == 0 {
			return
		}
		if attempt == 5 {
			t.Fatalf("generic plans made again between the rounds in %d runs, lastly of %v: the young tables' plans were not checked", attempt, remade)
		}
		t.Logf("generic plans made again between the rounds (%v): once more", remade)
	}
}

// hotPathsReadOnlyTheirRows is one run of TestHotPathsReadOnlyTheirRows on
// a schema of its own; it returns the statements whose generic plan
// changed between the rounds.
func hotPathsReadOnlyTheirRows(t *testing.T) (remade []string) {
	s := newStore(t)
	ctx := context.Background()
	// Each event in a month of its own: a partition each (0010).
	ev := createEventShowing(t, s, showMonth(3), 50, 100, 8) // 5,000 seats
	others := []int64{}
	for i := range 3 {
		others = append(others, int64(createEventShowing(t, s, showMonth(i), 20, 100, 8).ID))
	}
	// An event whose month has no ticket yet when the statements are
	// prepared, as at a sale's opening: the plans made then must still
	// probe its seats once the month fills (a seat probe chose
	// tickets_user, scanned whole, before migration 0012).
	fresh := createEventShowing(t, s, showMonth(5), 20, 100, 8)
	// Every statement that takes an event is asked about it too. Filled
	// before LargeTable: fan-n bought seat n (rows A to O, 1,500 confirmed
	// bookings, 3000000000+n); fans 1 to 500 each hold one more seat of
	// rows P to T (3000001500+n, pending, live, fence 2), which a lapsed
	// hold of another user claimed first (3000002000+n, fence 1).
	f := int64(fresh.ID)
	hold1, hold2 := int64(3000001501), int64(3000001502)
	holdSeats := []string{boxoffice.SeatID("A", "P", 1), boxoffice.SeatID("A", "P", 2)}
	// The user's own rows: one pending booking of two seats, one sold seat.
	mine := createBooking(t, s, ev, "me", 1, seat(1), seat(2))
	sold := createBooking(t, s, ev, "me", 2, seat(3))
	if _, err := s.ConfirmBooking(ctx, confirmation(sold)); err != nil {
		t.Fatal(err)
	}

	statements := []struct {
		name string
		sql  string
		args []any
		// limit is how many rows the statement may touch in all: "me"
		// has 2 bookings, 3 booking seats and 1 ticket.
		limit int
	}{
		{"per-user limit", postgres.UserSeatsSQL, []any{int64(ev.ID), "me", t0}, 12},
		// fan-1's own rows: a ticket, two bookings (one pending), its one
		// seat; none of the event's other 2,498 bookings or 1,499 tickets.
		{"per-user limit of a fresh event", postgres.UserSeatsSQL, []any{f, "fan-1", t0}, 4},
		// Four seats asked (four rows of unnest), at most one ticket each.
		{"sold seats", postgres.SoldSeatsSQL, []any{int64(ev.ID), []string{seat(3), seat(4), seat(50), seat(99)}}, 8},
		// Fans 3 and 4's seats and fan-1's held one, unsold: whichever
		// index a plan takes, no ticket stops its scan early.
		{"sold seats of a fresh event", postgres.SoldSeatsSQL, []any{f, []string{seat(3), seat(4), holdSeats[0]}}, 6},
		// The seat map's rebuild reads the event's valid tickets and
		// nothing else: at most 2,001 of them below (never a loop over
		// the layout, which a join with the seats became on a young event).
		{"seat map: sold seats", postgres.EventSoldSeatsSQL, []any{int64(ev.ID)}, 2001},
		{"seat map: sold seats of a fresh event", postgres.EventSoldSeatsSQL, []any{f}, 1500},
		// The batched CreateBookings' reads, for two (event, user) pairs,
		// two keys, two ids, four seats: each a probe per row asked.
		{"batch: add event users", postgres.EnsureEventUsersSQL,
			[]any{[]int64{int64(ev.ID), int64(ev.ID)}, []string{"me", "new"}}, 6},
		{"batch: add event users of a fresh event", postgres.EnsureEventUsersSQL,
			[]any{[]int64{f, f}, []string{"fan-1", "new"}}, 4},
		{"batch: lock event users", postgres.LockEventUsersSQL,
			[]any{[]int64{int64(ev.ID), int64(ev.ID)}, []string{"me", "new"}}, 6}, // the subquery's rows count too
		// Both rows found among the fresh event's 2,001: fan-1's is the
		// partition's first (the add above wrote it), lapsed-500's its
		// last, so no scan of it finds both early.
		{"batch: lock event users of a fresh event", postgres.LockEventUsersSQL,
			[]any{[]int64{f, f}, []string{"fan-1", "lapsed-500"}}, 6},
		{"batch: per-user limits", postgres.UsersSeatsSQL,
			[]any{[]int64{int64(ev.ID), int64(ev.ID)}, []string{"me", "new"}, []time.Time{t0, t0}}, 14},
		// Two rows of unnest, then fan-1's four rows (above) and fan-2's,
		// alike. (Users alike: EXPLAIN gives a count per loop, rounded.)
		{"batch: per-user limits of a fresh event", postgres.UsersSeatsSQL,
			[]any{[]int64{f, f}, []string{"fan-1", "fan-2"}, []time.Time{t0, t0}}, 10},
		{"batch: known keys", postgres.KnownKeysSQL, []any{[]string{"me", "new"}, []string{"k1", "k2"}}, 4},
		{"batch: idempotency records", postgres.IdempotenciesSQL, []any{[]string{"me", "new"}, []string{"k1", "k2"}}, 6},
		{"batch: known bookings", postgres.KnownBookingsSQL, []any{[]int64{1000000001, 42}, []int64{int64(ev.ID), int64(ev.ID)}}, 4},
		// Two ids, both found (a batch tried again): one row each.
		{"batch: known bookings of a fresh event", postgres.KnownBookingsSQL, []any{[]int64{hold1, hold2}, []int64{f, f}}, 4},
		{"batch: seat facts", postgres.SeatFactsSQL,
			[]any{[]int64{int64(ev.ID), int64(ev.ID), int64(ev.ID), int64(ev.ID)}, []string{seat(3), seat(4), seat(50), seat(99)}}, 16},
		{"batch: seat facts of a fresh event", postgres.SeatFactsSQL,
			[]any{[]int64{int64(fresh.ID), int64(fresh.ID)}, []string{seat(3), seat(4)}}, 8},
		// The confirm's reads: the booking by its id alone (one probe of
		// each month's id index, then its two seats), and the fencing
		// check over its two seats' other claims (one other hold each
		// below) with a primary-key probe of each claimant.
		{"confirm: lock the booking", postgres.LockBookingSQL, []any{int64(mine.ID)}, 4},
		// Bookings read by their ids alone (Booking, group-read), with an
		// id that has none: two rows of unnest, one probe of each month's
		// id index per id, then the booking's index entry, its row and
		// its two seats.
		{"booking by id", postgres.BookingsByIDSQL, []any{[]int64{int64(mine.ID), 42}}, 6},
		// fan-1's hold and lapsed-1's: the same for two, one seat each.
		{"booking by id of a fresh event", postgres.BookingsByIDSQL, []any{[]int64{hold1, 3000002001}}, 8},
		// The same with the event named: one partition's primary key.
		{"confirm: lock the booking of its event", postgres.LockBookingOfEventSQL, []any{int64(ev.ID), int64(mine.ID)}, 4},
		// fan-1's hold and its one seat.
		{"confirm: lock the booking of a fresh event", postgres.LockBookingOfEventSQL, []any{f, hold1}, 2},
		{"confirm: fencing check", postgres.FencingSQL,
			[]any{int64(ev.ID), mine.SeatIDs, int64(mine.ID), t0, int64(1)}, 12},
		// fan-1's seat: its own claim, the lapsed one and that one's
		// booking, none of the event's other 2,498 claims.
		{"confirm: fencing check of a fresh event", postgres.FencingSQL,
			[]any{f, holdSeats[:1], hold1, t0, int64(2)}, 3},
		// The same for a batch of confirms: the booking and another id
		// (one probe each), the two seats' other claims.
		{"confirms: lock the bookings", postgres.LockBookingsSQL,
			[]any{[]int64{int64(ev.ID), int64(ev.ID)}, []int64{int64(mine.ID), 42}}, 6},
		// fan-1's and fan-2's holds: two rows of unnest, of the subquery,
		// two bookings, their two seats.
		{"confirms: lock the bookings of a fresh event", postgres.LockBookingsSQL,
			[]any{[]int64{f, f}, []int64{hold1, hold2}}, 8},
		{"confirms: fencing checks", postgres.FencingManySQL,
			[]any{[]int64{int64(ev.ID), int64(ev.ID)}, mine.SeatIDs, []int64{int64(mine.ID), int64(mine.ID)},
				[]time.Time{t0, t0}, []int64{1, 1}, []int64{0, 0}}, 12},
		// Their confirms in one batch: two rows of unnest, then per seat
		// the three rows of the fencing check above.
		{"confirms: fencing checks of a fresh event", postgres.FencingManySQL,
			[]any{[]int64{f, f}, holdSeats, []int64{hold1, hold2},
				[]time.Time{t0, t0}, []int64{2, 2}, []int64{0, 1}}, 8},
		// A confirm's capture: one probe of its event's partition, the
		// sold booking's payment found (by the booking alone it probed
		// every month's index).
		{"capture: mark captured", postgres.MarkCapturedSQL, []any{int64(sold.ID), t0, int64(sold.EventID)}, 1},
	}
	// Two sessions, one per plan cache mode; each prepares the statements
	// on the young table and keeps them, as a pooled connection does, so
	// the second round runs plans made before the table filled up.
	type session struct {
		conn    *pgxpool.Conn
		generic bool
	}
	var sessions []session
	for _, generic := range []bool{false, true} {
		conn, err := s.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Release() })
		mode := "auto"
		if generic {
			mode = "force_generic_plan"
		}
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Exec(context.Background(), "RESET plan_cache_mode; DEALLOCATE ALL") })
		for i, st := range statements {
			if _, err := conn.Exec(ctx, fmt.Sprintf("PREPARE hot_%d AS %s", i, st.sql)); err != nil {
				t.Fatal(err)
			}
		}
		sessions = append(sessions, session{conn, generic})
	}
	shapes := map[int]string{} // the generic plans of the first round
	explain := func(t *testing.T) {
		t.Helper()
		for _, ss := range sessions {
			for i, st := range statements {
				var plan []byte
				q := fmt.Sprintf("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE hot_%d(%s)", i, literals(st.args))
				if err := ss.conn.QueryRow(ctx, q).Scan(&plan); err != nil {
					t.Fatal(err)
				}
				if ss.generic {
					if was, ok := shapes[i]; !ok {
						shapes[i] = planShape(t, plan)
					} else if planShape(t, plan) != was {
						remade = append(remade, st.name)
					}
				}
				touched, scans := rowsTouched(t, plan)
				t.Logf("%s (generic=%v): %d rows touched by %v", st.name, ss.generic, touched, scans)
				if touched > st.limit {
					t.Errorf("%s (generic=%v) touched %d rows, want at most %d: %v", st.name, ss.generic, touched, st.limit, scans)
				}
			}
		}
	}
	t.Run("EmptyTable", explain)

	// Other users' live holds: 2,000 in this event, 3,000 in others,
	// each of one seat, all pending and unexpired; and their tickets.
	_, err := s.Pool().Exec(ctx, `
		WITH b AS (
		    INSERT INTO bookings (id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at)
		    SELECT 1000000000 + g, CASE WHEN g <= 2000 THEN $1 ELSE ($2::bigint[])[1 + g % 3] END,
		           'other-' || g, 'pending', 1, 5000, $3::timestamptz + interval '1 hour', $3, $3
		    FROM generate_series(1, 5000) g
		    RETURNING id, event_id)
		INSERT INTO booking_seats (booking_id, position, event_id, seat_id)
		SELECT id, 0, event_id, 'A-' || chr(65 + ((id - 1000000000) / 100)::int % 20) || '-' || (1 + (id - 1000000000) % 100)
		FROM b`, int64(ev.ID), others, t0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Pool().Exec(ctx, `
		INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at)
		SELECT 2000000000 + s.booking_id, s.event_id, s.booking_id, s.seat_id, b.user_id, 'code-' || s.booking_id, 'valid', $1
		FROM booking_seats s JOIN bookings b ON b.id = s.booking_id
		WHERE s.event_id = $2 AND b.user_id <> 'me'
		ON CONFLICT DO NOTHING`, t0, int64(ev.ID))
	if err != nil {
		t.Fatal(err)
	}
	// The fresh event's sale (see fresh above): 1,500 tickets sold, one
	// booking each; 500 live holds of fans; 500 lapsed holds on the same
	// seats.
	_, err = s.Pool().Exec(ctx, `
		WITH x AS (
		    SELECT g, CASE WHEN g > 2000 THEN g - 500 ELSE g END AS n FROM generate_series(1, 2500) g),
		b AS (
		    INSERT INTO bookings (id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at)
		    SELECT 3000000000 + g, $1,
		           CASE WHEN g <= 2000 THEN 'fan-' || (1 + (g - 1) % 1500) ELSE 'lapsed-' || (g - 2000) END,
		           CASE WHEN g <= 1500 THEN 'confirmed' ELSE 'pending' END,
		           CASE WHEN g <= 2000 THEN 2 ELSE 1 END, 5000,
		           $2::timestamptz + CASE WHEN g <= 2000 THEN interval '1 hour' ELSE interval '-1 minute' END, $2, $2
		    FROM x
		    RETURNING id),
		s AS (
		    INSERT INTO booking_seats (booking_id, position, event_id, seat_id)
		    SELECT 3000000000 + g, 0, $1, 'A-' || chr(65 + (n - 1) / 100) || '-' || (1 + (n - 1) % 100)
		    FROM x
		    RETURNING booking_id, event_id, seat_id)
		INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at)
		SELECT 4000000000 + s.booking_id, s.event_id, s.booking_id, s.seat_id, 'fan-' || (s.booking_id - 3000000000), 'code-' || s.booking_id, 'valid', $2
		FROM s WHERE s.booking_id <= 3000001500`, f, t0)
	if err != nil {
		t.Fatal(err)
	}
	// Every user who booked has their (event, user) row, as a booking
	// writes it, in the order of their first booking.
	_, err = s.Pool().Exec(ctx, `
		INSERT INTO event_users (event_id, user_id)
		SELECT event_id, user_id FROM bookings GROUP BY event_id, user_id ORDER BY min(id)
		ON CONFLICT DO NOTHING`)
	if err != nil {
		t.Fatal(err)
	}
	// And a payment authorized for each of them.
	_, err = s.Pool().Exec(ctx, `
		INSERT INTO payments (event_id, booking_id, auth_id, amount_cents, status, created_at)
		SELECT event_id, id, 'auth-' || id, amount_cents, 'authorized', $1
		FROM bookings WHERE user_id <> 'me'`, t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("LargeTable", explain)
	return remade
}

// literals writes args as SQL literals for EXECUTE (test constants only).
func literals(args []any) string {
	out := ""
	for i, a := range args {
		if i > 0 {
			out += ", "
		}
		switch v := a.(type) {
		case time.Time:
			out += "'" + v.Format(time.RFC3339Nano) + "'"
		case string:
			out += "'" + v + "'"
		case []string:
			out += "ARRAY['" + strings.Join(v, "','") + "']"
		case []int64:
			out += "ARRAY" + strings.ReplaceAll(fmt.Sprint(v), " ", ",") + "::bigint[]"
		case []time.Time:
			var ts []string
			for _, x := range v {
				ts = append(ts, x.Format(time.RFC3339Nano))
			}
			out += "ARRAY['" + strings.Join(ts, "','") + "']::timestamptz[]"
		default:
			out += fmt.Sprint(v)
		}
	}
	return out
}

// rowsTouched sums, over the scan nodes of an EXPLAIN (ANALYZE, FORMAT
// JSON) plan, the rows each returned plus those it read and filtered out.
func rowsTouched(t *testing.T, raw []byte) (int, []string) {
	t.Helper()
	var plans []struct {
		Plan node `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plans); err != nil {
		t.Fatal(err)
	}
	total := 0
	var scans []string
	var walk func(n node)
	walk = func(n node) {
		if len(n.Type) > 4 && n.Type[len(n.Type)-4:] == "Scan" {
			loops := max(n.Loops, 1)
			// Every count EXPLAIN gives is per loop.
			total += int((n.Rows + n.Filtered + n.Recheck) * loops)
			scans = append(scans, n.Type+" "+n.Relation+" "+n.Index)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(plans[0].Plan)
	return total, scans
}

// planShape is the plan of an EXPLAIN (FORMAT JSON) without its figures:
// its nodes, the relations and indexes they scan.
func planShape(t *testing.T, raw []byte) string {
	t.Helper()
	var plans []struct {
		Plan node `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plans); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(n node)
	walk = func(n node) {
		fmt.Fprintf(&b, "(%s %s %s", n.Type, n.Relation, n.Index)
		for _, c := range n.Plans {
			walk(c)
		}
		b.WriteString(")")
	}
	walk(plans[0].Plan)
	return b.String()
}

type node struct {
	Type     string  `json:"Node Type"`
	Relation string  `json:"Relation Name"`
	Index    string  `json:"Index Name"`
	Rows     float64 `json:"Actual Rows"`
	Loops    float64 `json:"Actual Loops"`
	Filtered float64 `json:"Rows Removed by Filter"`
	Recheck  float64 `json:"Rows Removed by Index Recheck"`
	Plans    []node  `json:"Plans"`
}
