package web_test

// The seat map's colours, read from the source the browser runs
// (PALETTE in static/js/seatmap.js) and checked against WCAG 2.x: every
// seat state at least 3:1 against the map's background (a graphical
// object), text at least 4.5:1 against what it is written on, and every
// status set apart from the available seats by lightness, not by hue alone,
// so that the map still reads in grayscale and for the colour-blind.

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// minLightnessGap is how far (CIELAB L*, 0–100) a status's colour must be
// from every available seat's colour, and from every other status's.
const minLightnessGap = 10

type rgb struct{ r, g, b float64 }

func parseHex(t *testing.T, s string) rgb {
	t.Helper()
	s = strings.TrimPrefix(s, "#")
	if len(s) == 3 {
		s = string([]byte{s[0], s[0], s[1], s[1], s[2], s[2]})
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil || len(s) != 6 {
		t.Fatalf("bad colour %q", s)
	}
	return rgb{float64(v >> 16 & 255), float64(v >> 8 & 255), float64(v & 255)}
}

// luminance is WCAG's relative luminance.
func luminance(c rgb) float64 {
	lin := func(v float64) float64 {
		v /= 255
		if v <= 0.04045 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c.r) + 0.7152*lin(c.g) + 0.0722*lin(c.b)
}

// contrast is WCAG's contrast ratio, 1 to 21.
func contrast(a, b rgb) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// lightness is CIELAB L* (D65), the lightness a person sees: what is left
// of a colour in grayscale.
func lightness(c rgb) float64 {
	y := luminance(c)
	if y > 216.0/24389 {
		return 116*math.Cbrt(y) - 16
	}
	return y * 24389 / 27
}

var hexRE = regexp.MustCompile(`#[0-9A-Fa-f]{6}\b|#[0-9A-Fa-f]{3}\b`)

// palette is PALETTE as seatmap.js spells it: name → colour, and the tiers.
type palette struct {
	colours map[string]string
	tiers   []string
	block   string // the object's source text
}

func readPalette(t *testing.T, src string) palette {
	t.Helper()
	m := regexp.MustCompile(`(?s)export const PALETTE = \{\n(.*?)\n\};`).FindStringSubmatch(src)
	if m == nil {
		t.Fatal("seatmap.js has no `export const PALETTE = {…};`: the map's colours must stay in one object")
	}
	p := palette{colours: map[string]string{}, block: m[0]}
	tiers := regexp.MustCompile(`(?s)\btiers:\s*\[(.*?)\]`).FindStringSubmatch(m[1])
	if tiers == nil {
		t.Fatal("PALETTE has no tiers: [...]")
	}
	p.tiers = hexRE.FindAllString(tiers[1], -1)
	for _, e := range regexp.MustCompile(`(?m)^\s*(\w+):\s*'(#[0-9A-Fa-f]{3,6})'`).FindAllStringSubmatch(m[1], -1) {
		p.colours[e[1]] = e[2]
	}
	return p
}

func loadPalette(t *testing.T) (palette, string) {
	t.Helper()
	b, err := os.ReadFile("static/js/seatmap.js")
	if err != nil {
		t.Fatal(err)
	}
	return readPalette(t, string(b)), string(b)
}

func (p palette) get(t *testing.T, name string) rgb {
	t.Helper()
	h, ok := p.colours[name]
	if !ok {
		t.Fatalf("PALETTE has no %s", name)
	}
	return parseHex(t, h)
}

// statuses are the seat states other than available, as the map fills them.
var statuses = []string{"held", "sold", "resale", "selected"}

func TestPaletteContrast(t *testing.T) {
	p, _ := loadPalette(t)
	if len(p.tiers) < 4 {
		t.Fatalf("PALETTE.tiers has %d colours, want at least 4", len(p.tiers))
	}
	bg := p.get(t, "background")

	// Every seat state, on the map's background: 3:1 (WCAG 1.4.11).
	fills := map[string]rgb{"available": p.get(t, "available")}
	for i, h := range p.tiers {
		fills[fmt.Sprintf("tier %d (%s)", i+1, h)] = parseHex(t, h)
	}
	for _, s := range statuses {
		fills[s] = p.get(t, s)
	}
	for name, c := range fills {
		if r := contrast(c, bg); r < 3 {
			t.Errorf("%s: contrast %.2f:1 against the background %s, want at least 3:1", name, r, p.colours["background"])
		}
	}

	// Text, on what it is written on: 4.5:1 (WCAG 1.4.3).
	type pair struct{ text, on string }
	pairs := []pair{
		{"text", "background"}, {"textSoft", "background"}, {"stageText", "stage"},
		{"cardText", "card"}, {"cardTextSoft", "card"},
		{"onHeld", "held"},
		// Numbers and feature marks on a seat dimmed by the filter.
		{"onDimmed", "dimmed"},
	}
	for _, on := range []string{"available", "sold", "resale", "selected"} {
		pairs = append(pairs, pair{"onSeat", on})
	}
	for _, pr := range pairs {
		if r := contrast(p.get(t, pr.text), p.get(t, pr.on)); r < 4.5 {
			t.Errorf("%s (%s) on %s (%s): contrast %.2f:1, want at least 4.5:1", pr.text, p.colours[pr.text], pr.on, p.colours[pr.on], r)
		}
	}
	for i, h := range p.tiers {
		if r := contrast(p.get(t, "onSeat"), parseHex(t, h)); r < 4.5 {
			t.Errorf("seat numbers (%s) on tier %d (%s): contrast %.2f:1, want at least 4.5:1", p.colours["onSeat"], i+1, h, r)
		}
	}
	// The stage is a graphical object too.
	if r := contrast(p.get(t, "stage"), bg); r < 3 {
		t.Errorf("stage: contrast %.2f:1 against the background, want at least 3:1", r)
	}
}

// TestPaletteLightness: a status differs from every available colour in
// lightness (L*), not only in hue, and the statuses from one another; so
// sold floor seats do not vanish in grayscale.
func TestPaletteLightness(t *testing.T) {
	p, _ := loadPalette(t)
	avail := map[string]string{"available": p.colours["available"]}
	for i, h := range p.tiers {
		avail[fmt.Sprintf("tier %d", i+1)] = h
	}
	for _, s := range statuses {
		ls := lightness(p.get(t, s))
		for name, h := range avail {
			la := lightness(parseHex(t, h))
			if d := math.Abs(ls - la); d < minLightnessGap {
				t.Errorf("%s (%s, L* %.1f) and %s (%s, L* %.1f) differ by %.1f in lightness, want at least %d: in grayscale they look alike",
					s, p.colours[s], ls, name, h, la, d, minLightnessGap)
			}
		}
	}
	for i, a := range statuses {
		for _, b := range statuses[i+1:] {
			la, lb := lightness(p.get(t, a)), lightness(p.get(t, b))
			if d := math.Abs(la - lb); d < minLightnessGap {
				t.Errorf("%s (L* %.1f) and %s (L* %.1f) differ by %.1f in lightness, want at least %d", a, la, b, lb, d, minLightnessGap)
			}
		}
	}
}

// minDimmedContrast is how far a seat dimmed by the filter stands from the
// background: faint, but still drawn.
const minDimmedContrast = 1.2

// TestPaletteDimmed: a seat outside the filter (PALETTE.dimmed) is still
// seen on the background, is lighter than every seat state by at least
// minLightnessGap (so that, in grayscale too, it never passes for held,
// sold or an available seat), and what is written on it is readable.
// Feature marks are drawn in the seat-number colours (onSeat, onHeld,
// onDimmed), which TestPaletteContrast checks on every fill.
func TestPaletteDimmed(t *testing.T) {
	p, _ := loadPalette(t)
	d := p.get(t, "dimmed")
	if r := contrast(d, p.get(t, "background")); r < minDimmedContrast {
		t.Errorf("dimmed %s: contrast %.2f:1 against the background, want at least %.1f:1 (the seat must still be seen)", p.colours["dimmed"], r, minDimmedContrast)
	}
	fills := map[string]string{"available": p.colours["available"]}
	for i, h := range p.tiers {
		fills[fmt.Sprintf("tier %d", i+1)] = h
	}
	for _, s := range statuses {
		fills[s] = p.colours[s]
	}
	ld := lightness(d)
	for name, h := range fills {
		lf := lightness(parseHex(t, h))
		if ld-lf < minLightnessGap {
			t.Errorf("dimmed (L* %.1f) is not at least %d lighter than %s (%s, L* %.1f)", ld, minLightnessGap, name, h, lf)
		}
	}
}

// TestPaletteOnePlace: seatmap.js writes no colour outside PALETTE, and the
// canvas's CSS background is PALETTE.background; the hover tip's text is
// readable.
func TestPaletteOnePlace(t *testing.T) {
	p, src := loadPalette(t)
	rest := strings.Replace(src, p.block, "", 1)
	if stray := hexRE.FindAllString(rest, -1); len(stray) > 0 {
		t.Errorf("seatmap.js has colours outside PALETTE: %v", stray)
	}
	if stray := regexp.MustCompile(`rgba?\(`).FindAllString(rest, -1); len(stray) > 0 {
		t.Errorf("seatmap.js has %d rgb()/rgba() colours outside PALETTE", len(stray))
	}

	css, err := os.ReadFile("static/app.css")
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`(?m)^canvas\.seatmap \{[^}]*background:\s*(#[0-9A-Fa-f]{3,6})`).FindStringSubmatch(string(css))
	if rule == nil {
		t.Fatal("app.css: canvas.seatmap has no background colour")
	}
	if luminance(parseHex(t, rule[1])) != luminance(p.get(t, "background")) {
		t.Errorf("app.css paints the canvas %s, the map draws on %s", rule[1], p.colours["background"])
	}
	ink := regexp.MustCompile(`--ink:\s*(#[0-9A-Fa-f]{3,6})`).FindStringSubmatch(string(css))
	tip := regexp.MustCompile(`(?s)\.map-tip \{[^}]*background: var\(--ink\); color: (#[0-9A-Fa-f]{3,6})`).FindStringSubmatch(string(css))
	if ink == nil || tip == nil {
		t.Fatal("app.css: .map-tip is no longer var(--ink) with a colour: update this test")
	}
	if r := contrast(parseHex(t, tip[1]), parseHex(t, ink[1])); r < 4.5 {
		t.Errorf(".map-tip: contrast %.2f:1, want at least 4.5:1", r)
	}
}

// TestPaletteCatchesLowContrast: the checks above see a bad palette.
func TestPaletteCatchesLowContrast(t *testing.T) {
	// The old held grey (1.6:1 on the background) and a sold grey as light
	// as the blue floor seats.
	src := "export const PALETTE = {\n  background: '#F7F8FA',\n  tiers: ['#0072B2', '#E69F00'],\n  held: '#C3C9D2',\n  sold: '#5F6673',\n};"
	p := readPalette(t, src)
	bg := p.get(t, "background")
	if r := contrast(p.get(t, "held"), bg); r >= 3 {
		t.Errorf("held %s passes with %.2f:1", p.colours["held"], r)
	}
	if r := contrast(parseHex(t, p.tiers[1]), bg); r >= 3 {
		t.Errorf("tier %s passes with %.2f:1", p.tiers[1], r)
	}
	if d := math.Abs(lightness(p.get(t, "sold")) - lightness(parseHex(t, p.tiers[0]))); d >= minLightnessGap {
		t.Errorf("sold %s and floor %s are %.1f apart in lightness", p.colours["sold"], p.tiers[0], d)
	}
}
