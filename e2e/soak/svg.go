package soak

import (
	"fmt"
	"html"
	"slices"
	"strings"
	"time"
)

// Plot draws the run as an SVG: one row per fault kind (a bar while it was
// active), the convergence lag, and the memory of the process running the
// CCM, the approver and the simulator, against time.
func Plot(r *Report, d time.Duration) string {
	const (
		w, left, right = 1000.0, 130.0, 20.0
		rowH, panelH   = 14.0, 140.0
	)
	span := d.Seconds()
	for _, s := range r.Samples {
		span = max(span, s.At)
	}
	if span <= 0 {
		span = 1
	}
	x := func(t float64) float64 { return left + (w-left-right)*t/span }
	var kinds []string
	for _, f := range r.Faults {
		if !slices.Contains(kinds, f.Kind) {
			kinds = append(kinds, f.Kind)
		}
	}
	slices.Sort(kinds)
	faultsH := 30 + rowH*float64(len(kinds))
	h := faultsH + 2*(panelH+40) + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="10" y="16" font-size="13">Stackward soak: seed %d, %s, %d nodes, %d services</text>`+"\n",
		r.Seed, d.Round(time.Second), r.Nodes, r.Services)
	palette := []string{"#d62728", "#ff7f0e", "#2ca02c", "#1f77b4", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}
	for i, k := range kinds {
		y := 30 + rowH*float64(i)
		fmt.Fprintf(&b, `<text x="10" y="%.1f">%s</text>`+"\n", y+10, html.EscapeString(k))
		for _, f := range r.Faults {
			if f.Kind != k {
				continue
			}
			until := max(f.Until, f.At+span/400)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
				x(f.At), y+1, x(until)-x(f.At), rowH-3, palette[i%len(palette)], html.EscapeString(f.Detail))
		}
	}
	series := func(top float64, title, unit string, lines map[string]func(Sample) float64, colors map[string]string) {
		maxV := 1.0
		for _, s := range r.Samples {
			for _, f := range lines {
				maxV = max(maxV, f(s))
			}
		}
		y := func(v float64) float64 { return top + panelH - panelH*v/maxV }
		fmt.Fprintf(&b, `<text x="10" y="%.1f" font-size="12">%s</text>`+"\n", top-6, html.EscapeString(title))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", left, top+panelH, w-right, top+panelH)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", left, top, left, top+panelH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f %s</text><text x="%.1f" y="%.1f" text-anchor="end">0</text>`+"\n",
			left-4, top+8, maxV, unit, left-4, top+panelH)
		names := make([]string, 0, len(lines))
		for n := range lines {
			names = append(names, n)
		}
		slices.Sort(names)
		for i, n := range names {
			var pts []string
			for _, s := range r.Samples {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.At), y(lines[n](s))))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", colors[n], strings.Join(pts, " "))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n", left+10+float64(i)*160, top+12, colors[n], html.EscapeString(n))
		}
	}
	top := faultsH + 30
	series(top, "Convergence lag (oldest unconverged Node or Service)", "s",
		map[string]func(Sample) float64{"lag (s)": func(s Sample) float64 { return s.LagSeconds }, "unconverged objects": func(s Sample) float64 { return float64(s.Unconverged) }},
		map[string]string{"lag (s)": "#d62728", "unconverged objects": "#1f77b4"})
	top += panelH + 40
	series(top, "Memory of the process running stackward-ccm, stackward-approver and the simulator", "MiB",
		map[string]func(Sample) float64{"RSS (MiB)": func(s Sample) float64 { return s.RSSMiB }, "Go heap in use (MiB)": func(s Sample) float64 { return s.HeapMiB }},
		map[string]string{"RSS (MiB)": "#2ca02c", "Go heap in use (MiB)": "#9467bd"})
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">time (s), 0 to %.0f</text>`+"\n", (left+w)/2, h-8, span)
	b.WriteString("</svg>\n")
	return b.String()
}
