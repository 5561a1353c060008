package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// palette colours strategies in Strategies() order; later ones reuse it.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

func colour(strategy string, order []string) string {
	i := slices.Index(order, strategy)
	if i < 0 {
		i = len(order)
	}
	return palette[i%len(palette)]
}

// WriteSVG draws holds/s against clients, one line per strategy, one panel
// per throughput scenario (soldout is a race, not a rate, and is left out),
// on a shared logarithmic axis, with the commit ceiling dashed. A run
// narrowed to one client count is drawn as bars, one per strategy, since a
// line needs two points. Only strategies with a measured rate are in the
// legend. Hand-written SVG, no dependencies.
func (rep *Report) WriteSVG(w io.Writer) error {
	var scenarios, strategies []string
	var clients []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rep.Runs {
		if r.Scenario == ScenarioSoldout {
			continue
		}
		if !slices.Contains(scenarios, r.Scenario) {
			scenarios = append(scenarios, r.Scenario)
		}
		if !slices.Contains(strategies, r.Strategy) && r.HoldsPerSec > 0 {
			strategies = append(strategies, r.Strategy)
		}
		if !slices.Contains(clients, r.Clients) {
			clients = append(clients, r.Clients)
		}
		for _, v := range []float64{r.HoldsPerSec, r.CommitCeiling} {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	slices.Sort(clients)
	order := append(Strategies(), strategies...)
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	bars := len(clients) == 1
	// The axis starts at the 1-2-5 step at or below the smallest value.
	yMin := math.Pow(10, math.Floor(math.Log10(lo)))
	for _, m := range []float64{5, 2} {
		if yMin*m <= lo {
			yMin *= m
			break
		}
	}
	// And ends at the 1-2-5 step at or above the largest.
	yMax := math.Pow(10, math.Floor(math.Log10(hi)))
	for _, m := range []float64{1, 2, 5, 10} {
		if yMax*m >= hi {
			yMax *= m
			break
		}
	}
	if yMax <= yMin {
		yMax = yMin * 10
	}

	const (
		panelW, panelH = 460, 300
		padL, padR     = 70, 20
		padT, padB     = 34, 46
		legendY        = 66 // baseline of the legend's first row
		legendRowH     = 20
	)
	// Two panels a row; one when there is only one to draw.
	cols := min(2, max(1, len(scenarios)))
	rows := (len(scenarios) + cols - 1) / cols
	width := cols * panelW

	// Legend: only what is drawn, wrapped to the width.
	var legend strings.Builder
	x, y := 20, legendY
	entry := func(label string, draw func(x, y int) string) {
		w := 40 + 7*len(label)
		if x > 20 && x+w > width-10 {
			x, y = 20, y+legendRowH
		}
		fmt.Fprintf(&legend, `%s<text x="%d" y="%d">%s</text>`+"\n", draw(x, y), x+30, y, html.EscapeString(label))
		x += w
	}
	for _, s := range strategies {
		c := colour(s, order)
		if bars {
			entry(s, func(x, y int) string {
				return fmt.Sprintf(`<rect x="%d" y="%d" width="24" height="12" fill="%s"/>`, x, y-10, c)
			})
		} else {
			entry(s, func(x, y int) string {
				return fmt.Sprintf(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/><circle cx="%d" cy="%d" r="3.5" fill="%s"/>`, x, y-4, x+24, y-4, c, x+12, y-4, c)
			})
		}
	}
	if rep.ceilingDrawn(clients, bars) {
		entry("commit ceiling (1-row insert/tx)", func(x, y int) string {
			return fmt.Sprintf(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#555" stroke-width="1.5" stroke-dasharray="5,4"/>`, x, y-4, x+24, y-4)
		})
	}
	headH := y + 14

	height := headH + max(1, rows)*panelH + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	measure := "duration " + rep.Duration
	if rep.Attempts > 0 {
		measure = fmt.Sprintf("%d attempts per client", rep.Attempts)
	}
	by := "clients"
	if bars {
		by = fmt.Sprintf("strategy at %d clients", clients[0])
	}
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="16" font-weight="bold" text-anchor="middle">holdfast bench: holds/s by %s</text>`+"\n", width/2, html.EscapeString(by))
	fmt.Fprintf(&b, `<text x="%d" y="40" text-anchor="middle" fill="#555">%s, tx-work %s; log scale</text>`+"\n", width/2, html.EscapeString(measure), html.EscapeString(rep.TxWork))
	b.WriteString(legend.String())

	for pi, sc := range scenarios {
		ox := (pi % cols) * panelW
		oy := headH + (pi/cols)*panelH
		pw, ph := panelW-padL-padR, panelH-padT-padB
		px := func(i int) float64 {
			if len(clients) == 1 {
				return float64(ox+padL) + float64(pw)/2
			}
			return float64(ox+padL) + float64(i)*float64(pw)/float64(len(clients)-1)
		}
		py := func(v float64) float64 {
			f := (math.Log10(v) - math.Log10(yMin)) / (math.Log10(yMax) - math.Log10(yMin))
			return float64(oy+padT) + float64(ph)*(1-f)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold" text-anchor="middle">%s</text>`+"\n", ox+padL+pw/2, oy+padT-12, html.EscapeString(sc))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", ox+padL, oy+padT, pw, ph)
		// Y grid: decades labelled, 2 and 5 faint.
		for d := math.Pow(10, math.Floor(math.Log10(yMin))); d <= yMax*1.0001; d *= 10 {
			for _, m := range []float64{1, 2, 5} {
				v := d * m
				if v < yMin*0.9999 {
					continue
				}
				if v > yMax*1.0001 {
					break
				}
				y := py(v)
				if m == 1 {
					fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ccc"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", ox+padL, y, ox+padL+pw, y, ox+padL-6, y+4, humanRate(v))
				} else {
					fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end" fill="#999" font-size="10">%s</text>`+"\n", ox+padL, y, ox+padL+pw, y, ox+padL-6, y+3, humanRate(v))
				}
			}
		}
		fmt.Fprintf(&b, `<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle">holds/s</text>`+"\n", ox+18, oy+padT+ph/2)
		if bars {
			rep.drawBars(&b, sc, strategies, order, clients[0], float64(ox+padL), float64(oy+padT), float64(pw), float64(ph), py)
			continue
		}
		for i, c := range clients {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/><text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", px(i), oy+padT+ph, px(i), oy+padT+ph+5, px(i), oy+padT+ph+18, c)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">clients (evenly spaced)</text>`+"\n", ox+padL+pw/2, oy+padT+ph+36)
		// Commit ceiling.
		var pts []string
		for i, c := range clients {
			if v := rep.Ceilings[c]; v > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(i), py(v)))
			}
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<path d="M%s" fill="none" stroke="#555" stroke-width="1.5" stroke-dasharray="5,4"/>`+"\n", strings.Join(pts, " L"))
		}
		for _, s := range strategies {
			var pts []string
			var dots strings.Builder
			for i, c := range clients {
				for _, r := range rep.Runs {
					if r.Scenario == sc && r.Strategy == s && r.Clients == c && r.HoldsPerSec > 0 {
						pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(i), py(r.HoldsPerSec)))
						fmt.Fprintf(&dots, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s %s c=%d: %.0f holds/s, p99 %.1f ms</title></circle>`+"\n",
							px(i), py(r.HoldsPerSec), colour(s, order), html.EscapeString(s), html.EscapeString(sc), c, r.HoldsPerSec, r.P99ms)
					}
				}
			}
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<path d="M%s" fill="none" stroke="%s" stroke-width="2.5" stroke-linejoin="round"/>`+"\n", strings.Join(pts, " L"), colour(s, order))
			}
			b.WriteString(dots.String())
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ceilingDrawn reports whether the chart draws a commit ceiling: a line
// needs two client counts with a ceiling, a bar chart's level one.
func (rep *Report) ceilingDrawn(clients []int, bars bool) bool {
	n := 0
	for _, c := range clients {
		if rep.Ceilings[c] > 0 {
			n++
		}
	}
	return n > 1 || (bars && n == 1)
}

// drawBars draws one panel of a single-client-count run: a bar per
// strategy from the axis floor up to its rate, labelled, with the commit
// ceiling as a dashed level across the panel.
func (rep *Report) drawBars(b *strings.Builder, sc string, strategies, order []string, clients int, x0, y0, pw, ph float64, py func(float64) float64) {
	slot := pw / float64(max(1, len(strategies)))
	for i, s := range strategies {
		cx := x0 + (float64(i)+0.5)*slot
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", cx, y0+ph+16, html.EscapeString(s))
		for _, r := range rep.Runs {
			if r.Scenario != sc || r.Strategy != s || r.Clients != clients || r.HoldsPerSec <= 0 {
				continue
			}
			top := py(r.HoldsPerSec)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s c=%d: %.0f holds/s, p99 %.1f ms</title></rect>`+"\n",
				cx-slot*0.3, top, slot*0.6, y0+ph-top, colour(s, order), html.EscapeString(s), html.EscapeString(sc), clients, r.HoldsPerSec, r.P99ms)
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", cx, top-4, humanRate(r.HoldsPerSec))
		}
	}
	if v := rep.Ceilings[clients]; v > 0 {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555" stroke-width="1.5" stroke-dasharray="5,4"><title>commit ceiling c=%d: %.0f/s</title></line>`+"\n", x0, py(v), x0+pw, py(v), clients, v)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">strategy (%d clients)</text>`+"\n", x0+pw/2, y0+ph+36, clients)
}

// humanRate writes 1500 as 1.5k.
func humanRate(v float64) string {
	switch {
	case v >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e6), ".0") + "M"
	case v >= 1e3:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e3), ".0") + "k"
	}
	return fmt.Sprintf("%.0f", v)
}
