package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
)

// verifyDraw recomputes a queued event's pre-queue draw from what the
// server published (GET /events/{id}/draw and its order_url) and checks
// it: the seed hashes to the commitment published before the draw, the
// order is the one the seed gives these entries, and the hashes match.
// With --request it also says where that request was placed.
func verifyDraw(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify-draw", flag.ContinueOnError)
	fs.SetOutput(stderr)
	request := fs.String("request", "", "a request id (from your 202) to look for in the draw")
	commitment := fs.String("commitment", "", "the commitment you saw before the draw, to hold the server to it")
	fs.Usage = usage(stderr, fs, "Usage: boxoffice verify-draw [--request ID] [--commitment HEX] URL\n\n"+
		"URL is the event, e.g. http://127.0.0.1:8080/events/123 (or .../events/123/draw).")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("one URL is required")
	}
	url := strings.TrimSuffix(strings.TrimSuffix(fs.Arg(0), "/"), "/draw")
	at := strings.Index(url, "/events/")
	if at < 0 {
		return fmt.Errorf("%s is not an event's URL (.../events/ID)", url)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	body, err := fetch(ctx, url+"/draw")
	if err != nil {
		return err
	}
	var d struct {
		Commitment    string `json:"commitment"`
		Drawn         bool   `json:"drawn"`
		Seed          string `json:"seed"`
		FirstPosition int64  `json:"first_position"`
		EntriesSHA256 string `json:"entries_sha256"`
		OrderSHA256   string `json:"order_sha256"`
		OrderURL      string `json:"order_url"`
		CommittedAt   string `json:"committed_at"`
		DrawnAt       string `json:"drawn_at"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return fmt.Errorf("the draw: %w", err)
	}
	if !d.Drawn {
		fmt.Fprintf(stdout, "not drawn yet; the commitment is %s (committed %s): keep it to check the draw later\n", d.Commitment, d.CommittedAt)
		return nil
	}
	seed, err := hex.DecodeString(d.Seed)
	if err != nil {
		return fmt.Errorf("the seed is not hex: %w", err)
	}
	var problems []string
	fail := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if got := boxoffice.DrawCommitment(seed); got != d.Commitment {
		fail("the seed hashes to %s, not to the published commitment %s", got, d.Commitment)
	}
	if *commitment != "" && !strings.EqualFold(*commitment, d.Commitment) {
		fail("the published commitment %s is not the one you saw (%s)", d.Commitment, *commitment)
	}
	base := url[:at]
	text, err := fetch(ctx, base+d.OrderURL)
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(text); hex.EncodeToString(sum[:]) != d.OrderSHA256 {
		fail("the order's SHA-256 is %x, the draw says %s", sum, d.OrderSHA256)
	}
	var order []boxoffice.ID
	for _, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		if line == "" {
			continue
		}
		if line == "-" {
			order = append(order, 0) // a position outside the draw
			continue
		}
		id, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return fmt.Errorf("the order: %q is not a request id", line)
		}
		order = append(order, boxoffice.ID(id))
	}
	if sum := boxoffice.DrawEntriesHash(order); hex.EncodeToString(sum[:]) != d.EntriesSHA256 {
		fail("the entries hash to %x, the draw says %s", sum, d.EntriesSHA256)
	}
	entries := boxoffice.DrawEntries(order)
	want := boxoffice.DrawOrder(seed, entries)
	for i, at := 0, 0; i < len(want); i, at = i+1, at+1 {
		for order[at] == 0 {
			at++
		}
		if want[i] != order[at] {
			fail("position %d holds request %d; the seed puts %d there", d.FirstPosition+int64(at), order[at], want[i])
			break
		}
	}
	fmt.Fprintf(stdout, "event draw: %d requests, positions %d to %d, committed %s, drawn %s\n",
		len(entries), d.FirstPosition, d.FirstPosition+int64(len(order))-1, d.CommittedAt, d.DrawnAt)
	if *request != "" {
		found := false
		for i, id := range order {
			if id != 0 && id.String() == *request {
				fmt.Fprintf(stdout, "request %s: position %d\n", *request, d.FirstPosition+int64(i))
				found = true
			}
		}
		if !found {
			fail("request %s is not in the draw", *request)
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stdout, "FAIL:", p)
		}
		return errors.New("the draw does not verify")
	}
	fmt.Fprintln(stdout, "OK: the seed matches the commitment and gives exactly this order")
	return nil
}

func fetch(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}
