package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"

	"github.com/boxoffice/boxoffice"
)

// drawAlgorithm says in words how to recompute a draw (boxoffice.DrawOrder);
// `boxoffice verify-draw` does it.
const drawAlgorithm = "entries = the request ids of order_url in decimal, sorted as numbers, each followed by \\n; " +
	"K = SHA-256(seed || SHA-256(entries)); key(id) = SHA-256(K || id in decimal); " +
	"the drawn order is by key ascending; line i of order_url (from 0) is position first_position + i, " +
	"and its entries read in line order are the drawn order (a line \"-\" is a position in the range that " +
	"went to a request outside the draw: the queue's slots each give their own positions)"

type drawJSON struct {
	EventID     boxoffice.ID `json:"event_id"`
	Commitment  string       `json:"commitment"`
	CommittedAt string       `json:"committed_at"`
	Drawn       bool         `json:"drawn"`
	// Once drawn:
	DrawnAt       string `json:"drawn_at,omitempty"`
	Seed          string `json:"seed,omitempty"`
	FirstPosition int64  `json:"first_position,omitempty"`
	Entries       *int   `json:"entries,omitempty"`
	EntriesSHA256 string `json:"entries_sha256,omitempty"`
	OrderSHA256   string `json:"order_sha256,omitempty"`
	OrderURL      string `json:"order_url,omitempty"`
	Algorithm     string `json:"algorithm"`
}

// drawOrderText is the drawn order as order_url serves it: one request id
// per line, in position order, "-" for a gap; order_sha256 is its hash.
func drawOrderText(order []boxoffice.ID) []byte {
	var b []byte
	for _, id := range order {
		if id == 0 {
			b = append(b, "-\n"...)
			continue
		}
		b = strconv.AppendInt(b, int64(id), 10)
		b = append(b, '\n')
	}
	return b
}

// draw reads the draw of the event the path names.
func (s *Server) draw(r *http.Request) (boxoffice.ID, *boxoffice.Draw, error) {
	id, err := pathID(r, "event_id")
	if err != nil {
		return 0, nil, err
	}
	d, err := s.svc.Draw(r.Context(), id)
	return id, d, err
}

func (s *Server) getDraw(w http.ResponseWriter, r *http.Request, _ boxoffice.User) error {
	id, d, err := s.draw(r)
	if err != nil {
		return err
	}
	v := drawJSON{EventID: d.EventID, Commitment: d.Commitment, CommittedAt: formatTime(d.CommittedAt), Drawn: d.Drawn(), Algorithm: drawAlgorithm}
	if d.Drawn() {
		n := len(boxoffice.DrawEntries(d.Order))
		entries := boxoffice.DrawEntriesHash(d.Order)
		order := sha256.Sum256(drawOrderText(d.Order))
		v.DrawnAt, v.Seed, v.FirstPosition, v.Entries = formatTime(d.DrawnAt), hex.EncodeToString(d.Seed), d.FirstPosition, &n
		v.EntriesSHA256, v.OrderSHA256 = hex.EncodeToString(entries[:]), hex.EncodeToString(order[:])
		v.OrderURL = "/events/" + id.String() + "/draw/order"
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) getDrawOrder(w http.ResponseWriter, r *http.Request, _ boxoffice.User) error {
	id, d, err := s.draw(r)
	if err != nil {
		return err
	}
	if !d.Drawn() {
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "the pre-queue of event %d has not been drawn yet", id)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(drawOrderText(d.Order))
	return nil
}
