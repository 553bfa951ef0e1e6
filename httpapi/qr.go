package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/boxoffice/boxoffice"
)

// ticketQR serves the ticket's code as a QR code in SVG, for its owner (and,
// as for the ticket itself, venue staff and organisers). A void ticket has
// no code to show: 410 ticket-void.
func (s *Server) ticketQR(w http.ResponseWriter, r *http.Request, u boxoffice.User) error {
	id, err := pathID(r, "ticket_id")
	if err != nil {
		return err
	}
	t, err := s.svc.Ticket(r.Context(), u, id)
	if err != nil {
		return err
	}
	if t.Code == "" {
		return boxoffice.Errorf(boxoffice.ETICKETVOID, "the ticket is void (%s): its code admits nobody", t.VoidReason)
	}
	svg, err := qrSVG(t.Code)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "image/svg+xml")
	// The code is the ticket: keep it out of shared caches, and let the
	// owner's browser ask again (it stops working once the ticket is resold).
	h.Set("Cache-Control", "private, no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(svg)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(svg)
	}
	return nil
}

// qrSVG renders text as a QR code (error correction level M, with the quiet
// zone) in SVG: one module per user unit, dark modules drawn as one path of
// horizontal runs, so the file stays small and scales crisply.
func qrSVG(text string) ([]byte, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return nil, boxoffice.Errorf(boxoffice.EINTERNAL, "qr code: %v", err)
	}
	bits := q.Bitmap()
	n := len(bits)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges" role="img">`, n, n)
	fmt.Fprintf(&b, `<title>QR code</title><rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range bits {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			run := 1
			for x+run < len(row) && row[x+run] {
				run++
			}
			fmt.Fprintf(&b, "M%d %dh%dv1h-%dz", x, y, run, run)
			x += run
		}
	}
	b.WriteString(`"/></svg>`)
	return b.Bytes(), nil
}
