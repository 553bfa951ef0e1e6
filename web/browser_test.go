package web_test

// The box office in a real browser: headless Chromium driven by chromedp
// against a whole stack (SQLite, in-process holds, the queue and its
// workers) started in the test, with the UI mounted in front of the API as
// `boxoffice serve` does.
//
// Chromium comes from the Debian packages chromium and chromium-driver
// (.ci/run installs them). Without it these tests skip, except under
// CI=true, where they fail. Nothing here measures time: every wait is for a
// state of the page, bounded only so that a broken page fails instead of
// hanging.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/apitest"
	"github.com/boxoffice/boxoffice/httpapi"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/boxoffice/boxoffice/sqlite"
	"github.com/boxoffice/boxoffice/web"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write the screenshots of docs/screenshots/ from the browser tests")

// waitLimit bounds each wait for the page; it is a guard against a hang,
// not a measurement.
const waitLimit = 2 * time.Minute

// stack is a running service with the UI in front.
type stack struct {
	*apitest.Stack
	URL string // the UI and the API, as boxoffice serve answers
}

func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "web.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	q := store.Queue()
	q.PollInterval = 10 * time.Millisecond
	notifier := inmem.NewNotifier()
	st := apitest.NewStack(t, apitest.Parts{
		Store: store, Holds: inmem.NewHolds(time.Now), Leases: inmem.NewLeases(time.Now),
		Queue: q, Log: q, Notifier: notifier,
		// A short cache, so that one browser sees another's hold soon.
		SeatmapTTL: time.Second,
	})
	// apitest's server is the bare API; this one is what serve runs: the
	// same service behind the UI's Mount.
	api := httpapi.New(st.Service, st.Seats, st.Auth, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewServer(web.Mount(api))
	bg, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = api.Listen(bg, notifier) })
	t.Cleanup(func() { api.CloseStreams(); srv.Close(); stop(); wg.Wait() })
	return &stack{Stack: st, URL: srv.URL}
}

// event creates an event as an organiser would.
func (s *stack) event(t *testing.T, e boxoffice.Event) *boxoffice.Event {
	t.Helper()
	if e.Venue == "" {
		e.Venue = "Test Hall"
	}
	if e.StartsAt.IsZero() {
		e.StartsAt = time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	}
	if e.SaleOpensAt.IsZero() {
		e.SaleOpensAt = time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	}
	if e.SaleMode == "" {
		e.SaleMode = boxoffice.SaleDirect
	}
	if e.TicketLimit == 0 {
		e.TicketLimit = 8
	}
	if e.Sections == nil {
		e.Sections = []boxoffice.Section{
			{Name: "Stalls", PriceTier: "A", PriceCents: 8500, Rows: 8, SeatsPerRow: 12},
			{Name: "Circle", PriceTier: "B", PriceCents: 5500, Rows: 5, SeatsPerRow: 14},
		}
	}
	ev, err := s.Service.CreateEvent(context.Background(), boxoffice.User{ID: "organiser", Role: boxoffice.RoleAdmin}, &e)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// call is one API request for the test's own set-up and checks.
// buy books and pays each seat for user, one booking a seat, and returns
// the bookings' ids.
func (s *stack) buy(t *testing.T, user string, eventID boxoffice.ID, seats ...string) []string {
	t.Helper()
	ctx := context.Background()
	u := boxoffice.User{ID: user}
	var bookings []string
	for i, seat := range seats {
		r, err := s.Service.Reserve(ctx, u, sale.ReserveRequest{EventID: eventID, SeatIDs: []string{seat}, IdempotencyKey: fmt.Sprint("r", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Service.Confirm(ctx, u, sale.ConfirmRequest{BookingID: r.BookingID, PaymentToken: "tok_visa", IdempotencyKey: fmt.Sprint("c", i)}); err != nil {
			t.Fatal(err)
		}
		bookings = append(bookings, r.BookingID.String())
	}
	return bookings
}

func (s *stack) call(t *testing.T, method, path, token string, body any, key string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.URL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// chromium finds the browser: BOXOFFICE_CHROMIUM when set, else Debian's
// (or another on the PATH). "" means none.
func chromium() string {
	names := []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"}
	if p := os.Getenv("BOXOFFICE_CHROMIUM"); p != "" {
		names = []string{p}
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts a headless Chromium for the test; it skips the test
// when there is none (and fails it under CI=true).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromium()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("Chromium is not installed (apt-get install chromium chromium-driver); CI needs it for the browser tests")
		}
		t.Skip("Chromium is not installed (apt-get install chromium chromium-driver); skipping the browser tests")
	}
	// The machine's network is closed: without these flags Chromium waits
	// on services it cannot reach.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancel()
		cancelAlloc()
		t.Fatalf("starting Chromium: %v", err)
	}
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// tab is one person's browser window: a browser context of its own, so
// its own localStorage (and so its own sign-in).
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
	name string

	mu       sync.Mutex
	console  []string
	failures []string
}

func newTab(t *testing.T, browser context.Context, s *stack, name, token string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	tb := &tab{t: t, ctx: ctx, base: s.URL, name: name}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("%s: opening a tab: %v", name, err)
	}
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.console = append(tb.console, m.String())
			// Uncaught exceptions and console.error calls (not the
			// browser's own log of a 409, which the page expects).
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source == "") {
				tb.failures = append(tb.failures, m.String())
			}
			tb.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, f := range tb.failures {
			t.Errorf("%s: uncaught JavaScript error: %s", name, f)
		}
		if t.Failed() {
			t.Logf("%s: console:\n  %s", name, strings.Join(tb.console, "\n  "))
		}
	})
	if token != "" {
		// The sign-in link the demo prints.
		tb.open("/app/#token=" + token)
		tb.waitJS(`document.querySelector('#who strong') && document.querySelector('#who strong').textContent !== ''`, "signed in")
	}
	return tb
}

func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitLimit)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.fail(what, err)
	}
}

func (tb *tab) fail(what string, err error) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + "\n" + document.querySelector('main').innerText`))
	tb.t.Fatalf("%s: %s: %v\npage now: %s", tb.name, what, err, text)
}

func (tb *tab) open(path string) {
	tb.t.Helper()
	tb.do("open "+path, chromedp.Navigate(tb.base+path))
}

// waitJS waits until the expression is truthy in the page. It gives up
// at once when the page has thrown.
func (tb *tab) waitJS(expr, what string) {
	tb.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ctx, cancel := context.WithTimeout(tb.ctx, waitLimit)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(`+expr+`)`))
		cancel()
		if err == nil && ok {
			return
		}
		tb.mu.Lock()
		broken := len(tb.failures) > 0
		tb.mu.Unlock()
		switch {
		case broken:
			tb.fail("waiting for "+what, errors.New("the page has thrown"))
		case time.Now().After(deadline):
			if err == nil {
				err = errors.New("still false")
			}
			tb.fail("waiting for "+what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitText waits until the element's text contains want.
func (tb *tab) waitText(css, want string) {
	tb.t.Helper()
	tb.waitJS(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e && e.innerText.includes(%q); })()`, css, want), fmt.Sprintf("%s to say %q", css, want))
}

func evalIn[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitLimit)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.fail("evaluating "+expr, err)
	}
	return v
}

func (tb *tab) click(css string) {
	tb.t.Helper()
	tb.do("click "+css, chromedp.Click(chromedp.CSS(css), chromedp.NodeVisible))
}

func (tb *tab) path() string { return evalIn[string](tb, `location.pathname`) }

// waitMap waits for the event page's seat map to have its first
// availability.
func (tb *tab) waitMap() {
	tb.t.Helper()
	tb.waitText("#map-status", "available")
}

// clickSeat clicks a seat on the canvas, where the map draws it: the real
// pointer path, hit-testing included. The seat is brought into view first,
// at a zoom where a click picks a seat (zoomed out, a click zooms in).
func (tb *tab) clickSeat(seatID string) {
	tb.t.Helper()
	type point struct{ X, Y, Size float64 }
	p := evalIn[point](tb, fmt.Sprintf(`(() => {
		const m = boxoffice.seatmap, i = boxoffice.seatIndex(%q);
		if (i < 0) return {X: 0, Y: 0, Size: 0};
		// A form below the map may have scrolled the page: the map first.
		let r = m.canvas.getBoundingClientRect();
		if (r.top < 0 || r.bottom > innerHeight) { m.canvas.scrollIntoView({block: 'center'}); r = m.canvas.getBoundingClientRect(); }
		let p = m.seatPoint(i);
		if (!m.canPick() || p.x < r.left || p.y < r.top || p.x > r.right || p.y > r.bottom) { m.showSeat(i, false); p = m.seatPoint(i); }
		return {X: p.x, Y: p.y, Size: p.size};
	})()`, seatID))
	if p.Size <= 0 {
		tb.t.Fatalf("%s: seat %s is not on the map", tb.name, seatID)
	}
	tb.do("click seat "+seatID, chromedp.MouseClickXY(p.X, p.Y))
}

// pay picks a test card and presses Pay.
func (tb *tab) pay(token string) {
	tb.t.Helper()
	tb.click(fmt.Sprintf(`input[name="token"][value=%q]`, token))
	tb.click("#pay")
}

// screenshot saves the whole page as docs/screenshots/<name>.png when the
// test runs with -update-screenshots.
func (tb *tab) screenshot(name string) { tb.t.Helper(); tb.capture(name, true) }

// capture saves the whole page (full) or what the screen shows.
func (tb *tab) capture(name string, full bool) {
	tb.t.Helper()
	if !*updateScreenshots {
		return
	}
	// Let the canvas and fonts settle: two animation frames.
	evalIn[bool](tb, `new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => ok(true))))`)
	ctx, cancel := context.WithTimeout(tb.ctx, waitLimit)
	defer cancel()
	shot := chromedp.CaptureScreenshot()
	if full {
		shot = chromedp.FullScreenshot(100)
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		tb.fail("screenshot", err)
	}
	dir := filepath.Join("..", "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("wrote docs/screenshots/%s.png", name)
}

// TestBrowserPickPayTickets: a user picks two seats on the map, holds
// them, is declined by one test card and pays with another, and sees the
// tickets with their QR codes, at checkout and under My tickets.
func TestBrowserPickPayTickets(t *testing.T) {
	browser := newBrowser(t)
	s := newStack(t)
	ev := s.event(t, boxoffice.Event{Name: "Quartet Night", Refundable: true, RefundCutoffHours: 24, ResaleCapPercent: 100})
	alice := newTab(t, browser, s, "alice", s.Token(t, "alice", ""))

	alice.open("/app/")
	alice.click(fmt.Sprintf(`a[href="/app/events/%s"]`, ev.ID))
	alice.waitMap()

	// Someone else holds a seat: alice's map shows it without a reload,
	// from the compact availability view, which it revalidates by ETag.
	if code, out := s.call(t, "POST", "/bookings/reserve", s.Token(t, "carol", ""),
		map[string]any{"event_id": ev.ID.String(), "seat_ids": []string{"Stalls-H-1"}}, "carol-1"); code != 201 {
		t.Fatalf("carol's reserve: %d %v", code, out)
	}
	alice.waitJS(`boxoffice.seatmap.statuses[boxoffice.seatIndex('Stalls-H-1')] === 1`, "carol's hold on alice's map")
	alice.waitJS(`performance.getEntriesByType('resource').some((e) => e.name.endsWith('/availability') && e.responseStatus === 304)`, "a 304 for an unchanged map")
	alice.clickSeat("Stalls-A-5")
	alice.clickSeat("Stalls-A-6")
	alice.waitText(".selection", "Row A · Seat 5")
	alice.waitText(".selection", "Row A · Seat 6")
	alice.waitText(".total", "2 seats")
	alice.click("#reserve")

	alice.waitJS(`location.pathname.startsWith('/app/checkout/')`, "checkout")
	alice.waitJS(`/^\d+:\d\d$/.test(document.querySelector('#countdown').textContent)`, "the hold countdown")
	alice.waitText("main", "Stalls · Row A · Seat 5")
	alice.screenshot("checkout")

	alice.pay("tok_chargeDeclined")
	alice.waitText("#pay-error", "declined")
	alice.pay("tok_visa")
	alice.waitJS(`/^\S+$/.test((document.querySelector('#confirmation-code') || {}).textContent || '')`, "the confirmation code")
	alice.waitJS(`document.querySelectorAll('#confirmed-tickets img.qr').length === 2 && [...document.querySelectorAll('#confirmed-tickets img.qr')].every((i) => i.complete && i.naturalWidth > 0)`, "two QR codes")

	alice.click(`.top a[href="/app/tickets"]`)
	alice.waitJS(`document.querySelectorAll('#tickets .ticket').length === 2`, "two tickets under My tickets")
	alice.waitJS(`[...document.querySelectorAll('#tickets img.qr')].every((i) => i.complete && i.naturalWidth > 0)`, "the QR codes")
	alice.waitText("#tickets", "Cancel for a refund")
	alice.screenshot("my-tickets")

	// What the page shows is what the server has.
	code, out := s.call(t, "GET", "/me/tickets", s.Token(t, "alice", ""), nil, "")
	if code != 200 {
		t.Fatalf("GET /me/tickets: %d", code)
	}
	var seats []string
	for _, tk := range out["tickets"].([]any) {
		seats = append(seats, tk.(map[string]any)["seat_id"].(string))
		shown := evalIn[bool](alice, fmt.Sprintf(`document.querySelector('#tickets').innerText.includes(%q)`, tk.(map[string]any)["code"].(string)))
		if !shown {
			t.Errorf("ticket code %v is not on the page", tk.(map[string]any)["code"])
		}
	}
	if strings.Join(seats, ",") != "Stalls-A-6,Stalls-A-5" && strings.Join(seats, ",") != "Stalls-A-5,Stalls-A-6" {
		t.Errorf("alice's tickets are for %v, want Stalls-A-5 and Stalls-A-6", seats)
	}
}

// TestBrowserQueuedSale: in a flash sale, a user sees their place in the
// waiting room and is taken to checkout when the workers hold the seats;
// another, whose seat went to someone ahead, is told so and joins the
// waitlist from the same page.
func TestBrowserQueuedSale(t *testing.T) {
	browser := newBrowser(t)
	s := newStack(t)
	ev := s.event(t, boxoffice.Event{Name: "Flash Sale", SaleMode: boxoffice.SaleQueued})
	// Three people queued before alice; no worker runs yet.
	for i, seat := range []string{"Stalls-A-1", "Stalls-A-2", "Stalls-A-3"} {
		user := fmt.Sprintf("early-%d", i)
		if code, out := s.call(t, "POST", "/bookings/reserve", s.Token(t, user, ""),
			map[string]any{"event_id": ev.ID.String(), "seat_ids": []string{seat}}, "q-"+user); code != 202 {
			t.Fatalf("queueing %s: %d %v", user, code, out)
		}
	}
	alice := newTab(t, browser, s, "alice", s.Token(t, "alice", ""))
	alice.open("/app/events/" + ev.ID.String())
	alice.waitMap()
	alice.clickSeat("Stalls-B-4")
	alice.click("#reserve")
	alice.waitJS(`location.pathname.startsWith('/app/queue/')`, "the waiting room")
	alice.waitText("#queue-position", "#4")
	alice.waitText("#queue-line", "3 people are ahead of you")
	alice.waitJS(`document.querySelector('#queue-progress') !== null`, "the progress bar")
	alice.waitText("#queue-conn", "Live") // over the SSE stream
	alice.screenshot("waiting-room")

	// Bob asks for a seat that the first in the queue asked for: he is
	// served after them and finds it taken.
	bob := newTab(t, browser, s, "bob", s.Token(t, "bob", ""))
	bob.open("/app/events/" + ev.ID.String())
	bob.waitMap()
	bob.clickSeat("Stalls-A-1")
	bob.click("#reserve")
	bob.waitText("#queue-position", "#5")

	s.StartWorkers(t, 1)
	alice.waitJS(`location.pathname.startsWith('/app/checkout/')`, "checkout after the queue")
	alice.waitJS(`/^\d+:\d\d$/.test(document.querySelector('#countdown').textContent)`, "the hold countdown")
	alice.waitText("main", "Stalls · Row B · Seat 4")
	alice.pay("tok_visa")
	alice.waitJS(`document.querySelector('#confirmation-code')`, "the confirmation")

	bob.waitText("#queue-rejected", "went to people ahead of you")
	bob.click("#join-waitlist")
	bob.waitJS(`location.pathname === '/app/waitlist'`, "the waitlist page")
	bob.waitText("#waitlist", "In line")
}

// TestBrowserSameSeatTwoBrowsers: two people pick the same seat and press
// Reserve at once: one gets it and goes to checkout, the other is told the
// seat was taken and sees it greyed out.
func TestBrowserSameSeatTwoBrowsers(t *testing.T) {
	browser := newBrowser(t)
	s := newStack(t)
	ev := s.event(t, boxoffice.Event{Name: "One Seat Left"})
	tabs := []*tab{
		newTab(t, browser, s, "alice", s.Token(t, "alice", "")),
		newTab(t, browser, s, "bob", s.Token(t, "bob", "")),
	}
	for _, tb := range tabs {
		tb.open("/app/events/" + ev.ID.String())
		tb.waitMap()
		tb.clickSeat("Circle-C-7")
		tb.waitText(".selection", "Row C · Seat 7")
	}
	// Both press Reserve together.
	var wg sync.WaitGroup
	errs := make([]error, len(tabs))
	for i, tb := range tabs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(tb.ctx, waitLimit)
			defer cancel()
			errs[i] = chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#reserve"), chromedp.NodeVisible))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	const settled = `location.pathname.startsWith('/app/checkout/') || (document.querySelector('#reserve-error') || {}).innerText?.includes('taken by someone else')`
	winners, losers := 0, 0
	for _, tb := range tabs {
		tb.waitJS(settled, "an answer to the reserve")
		if strings.HasPrefix(tb.path(), "/app/checkout/") {
			winners++
			tb.waitText("main", "Circle · Row C · Seat 7")
			continue
		}
		losers++
		// The loser's map greys the seat out and the pick is gone.
		greyed := evalIn[bool](tb, `boxoffice.seatmap.statuses[boxoffice.seatIndex('Circle-C-7')] !== 0`)
		if !greyed {
			t.Errorf("%s: the taken seat is still shown as available", tb.name)
		}
		if n := evalIn[int](tb, `boxoffice.seatmap.selected.size`); n != 0 {
			t.Errorf("%s: %d seats still picked after the refusal", tb.name, n)
		}
		tb.screenshot("seat-taken")
	}
	if winners != 1 || losers != 1 {
		t.Fatalf("%d winners and %d told the seat was taken, want one of each", winners, losers)
	}
}

// TestBrowserResaleAndWaitlist: a fan lists a ticket and another buys it
// by clicking the resale seat on the map; a third waits on the waitlist and
// is offered, live, the seats that a cancellation gives back, and pays.
func TestBrowserResaleAndWaitlist(t *testing.T) {
	browser := newBrowser(t)
	s := newStack(t)
	ev := s.event(t, boxoffice.Event{Name: "Second Chances", Refundable: true, RefundCutoffHours: 24, ResaleCapPercent: 100})
	s.buy(t, "seller", ev.ID, "Stalls-A-1", "Stalls-B-1")

	// The seller lists Stalls-A-1 from My tickets.
	sellerTab := newTab(t, browser, s, "seller", s.Token(t, "seller", ""))
	sellerTab.open("/app/tickets")
	sellerTab.waitJS(`document.querySelector('[data-seat="Stalls-A-1"] form')`, "the resale form")
	sellerTab.do("set the price", chromedp.SetValue(chromedp.CSS(`[data-seat="Stalls-A-1"] input[type=number]`), "80.00"))
	sellerTab.click(`[data-seat="Stalls-A-1"] form button[type=submit]`)
	sellerTab.waitText(`[data-seat="Stalls-A-1"]`, "Listed for resale")

	// A buyer sees it in pink on the map and buys it there.
	buyer := newTab(t, browser, s, "buyer", s.Token(t, "buyer", ""))
	buyer.open("/app/events/" + ev.ID.String())
	buyer.waitMap()
	buyer.waitJS(`boxoffice.seatmap.statuses[boxoffice.seatIndex('Stalls-A-1')] === 3`, "the resale seat on the map")
	buyer.clickSeat("Stalls-A-1")
	buyer.waitText("#resale-pick", "€80.00")
	buyer.click("#buy-resale")
	buyer.waitJS(`location.pathname.startsWith('/app/checkout/')`, "checkout for the resale seat")
	buyer.waitText("main", "Your resale seat")
	buyer.pay("tok_visa")
	buyer.waitJS(`document.querySelector('#confirmation-code')`, "the confirmation")
	buyer.waitJS(`document.querySelector('#confirmed-tickets img.qr') && document.querySelector('#confirmed-tickets img.qr').naturalWidth > 0`, "the new ticket's QR code")

	// Someone joins the waitlist from the event page, and waits.
	waiter := newTab(t, browser, s, "waiter", s.Token(t, "waiter", ""))
	waiter.open("/app/events/" + ev.ID.String())
	waiter.waitMap()
	waiter.click("#wl-join")
	waiter.waitJS(`location.pathname === '/app/waitlist'`, "the waitlist page")
	waiter.waitText("#waitlist", "In line")

	// The seller cancels the other booking for a refund: its seat goes to
	// the waitlist, and the waiting page shows the offer without a reload.
	sellerTab.open("/app/tickets")
	sellerTab.click(`[data-seat="Stalls-B-1"] button.danger`)
	sellerTab.click(`[data-seat="Stalls-B-1"] button.danger:not([hidden])`)
	sellerTab.waitText("#tickets-msg", "refunded")
	sellerTab.waitJS(`!document.querySelector('[data-seat="Stalls-B-1"]')`, "the cancelled ticket gone")

	waiter.waitText("#waitlist", "Seats offered to you")
	waiter.waitText("#waitlist", "Section Stalls, row B, seat 1")
	waiter.screenshot("waitlist-offer")
	waiter.click(`#waitlist a.button`)
	waiter.waitJS(`location.pathname.startsWith('/app/checkout/')`, "checkout for the offer")
	waiter.waitText("main", "Seats offered to you from the waitlist")
	waiter.pay("tok_visa")
	waiter.waitJS(`document.querySelector('#confirmation-code')`, "the confirmation")
}
