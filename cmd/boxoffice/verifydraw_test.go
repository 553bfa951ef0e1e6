package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// drawServer publishes a draw as the API does; tamper changes the order it
// serves (after its hash was taken, or before, as a dishonest server would).
func drawServer(t *testing.T, seed []byte, order []boxoffice.ID, commitment string) *httptest.Server {
	t.Helper()
	var text []byte
	for _, id := range order {
		text = strconv.AppendInt(text, int64(id), 10)
		text = append(text, '\n')
	}
	entries := boxoffice.DrawEntriesHash(order)
	sum := sha256.Sum256(text)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /events/7/draw", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"event_id": "7", "commitment": commitment, "drawn": true,
			"seed": hex.EncodeToString(seed), "first_position": 1, "entries": len(order),
			"entries_sha256": hex.EncodeToString(entries[:]), "order_sha256": hex.EncodeToString(sum[:]),
			"order_url": "/events/7/draw/order", "committed_at": "2026-12-03T10:00:00Z", "drawn_at": "2026-12-03T12:00:00Z"})
	})
	mux.HandleFunc("GET /events/7/draw/order", func(w http.ResponseWriter, r *http.Request) { w.Write(text) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestVerifyDraw(t *testing.T) {
	seed := boxoffice.NewDrawSeed()
	var ids []boxoffice.ID
	for i := range 100 {
		ids = append(ids, boxoffice.ID(1000+i))
	}
	order := boxoffice.DrawOrder(seed, ids)
	commitment := boxoffice.DrawCommitment(seed)
	verify := func(srv *httptest.Server, args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append(append([]string{"verify-draw"}, args...), srv.URL+"/events/7"), func(string) string { return "" }, &out, &errOut)
		return out.String(), err
	}

	honest := drawServer(t, seed, order, commitment)
	out, err := verify(honest, "--request", order[41].String(), "--commitment", commitment)
	if err != nil || !strings.Contains(out, "OK") || !strings.Contains(out, "position 42") {
		t.Errorf("honest draw: %v\n%s", err, out)
	}

	// Two requests swapped, hashes recomputed: the seed does not give it.
	swapped := append([]boxoffice.ID(nil), order...)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	if out, err := verify(drawServer(t, seed, swapped, commitment)); err == nil || !strings.Contains(out, "FAIL") {
		t.Errorf("swapped order verified: %s", out)
	}
	// Another seed than the one committed to.
	other := boxoffice.NewDrawSeed()
	if out, err := verify(drawServer(t, other, boxoffice.DrawOrder(other, ids), commitment)); err == nil || !strings.Contains(out, "commitment") {
		t.Errorf("another seed verified: %s", out)
	}
	// The commitment the buyer saw is not the one published now.
	if out, err := verify(honest, "--commitment", strings.Repeat("0", 64)); err == nil || !strings.Contains(out, "not the one you saw") {
		t.Errorf("changed commitment verified: %s", out)
	}
	// A request that is not in the draw.
	if out, err := verify(honest, "--request", "999999"); err == nil || !strings.Contains(out, "not in the draw") {
		t.Errorf("a stranger's request verified: %s", out)
	}
}
