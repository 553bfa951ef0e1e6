package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/boxoffice/boxoffice"
)

// TestBackendsKilledMidCall terminates every backend of a store's pool, over
// and over, while 32 goroutines book, confirm, release and read: what a
// PostgreSQL restart or failover does to a live process. Every other time
// the connections are cut instead, without a word from the server (the
// store talks to the server through a proxy of the test's that closes
// them): what a crash or a network failure does, and where pgx reports
// "unexpected EOF" and "conn closed". Every error a
// store call returns must be EUNAVAILABLE (a 503 with Retry-After, which
// the client retries), never EINTERNAL; and nothing may be half-written:
// each booking has its seats, its held event and its idempotency record,
// each confirmed booking its tickets, its payment, its event and its
// record, and no ticket exists without its payment. A call whose commit
// was cut off may have committed all the same; its retry with the same
// idempotency key then finds the record (the sale layer replays it).
//
// Only the backends of this store's pool are terminated (by an
// application_name of its own), so tests and packages that share the
// server meanwhile are not touched.
func TestBackendsKilledMidCall(t *testing.T) {
	if testing.Short() {
		t.Skip("a fault test of a few seconds")
	}
	b := make([]byte, 6)
	rand.Read(b)
	app := "bo_fault_" + hex.EncodeToString(b)
	proxy := startCutProxy(t, serverURL(t))
	st := openStore(t, proxy.via(t, withParam(t, freshSchema(t), "application_name", app)))
	const workers = 32
	e := createEvent(t, st, workers, 200, 100)

	killer, err := pgx.Connect(context.Background(), serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(context.Background())
	// The storm lasts 3 s at a fault every 80 ms, and longer (up to 30 s)
	// until both a booking and a confirm went through. A confirm is a
	// transaction of four round trips on a fresh connection; on a machine
	// loaded by the rest of the suite, a reconnect and those round trips
	// can take longer than 80 ms every time, so past the 3 s the faults
	// come ever further apart (doubling, up to 1.3 s): still a storm, and
	// one a call can get through.
	deadline, hardCap := time.Now().Add(3*time.Second), time.Now().Add(30*time.Second)
	var createdOK, confirmedOK atomic.Int64
	running := func() bool {
		now := time.Now()
		return now.Before(deadline) || ((createdOK.Load() == 0 || confirmedOK.Load() == 0) && now.Before(hardCap))
	}
	var killed, cut atomic.Int64
	gap := 80 * time.Millisecond // only grows: read after the killer is done, the widest
	stop := make(chan struct{})
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		pause := func() bool {
			if time.Now().After(deadline) {
				gap = min(2*gap, 1280*time.Millisecond)
			}
			select {
			case <-stop:
				return false
			case <-time.After(gap):
				return true
			}
		}
		for round := 0; ; round++ {
			if round%2 == 1 {
				cut.Add(int64(proxy.cut()))
				if !pause() {
					return
				}
				continue
			}
			var n int64
			err := killer.QueryRow(context.Background(), `
				SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
				FROM pg_stat_activity
				WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()`,
				app).Scan(&n)
			if err != nil {
				t.Errorf("pg_terminate_backend: %v", err)
				return
			}
			killed.Add(n)
			if !pause() {
				return
			}
		}
	}()

	type outcome struct {
		b         *boxoffice.Booking
		created   error // nil: CreateBooking said it committed
		confirmed error // nil: ConfirmBooking said it committed; unset when not tried
		tried     bool
	}
	var (
		mu       sync.Mutex
		outcomes []*outcome
		errs     = map[string]int{} // code → count
		samples  = map[string]error{}
		calls    atomic.Int64
	)
	check := func(op string, err error) {
		calls.Add(1)
		if err == nil {
			return
		}
		code := boxoffice.ErrorCode(err)
		mu.Lock()
		defer mu.Unlock()
		errs[code]++
		if code != boxoffice.EUNAVAILABLE {
			t.Errorf("%s: %v (code %q), want %s", op, err, code, boxoffice.EUNAVAILABLE)
		}
		if _, ok := samples[err.Error()]; !ok && len(samples) < 12 {
			samples[err.Error()] = err
		}
	}
	idem := func(user, key string) *boxoffice.IdempotencyRecord {
		return &boxoffice.IdempotencyRecord{UserID: user, Key: key, RequestHash: "h-" + key, Outcome: boxoffice.OutcomeHeld,
			Body: []byte(`{}`), CreatedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)}
	}

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			row := boxoffice.RowLabel(w + 1)
			for n := 1; n <= 200 && running(); n++ {
				user := fmt.Sprintf("u%d-%d", w, n%10)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				bk := booking(e, user, 1, boxoffice.SeatID("A", row, n))
				o := &outcome{b: bk}
				o.created = st.CreateBooking(ctx, boxoffice.NewBooking{Booking: bk, TicketLimit: e.TicketLimit,
					Idempotency: idem(user, fmt.Sprintf("r-%d", bk.ID))})
				check("CreateBooking", o.created)
				if o.created == nil {
					createdOK.Add(1)
					switch n % 3 {
					case 0, 1:
						c := confirmation(bk)
						c.Idempotency = idem(user, fmt.Sprintf("c-%d", bk.ID))
						_, o.confirmed = st.ConfirmBooking(ctx, c)
						o.tried = true
						check("ConfirmBooking", o.confirmed)
						if o.confirmed == nil {
							confirmedOK.Add(1)
						}
					case 2:
						_, err := st.ReleaseBooking(ctx, bk.ID, boxoffice.BookingReleased, t0.Add(time.Minute))
						check("ReleaseBooking", err)
					}
				}
				_, err := st.SoldSeats(ctx, e.ID)
				check("SoldSeats", err)
				_, err = st.Booking(ctx, bk.ID)
				if boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
					check("Booking", err)
				}
				cancel()
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(stop)
	<-killerDone

	t.Logf("%d store calls, %d backends terminated, %d connections cut (faults at most %v apart), errors by code: %v",
		calls.Load(), killed.Load(), cut.Load(), gap, errs)
	for _, err := range samples {
		t.Logf("  e.g. %v", err)
	}
	if killed.Load() == 0 || cut.Load() == 0 || errs[boxoffice.EUNAVAILABLE] == 0 {
		t.Fatalf("the faults never hit a call (%d backends terminated, %d connections cut, errors %v): the test proves nothing",
			killed.Load(), cut.Load(), errs)
	}

	// The pool recovers by itself. The storm's last cut may leave dead
	// connections idle in the pool for less than a second, which pgxpool
	// hands out without a ping: each fails its first call (EUNAVAILABLE)
	// and is dropped, so at the latest once every pooled connection has
	// been tried, one goes through.
	ctx := context.Background()
	tries := int(st.Pool().Config().MaxConns) + 2
	for try := 1; ; try++ {
		_, err := st.SoldSeats(ctx, e.ID)
		if err == nil {
			break
		}
		if boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE || try == tries {
			t.Fatalf("SoldSeats after the storm, call %d: %v", try, err)
		}
	}
	// One call going through leaves the other dead connections in the
	// pool, each failing its first call: the checks below are of what was
	// written, so they read on fresh connections.
	st.Pool().Reset()

	// What a call reported as committed is there; what failed is either
	// all there or not at all, and a retry with its key finds out which.
	created, confirmed := 0, 0
	for _, o := range outcomes {
		got, err := st.Booking(ctx, o.b.ID)
		switch {
		case o.created == nil && err != nil:
			t.Errorf("booking %s: CreateBooking said committed, Booking: %v", o.b.ID, err)
			continue
		case o.created != nil:
			// The retry of the client, with the same key: a booking
			// whose commit went through after all is told so
			// (EIDEMINFLIGHT, the sale layer then replays the record);
			// one that did not commit is made now.
			rerr := st.CreateBooking(ctx, boxoffice.NewBooking{Booking: o.b, TicketLimit: e.TicketLimit,
				Idempotency: idem(o.b.UserID, fmt.Sprintf("r-%d", o.b.ID))})
			switch {
			case err == nil && boxoffice.ErrorCode(rerr) != boxoffice.EIDEMINFLIGHT:
				t.Errorf("booking %s committed under an error; its retry: %v, want EIDEMINFLIGHT", o.b.ID, rerr)
			case err != nil && rerr != nil:
				t.Errorf("booking %s did not commit; its retry: %v", o.b.ID, rerr)
			}
			continue
		}
		created++
		if o.tried && o.confirmed == nil {
			confirmed++
			if got.Status != boxoffice.BookingConfirmed || len(got.Tickets) != len(o.b.SeatIDs) {
				t.Errorf("booking %s: ConfirmBooking said committed, the booking is %s with %d tickets",
					o.b.ID, got.Status, len(got.Tickets))
			}
		}
		if o.tried && o.confirmed != nil {
			// The retry of the confirm: a confirmed booking answers with
			// its tickets, a pending one is confirmed now.
			c := confirmation(o.b)
			c.Idempotency = idem(o.b.UserID, fmt.Sprintf("c-%d", o.b.ID))
			if _, err := st.ConfirmBooking(ctx, c); err != nil {
				t.Errorf("booking %s: the confirm's retry: %v", o.b.ID, err)
			}
		}
	}
	if created == 0 || confirmed == 0 {
		t.Errorf("no progress under the fault: %d bookings created, %d confirmed", created, confirmed)
	}

	// Nothing half-written, whatever the calls said.
	for _, q := range []struct{ what, sql string }{
		{"bookings without their idempotency record", `
			SELECT count(*) FROM bookings b
			WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.user_id = b.user_id AND k.key = 'r-' || b.id)`},
		{"idempotency records of a reserve without their booking", `
			SELECT count(*) FROM idempotency_keys k
			WHERE k.key LIKE 'r-%' AND NOT EXISTS (SELECT 1 FROM bookings b WHERE 'r-' || b.id = k.key)`},
		{"bookings without their seats", `
			SELECT count(*) FROM bookings b WHERE NOT EXISTS (SELECT 1 FROM booking_seats s WHERE s.booking_id = b.id)`},
		{"bookings without their booking.held event", `
			SELECT count(*) FROM bookings b
			WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = 'booking.held:' || b.id)`},
		{"confirmed bookings without a payment", `
			SELECT count(*) FROM bookings b
			WHERE b.status = 'confirmed' AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.booking_id = b.id)`},
		{"confirmed bookings without a valid ticket per seat", `
			SELECT count(*) FROM bookings b
			WHERE b.status = 'confirmed'
			  AND (SELECT count(*) FROM tickets t WHERE t.booking_id = b.id AND t.status = 'valid')
			   <> (SELECT count(*) FROM booking_seats s WHERE s.booking_id = b.id)`},
		{"confirmed bookings without their confirm's idempotency record", `
			SELECT count(*) FROM bookings b
			WHERE b.status = 'confirmed'
			  AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.user_id = b.user_id AND k.key = 'c-' || b.id)`},
		{"confirmed bookings without their booking.confirmed event", `
			SELECT count(*) FROM bookings b
			WHERE b.status = 'confirmed'
			  AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = 'booking.confirmed:' || b.id)`},
		{"tickets without their payment", `
			SELECT count(*) FROM tickets t WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.booking_id = t.booking_id)`},
		{"tickets or payments of bookings that are not confirmed", `
			SELECT (SELECT count(*) FROM tickets t JOIN bookings b ON b.id = t.booking_id WHERE b.status <> 'confirmed')
			     + (SELECT count(*) FROM payments p JOIN bookings b ON b.id = p.booking_id WHERE b.status <> 'confirmed')`},
		{"released bookings without their booking.released event and seat return", `
			SELECT count(*) FROM bookings b
			WHERE b.status = 'released'
			  AND (NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = 'booking.released:' || b.id)
			       OR NOT EXISTS (SELECT 1 FROM seat_returns r WHERE r.booking_id = b.id))`},
	} {
		var n int
		if err := st.Pool().QueryRow(ctx, q.sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q.what, err)
		}
		if n != 0 {
			t.Errorf("%d %s", n, q.what)
		}
	}
}

// cutProxy forwards TCP connections to a PostgreSQL server and cuts them
// all on demand, both ways, without the server having a say.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

// startCutProxy starts a proxy to the server of the URL or DSN base.
func startCutProxy(t *testing.T, base string) *cutProxy {
	t.Helper()
	cfg, err := pgconn.ParseConfig(base)
	if err != nil {
		t.Fatalf("BOXOFFICE_TEST_POSTGRES: %v", err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		t.Skipf("the server is reached through a Unix socket (%s); the proxy speaks TCP", cfg.Host)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *cutProxy) serve(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		delete(p.conns, s)
		p.mu.Unlock()
		c.Close()
		s.Close()
	}()
	go func() { _, _ = io.Copy(s, c); s.Close(); c.Close() }()
	_, _ = io.Copy(c, s)
}

// cut closes every connection through the proxy and says how many it cut.
func (p *cutProxy) cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns) / 2 // each is two sockets, the store's and the server's
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	return n
}

// via returns the URL or DSN u with its host and port replaced by the
// proxy's.
func (p *cutProxy) via(tb testing.TB, u string) string {
	tb.Helper()
	host, port, _ := net.SplitHostPort(p.ln.Addr().String())
	if !strings.Contains(u, "://") {
		return u + " host=" + host + " port=" + port
	}
	pu, err := url.Parse(u)
	if err != nil {
		tb.Fatalf("BOXOFFICE_TEST_POSTGRES: %v", err)
	}
	pu.Host = net.JoinHostPort(host, port)
	return pu.String()
}

// withParam sets a connection parameter in a postgres:// URL or a
// key=value DSN.
func withParam(tb testing.TB, base, key, value string) string {
	tb.Helper()
	if !strings.Contains(base, "://") {
		return base + " " + key + "=" + value
	}
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("BOXOFFICE_TEST_POSTGRES: %v", err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
