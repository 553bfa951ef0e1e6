package faulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// result is one row of the table: a check (pass or fail) or, with Info,
// a fact the run observed.
type result struct {
	Name     string
	Pass     bool
	Info     bool
	Detail   string
	Evidence []string
}

func (r result) mark() string {
	switch {
	case r.Info:
		return "info"
	case r.Pass:
		return "PASS"
	}
	return "FAIL"
}

func sortStrings(s []string) { sort.Strings(s) }

func ids64(ids []string) []int64 {
	out := make([]int64, 0, len(ids))
	for _, s := range ids {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// since renders a time as an offset from the start of the load.
func since(t0, t time.Time) string { return fmt.Sprintf("+%.1fs", t.Sub(t0).Seconds()) }

// auditor runs the checks.
type auditor struct {
	ctx    context.Context
	db     *pgx.Conn
	top    *topology
	inj    *injector
	l      *load
	recs   []*rec
	finals map[string]*rec
	admin  string
	fresh  time.Time // the seat map must be built after this
}

// --- no seat with two valid tickets -------------------------------------

func (a *auditor) noDoubleSale() result {
	r := result{Name: "no seat with two valid tickets"}
	var valid, seats, dupTickets, dupConfirmed int
	err := a.db.QueryRow(a.ctx, `SELECT count(*), count(DISTINCT (event_id, seat_id)) FROM tickets WHERE status = 'valid'`).Scan(&valid, &seats)
	if err == nil {
		err = a.db.QueryRow(a.ctx, `SELECT count(*) FROM (SELECT 1 FROM tickets WHERE status = 'valid'
			GROUP BY event_id, seat_id HAVING count(*) > 1) d`).Scan(&dupTickets)
	}
	if err == nil {
		// Independent of the unique index: a seat in two confirmed bookings.
		err = a.db.QueryRow(a.ctx, `SELECT count(*) FROM (SELECT 1 FROM booking_seats s JOIN bookings b ON b.id = s.booking_id
			WHERE b.status = 'confirmed' GROUP BY s.event_id, s.seat_id HAVING count(*) > 1) d`).Scan(&dupConfirmed)
	}
	if err != nil {
		r.Detail = "query: " + err.Error()
		return r
	}
	if dupConfirmed > 0 {
		rows, _ := a.db.Query(a.ctx, `SELECT s.event_id, s.seat_id, array_agg(b.id ORDER BY b.id) FROM booking_seats s JOIN bookings b ON b.id = s.booking_id
			WHERE b.status = 'confirmed' GROUP BY s.event_id, s.seat_id HAVING count(*) > 1 LIMIT 5`)
		for rows != nil && rows.Next() {
			var ev int64
			var seat string
			var bs []int64
			_ = rows.Scan(&ev, &seat, &bs)
			r.Evidence = append(r.Evidence, fmt.Sprintf("event %d seat %s confirmed in bookings %v", ev, seat, bs))
		}
		if rows != nil {
			rows.Close()
		}
	}
	r.Pass = dupTickets == 0 && dupConfirmed == 0 && valid > 0
	r.Detail = fmt.Sprintf("valid tickets %d on %d seats; seats with 2+ valid tickets %d; seats in 2+ confirmed bookings %d", valid, seats, dupTickets, dupConfirmed)
	if valid == 0 {
		r.Detail += "; no ticket sold at all: the run exercised nothing"
	}
	return r
}

// --- every confirm answered 200 is still valid ----------------------------

func (a *auditor) confirmsValid() result {
	r := result{Name: "every 200 confirm still valid"}
	type answered struct {
		user    string
		tickets map[string]bool
		sets    map[string]bool
	}
	byBooking := map[string]*answered{}
	for _, x := range a.recs {
		if x.Op != "confirm" || x.Status != http.StatusOK {
			continue
		}
		b := byBooking[x.Booking]
		if b == nil {
			b = &answered{user: x.User, tickets: map[string]bool{}, sets: map[string]bool{}}
			byBooking[x.Booking] = b
		}
		ts := append([]string(nil), x.Tickets...)
		sort.Strings(ts)
		b.sets[strings.Join(ts, ",")] = true
		for _, t := range x.Tickets {
			b.tickets[t] = true
		}
	}
	ids := keys(byBooking)
	type brow struct {
		status, user string
		seats        int
	}
	store := map[int64]brow{}
	rows, err := a.db.Query(a.ctx, `SELECT b.id, b.status, b.user_id, (SELECT count(*) FROM booking_seats s WHERE s.booking_id = b.id)
		FROM bookings b WHERE b.id = ANY($1)`, ids64(ids))
	if err != nil {
		r.Detail = "query: " + err.Error()
		return r
	}
	for rows.Next() {
		var id int64
		var x brow
		_ = rows.Scan(&id, &x.status, &x.user, &x.seats)
		store[id] = x
	}
	rows.Close()
	var all []string
	for _, b := range byBooking {
		all = append(all, keys(b.tickets)...)
	}
	type trow struct {
		booking int64
		status  string
	}
	tickets := map[int64]trow{}
	rows, err = a.db.Query(a.ctx, `SELECT id, booking_id, status FROM tickets WHERE id = ANY($1)`, ids64(all))
	if err != nil {
		r.Detail = "query: " + err.Error()
		return r
	}
	for rows.Next() {
		var id int64
		var x trow
		_ = rows.Scan(&id, &x.booking, &x.status)
		tickets[id] = x
	}
	rows.Close()
	bad := map[string]int{}
	for _, id := range ids {
		b := byBooking[id]
		n, _ := strconv.ParseInt(id, 10, 64)
		s, ok := store[n]
		problem, cat := "", ""
		switch {
		case !ok:
			problem, cat = "booking not in the store", "missing"
		case s.status != "confirmed":
			problem, cat = "booking now "+s.status, "now "+s.status
		case s.user != b.user:
			problem, cat = "booking is "+s.user+"'s", "another user's"
		case len(b.sets) > 1:
			problem, cat = "confirms of one booking answered with different tickets", "different tickets"
		case len(b.tickets) != s.seats:
			problem, cat = fmt.Sprintf("%d tickets answered for %d seats", len(b.tickets), s.seats), "ticket count"
		}
		if problem == "" {
			for _, t := range keys(b.tickets) {
				tn, _ := strconv.ParseInt(t, 10, 64)
				tr, ok := tickets[tn]
				switch {
				case !ok:
					problem, cat = "ticket "+t+" not in the store", "ticket missing"
				case tr.booking != n:
					problem, cat = fmt.Sprintf("ticket %s belongs to booking %d", t, tr.booking), "ticket of another booking"
				case tr.status != "valid":
					problem, cat = "ticket "+t+" is "+tr.status, "ticket "+tr.status
				}
				if problem != "" {
					break
				}
			}
		}
		if problem != "" {
			bad[cat]++
			if len(r.Evidence) < 8 {
				r.Evidence = append(r.Evidence, fmt.Sprintf("booking %s (%s): %s", id, b.user, problem))
			}
		}
	}
	nBad := 0
	for _, n := range bad {
		nBad += n
	}
	r.Pass = nBad == 0 && len(ids) > 0
	r.Detail = fmt.Sprintf("bookings confirmed with a 200: %d, tickets answered %d; not valid now: %d %s", len(ids), len(all), nBad, counts(bad))
	if len(ids) == 0 {
		r.Detail += "; no confirm answered 200: the run exercised nothing"
	}
	return r
}

// --- a confirm that said nothing was charged did not charge --------------

// unchargedTruth looks at the bookings confirmed in the store that no
// confirm was answered 200 for. Where some answer was lost (no answer, a
// 500, a 409 in flight) the client cannot know; but where every answer said
// nothing was charged (402, 410, 503, a 409 conflict), the booking must not
// be confirmed.
func (a *auditor) unchargedTruth() result {
	r := result{Name: "no confirm said 'nothing charged' and charged"}
	answers := map[string][]*rec{}
	ok := map[string]bool{}
	for _, x := range a.recs {
		if x.Op != "confirm" {
			continue
		}
		answers[x.Booking] = append(answers[x.Booking], x)
		if x.Status == http.StatusOK {
			ok[x.Booking] = true
		}
	}
	rows, err := a.db.Query(a.ctx, `SELECT b.id FROM bookings b WHERE b.status = 'confirmed'`)
	if err != nil {
		r.Detail = "query: " + err.Error()
		return r
	}
	var unanswered []string
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		if b := strconv.FormatInt(id, 10); !ok[b] {
			unanswered = append(unanswered, b)
		}
	}
	rows.Close()
	sort.Strings(unanswered)
	why := map[string]int{}
	lied := 0
	for _, b := range unanswered {
		as := answers[b]
		unknown := len(as) == 0
		var seen []string
		for _, x := range as {
			switch {
			case x.Status == 0, x.Status == http.StatusInternalServerError, x.Code == "idempotency_in_flight":
				unknown = true
			}
			st := strconv.Itoa(x.Status)
			if x.Status == 0 {
				st = "no answer"
			}
			seen = append(seen, st)
		}
		switch {
		case len(as) == 0:
			why["never confirmed by the workload"]++
		case unknown:
			why["an answer was lost"]++
		default:
			why["every answer said nothing was charged"]++
			lied++
		}
		if !unknown || len(r.Evidence) < 3 {
			r.Evidence = append(r.Evidence, fmt.Sprintf("booking %s confirmed in the store; its confirms were answered %v", b, seen))
		}
	}
	r.Pass = lied == 0
	r.Detail = fmt.Sprintf("confirmed bookings no confirm was answered 200 for: %d %s", len(unanswered), counts(why))
	return r
}

// --- every 202 reaches a final status its owner can read -----------------

func (a *auditor) queueFinal() result {
	r := result{Name: "every 202 reaches a final status"}
	accepted := map[string]*rec{}
	for _, x := range a.recs {
		if x.Op == "reserve" && x.Status == http.StatusAccepted && accepted[x.RequestID] == nil {
			accepted[x.RequestID] = x
		}
	}
	var runs404 int
	lost := map[string]time.Time{}
	for _, x := range a.recs {
		if x.Op == "status" && x.Status == http.StatusNotFound && accepted[x.RequestID] != nil {
			runs404++
			if _, ok := lost[x.RequestID]; !ok {
				lost[x.RequestID] = x.Start
			}
		}
	}
	final := map[string]int{}
	for _, id := range keys(accepted) {
		f := a.finals[id]
		switch {
		case f == nil:
			final["unread"]++
		case f.Status == http.StatusOK && (f.QStatus == "held" || f.QStatus == "rejected"):
			final[f.QStatus]++
		case f.Status == http.StatusOK:
			final["still "+f.QStatus]++
		case f.Status == 0:
			final["no answer"]++
		default:
			final[strconv.Itoa(f.Status)]++
		}
	}
	// Which Redis outage each lost request sat through.
	outs := a.inj.outages("redis")
	byOutage := map[string]int{}
	for id, first404 := range lost {
		acc := accepted[id]
		tag := "no Redis outage between"
		for i, w := range outs {
			if acc.End.Before(w.From) && w.From.Before(first404) {
				tag = fmt.Sprintf("Redis outage #%d (%s, %s)", i+1, since(a.l.t0, w.From), map[bool]string{true: "before the delayed sale opened", false: "mid-sale"}[w.BeforeOpen])
			}
		}
		byOutage[acc.Kind+" request, 202 before "+tag]++
	}
	for _, k := range keys(byOutage) {
		r.Evidence = append(r.Evidence, fmt.Sprintf("%d ids answered 202 then 404: %s", byOutage[k], k))
	}
	for _, id := range keys(lost)[:min(3, len(lost))] {
		acc := accepted[id]
		fin := "none"
		if f := a.finals[id]; f != nil {
			fin = strconv.Itoa(f.Status) + " " + f.QStatus
		}
		r.Evidence = append(r.Evidence, fmt.Sprintf("e.g. request %s of %s (%s): 202 at %s (api%d), first 404 at %s, final read %s",
			id, acc.User, acc.Kind, since(a.l.t0, acc.End), acc.API+1, since(a.l.t0, lost[id]), fin))
	}
	ok := final["held"] + final["rejected"]
	r.Pass = runs404 == 0 && ok == len(accepted) && len(accepted) > 0
	r.Detail = fmt.Sprintf("202'd requests %d; final: %s; 404s during the run for 202'd ids: %d (on %d ids)",
		len(accepted), counts(final), runs404, len(lost))
	return r
}

// --- payments match tickets ---------------------------------------------

func (a *auditor) payments() result {
	r := result{Name: "payments match tickets"}
	var confirmed, noPayment, amount, ticketsOff, ticketsOfOthers int
	q := func(dst *int, sql string) {
		if err := a.db.QueryRow(a.ctx, sql).Scan(dst); err != nil && r.Detail == "" {
			r.Detail = "query: " + err.Error()
		}
	}
	q(&confirmed, `SELECT count(*) FROM bookings WHERE status = 'confirmed'`)
	q(&noPayment, `SELECT count(*) FROM bookings b WHERE b.status = 'confirmed' AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.booking_id = b.id)`)
	q(&amount, `SELECT count(*) FROM payments p JOIN bookings b ON b.id = p.booking_id WHERE p.amount_cents <> b.amount_cents`)
	q(&ticketsOff, `SELECT count(*) FROM bookings b WHERE b.status = 'confirmed' AND
		(SELECT count(*) FROM tickets t WHERE t.booking_id = b.id AND t.status = 'valid') <> (SELECT count(*) FROM booking_seats s WHERE s.booking_id = b.id)`)
	q(&ticketsOfOthers, `SELECT count(*) FROM tickets t JOIN bookings b ON b.id = t.booking_id WHERE t.status = 'valid' AND b.status <> 'confirmed'`)
	if r.Detail != "" {
		return r
	}
	notCaptured := map[string]int{}
	others := map[string]int{}
	rows, err := a.db.Query(a.ctx, `SELECT b.status, p.status, count(*) FROM payments p JOIN bookings b ON b.id = p.booking_id
		WHERE (b.status = 'confirmed') <> (p.status = 'captured') GROUP BY 1, 2`)
	if err != nil {
		r.Detail = "query: " + err.Error()
		return r
	}
	for rows.Next() {
		var bs, ps string
		var n int
		_ = rows.Scan(&bs, &ps, &n)
		if bs == "confirmed" {
			notCaptured[ps] += n
		} else {
			others[bs+"/"+ps] += n
		}
	}
	rows.Close()
	nc, no := 0, 0
	for _, n := range notCaptured {
		nc += n
	}
	for _, n := range others {
		no += n
	}
	r.Pass = noPayment == 0 && nc == 0 && no == 0 && amount == 0 && ticketsOff == 0 && ticketsOfOthers == 0 && confirmed > 0
	r.Detail = fmt.Sprintf("confirmed bookings %d; without payment %d; payment not captured %d %s; payments of bookings not confirmed %d %s; amount differs %d; confirmed with valid tickets != seats %d; valid tickets of bookings not confirmed %d",
		confirmed, noPayment, nc, counts(notCaptured), no, counts(others), amount, ticketsOff, ticketsOfOthers)
	return r
}

// --- available + held + sold = capacity; the seat map agrees ------------

func (a *auditor) seatMaps() result {
	r := result{Name: "seat counts and seat map agree"}
	var totalSold, totalValid, mismatched, badSums int
	var maxStale time.Duration
	for i, ev := range a.l.events {
		api := a.l.apis[i%len(a.l.apis)]
		// The organiser's numbers, from a snapshot built after quiescence:
		// the cache serves a stale copy while it rebuilds in the background.
		var stats struct {
			SeatCount int            `json:"seat_count"`
			Seats     map[string]int `json:"seats"`
			BuiltAt   time.Time      `json:"seat_map_built_at"`
		}
		var st int
		var b []byte
		first := true
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			st, b = getJSON(a.l.client, api+"/events/"+ev.ID+"/stats", a.admin)
			stats.Seats = nil // Unmarshal would merge into the last read's map
			ok := st == http.StatusOK && json.Unmarshal(b, &stats) == nil
			if ok && first {
				first = false
				if age := a.fresh.Sub(stats.BuiltAt); age > maxStale {
					maxStale = age
				}
			}
			if (ok && !stats.BuiltAt.Before(a.fresh)) || time.Now().After(deadline) {
				break
			}
		}
		if st != http.StatusOK || stats.BuiltAt.Before(a.fresh) {
			badSums++
			r.Evidence = append(r.Evidence, fmt.Sprintf("event %s stats: %d, seat map built %s (want after %s) %s", ev.ID, st,
				since(a.l.t0, stats.BuiltAt), since(a.l.t0, a.fresh), truncate(string(b), 200)))
			continue
		}
		sum := 0
		for _, n := range stats.Seats {
			sum += n
		}
		// The seat map.
		st, b = getJSON(a.l.client, api+"/events/"+ev.ID+"/seats", "")
		var sm struct {
			Seats []struct {
				SeatID string `json:"seat_id"`
				Status string `json:"status"`
			} `json:"seats"`
		}
		if st != http.StatusOK || json.Unmarshal(b, &sm) != nil {
			badSums++
			r.Evidence = append(r.Evidence, fmt.Sprintf("event %s seat map: %d %s", ev.ID, st, truncate(string(b), 200)))
			continue
		}
		byStatus := map[string]int{}
		sold := map[string]bool{}
		for _, s := range sm.Seats {
			byStatus[s.Status]++
			if s.Status == "sold" || s.Status == "resale" {
				sold[s.SeatID] = true
			}
		}
		valid := map[string]bool{}
		rows, err := a.db.Query(a.ctx, `SELECT seat_id FROM tickets WHERE event_id = $1 AND status = 'valid'`, ids64([]string{ev.ID})[0])
		if err != nil {
			r.Detail = "query: " + err.Error()
			return r
		}
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			valid[s] = true
		}
		rows.Close()
		var onlyMap, onlyDB []string
		for s := range sold {
			if !valid[s] {
				onlyMap = append(onlyMap, s)
			}
		}
		for s := range valid {
			if !sold[s] {
				onlyDB = append(onlyDB, s)
			}
		}
		known := byStatus["available"] + byStatus["held"] + byStatus["sold"] + byStatus["resale"]
		statsSold := stats.Seats["sold"] + stats.Seats["resale"]
		capOK := sum == ev.capacity() && stats.SeatCount == ev.capacity() && len(sm.Seats) == ev.capacity() && known == len(sm.Seats)
		if !capOK {
			badSums++
		}
		if len(onlyMap)+len(onlyDB) > 0 || statsSold != len(valid) {
			mismatched++
		}
		if !capOK || len(onlyMap)+len(onlyDB) > 0 || statsSold != len(valid) {
			sort.Strings(onlyMap)
			sort.Strings(onlyDB)
			r.Evidence = append(r.Evidence, fmt.Sprintf("event %s (%s, cycle %d, capacity %d): stats %s (sum %d, seat_count %d); map %s; valid tickets %d; sold in map only %d %v; valid ticket but not sold in map %d %v",
				ev.ID, ev.Kind, ev.Cycle, ev.capacity(), counts(stats.Seats), sum, stats.SeatCount, counts(byStatus), len(valid),
				len(onlyMap), onlyMap[:min(5, len(onlyMap))], len(onlyDB), onlyDB[:min(5, len(onlyDB))]))
		}
		totalSold += len(sold)
		totalValid += len(valid)
	}
	r.Pass = badSums == 0 && mismatched == 0 && len(a.l.events) > 0
	r.Detail = fmt.Sprintf("events %d; available+held+sold != capacity on %d; seat map sold %d vs valid tickets %d, events disagreeing %d (first read served a snapshot up to %.0fs old)",
		len(a.l.events), badSums, totalSold, totalValid, mismatched, maxStale.Seconds())
	return r
}

// --- one booking.confirmed per confirmed booking ------------------------

func (a *auditor) kafkaConfirmed(outboxLeft int) result {
	r := result{Name: "one booking.confirmed per confirmed booking"}
	confirmed := map[string]bool{}
	rows, err := a.db.Query(a.ctx, `SELECT id FROM bookings WHERE status = 'confirmed'`)
	if err != nil {
		r.Detail = "query: " + err.Error()
		return r
	}
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		confirmed[strconv.FormatInt(id, 10)] = true
	}
	rows.Close()
	recs, err := consumeAll(a.top.seeds, "booking.confirmed", 30*time.Second)
	if err != nil {
		r.Detail = "consume: " + err.Error()
		return r
	}
	seen := map[string]string{} // event id → booking id
	badID := 0
	for _, v := range recs {
		var e struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Booking struct {
				BookingID string `json:"booking_id"`
				Status    string `json:"status"`
			} `json:"booking"`
		}
		if err := json.Unmarshal(v, &e); err != nil || e.ID != "booking.confirmed:"+e.Booking.BookingID || e.Booking.Status != "confirmed" {
			badID++
			if len(r.Evidence) < 3 {
				r.Evidence = append(r.Evidence, "malformed record: "+truncate(string(v), 200))
			}
			continue
		}
		seen[e.ID] = e.Booking.BookingID
	}
	got := map[string]bool{}
	for _, b := range seen {
		got[b] = true
	}
	var missing, extra []string
	for b := range confirmed {
		if !got[b] {
			missing = append(missing, b)
		}
	}
	for b := range got {
		if !confirmed[b] {
			extra = append(extra, b)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		r.Evidence = append(r.Evidence, fmt.Sprintf("confirmed without an event: %v", missing[:min(5, len(missing))]))
	}
	if len(extra) > 0 {
		r.Evidence = append(r.Evidence, fmt.Sprintf("events for bookings not confirmed: %v", extra[:min(5, len(extra))]))
	}
	r.Pass = len(missing) == 0 && len(extra) == 0 && badID == 0 && len(confirmed) > 0
	r.Detail = fmt.Sprintf("confirmed bookings %d; records %d, distinct event ids %d (duplicates %d); missing %d; for bookings not confirmed %d; malformed %d; outbox rows unpublished %d",
		len(confirmed), len(recs), len(seen), len(recs)-badID-len(seen), len(missing), len(extra), badID, outboxLeft)
	return r
}

// consumeAll reads every record of topic from the start up to its end
// offsets at the time of the call.
func consumeAll(seeds, topic string, timeout time.Duration) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(seeds, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	var out [][]byte
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("read %d of %d records before the deadline", len(out), want)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r.Value) })
	}
	return out, nil
}

// --- no id handed to two requests ---------------------------------------

func (a *auditor) idsUnique() result {
	r := result{Name: "no id handed to two requests"}
	owner := map[string]string{}   // id → the request it was handed to
	given := map[string][]string{} // request → ids it was answered with
	when := map[string][]string{}
	kind := map[string]string{}
	conflicts := 0
	shown := map[string]bool{}
	claim := func(id, who, what string) {
		if id == "" {
			return
		}
		if prev, ok := owner[id]; ok && prev != who {
			if shown[id+"\x00"+who] {
				return // the same pair again (a retry, a poll)
			}
			shown[id+"\x00"+who] = true
			conflicts++
			if len(r.Evidence) < 8 {
				r.Evidence = append(r.Evidence, fmt.Sprintf("%s %s handed to %q and, as %s, to %q", kind[id], id, prev, what, who))
			}
			return
		}
		owner[id], kind[id] = who, what
	}
	reqOwner := map[string]string{}
	for _, x := range a.recs {
		who := "reserve " + x.User + " " + x.Key
		switch {
		case x.Op == "reserve" && x.Status == http.StatusCreated:
			claim(x.BookingID, who, "booking id")
			given[who] = append(given[who], x.BookingID)
			when[who] = append(when[who], fmt.Sprintf("%s at %s api%d replayed=%v", x.BookingID, since(a.l.t0, x.End), x.API+1, x.Replayed))
		case x.Op == "reserve" && x.Status == http.StatusAccepted:
			claim(x.RequestID, who, "request id")
			given[who] = append(given[who], x.RequestID)
			when[who] = append(when[who], fmt.Sprintf("%s at %s api%d replayed=%v", x.RequestID, since(a.l.t0, x.End), x.API+1, x.Replayed))
			reqOwner[x.RequestID] = who
		}
	}
	heldOther := 0
	for _, x := range a.recs {
		switch {
		case (x.Op == "status" || x.Op == "final") && x.QStatus == "held":
			if x.BookingID != x.RequestID {
				heldOther++
				if len(r.Evidence) < 8 {
					r.Evidence = append(r.Evidence, fmt.Sprintf("request %s held as booking %s", x.RequestID, x.BookingID))
				}
			}
			if w, ok := reqOwner[x.RequestID]; ok {
				claim(x.BookingID, w, "held booking id")
			}
		case x.Op == "confirm" && x.Status == http.StatusOK:
			if x.BookingID != x.Booking {
				heldOther++
			}
			for _, t := range x.Tickets {
				claim(t, "tickets of booking "+x.Booking, "ticket id")
			}
		}
	}
	twice := 0
	for who, ids := range given {
		distinct := map[string]bool{}
		for _, id := range ids {
			distinct[id] = true
		}
		if len(distinct) > 1 {
			twice++
			if len(r.Evidence) < 10 {
				r.Evidence = append(r.Evidence, fmt.Sprintf("%q answered with %d different ids: %s", who, len(distinct), strings.Join(when[who], "; ")))
			}
		}
	}
	n := map[string]int{}
	for _, k := range kind {
		n[k]++
	}
	r.Pass = conflicts == 0 && twice == 0 && heldOther == 0 && len(owner) > 0
	r.Detail = fmt.Sprintf("ids answered: %s; ids handed to two requests %d; one request answered with two ids %d; answers naming another booking %d",
		counts(n), conflicts, twice, heldOther)
	return r
}

// --- every booking answered is the requester's in the store -------------

func (a *auditor) bookingsInStore() result {
	r := result{Name: "answered bookings are the requester's"}
	type want struct{ user, event string }
	wants := map[string]want{}
	reqOf := map[string]*rec{}
	for _, x := range a.recs {
		if x.Op == "reserve" && x.Status == http.StatusAccepted {
			reqOf[x.RequestID] = x
		}
	}
	for _, x := range a.recs {
		switch {
		case x.Op == "reserve" && x.Status == http.StatusCreated:
			wants[x.BookingID] = want{x.User, x.Event}
		case (x.Op == "status" || x.Op == "final") && x.QStatus == "held" && reqOf[x.RequestID] != nil:
			wants[x.BookingID] = want{x.User, reqOf[x.RequestID].Event}
		}
	}
	ids := keys(wants)
	type row struct{ user, event string }
	store := map[string]row{}
	rows, err := a.db.Query(a.ctx, `SELECT id, user_id, event_id FROM bookings WHERE id = ANY($1)`, ids64(ids))
	if err != nil {
		r.Detail = "query: " + err.Error()
		return r
	}
	for rows.Next() {
		var id, ev int64
		var u string
		_ = rows.Scan(&id, &u, &ev)
		store[strconv.FormatInt(id, 10)] = row{u, strconv.FormatInt(ev, 10)}
	}
	rows.Close()
	bad := map[string]int{}
	for _, id := range ids {
		w, s := wants[id], store[id]
		p := ""
		switch {
		case s.user == "":
			p = "missing"
		case s.user != w.user:
			p = "another user's"
		case s.event != w.event:
			p = "another event's"
		}
		if p != "" {
			bad[p]++
			if len(r.Evidence) < 6 {
				r.Evidence = append(r.Evidence, fmt.Sprintf("booking %s answered to %s for event %s: in the store %q (user %q, event %q)", id, w.user, w.event, p, s.user, s.event))
			}
		}
	}
	nb := 0
	for _, n := range bad {
		nb += n
	}
	r.Pass = nb == 0 && len(ids) > 0
	r.Detail = fmt.Sprintf("bookings answered (201 or held) %d; not the requester's in the store %d %s", len(ids), nb, counts(bad))
	return r
}

// --- no 500 --------------------------------------------------------------

func (a *auditor) no500() result {
	r := result{Name: "no 500"}
	byOp := map[string]int{}
	other5xx := map[string]int{}
	var first []*rec
	for _, x := range a.recs {
		if x.Status == http.StatusInternalServerError {
			byOp[x.Op]++
			if len(first) < 5 {
				first = append(first, x)
			}
		} else if x.Status > 500 && x.Status != http.StatusServiceUnavailable {
			other5xx[x.Op+" "+strconv.Itoa(x.Status)]++
		}
	}
	n := 0
	for _, v := range byOp {
		n += v
	}
	// When they came, against the schedule.
	if n > 0 {
		near := map[string]int{}
		for _, x := range a.recs {
			if x.Status == http.StatusInternalServerError {
				near[a.nearestFault(x.Start)]++
			}
		}
		for _, k := range keys(near) {
			r.Evidence = append(r.Evidence, fmt.Sprintf("%d during/after %s", near[k], k))
		}
	}
	for _, x := range first {
		r.Evidence = append(r.Evidence, fmt.Sprintf("%s %s api%d %s: %s", since(a.l.t0, x.Start), x.Op, x.API+1, x.Booking, x.Body))
	}
	lines, perLog := a.top.grepLogs(regexp.MustCompile(`level=ERROR`), 3)
	if len(perLog) > 0 {
		r.Evidence = append(r.Evidence, "level=ERROR lines per log: "+counts(perLog))
		r.Evidence = append(r.Evidence, lines[:min(6, len(lines))]...)
	}
	r.Pass = n == 0 && len(other5xx) == 0
	r.Detail = fmt.Sprintf("500s %d %s; other 5xx but 503: %s", n, counts(byOp), counts(other5xx))
	return r
}

// nearestFault names the last fault executed at or before t.
func (a *auditor) nearestFault(t time.Time) string {
	a.inj.mu.Lock()
	defer a.inj.mu.Unlock()
	name := "start"
	for _, d := range a.inj.log {
		if a.l.t0.Add(d.When).After(t) {
			break
		}
		name = fmt.Sprintf("%s (+%.0fs)", d.Name, d.When.Seconds())
	}
	return name
}

// --- Redis outage: 503 with Retry-After ---------------------------------

func (a *auditor) redisOutage() result {
	r := result{Name: "Redis outage answered 503 + Retry-After"}
	outs := a.inj.outages("redis")
	total, good := 0, 0
	bad := map[string]int{}
	other := map[string]int{}
	for i, w := range outs {
		n, g := 0, 0
		for _, x := range a.recs {
			if x.Replay || x.Op == "final" || x.Op == "create" || x.Start.Before(w.From.Add(300*time.Millisecond)) || !x.Start.Before(w.To) {
				continue
			}
			if a.inj.down(a.top.apis[x.API].name, x.Start, x.End) || a.inj.down("postgres", x.Start, x.End) {
				continue // another fault answers for it
			}
			n++
			switch {
			case x.Status == http.StatusServiceUnavailable && x.RetryAfter:
				g++
			case x.Status == http.StatusServiceUnavailable:
				bad[x.Op+" 503 without Retry-After"]++
			case x.Status == http.StatusInternalServerError:
				bad[x.Op+" 500"]++
			case x.Status == 0 && x.Timeout:
				bad[x.Op+" no answer within "+clientTimeout.String()]++
			case x.Status == 0:
				bad[x.Op+" network error"]++
			case x.End.Before(w.To):
				other[x.Op+" "+strconv.Itoa(x.Status)]++
			default:
				other[x.Op+" "+strconv.Itoa(x.Status)+" after the restart"]++
			}
		}
		r.Evidence = append(r.Evidence, fmt.Sprintf("outage #%d %s..%s: %d requests, %d answered 503 with Retry-After",
			i+1, since(a.l.t0, w.From), since(a.l.t0, w.To), n, g))
		total += n
		good += g
	}
	nb := 0
	for _, n := range bad {
		nb += n
	}
	r.Pass = len(outs) > 0 && total > 0 && good > 0 && nb == 0
	r.Detail = fmt.Sprintf("outages %d; requests sent during them %d; 503+Retry-After %d; bad %d %s; other answers %s",
		len(outs), total, good, nb, counts(bad), counts(other))
	return r
}

// --- facts, not checks ---------------------------------------------------

func (a *auditor) workloadInfo() result {
	byOp := map[string]int{}
	for _, x := range a.recs {
		st := strconv.Itoa(x.Status)
		if x.Status == 0 {
			st = "neterr"
		}
		byOp[x.Op+":"+st]++
	}
	reasons := map[string]int{}
	for _, f := range a.finals {
		if f.QStatus == "rejected" {
			reasons[f.Reason]++
		}
	}
	return result{Name: "workload", Info: true, Detail: fmt.Sprintf("%d requests; %s; rejections by reason %s", len(a.recs), counts(byOp), counts(reasons))}
}

func (a *auditor) postgresInfo() result {
	r := result{Name: "answers during PostgreSQL outages", Info: true}
	if a.top.pg == nil {
		r.Detail = "no PostgreSQL faults: " + a.top.pgNote
		return r
	}
	by := map[string]int{}
	for _, w := range a.inj.outages("postgres") {
		for _, x := range a.recs {
			if x.Replay || x.Start.Before(w.From.Add(300*time.Millisecond)) || !x.Start.Before(w.To) {
				continue
			}
			st := strconv.Itoa(x.Status)
			if x.Status == 503 && !x.RetryAfter {
				st += "-no-Retry-After"
			}
			if x.Status == 0 {
				st = "neterr"
			}
			by[x.Op+":"+st]++
		}
	}
	r.Detail = counts(by)
	return r
}

var (
	startRE  = regexp.MustCompile(`^=== faulttest: (\S+) start #(\d+) at`)
	nodeIDRE = regexp.MustCompile(`msg=parts .*node_id=(\d+)`)
)

// nodeIDInfo lists the Snowflake node id each process incarnation took,
// and pairs of live incarnations that shared one.
func (a *auditor) nodeIDInfo() result {
	r := result{Name: "node ids of live processes", Info: true}
	type inc struct {
		name       string
		n          int
		node       string
		from, till time.Time
	}
	var incs []inc
	for _, p := range a.top.all() {
		b, err := os.ReadFile(p.logPath)
		if err != nil {
			continue
		}
		p.mu.Lock()
		starts, exits := append([]time.Time(nil), p.starts...), append([]time.Time(nil), p.exits...)
		p.mu.Unlock()
		cur := 0
		for _, line := range strings.Split(string(b), "\n") {
			if m := startRE.FindStringSubmatch(line); m != nil {
				cur, _ = strconv.Atoi(m[2])
			} else if m := nodeIDRE.FindStringSubmatch(line); m != nil && cur > 0 && cur <= len(starts) {
				till := time.Now()
				if cur <= len(exits) {
					till = exits[cur-1]
				}
				incs = append(incs, inc{p.name, cur, m[1], starts[cur-1], till})
			}
		}
	}
	var list []string
	for _, x := range incs {
		list = append(list, fmt.Sprintf("%s#%d=%s", x.name, x.n, x.node))
	}
	shared := 0
	for i := range incs {
		for j := i + 1; j < len(incs); j++ {
			x, y := incs[i], incs[j]
			if x.node == y.node && x.from.Before(y.till) && y.from.Before(x.till) {
				shared++
				from := x.from
				if y.from.After(from) {
					from = y.from
				}
				r.Evidence = append(r.Evidence, fmt.Sprintf("node id %s held by %s#%d and %s#%d, both alive from %s",
					x.node, x.name, x.n, y.name, y.n, since(a.l.t0, from)))
			}
		}
	}
	r.Detail = fmt.Sprintf("%s; pairs of live processes sharing a node id: %d", strings.Join(list, " "), shared)
	return r
}

// table renders the results.
func table(rs []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| check | result | counts |\n| --- | --- | --- |\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.Name, r.mark(), strings.ReplaceAll(r.Detail, "|", "/"))
	}
	return b.String()
}

func evidence(rs []result) string {
	var b strings.Builder
	for _, r := range rs {
		if len(r.Evidence) == 0 || (r.Pass && !r.Info) {
			continue
		}
		fmt.Fprintf(&b, "\n%s (%s):\n", r.Name, r.mark())
		for _, e := range r.Evidence {
			fmt.Fprintf(&b, "  - %s\n", e)
		}
	}
	return b.String()
}
