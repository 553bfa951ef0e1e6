package web_test

// The phone, outages and words, in a real browser (issue 15): the cart bar
// at the bottom of a phone's screen, the hold's countdown above Pay, pages
// and the seat map that recover by themselves when the box office answers
// again, and messages in a buyer's words. The helpers (newStack,
// newBrowser, newTab, waitJS, …) are browser_test.go's. As there, nothing
// is timed: every wait is for a state of the page.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice"
)

// phone makes the tab a 390×844 phone.
func (tb *tab) phone() {
	tb.t.Helper()
	tb.do("phone-sized screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
}

// onScreen is a JavaScript test that the element is inside the viewport as
// the page first shows it and is not covered by anything else.
const onScreenJS = `((sel) => {
	const e = document.querySelector(sel);
	if (!e) return false;
	const r = e.getBoundingClientRect();
	if (r.width === 0 || r.height === 0 || r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) return false;
	const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
	return !!at && (at === e || e.contains(at));
})`

func (tb *tab) onScreen(css string) bool {
	tb.t.Helper()
	return evalIn[bool](tb, fmt.Sprintf(`%s(%q)`, onScreenJS, css))
}

// failFetch makes the page's API calls fail as if the network were down
// (fetch rejects, as it does offline) when their path matches the regular
// expression; "" lets them through again. It is the page's own fetch that
// is replaced, so it holds until the next full page load.
func (tb *tab) failFetch(pathRE string) {
	tb.t.Helper()
	evalIn[bool](tb, fmt.Sprintf(`(() => {
		if (!window.__realFetch) {
			window.__realFetch = window.fetch;
			window.fetch = (url, opts) => {
				const re = window.__failRE;
				if (re && re.test(new URL(String(url), location.href).pathname)) return Promise.reject(new TypeError('Failed to fetch'));
				return window.__realFetch(url, opts);
			};
		}
		window.__failRE = %q ? new RegExp(%q) : null;
		return true;
	})()`, pathRE, pathRE))
}

// TestBrowserPhoneCartBar: on a phone, the picks, the total and Reserve
// are at the bottom of the first screen; at checkout the countdown is
// right above Pay; back on the event page the bar counts the hold down
// and offers to continue to payment.
func TestBrowserPhoneCartBar(t *testing.T) {
	browser := newBrowser(t)
	s := newStack(t)
	ev := s.event(t, boxoffice.Event{Name: "Pocket Concert"})
	alice := newTab(t, browser, s, "alice", s.Token(t, "alice", ""))
	alice.phone()

	alice.open("/app/events/" + ev.ID.String())
	alice.waitMap()
	if evalIn[bool](alice, `!document.querySelector('#cartbar').hidden`) {
		t.Errorf("the cart bar shows before anything is picked")
	}
	// Two seats, picked by name (the canvas is TestBrowserPickPayTickets'
	// business; here the bar is).
	for n, seat := range []string{"5", "6"} {
		alice.do("pick seat "+seat, chromedp.SetValue(chromedp.CSS("#pick-row"), "A"), chromedp.SetValue(chromedp.CSS("#pick-seat"), seat))
		alice.click("#pick-add")
		alice.waitText("#cart-picks", fmt.Sprintf("%d seat", n+1))
	}
	alice.waitText("#cart-picks", "2 seats")
	evalIn[bool](alice, `(window.scrollTo(0, 0), true)`)
	for _, css := range []string{"#cartbar", "#cart-action", "#cart-total", "#cart-picks"} {
		if !alice.onScreen(css) {
			t.Errorf("%s is not on the phone's first screen", css)
		}
	}
	if got := evalIn[string](alice, `document.querySelector('#cart-picks').innerText`); !strings.Contains(got, "Stalls A5") || !strings.Contains(got, "Stalls A6") {
		t.Errorf("the bar names the picks %q, want Stalls A5 and Stalls A6", got)
	}
	if got := evalIn[string](alice, `document.querySelector('#cart-total').innerText`); !strings.Contains(got, "170.00") || !strings.Contains(got, "€") {
		t.Errorf("the bar's total is %q, want €170.00", got)
	}
	if got := evalIn[string](alice, `document.querySelector('#cart-action').innerText`); got != "Reserve" {
		t.Errorf("the bar's action says %q, want Reserve", got)
	}
	if !evalIn[bool](alice, `document.querySelector('#cartbar').getBoundingClientRect().bottom >= innerHeight - 1`) {
		t.Errorf("the cart bar is not at the bottom of the screen")
	}
	checkPage(t, alice, "event page with the cart bar on a phone")
	alice.capture("phone-cart-bar", false)

	// Reserve from the bar.
	alice.click("#cart-action")
	alice.waitJS(`location.pathname.startsWith('/app/checkout/')`, "checkout")
	alice.waitJS(`/^\d+:\d\d$/.test(document.querySelector('#countdown').textContent)`, "the hold countdown")
	evalIn[bool](alice, `(window.scrollTo(0, 0), true)`)
	if !evalIn[bool](alice, `document.querySelector('#countdown').getBoundingClientRect().bottom <= document.querySelector('#pay').getBoundingClientRect().top`) {
		t.Errorf("the countdown is not above Pay")
	}
	for _, css := range []string{"#countdown", "#pay"} {
		if !alice.onScreen(css) {
			t.Errorf("%s is not on the phone's first screen at checkout", css)
		}
	}
	checkPage(t, alice, "checkout on a phone")
	alice.capture("phone-checkout", false)

	// Back to the map: the bar counts the hold down.
	evalIn[bool](alice, `(history.back(), true)`)
	alice.waitJS(`location.pathname.startsWith('/app/events/')`, "the event page again")
	alice.waitJS(`/^\d+:\d\d left$/.test(document.querySelector('#cart-timer').innerText)`, "the hold's countdown in the bar")
	alice.waitText("#cart-picks", "Held: 2 seats")
	evalIn[bool](alice, `(window.scrollTo(0, 0), true)`)
	for _, css := range []string{"#cart-timer", "#cart-continue"} {
		if !alice.onScreen(css) {
			t.Errorf("%s is not on the phone's first screen", css)
		}
	}
	alice.click("#cart-continue")
	alice.waitJS(`location.pathname.startsWith('/app/checkout/') && document.querySelector('#pay')`, "checkout from the bar")
}

// TestBrowserOutages: a page whose API calls fail says so, offers Retry
// and comes back by itself once the box office answers; a seat map that
// cannot be refreshed says it is out of date, and since when, and recovers
// by itself too.
func TestBrowserOutages(t *testing.T) {
	browser := newBrowser(t)
	s := newStack(t)
	ev := s.event(t, boxoffice.Event{Name: "Storm Night"})
	alice := newTab(t, browser, s, "alice", s.Token(t, "alice", ""))

	// A page that cannot load.
	alice.open("/app/tickets")
	alice.waitJS(`document.querySelector('#tickets')`, "my tickets")
	alice.failFetch(`^/`)
	evalIn[bool](alice, `(boxoffice.navigate('/app/waitlist'), true)`)
	alice.waitJS(`document.querySelector('#page-error #retry')`, "the Retry button")
	alice.waitText("#page-error-text", "cannot be reached")
	alice.waitText("#retry-wait", "Trying again by itself")
	alice.capture("page-retry", false)
	if strings.Contains(evalIn[string](alice, `document.querySelector('main').innerText`), "Something went wrong") {
		t.Errorf("the failed page still says only that something went wrong")
	}
	// Retry while the box office is still away: the same page, still trying.
	alice.click("#retry")
	alice.waitJS(`document.querySelector('#page-error #retry')`, "the Retry button after a failed retry")
	// The box office answers again: the page comes back without a click.
	alice.failFetch("")
	alice.waitJS(`!document.querySelector('#page-error') && document.querySelector('main h1') && document.querySelector('main h1').innerText === 'Waitlist'`, "the waitlist page, by itself")

	// The seat map cannot be refreshed.
	alice.open("/app/events/" + ev.ID.String())
	alice.waitMap()
	alice.failFetch(`/availability$`)
	alice.waitJS(`!document.querySelector('#map-stale').hidden`, "the out-of-date notice")
	alice.waitText("#map-stale", "The seat map is out of date")
	alice.waitText("#map-stale", "since")
	if !evalIn[bool](alice, `document.querySelector('.map-wrap').classList.contains('stale')`) {
		t.Errorf("the stale map is not marked as such")
	}
	alice.waitText("#map-status", "not up to date")
	alice.capture("map-out-of-date", false)
	// Someone takes a seat meanwhile; when the box office answers again the
	// notice goes and the map shows the hold, with no click.
	if code, out := s.call(t, "POST", "/bookings/reserve", s.Token(t, "carol", ""),
		map[string]any{"event_id": ev.ID.String(), "seat_ids": []string{"Stalls-C-3"}}, "carol-1"); code != 201 {
		t.Fatalf("carol's reserve: %d %v", code, out)
	}
	alice.failFetch("")
	alice.waitJS(`document.querySelector('#map-stale').hidden && !document.querySelector('.map-wrap').classList.contains('stale')`, "the notice gone")
	alice.waitText("#map-status", "available")
	alice.waitJS(`boxoffice.seatmap.statuses[boxoffice.seatIndex('Stalls-C-3')] === 1`, "carol's hold on the recovered map")
}

// visibleText is the element's text as a person meets it: without what is
// hidden from both eyes and screen readers (aria-hidden).
func visibleText(tb *tab, css string) string {
	tb.t.Helper()
	return evalIn[string](tb, fmt.Sprintf(`(() => {
		const e = document.querySelector(%q);
		if (!e) return '';
		const c = e.cloneNode(true);
		c.querySelectorAll('[aria-hidden="true"], [hidden]').forEach((x) => x.remove());
		return c.textContent;
	})()`, css))
}

// TestBrowserBuyerWords: a waitlist offer names its seats by section, row
// and number; a refused resale price is said in money, not cents; a queue
// request turned down says what to do next, not to keep the page open.
func TestBrowserBuyerWords(t *testing.T) {
	browser := newBrowser(t)
	s := newStack(t)
	ev := s.event(t, boxoffice.Event{Name: "Plain Words", Refundable: true, RefundCutoffHours: 24, ResaleCapPercent: 100})
	bookings := s.buy(t, "seller", ev.ID, "Stalls-A-1", "Stalls-B-1")

	// A resale price over the cap: the server's "at most 8500 cents"
	// reaches the seller as money.
	sellerTab := newTab(t, browser, s, "seller", s.Token(t, "seller", ""))
	sellerTab.open("/app/tickets")
	sellerTab.waitJS(`document.querySelector('[data-seat="Stalls-A-1"] form')`, "the resale form")
	sellerTab.do("set the price", chromedp.SetValue(chromedp.CSS(`[data-seat="Stalls-A-1"] input[type=number]`), "500.00"))
	sellerTab.click(`[data-seat="Stalls-A-1"] form button[type=submit]`)
	sellerTab.waitText(`[data-seat="Stalls-A-1"] .notice.bad`, "€85.00")
	if got := visibleText(sellerTab, `[data-seat="Stalls-A-1"] .notice.bad`); strings.Contains(got, "cents") || strings.Contains(got, "price_cents") {
		t.Errorf("the refusal says %q: cents or a field name", got)
	}

	// A waitlist offer.
	waiter := s.Token(t, "waiter", "")
	if code, out := s.call(t, "POST", "/events/"+ev.ID.String()+"/waitlist", waiter, map[string]any{"quantity": 1, "section": "Stalls"}, "wl-1"); code/100 != 2 {
		t.Fatalf("joining the waitlist: %d %v", code, out)
	}
	if code, out := s.call(t, "POST", "/bookings/"+bookings[1]+"/cancel", s.Token(t, "seller", ""), map[string]any{}, "cancel-1"); code != 200 {
		t.Fatalf("cancelling: %d %v", code, out)
	}
	wt := newTab(t, browser, s, "waiter", waiter)
	wt.open("/app/waitlist")
	wt.waitText("#waitlist", "Seats offered to you")
	wt.waitText("#waitlist .offer-seats", "Section Stalls, row B, seat 1")
	got := visibleText(wt, "#waitlist")
	for _, bad := range []string{"Stalls-B-1", "cents", "seat_ids", "held_until"} {
		if strings.Contains(got, bad) {
			t.Errorf("the waitlist offer says %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "€") {
		t.Errorf("the offer shows no price in money:\n%s", got)
	}

	// A queued request turned down: what next, not "keep this page open".
	flash := s.event(t, boxoffice.Event{Name: "Plain Flash", SaleMode: boxoffice.SaleQueued})
	if code, out := s.call(t, "POST", "/bookings/reserve", s.Token(t, "early", ""),
		map[string]any{"event_id": flash.ID.String(), "seat_ids": []string{"Stalls-A-1"}}, "q-early"); code != 202 {
		t.Fatalf("queueing early: %d %v", code, out)
	}
	bob := newTab(t, browser, s, "bob", s.Token(t, "bob", ""))
	bob.open("/app/events/" + flash.ID.String())
	bob.waitMap()
	bob.clickSeat("Stalls-A-1")
	bob.click("#reserve")
	bob.waitJS(`location.pathname.startsWith('/app/queue/')`, "the waiting room")
	bob.waitText("main", "Section Stalls, row A, seat 1") // what he asked for
	s.StartWorkers(t, 1)
	bob.waitText("#queue-rejected", "went to people ahead of you")
	main := visibleText(bob, "main")
	if strings.Contains(strings.ToLower(main), "keep this page open") {
		t.Errorf("a turned-down request still says to keep the page open:\n%s", main)
	}
	if strings.Contains(main, "Stalls-A-1") {
		t.Errorf("the waiting room shows a raw seat id:\n%s", main)
	}
	bob.waitText("#queue-keep-open", "join the waitlist")
	bob.waitJS(`document.querySelector('#join-waitlist') && document.querySelector('#try-other-seats')`, "the next steps")
	bob.click("#try-other-seats")
	bob.waitJS(`location.pathname === '/app/events/`+flash.ID.String()+`'`, "the seat map, to try other seats")
}

// TestBrowserOrganiserFormWords: the organiser's form refuses a show in
// the past before sending anything, and says the API's refusals without
// its field names.
func TestBrowserOrganiserFormWords(t *testing.T) {
	browser := newBrowser(t)
	s := newStack(t)
	org := newTab(t, browser, s, "organiser", s.Token(t, "organiser", boxoffice.RoleAdmin))
	org.open("/app/organiser")
	org.waitJS(`document.querySelector('#event-form')`, "the event form")
	starts := `#event-form .form-grid .field:nth-child(3) input`
	opens := `#event-form .form-grid .field:nth-child(4) input`
	if evalIn[string](org, fmt.Sprintf(`document.querySelector(%q).labels[0].innerText`, starts)) != "Show starts" {
		t.Fatalf("the form has changed: the third field is not the show's start")
	}

	// A show in the past.
	org.do("a past date", chromedp.SetValue(chromedp.CSS(starts), "2020-01-01T20:00"), chromedp.SetValue(chromedp.CSS(opens), "2019-12-01T10:00"))
	org.click("#create-event")
	org.waitText("#create-error", "cannot start in the past")
	if got := evalIn[string](org, fmt.Sprintf(`document.querySelector(%q).getAttribute('aria-invalid') || ''`, starts)); got != "true" {
		t.Errorf("the start field is not marked invalid (aria-invalid=%q)", got)
	}
	org.waitJS(fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, starts), "focus on the start field")
	if org.path() != "/app/organiser" {
		t.Errorf("the form went on to %s", org.path())
	}

	// The sale opening after the show.
	future := time.Now().Add(40 * 24 * time.Hour)
	org.do("the sale after the show", chromedp.SetValue(chromedp.CSS(starts), future.Format("2006-01-02T15:04")),
		chromedp.SetValue(chromedp.CSS(opens), future.Add(24*time.Hour).Format("2006-01-02T15:04")))
	org.click("#create-event")
	org.waitText("#create-error", "The sale must open before the show starts")
	if got := visibleText(org, "#event-form"); strings.Contains(got, "sale_opens_at") || strings.Contains(got, "starts_at") {
		t.Errorf("the form names API fields:\n%s", got)
	}

	// A refusal only the server can make, said in words.
	org.do("fix the dates and name two sections alike", chromedp.SetValue(chromedp.CSS(opens), time.Now().Add(time.Hour).Format("2006-01-02T15:04")),
		chromedp.SetValue(chromedp.CSS(`.sections-form .section-row:nth-child(2) .field:first-child input`), "Stalls"))
	org.click("#create-event")
	org.waitText("#create-error", "Section 2")
	if got := visibleText(org, "#create-error"); strings.Contains(got, "sections[") || strings.Contains(got, "_") {
		t.Errorf("the server's refusal is shown as %q", got)
	}
	if !evalIn[bool](org, `document.querySelector('.sections-form .section-row:nth-child(2) .field:first-child input').getAttribute('aria-invalid') === 'true'`) {
		t.Errorf("the second section's name is not marked invalid")
	}
	if code, out := s.call(t, "GET", "/events", "", nil, ""); code != 200 || len(out["events"].([]any)) != 0 {
		t.Errorf("an event was created: %d %v", code, out)
	}
}
