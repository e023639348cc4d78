// Package benchsvg draws the benches' pictures as hand-written SVG: the
// document's opening and the horizontal bar charts of contenders (W1, W2
// and W3 of BENCHMARKS.md), so that every bench draws them alike.
package benchsvg

import (
	"fmt"
	"path/filepath"
	"strings"
)

// The colours of the contenders' groups, alike in every picture.
const (
	ColourRS   = "#1f5fbf" // remote_segments
	ColourGo   = "#8a8a8a" // the Go contenders: the raw GET loop, the designs replaced
	ColourDuck = "#3a9a4a" // DuckDB's own readers
	ColourPeer = "#e07b00" // the peer engines
)

// Begin writes the opening of an SVG document of w×h pixels with a white
// background; the caller ends it with "</svg>\n".
func Begin(b *strings.Builder, w, h int) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
}

// Escape makes s safe as SVG text.
func Escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Link is the markdown link target of a picture written at path: "@/path",
// relative to the repository's root (test/bench/peers makes it relative to
// the report it writes), or path itself when absolute.
func Link(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return "@/" + path
}

// Bar is one bar: a median with an optional min–max whisker, or a text
// instead of a bar (a figure that does not exist, such as the peak RSS of
// what runs inside the bench's own process, is said, never drawn as 0).
type Bar struct {
	Value, Lo, Hi float64 // the whisker is drawn when Hi > 0
	Text          string  // shown instead of the bar when not empty
}

// Panel is one column of bars: every row has one bar per series in it.
type Panel struct {
	Title    string   // above the panel, e.g. "MiB/s, higher is better"
	Series   []string // the names of a row's bars, top to bottom, said under the title when more than one
	Format   string   // of the figure after each bar ("%.0f" when empty)
	Opacity  float64  // of the first series (1 when 0); each further series is lighter
	Ref      float64  // a dashed line at this value (0: none)
	RefLabel string   // its label, at the panel's foot
}

// Row is one contender: Bars[panel][series].
type Row struct {
	Name  string
	Group string // the key of its colour in Chart.Groups
	Bars  [][]Bar
}

// Group is a colour of the key under the chart.
type Group struct{ Key, Name, Colour string }

// Chart is a picture of horizontal bars: a label column, then the panels
// side by side, then the key of the groups' colours and a note.
type Chart struct {
	Title      string
	LabelWidth int // 290 when 0
	PanelWidth int // 300 when 0
	Panels     []Panel
	Rows       []Row
	Groups     []Group
	Note       string // a line under the key (empty: none)
}

const (
	barH  = 16 // a row's bars together
	rowH  = 24
	gap   = 50 // between panels: room for the figures after the bars
	width = 1000
)

// SVG draws the chart.
func (c Chart) SVG() string {
	labelW, panelW := c.LabelWidth, c.PanelWidth
	if labelW == 0 {
		labelW = 290
	}
	if panelW == 0 {
		panelW = 300
	}
	series := 1
	for _, p := range c.Panels {
		series = max(series, len(p.Series))
	}
	// One bar of barH per row, or thinner ones, 2 px apart, that fill a
	// taller row.
	bh, rh, top := barH, rowH, 56
	if series > 1 {
		bh, top = 12, 70 // a line under the panels' titles names the bars
		rh = series*(bh+2) + 10
	}
	foot := 0
	for _, p := range c.Panels {
		if p.RefLabel != "" {
			foot = 16
		}
	}
	H := top + len(c.Rows)*rh + foot + 40
	if c.Note != "" {
		H += 18
	}
	W := max(width, labelW+len(c.Panels)*(panelW+gap))
	colours := map[string]string{}
	for _, g := range c.Groups {
		colours[g.Key] = g.Colour
	}
	var b strings.Builder
	Begin(&b, W, H)
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="15">%s</text>`+"\n", Escape(c.Title))
	for i, r := range c.Rows {
		y := top + i*rh
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-8, y+series*(bh+2)/2+4, Escape(r.Name))
	}
	for pi, p := range c.Panels {
		x0 := labelW + pi*(panelW+gap)
		format, opacity := p.Format, p.Opacity
		if format == "" {
			format = "%.0f"
		}
		if opacity == 0 {
			opacity = 1
		}
		if len(p.Series) > 1 {
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x0, top-24, Escape(p.Title))
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">bars, top to bottom: %s</text>`+"\n", x0, top-10, Escape(strings.Join(p.Series, ", ")))
		} else {
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x0, top-10, Escape(p.Title))
		}
		scale := max(1e-9, p.Ref)
		for _, r := range c.Rows {
			if pi < len(r.Bars) {
				for _, x := range r.Bars[pi] {
					scale = max(scale, x.Value, x.Hi)
				}
			}
		}
		at := func(v float64) float64 { return float64(x0) + v/scale*float64(panelW) }
		for i, r := range c.Rows {
			if pi >= len(r.Bars) {
				continue
			}
			for si, x := range r.Bars[pi] {
				y := top + i*rh + si*(bh+2)
				if x.Text != "" {
					fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555" font-style="italic">%s</text>`+"\n", x0+4, y+bh-3, Escape(x.Text))
					continue
				}
				op := ""
				if o := opacity * (1 - 0.45*float64(si)); o < 1 {
					op = fmt.Sprintf(` fill-opacity="%.2g"`, o)
				}
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"%s/>`+"\n", x0, y, at(x.Value)-float64(x0), bh, colours[r.Group], op)
				end := at(x.Value)
				if x.Hi > 0 {
					fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="black"/>`+"\n", at(x.Lo), at(x.Hi), y+bh/2, y+bh/2)
					end = max(end, at(x.Hi))
				}
				fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", end+4, y+bh-3, fmt.Sprintf(format, x.Value))
			}
		}
		if p.Ref > 0 {
			y1, y2 := top-4, top+len(c.Rows)*rh
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#2a2" stroke-dasharray="4 3"/>`+"\n", at(p.Ref), at(p.Ref), y1, y2)
			if p.RefLabel != "" {
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#2a2" text-anchor="middle">%s</text>`+"\n", at(p.Ref), y2+12, Escape(p.RefLabel))
			}
		}
	}
	ly := top + len(c.Rows)*rh + foot + 20
	lx := 10
	for _, g := range c.Groups {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", lx, ly-10, g.Colour, lx+16, ly, Escape(g.Name))
		lx += 40 + 7*len(g.Name)
	}
	if c.Note != "" {
		fmt.Fprintf(&b, `<text x="10" y="%d" fill="#555">%s</text>`+"\n", ly+18, Escape(c.Note))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
