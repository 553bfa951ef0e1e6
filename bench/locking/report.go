package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/internal/numfmt"
)

// Markdown writes the report as markdown tables.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	cfg := r.Config
	fmt.Fprintf(&b, "## Holding one seat, four ways, same seats, same load (%s)\n\n", r.Start.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "%s. %s per cell, callers = clients (one connection or goroutine each), loopback.\n", r.Env, cfg.Duration)
	fmt.Fprintf(&b, "Low contention: a random seat among %s. Hot: a random seat among %s hot seats; a seat granted is replaced by a fresh one, so the window stays that size.\n\n",
		commas(int64(cfg.Seats)), commas(int64(cfg.Hot)))

	b.WriteString("### Ceilings (same run, same pool and client)\n\n")
	fmt.Fprintf(&b, "Each measured for %s before and again after the cells of its number of clients; the higher is the ceiling (p50/p99 are of that pass).\n\n", cfg.Duration/2)
	b.WriteString("| ceiling | clients | before, ops/s | after, ops/s | p50 | p99 |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, c := range r.Ceilings {
		best := c.Best()
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", c.Name, c.Clients,
			commas(int64(c.Before.Rate())), commas(int64(c.After.Rate())), fmtDur(best.P50), fmtDur(best.P99))
	}

	b.WriteString("\n### Strategies\n\n")
	b.WriteString("Ratios (×) are against the ceiling of the strategy's store at the same clients: PostgreSQL `SELECT 1`, Redis raw `SET NX PX`. ")
	b.WriteString("*wasted / hold* is attempts that did not hold a seat per seat held; *lost CAS* counts attempts that read the seat free and then updated 0 rows. ")
	b.WriteString("*Oversold* counts seats granted to more than one caller, from what each caller was told; *store* is the seats the store shows held afterwards (rows with status `held`, seat keys), which must equal the distinct seats granted.\n\n")
	b.WriteString("| strategy | contention | clients | attempts/s | × | holds/s | × | wasted / hold | lost CAS | round trips / hold | p50 | p99 | oversold seats | store |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, c := range r.Cells {
		lost := "—"
		if c.Short == "version CAS" {
			lost = commas(c.Lost)
		}
		oversold := "0"
		if c.Oversold > 0 {
			oversold = fmt.Sprintf("**%s** (%s extra grant%s)", commas(int64(c.Oversold)), commas(c.ExtraGrants), plural(c.ExtraGrants))
		}
		store := fmt.Sprintf("%s = granted", commas(c.StoreHeld))
		if c.StoreHeld != int64(c.Seats) {
			store = fmt.Sprintf("**%s ≠ %s granted**", commas(c.StoreHeld), commas(int64(c.Seats)))
		}
		if c.Errors > 0 {
			store += fmt.Sprintf("; %s errors (%s)", commas(c.Errors), strings.ReplaceAll(c.FirstError, "|", "/"))
		}
		if c.Exhausted {
			store += "; ran out of fresh seats"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			c.Strategy, (contention{c.Contention, c.Window}).label(), c.Clients,
			commas(int64(c.AttemptRate())), ratio(c.AttemptRate(), c.CeilingRate),
			commas(int64(c.HoldRate())), ratio(c.HoldRate(), c.CeilingRate),
			perHold(c.Attempts-c.Holds, c.Holds), lost, perHold(c.RoundTrips, c.Holds),
			fmtDur(c.P50), fmtDur(c.P99), oversold, store)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func perHold(n, holds int64) string {
	if holds == 0 {
		if n == 0 {
			return "—"
		}
		return "∞"
	}
	v := float64(n) / float64(holds)
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return commas(int64(math.Round(v)))
}

func ratio(v, ceiling float64) string {
	if ceiling <= 0 {
		return "—"
	}
	r := v / ceiling
	if r >= 0.095 {
		return strconv.FormatFloat(r, 'f', 2, 64)
	}
	return strconv.FormatFloat(r, 'f', 3, 64)
}

// commas formats n with thousands separators: 70000 → 70,000.
func commas(n int64) string { return numfmt.Thousands(n) }

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Microseconds())
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// compact formats a rate for the chart: 950, 5.9k, 71k.
func compact(v float64) string {
	switch {
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v < 10_000:
		return strings.TrimSuffix(strconv.FormatFloat(v/1000, 'f', 1, 64), ".0") + "k"
	case v < 1_000_000:
		return strconv.FormatFloat(v/1000, 'f', 0, 64) + "k"
	}
	return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
}

// Chart colours, one per strategy (by short name), in table order.
var barColor = map[string]string{
	"naive":         "#9aa5b1",
	"version CAS":   "#5b8def",
	"FOR UPDATE":    "#1f3f8f",
	"Holds.Acquire": "#e8772e",
	"SET NX PX":     "#f2b134",
}

// barInk is the colour of a value written on a bar of that strategy.
var barInk = map[string]string{
	"naive":         "black",
	"version CAS":   "white",
	"FOR UPDATE":    "white",
	"Holds.Acquire": "white",
	"SET NX PX":     "black",
}

// SVG writes a bar chart of successful holds/s (log scale): one group per
// contention level and number of clients, one bar per strategy; oversold
// bars hatched red with the count, each store's ceiling a dashed line over
// its bars.
func (r *Report) SVG(w io.Writer) error {
	type group struct {
		contention string
		window     int
		clients    int
		cells      []Cell
		ceil       map[string]float64
	}
	var groups []*group
	index := map[string]*group{}
	lo, hi := math.Inf(1), 1.0
	for _, c := range r.Cells {
		k := fmt.Sprintf("%s/%d", c.Contention, c.Clients)
		g := index[k]
		if g == nil {
			g = &group{contention: c.Contention, window: c.Window, clients: c.Clients, ceil: map[string]float64{}}
			index[k] = g
			groups = append(groups, g)
		}
		g.cells = append(g.cells, c)
		g.ceil[c.Store] = c.CeilingRate
		if v := c.HoldRate(); v > 0 {
			lo = min(lo, v)
		}
		hi = max(hi, c.HoldRate(), c.CeilingRate)
	}
	// Low contention first, then hot; clients in run order within each.
	ordered := make([]*group, 0, len(groups))
	for _, name := range []string{"low", "hot"} {
		for _, g := range groups {
			if g.contention == name {
				ordered = append(ordered, g)
			}
		}
	}
	if len(ordered) == 0 {
		return fmt.Errorf("no cells to chart")
	}
	if math.IsInf(lo, 1) {
		lo = 1
	}
	// From a decade at least 2x below the lowest bar to a little above the
	// highest bar or ceiling, so that every bar shows and labels fit.
	dmin := math.Floor(math.Log10(lo / 2))
	dmax := math.Log10(hi) + 0.3

	const (
		width, height = 1000, 560
		left, right   = 72, 20
		top, bottom   = 96, 84
	)
	plotW, plotH := float64(width-left-right), float64(height-top-bottom)
	y := func(v float64) float64 {
		if v <= 0 {
			return float64(top) + plotH
		}
		f := (math.Log10(v) - dmin) / (dmax - dmin)
		return float64(top) + plotH*(1-f)
	}

	var b strings.Builder
	esc := html.EscapeString
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	b.WriteString(`<defs><pattern id="oversold" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fbd5d5"/><rect width="3" height="6" fill="#d62728"/></pattern></defs>` + "\n")
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", left,
		esc("Holding one seat: successful holds/s, same seats, same load (log scale)"))
	fmt.Fprintf(&b, `<text x="%d" y="42" fill="#555">%s</text>`+"\n", left,
		esc(fmt.Sprintf("%s · %s per cell · %s · bench/locking", r.Start.UTC().Format("2006-01-02"), r.Config.Duration, r.Env)))

	// Legend.
	lx := float64(left)
	for _, c := range ordered[0].cells {
		fmt.Fprintf(&b, `<rect x="%.0f" y="54" width="12" height="12" fill="%s"/><text x="%.0f" y="64">%s</text>`+"\n", lx, barColor[c.Short], lx+16, esc(c.Short))
		lx += 24 + 7.2*float64(len(c.Short))
	}
	fmt.Fprintf(&b, `<rect x="%.0f" y="54" width="12" height="12" fill="url(#oversold)"/><text x="%.0f" y="64">%s</text>`+"\n", lx, lx+16, "oversold (count of seats sold twice)")
	lx += 250
	fmt.Fprintf(&b, `<line x1="%.0f" y1="60" x2="%.0f" y2="60" stroke="#333" stroke-dasharray="4 3"/><text x="%.0f" y="64">%s</text>`+"\n", lx, lx+20, lx+24, "ceiling")
	fmt.Fprintf(&b, `<text x="%d" y="84" fill="#555">%s</text>`+"\n", left,
		esc("ceiling: PostgreSQL SELECT 1 over the PostgreSQL bars, raw Redis SET NX PX over the Redis bars, same run, same clients"))

	// Axis and decade grid.
	for d := dmin; d <= dmax; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > dmax {
				break
			}
			yy := y(v)
			stroke := "#e3e3e3"
			if m != 1 {
				stroke = "#f3f3f3"
			}
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", left, yy, width-right, yy, stroke)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", left-6, yy+4, compact(v))
		}
	}
	fmt.Fprintf(&b, `<text transform="translate(18 %.0f) rotate(-90)" text-anchor="middle" fill="#555">holds/s</text>`+"\n", float64(top)+plotH/2)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%.0f" stroke="#333"/>`+"\n", left, top, left, float64(top)+plotH)
	fmt.Fprintf(&b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#333"/>`+"\n", left, float64(top)+plotH, width-right, float64(top)+plotH)

	groupW := plotW / float64(len(ordered))
	base := float64(top) + plotH
	for gi, g := range ordered {
		gx := float64(left) + groupW*float64(gi)
		barW := groupW * 0.8 / float64(len(g.cells))
		x0 := gx + groupW*0.1
		storeSpan := map[string][2]float64{}
		for i, c := range g.cells {
			x := x0 + barW*float64(i)
			v := c.HoldRate()
			yy := y(v)
			fill := barColor[c.Short]
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
				x+1, yy, barW-2, base-yy, fill, esc(fmt.Sprintf("%s, %s, %d clients: %s holds/s, %s attempts/s, %d oversold",
					c.Strategy, c.Contention, c.Clients, commas(int64(v)), commas(int64(c.AttemptRate())), c.Oversold)))
			above := yy - 4 // where the next label above the bar goes
			if c.Oversold > 0 {
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="url(#oversold)" stroke="#d62728" stroke-width="2"/>`+"\n",
					x+1, yy, barW-2, base-yy)
			}
			// The value inside the top of the bar (on a white tag over a
			// hatched bar), or above it when the bar is too short.
			if base-yy >= 20 {
				ink := barInk[c.Short]
				if c.Oversold > 0 {
					fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="14" fill="white"/>`+"\n", x+4, yy+3, barW-8)
					ink = "black"
				}
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11" fill="%s">%s</text>`+"\n", x+barW/2, yy+14, ink, compact(v))
			} else {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11">%s</text>`+"\n", x+barW/2, above, compact(v))
				above -= 13
			}
			if c.Oversold > 0 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-weight="bold" fill="#d62728" font-size="9">oversold</text>`+"\n",
					x+barW/2, above)
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-weight="bold" fill="#d62728" font-size="11">%s</text>`+"\n",
					x+barW/2, above-11, esc(commas(int64(c.Oversold))))
			}
			sp, ok := storeSpan[c.Store]
			if !ok {
				sp[0] = x
			}
			sp[1] = x + barW
			storeSpan[c.Store] = sp
		}
		for _, st := range []string{"postgres", "redis"} {
			sp, ok := storeSpan[st]
			if !ok || g.ceil[st] <= 0 {
				continue
			}
			yy := y(g.ceil[st])
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333" stroke-dasharray="4 3"/>`+"\n", sp[0], yy, sp[1], yy)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#333">%s</text>`+"\n",
				sp[0]+2, yy-3, esc(map[string]string{"postgres": "SELECT 1 ", "redis": "SET NX "}[st]+compact(g.ceil[st])))
		}
		label, sub := "low contention", fmt.Sprintf("1 of %s seats, %d clients", commas(int64(g.window)), g.clients)
		if g.contention == "hot" {
			label, sub = "flash sale", fmt.Sprintf("1 of %s hot seats, %d clients", commas(int64(g.window)), g.clients)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" font-weight="bold">%s</text>`+"\n", gx+groupW/2, base+22, esc(label))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", gx+groupW/2, base+40, esc(sub))
		if gi > 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.0f" stroke="#ccc"/>`+"\n", gx, top, gx, base+44)
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555" font-size="11">%s</text>`+"\n", left, height-14,
		esc("A seat granted is replaced by a fresh one, so each window stays its size. Oversold = seats granted to more than one caller, counted from each caller's answer."))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
