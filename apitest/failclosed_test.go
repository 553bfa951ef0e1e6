package apitest

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/redis"
)

// ownRedis runs a redis-server of the test's own on a free loopback port.
type ownRedis struct {
	t    *testing.T
	port int
	cmd  *exec.Cmd
}

func startOwnRedis(t *testing.T, port int) *ownRedis {
	t.Helper()
	if port == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	r := &ownRedis{t: t, port: port}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *ownRedis) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := r.cmd.Start(); err != nil {
		if isCI() {
			r.t.Fatalf("redis-server: %v", err)
		}
		r.t.Skipf("redis-server: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", r.addr()); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatal("own redis-server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *ownRedis) stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

func (r *ownRedis) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

func isCI() bool { return envOr("CI", "") == "true" }

// TestRedisDownFailsClosedAndRecovers storms reservations while the lock
// store is killed and restarted: while it is down every reserve and
// confirm answers 503 with Retry-After and problem+json, nothing is sold
// twice, reads of sold seats keep working, and when Redis is back the same
// process serves again without a restart.
func TestRedisDownFailsClosedAndRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	pgURL := envOr("BOXOFFICE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	admin, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		unreachable(t, "PostgreSQL", err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	store := openSchemaStore(t, admin, pgURL, "failclosed_")

	rs := startOwnRedis(t, 0)
	client, err := redis.Dial("redis://" + rs.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	s := NewStack(t, Parts{Store: store, Holds: redis.NewHolds(client, "fc:"), Leases: redis.NewLeases(client, "fc:"), Shared: redis.NewSnapshots(client, "fc:"),
		Advance: time.Sleep, HoldTTL: time.Minute, SeatmapTTL: time.Second})
	ev := s.newEvent(t, eventBody(s, section{"H", "hot", 1000, 100, 10}))

	// Sell one seat while Redis is up.
	alice := s.client(t, "alice", "")
	sold := alice.mustReserve(ev, "H-A-1")
	if r := alice.confirm(sold.BookingID, "tok_visa", "a"); r.Status != 200 {
		t.Fatalf("confirm before the outage: %d %s", r.Status, r.Body)
	}
	pending := alice.mustReserve(ev, "H-A-2")

	var stop atomic.Bool
	var wg sync.WaitGroup
	var ok, unavailable atomic.Int32
	var confirmedMu sync.Mutex
	confirmedSeats := map[string]int{"H-A-1": 1}
	var next atomic.Int32 // the next fresh seat; a 503 retries the same one
	for w := range 8 {
		wg.Go(func() {
			n := next.Add(1)
			for i := 0; !stop.Load(); i++ {
				// A fresh user and seat after every answer but a 503 (rows
				// B on; row A is the test's own), so a 201 stays possible.
				c := s.client(t, fmt.Sprintf("storm-%d-%d", w, i), "")
				seat := fmt.Sprintf("H-%s-%d", boxoffice.RowLabel(2+int(n)/10%99), 1+int(n)%10)
				r := c.reserve(ev, fmt.Sprintf("w%d-%d", w, i), seat)
				switch r.Status {
				case http.StatusCreated:
					ok.Add(1)
					var res reserved
					r.decode(t, &res)
					if cr := c.confirm(res.BookingID, "tok_visa", fmt.Sprintf("cw%d-%d", w, i)); cr.Status == 200 {
						confirmedMu.Lock()
						confirmedSeats[seat]++
						confirmedMu.Unlock()
					} else if cr.Status == http.StatusServiceUnavailable && cr.Header.Get("Retry-After") == "" {
						t.Error("confirm 503 without Retry-After")
					}
				case http.StatusServiceUnavailable:
					unavailable.Add(1)

					if r.Header.Get("Retry-After") == "" || r.problem(t).Code != boxoffice.EUNAVAILABLE {
						t.Errorf("503 without Retry-After or the unavailable problem: %v %s", r.Header, r.Body)
					}
				case http.StatusConflict, http.StatusUnprocessableEntity:
				default:
					t.Errorf("reserve during the storm: %d %s", r.Status, r.Body)
				}
				if r.Status != http.StatusServiceUnavailable {
					n = next.Add(1)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	rs.stop() // the lock store goes away mid-storm
	downAt := unavailable.Load()
	time.Sleep(time.Second)

	// While it is down: reserve and confirm fail closed, reads of sold state work.
	if r := alice.reserve(ev, "down", "H-A-9"); r.Status != http.StatusServiceUnavailable {
		t.Errorf("reserve with Redis down: %d %s", r.Status, r.Body)
	}
	if r := alice.confirm(pending.BookingID, "tok_visa", "down-pay"); r.Status != http.StatusServiceUnavailable {
		t.Errorf("confirm with Redis down: %d %s", r.Status, r.Body)
	}
	if r := alice.do("GET", "/bookings/"+sold.BookingID, nil); r.Status != 200 {
		t.Errorf("reading a confirmed booking with Redis down: %d", r.Status)
	}
	s.Seats.Invalidate(parseID(t, ev)) // a cold cache: the map must come from the database alone
	if r := s.anonymous(t).do("GET", "/events/"+ev+"/seats", nil); r.Status != 200 {
		t.Errorf("seat map with Redis down and nothing cached: %d %s", r.Status, r.Body)
	} else {
		var m seatMap
		r.decode(t, &m)
		if m.Seats[0].SeatID != "H-A-1" || m.Seats[0].Status != "sold" {
			t.Errorf("seat map with Redis down: first seat %+v, want H-A-1 sold", m.Seats[0])
		}
	}
	if unavailable.Load() == downAt {
		t.Error("the storm saw no 503 while Redis was down")
	}

	rs.start() // same port: the same process must recover by itself
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := alice.reserve(ev, "after-"+randomHex(3), "H-A-10") // row A is outside the storm
		if r.Status == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("no recovery after Redis came back: %d %s", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	okBefore := ok.Load()
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if ok.Load() == okBefore {
		t.Error("the storm got no 201 after recovery")
	}

	// Zero oversell, and the database agrees with what was answered.
	sold2, err := s.Store.SoldSeats(ctx, parseID(t, ev))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, seat := range sold2 {
		if seen[seat] {
			t.Fatalf("seat %s sold twice", seat)
		}
		seen[seat] = true
	}
	for seat, n := range confirmedSeats {
		if n > 1 {
			t.Errorf("seat %s confirmed %d times", seat, n)
		}
		if !seen[seat] {
			t.Errorf("seat %s was confirmed but has no valid ticket", seat)
		}
	}
	if len(seen) != len(confirmedSeats) {
		t.Errorf("%d seats sold, %d confirmed", len(seen), len(confirmedSeats))
	}
}
