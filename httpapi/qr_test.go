package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	qrcode "github.com/skip2/go-qrcode"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/apitest"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/boxoffice/boxoffice/sqlite"
)

// TestTicketQR: the owner gets the ticket's code as a QR code whose modules
// are exactly those of the code's QR symbol; nobody else does, and a void
// ticket has none.
func TestTicketQR(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "qr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s := apitest.NewStack(t, apitest.Parts{Store: store, Holds: inmem.NewHolds(time.Now), Leases: inmem.NewLeases(time.Now)})
	now := time.Now().UTC().Truncate(time.Second)
	ev, err := s.Service.CreateEvent(ctx, boxoffice.User{ID: "org", Role: boxoffice.RoleAdmin}, &boxoffice.Event{
		Name: "QR", Venue: "Hall", StartsAt: now.Add(30 * 24 * time.Hour), SaleOpensAt: now.Add(-time.Minute),
		SaleMode: boxoffice.SaleDirect, TicketLimit: 4, Refundable: true, RefundCutoffHours: 1,
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "a", PriceCents: 1000, Rows: 1, SeatsPerRow: 4}},
	})
	if err != nil {
		t.Fatal(err)
	}
	alice := boxoffice.User{ID: "alice"}
	r, err := s.Service.Reserve(ctx, alice, sale.ReserveRequest{EventID: ev.ID, SeatIDs: []string{"A-A-1"}, IdempotencyKey: "r"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Service.Confirm(ctx, alice, sale.ConfirmRequest{BookingID: r.BookingID, PaymentToken: "tok_visa", IdempotencyKey: "c"})
	if err != nil {
		t.Fatal(err)
	}
	tk := c.Tickets[0]
	path := "/tickets/" + tk.TicketID.String() + "/qr.svg"

	get := func(t *testing.T, path, token string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}

	t.Run("Owner", func(t *testing.T) {
		res, body := get(t, path, s.Token(t, "alice", ""))
		if res.StatusCode != 200 {
			t.Fatalf("status %d: %s", res.StatusCode, body)
		}
		if ct := res.Header.Get("Content-Type"); ct != "image/svg+xml" {
			t.Errorf("Content-Type %q", ct)
		}
		if cc := res.Header.Get("Cache-Control"); cc != "private, no-store" {
			t.Errorf("Cache-Control %q: a ticket's code must stay out of shared caches", cc)
		}
		q, err := qrcode.New(tk.Code, qrcode.Medium)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(q.Bitmap(), svgModules(t, body)); diff != "" {
			t.Errorf("the SVG's modules are not the QR code of %q (-want +got):\n%s", tk.Code, diff)
		}
	})
	t.Run("VenueStaff", func(t *testing.T) {
		// Staff of this event's doors may show its tickets; unscoped staff,
		// or staff of another event, see only what a scan tells them.
		if res, _ := get(t, path, s.Token(t, "door", boxoffice.RoleStaff, ev.ID)); res.StatusCode != 200 {
			t.Errorf("staff of the event: status %d, want 200 (as for the ticket itself)", res.StatusCode)
		}
		for name, tok := range map[string]string{"unscoped": s.Token(t, "door", boxoffice.RoleStaff), "another event's": s.Token(t, "door", boxoffice.RoleStaff, ev.ID+1)} {
			if res, _ := get(t, path, tok); res.StatusCode != 404 {
				t.Errorf("%s staff: status %d, want 404", name, res.StatusCode)
			}
		}
	})
	t.Run("AnotherUser", func(t *testing.T) {
		if res, _ := get(t, path, s.Token(t, "bob", "")); res.StatusCode != 404 {
			t.Errorf("status %d, want 404", res.StatusCode)
		}
	})
	t.Run("Anonymous", func(t *testing.T) {
		if res, _ := get(t, path, ""); res.StatusCode != 401 {
			t.Errorf("status %d, want 401", res.StatusCode)
		}
	})
	t.Run("NoSuchTicket", func(t *testing.T) {
		if res, _ := get(t, "/tickets/12345/qr.svg", s.Token(t, "alice", "")); res.StatusCode != 404 {
			t.Errorf("status %d, want 404", res.StatusCode)
		}
	})
	t.Run("VoidTicket", func(t *testing.T) {
		if _, err := s.Service.Cancel(ctx, alice, sale.CancelRequest{BookingID: r.BookingID, IdempotencyKey: "x"}); err != nil {
			t.Fatal(err)
		}
		res, body := get(t, path, s.Token(t, "alice", ""))
		if res.StatusCode != http.StatusGone || !regexp.MustCompile(`ticket-void`).Match(body) {
			t.Errorf("status %d %s, want 410 ticket-void", res.StatusCode, body)
		}
	})
}

// svgModules reads the dark modules back out of the SVG: its viewBox is
// the symbol's size, and its path one "M x y h n v1 h-n z" per run.
func svgModules(t *testing.T, svg []byte) [][]bool {
	t.Helper()
	vb := regexp.MustCompile(`viewBox="0 0 (\d+) (\d+)"`).FindSubmatch(svg)
	if vb == nil {
		t.Fatalf("no viewBox in %s", svg)
	}
	n, _ := strconv.Atoi(string(vb[1]))
	bits := make([][]bool, n)
	for y := range bits {
		bits[y] = make([]bool, n)
	}
	for _, m := range regexp.MustCompile(`M(\d+) (\d+)h(\d+)v1h-(\d+)z`).FindAllSubmatch(svg, -1) {
		x, _ := strconv.Atoi(string(m[1]))
		y, _ := strconv.Atoi(string(m[2]))
		run, _ := strconv.Atoi(string(m[3]))
		for k := range run {
			bits[y][x+k] = true
		}
	}
	return bits
}
