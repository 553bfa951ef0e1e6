package httpapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/seatmap"
)

// getSeats serves the cached seat map with a strong ETag, 304 on a match,
// Cache-Control for a CDN and gzip when the client takes it.
func (s *Server) getSeats(w http.ResponseWriter, r *http.Request, _ boxoffice.User) error {
	snap, err := s.snapshot(r)
	if err != nil {
		return err
	}
	s.freshness(w, snap)
	serveCached(w, r, snap.ETag, snap.JSON, snap.Gzip, s.maxAge(snap))
	return nil
}

// getAvailability serves the compact view for polling clients.
func (s *Server) getAvailability(w http.ResponseWriter, r *http.Request, _ boxoffice.User) error {
	snap, err := s.snapshot(r)
	if err != nil {
		return err
	}
	s.freshness(w, snap)
	serveCached(w, r, snap.CompactETag, snap.Compact, nil, s.maxAge(snap))
	return nil
}

func (s *Server) snapshot(r *http.Request) (*seatmap.Snapshot, error) {
	id, err := pathID(r, "event_id")
	if err != nil {
		return nil, err
	}
	return s.seats.Get(r.Context(), id)
}

type layoutSeat struct {
	SeatID     string `json:"seat_id"`
	Section    string `json:"section"`
	Row        string `json:"row"`
	Number     int    `json:"number"`
	PriceTier  string `json:"price_tier"`
	PriceCents int64  `json:"price_cents"`
	// Features: wheelchair, companion, restricted_view (absent: none).
	Features []boxoffice.SeatFeature `json:"features,omitempty"`
}

// getLayout serves the static layout in seat order: it never changes, so
// it is cacheable forever and the compact view indexes into it.
func (s *Server) getLayout(w http.ResponseWriter, r *http.Request, _ boxoffice.User) error {
	id, err := pathID(r, "event_id")
	if err != nil {
		return err
	}
	body, err := s.layoutBody(r, id)
	if err != nil {
		return err
	}
	serveCached(w, r, `"layout-`+id.String()+`"`, body.json, body.gz, "public, max-age=31536000, immutable")
	return nil
}

// layoutJSON is an event's layout, encoded once: it never changes, and
// at ~100 bytes a seat (7 MB for 70,000 seats, ~10x less gzipped) it is
// worth neither re-encoding nor sending uncompressed.
type layoutJSON struct {
	json, gz []byte
}

func (s *Server) layoutBody(r *http.Request, id boxoffice.ID) (*layoutJSON, error) {
	if v, ok := s.layouts.Load(id); ok {
		return v.(*layoutJSON), nil
	}
	lay, err := s.svc.Layout(r.Context(), id)
	if err != nil {
		return nil, err
	}
	out := struct {
		EventID boxoffice.ID `json:"event_id"`
		Seats   []layoutSeat `json:"seats"`
	}{EventID: id, Seats: make([]layoutSeat, lay.Len())}
	for i := range out.Seats {
		st := lay.At(i)
		out.Seats[i] = layoutSeat{st.ID, st.Section, st.Row, st.Number, st.PriceTier, st.PriceCents, st.Features}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	l := &layoutJSON{json: b, gz: buf.Bytes()}
	s.layouts.Store(id, l)
	return l, nil
}

// maxAge is the seat map's Cache-Control: shared caches may keep it for
// its TTL from when it was built (the Age header says how much of it is
// gone; a degraded map's TTL is a second).
func (s *Server) maxAge(snap *seatmap.Snapshot) string {
	return "public, max-age=" + strconv.Itoa(int(s.seats.TTLOf(snap).Seconds()))
}

// freshness sets Age (whole seconds, rounded up, so that a cache never
// keeps a map past its TTL) and Last-Modified, when the map was read.
func (s *Server) freshness(w http.ResponseWriter, snap *seatmap.Snapshot) {
	age := s.seats.Age(snap)
	w.Header().Set("Age", strconv.FormatInt(int64((age+time.Second-1)/time.Second), 10))
	w.Header().Set("Last-Modified", snap.BuiltAt.UTC().Format(http.TimeFormat))
}

// serveCached serves body (or gz, to a client that takes gzip) with a
// strong ETag, 304 on a match, and cacheControl.
func serveCached(w http.ResponseWriter, r *http.Request, etag string, body, gz []byte, cacheControl string) {
	h := w.Header()
	h.Set("Cache-Control", cacheControl)
	h.Set("Vary", "Accept-Encoding")
	// A strong ETag names one representation, so the gzipped body has its own.
	gzTag := strings.TrimSuffix(etag, `"`) + `-gz"`
	if gz != nil && acceptsGzip(r) {
		h.Set("ETag", gzTag)
	} else {
		h.Set("ETag", etag)
	}
	if match(r, etag) || match(r, gzTag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, r, body, gz)
}

// writeBody writes JSON, gzipped when the client accepts it and a
// compressed copy exists.
func writeBody(w http.ResponseWriter, r *http.Request, body, gz []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if gz != nil && acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// match implements If-None-Match for strong ETags (and "*").
func match(r *http.Request, etag string) bool {
	inm := r.Header.Get("If-None-Match")
	if inm == "" {
		return false
	}
	for _, t := range strings.Split(inm, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || t == etag || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}
