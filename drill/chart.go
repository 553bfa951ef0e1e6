package drill

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// The chart is hand-written SVG: four panels over the drill's time axis
// (front door, queue, seat map, and the wait estimate's scatter), so that
// it needs nothing beyond the standard library and opens in any browser.

const (
	chartW      = 960.0
	panelH      = 190.0
	marginL     = 70.0
	marginR     = 70.0
	panelGap    = 70.0
	chartTop    = 60.0
	plotW       = chartW - marginL - marginR
	colorClicks = "#9e9e9e"
	colorAdmit  = "#1f77b4"
	colorRefuse = "#d62728"
	colorDepth  = "#ff7f0e"
	colorDrain  = "#2ca02c"
	colorReads  = "#9467bd"
	colorAvail  = "#8c564b"
	colorPaid   = "#17becf"
)

// svg accumulates the chart's elements.
type svg struct{ b strings.Builder }

func (s *svg) f(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

func (s *svg) text(x, y float64, anchor, size, color, t string) {
	s.f(`<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%s" fill="%s">%s</text>`+"\n", x, y, anchor, size, color, html.EscapeString(t))
}

// panel is one plot area with a left axis and an optional right one.
type panel struct {
	s              *svg
	top            float64
	xmax           float64 // seconds
	yL, yR         float64 // axis maxima
	labelL, labelR string
	title          string
	marks          []mark
}

type mark struct {
	at    float64
	label string
}

func (p *panel) x(t float64) float64 { return marginL + plotW*t/p.xmax }
func (p *panel) y(v, vmax float64) float64 {
	return p.top + panelH - panelH*math.Min(v, vmax)/vmax
}

// frame draws the axes, ticks, title and vertical marks.
func (p *panel) frame() {
	s := p.s
	s.text(marginL, p.top-28, "start", "14", "#222", p.title)
	s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#bbb"/>`+"\n", marginL, p.top, plotW, panelH)
	for _, v := range ticks(p.yL) {
		y := p.y(v, p.yL)
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", marginL, y, marginL+plotW, y)
		s.text(marginL-6, y+4, "end", "11", "#444", short(v))
	}
	if p.yR > 0 {
		for _, v := range ticks(p.yR) {
			s.text(marginL+plotW+6, p.y(v, p.yR)+4, "start", "11", "#444", short(v))
		}
	}
	for _, v := range ticks(p.xmax) {
		x := p.x(v)
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#bbb"/>`+"\n", x, p.top+panelH, x, p.top+panelH+4)
		s.text(x, p.top+panelH+16, "middle", "11", "#444", short(v)+"s")
	}
	s.f(`<text transform="translate(16,%.1f) rotate(-90)" text-anchor="middle" font-size="11" fill="#444">%s</text>`+"\n", p.top+panelH/2, html.EscapeString(p.labelL))
	if p.labelR != "" {
		s.f(`<text transform="translate(%.1f,%.1f) rotate(90)" text-anchor="middle" font-size="11" fill="#444">%s</text>`+"\n", chartW-14, p.top+panelH/2, html.EscapeString(p.labelR))
	}
	for _, m := range p.marks {
		if m.at < 0 || m.at > p.xmax {
			continue
		}
		x := p.x(m.at)
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555" stroke-dasharray="4 3"/>`+"\n", x, p.top, x, p.top+panelH)
		s.text(x+3, p.top+11, "start", "10", "#555", m.label)
	}
}

// line plots v (one value per second, drawn at the middle of the second)
// against the left or right axis.
func (p *panel) line(v []float64, right bool, color string, width float64) {
	vmax := p.yL
	if right {
		vmax = p.yR
	}
	if vmax <= 0 || len(v) == 0 {
		return
	}
	var pts strings.Builder
	for i, x := range v {
		fmt.Fprintf(&pts, "%.1f,%.1f ", p.x(float64(i)+0.5), p.y(x, vmax))
	}
	p.s.f(`<polyline fill="none" stroke="%s" stroke-width="%.1f" points="%s"/>`+"\n", color, width, strings.TrimSpace(pts.String()))
}

// step plots samples (time, value) as a step line on an axis, the last
// value held until end.
func (p *panel) step(at []float64, v []float64, end float64, right bool, color string) {
	vmax := p.yL
	if right {
		vmax = p.yR
	}
	if vmax <= 0 || len(v) == 0 {
		return
	}
	var pts strings.Builder
	for i := range v {
		if i > 0 {
			fmt.Fprintf(&pts, "%.1f,%.1f ", p.x(at[i]), p.y(v[i-1], vmax))
		}
		fmt.Fprintf(&pts, "%.1f,%.1f ", p.x(at[i]), p.y(v[i], vmax))
	}
	fmt.Fprintf(&pts, "%.1f,%.1f", p.x(max(end, at[len(at)-1])), p.y(v[len(v)-1], vmax))
	p.s.f(`<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", color, pts.String())
}

// legend writes coloured labels, left to right, between the title and
// the plot: pairs of label and colour.
func (p *panel) legend(items ...string) {
	x := marginL
	for i := 0; i+1 < len(items); i += 2 {
		label, color := items[i], items[i+1]
		p.s.f(`<rect x="%.1f" y="%.1f" width="12" height="4" fill="%s"/>`+"\n", x, p.top-13, color)
		p.s.text(x+16, p.top-8, "start", "11", "#222", label)
		x += 6.5*float64(len(label)) + 34
	}
}

// WriteSVG draws the drill's chart.
func WriteSVG(w io.Writer, r *Result) error {
	var s svg
	n := len(r.Admitted)
	xmax := axisMax(float64(max(n, 1)))
	depth, drained := r.QueueSeries()
	reads := make([]float64, n)
	for i := range reads {
		reads[i] = r.Reads200[i] + r.Reads304[i]
	}
	marks := []mark{{r.OpensAt.Seconds(), "sale opens"}}
	if r.SoldOut >= 0 {
		marks = append(marks, mark{(r.OpensAt + r.SoldOut).Seconds(), "sold out on the map"})
	}
	marks = append(marks, mark{r.LoadEnded.Seconds(), "load stops"})

	height := chartTop + 4*(panelH+panelGap) + 40
	s.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`+"\n", chartW, height, chartW, height)
	s.f(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	s.text(marginL, 24, "start", "16", "#111", fmt.Sprintf("boxoffice drill %s: %s users, %s seats, %s", r.Started.UTC().Format("2006-01-02 15:04"), num(r.Config.Users), num(r.Seats), verdict(r)))
	s.text(marginL, 42, "start", "11", "#444", trim(r.Shape, 150))

	top := chartTop + 40
	peakA, _ := Peak(r.Arrivals, 1)
	peakB, _ := Peak(r.Admitted, 1)
	front := &panel{s: &s, top: top, xmax: xmax, yL: niceCeil(max(peakA, peakB, 1)), labelL: "per second", marks: marks,
		title: fmt.Sprintf("Front door: time to 202 p50 %s, p99 %s; bare handler %s req/s", secsOf(r.To202, 50), secsOf(r.To202, 99), num(int(r.Ceilings.Bare)))}
	front.frame()
	front.line(r.Arrivals, false, colorClicks, 1.2)
	front.line(r.Refused, false, colorRefuse, 1.2)
	front.line(r.Admitted, false, colorAdmit, 2)
	front.line(r.Confirmed, false, colorPaid, 1.2)
	front.legend("clicks/s (first requests)", colorClicks, "202/s (all requests)", colorAdmit, "refused/s", colorRefuse, "confirms/s", colorPaid)

	top += panelH + panelGap
	peakD, _ := Peak(depth, 1)
	peakR, _ := Peak(drained, 1)
	queue := &panel{s: &s, top: top, xmax: xmax, yL: niceCeil(max(peakD, 1)), yR: niceCeil(max(peakR, 1)),
		labelL: "requests in the queue", labelR: "served per second", marks: marks,
		title: fmt.Sprintf("Queue: time to outcome p50 %s, p99 %s", secsOf(r.ToOutcome, 50), secsOf(r.ToOutcome, 99))}
	queue.frame()
	queue.line(depth, false, colorDepth, 2)
	queue.line(drained, true, colorDrain, 1.2)
	queue.legend("depth (left)", colorDepth, "drained/s (right)", colorDrain)

	top += panelH + panelGap
	peakM, _ := Peak(reads, 1)
	smap := &panel{s: &s, top: top, xmax: xmax, yL: niceCeil(max(peakM, 1)), yR: niceCeil(float64(max(r.Seats, 1))),
		labelL: "reads per second", labelR: "seats available on the map", marks: marks, title: "Seat map meanwhile"}
	smap.frame()
	smap.line(reads, false, colorReads, 1.2)
	var at, av []float64
	for _, a := range r.Available {
		at, av = append(at, a.At.Seconds()), append(av, float64(a.Available))
	}
	smap.step(at, av, float64(n), true, colorAvail)
	smap.legend("reads/s (left)", colorReads, "available seats (right)", colorAvail)

	top += panelH + panelGap
	scatter(&s, top, r)

	s.f("</svg>\n")
	_, err := io.WriteString(w, s.b.String())
	return err
}

// scatter draws predicted against actual waits, with the diagonal and the
// binned medians.
func scatter(s *svg, top float64, r *Result) {
	vmax := 1.0
	for _, p := range r.WaitPoints {
		vmax = max(vmax, p.Predicted, p.Actual)
	}
	vmax = axisMax(vmax)
	side := panelH
	x0 := marginL
	px := func(v float64) float64 { return x0 + side*math.Min(v, vmax)/vmax }
	py := func(v float64) float64 { return top + side - side*math.Min(v, vmax)/vmax }
	wa := r.Wait
	s.text(x0, top-28, "start", "14", "#222", fmt.Sprintf("Predicted vs actual wait: %s requests, median abs error %s, %.0f%% within 25%% + 2 s",
		num(wa.N), secs(wa.MedianAbsError), 100*wa.Within))
	s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#bbb"/>`+"\n", x0, top, side, side)
	for _, v := range ticks(vmax) {
		s.text(x0-6, py(v)+4, "end", "11", "#444", short(v)+"s")
		s.text(px(v), top+side+16, "middle", "11", "#444", short(v)+"s")
	}
	s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555" stroke-dasharray="4 3"/>`+"\n", px(0), py(0), px(vmax), py(vmax))
	for _, p := range r.WaitPoints {
		s.f(`<circle cx="%.1f" cy="%.1f" r="1.6" fill="%s" fill-opacity="0.35"/>`+"\n", px(p.Predicted), py(p.Actual), colorAdmit)
	}
	var pts strings.Builder
	for _, b := range wa.Bins {
		fmt.Fprintf(&pts, "%.1f,%.1f ", px(b.MedianPredicted), py(b.MedianActual))
	}
	if pts.Len() > 0 {
		s.f(`<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colorRefuse, strings.TrimSpace(pts.String()))
	}
	s.text(x0+side/2, top+side+34, "middle", "11", "#444", "predicted (estimated_wait_seconds)")
	s.f(`<text transform="translate(16,%.1f) rotate(-90)" text-anchor="middle" font-size="11" fill="#444">actual</text>`+"\n", top+side/2)
	lx := x0 + side + 40
	s.text(lx, top+20, "start", "12", "#222", "each dot: one request's first estimate while queued,")
	s.text(lx, top+36, "start", "12", "#222", "against the time from that answer to its outcome")
	s.text(lx, top+52, "start", "12", "#222", "in the queue state; dashed: exact; red: binned medians")
	s.text(lx, top+84, "start", "12", "#222", fmt.Sprintf("oversold %d, lost %d, paid-but-lost %d", r.Audit.Oversold, r.Audit.Lost, r.Audit.PaidLost))
	s.text(lx, top+100, "start", "12", "#222", fmt.Sprintf("tickets sold %s of %s; map reads served %s/s mean", num(r.Audit.Sold), num(r.Seats), num(int(readMean(r)))))
}

func readMean(r *Result) float64 {
	reads := make([]float64, len(r.Reads200))
	for i := range reads {
		reads[i] = r.Reads200[i] + r.Reads304[i]
	}
	f, l := firstLast(reads)
	return meanOver(reads, f, min(l, int(r.LoadEnded/time.Second)))
}

func secsOf(sorted []float64, p float64) string { return secs(Percentile(sorted, p)) }

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

// axisMax rounds v up to a whole number of tick steps, so that a time axis
// ends near the data rather than at the next power of ten.
func axisMax(v float64) float64 {
	step := niceCeil(v / 6)
	return math.Ceil(v/step) * step
}

// ticks returns about five round values from 0 to vmax.
func ticks(vmax float64) []float64 {
	step := niceCeil(vmax / 6)
	var out []float64
	for i := 0; float64(i)*step <= vmax*1.0001; i++ {
		out = append(out, float64(i)*step)
	}
	return out
}

// short formats an axis value: 1500 → 1.5k.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
