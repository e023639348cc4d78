package main

import (
	"fmt"
	"strings"

	"github.com/remote-segments/remote_segments/test/bench/benchsvg"
)

// The bar pictures of the W2 and W3 peers tables (-w2-svg, -w3-svg):
// throughput and peak RSS per contender, drawn with test/bench/benchsvg as
// W1's is.

// inProcess is said where a peak RSS would be: the raw loop and the
// pipeline run inside the bench's process, which has no RSS of theirs.
const inProcess = "in the bench process: no RSS of its own"

// barOf is the median of xs, the figures of the runs that counted out
// of runs, with their min–max; a text when none counted.
func barOf(xs []float64, runs int) benchsvg.Bar {
	switch {
	case runs == 0:
		return benchsvg.Bar{Text: "not run"}
	case len(xs) == 0:
		return benchsvg.Bar{Text: fmt.Sprintf("failed (%d of %d runs)", runs, runs)}
	}
	med, lo, hi := medianMinMax(xs)
	return benchsvg.Bar{Value: med, Lo: lo, Hi: hi}
}

// medianBar is barOf key over rs' runs that did not fail.
func medianBar(rs []runResult, key func(runResult) float64) benchsvg.Bar {
	return barOf(mapRuns(okRuns(rs), key), len(rs))
}

// rssBar is the median peak RSS (MiB) of rs' runs, or why there is none.
func rssBar(rs []runResult) benchsvg.Bar {
	if ok := okRuns(rs); len(ok) > 0 && ok[0].rss == 0 {
		return benchsvg.Bar{Text: inProcess}
	}
	b := medianBar(rs, func(r runResult) float64 { return float64(r.rss) / (1 << 20) })
	b.Lo, b.Hi = 0, 0 // the spread is in the table
	return b
}

// group is a contender's colour key: remote_segments, or a peer engine.
func group(key string) string {
	if key == "rs" || strings.HasPrefix(key, "cli") {
		return "rs"
	}
	return "peer"
}

// groups is the key of the colours: remote_segments, the peer engines and,
// with raw, the raw GET loop.
func groups(raw bool) []benchsvg.Group {
	g := []benchsvg.Group{{Key: "rs", Name: "remote_segments", Colour: benchsvg.ColourRS}, {Key: "peer", Name: "peer engines", Colour: benchsvg.ColourPeer}}
	if raw {
		g = append(g, benchsvg.Group{Key: "go", Name: "raw GET loop (ceiling)", Colour: benchsvg.ColourGo})
	}
	return g
}

// hasW2Peers says whether the run measured the peers on W2.
func (m *markdown) hasW2Peers() bool {
	return m.midPeers != nil && len(m.w2) > 0 && len(m.w2[len(m.w2)-1].peers["raw-files"]) > 0
}

// hasW3Peers says whether the run measured the peers on W3.
func (m *markdown) hasW3Peers() bool { return m.tinyPeers != nil && len(m.w3peers) > 0 }

// w2BarsSVG draws the W2 peers table: per contender, MiB/s and peak RSS
// of the narrow and the wide query (medians over the rounds).
func (m *markdown) w2BarsSVG() string {
	top := m.w2[len(m.w2)-1]
	files := m.midPeers.files
	speed := func(r runResult) float64 { return r.mibps(files) }
	raw := top.peers["raw-files"]
	c := benchsvg.Chart{
		Title: fmt.Sprintf("W2 against the peers: %d objects (%.1f MiB, IPC files) behind a %v proxy, max_parallel_io %d, medians of %d round(s)",
			len(files.keys), float64(files.bytes)/(1<<20), *latency, top.p, len(raw)),
		LabelWidth: 450, PanelWidth: 260,
		Panels: []benchsvg.Panel{
			{Title: "MiB/s, higher is better", Series: []string{"narrow", "wide"}, Format: "%.1f"},
			{Title: "peak RSS MiB, lower is better", Series: []string{"narrow", "wide"}, Opacity: 0.7},
		},
		Groups: groups(true),
		Note:   "Line on a bar: min–max over the rounds. The raw loop GETs whole objects without decoding: one figure for both queries.",
	}
	c.Rows = append(c.Rows, benchsvg.Row{Name: "raw ranged-GET loop (ceiling)", Group: "go",
		Bars: [][]benchsvg.Bar{{medianBar(raw, speed)}, {{Text: inProcess}}}})
	for _, k := range contenders() {
		n, wd := top.peers[k.key+"-narrow"], top.peers[k.key+"-wide"]
		if len(n)+len(wd) == 0 {
			continue
		}
		rss := []benchsvg.Bar{rssBar(n), rssBar(wd)}
		if rss[0].Text == inProcess {
			rss = rss[:1]
		}
		c.Rows = append(c.Rows, benchsvg.Row{Name: k.name, Group: group(k.key),
			Bars: [][]benchsvg.Bar{{medianBar(n, speed), medianBar(wd, speed)}, rss}})
	}
	return c.SVG()
}

// w3BarsSVG draws the W3 peers table: per contender, the mix's time as a
// multiple of its fault-free time, and its peak RSS under the mix.
func (m *markdown) w3BarsSVG() string {
	pd := m.tinyPeers
	c := benchsvg.Chart{
		Title: fmt.Sprintf("W3 for the peers: %d tiny objects (%.1f MiB) behind a %v proxy, fault-free and under the fault mix, %d run(s) of each",
			len(pd.files.keys), float64(pd.files.bytes)/(1<<20), *latency, *peerMixRuns),
		LabelWidth: 450, PanelWidth: 260,
		Panels: []benchsvg.Panel{
			{Title: "mix time × fault-free time, lower is better", Format: "%.2f×", Ref: 1.2, RefLabel: "1.2×: W3's goal"},
			{Title: "peak RSS MiB under the mix, lower is better", Opacity: 0.7},
		},
		Groups: groups(false),
		Note:   "Medians of each contender's runs, each mix run taken against the fault-free run just before it; line: min–max.",
	}
	for _, k := range contenders() {
		runs := m.w3peers[k.key]
		if len(runs) == 0 {
			continue
		}
		_, mix, ratios := w3Split(runs)
		c.Rows = append(c.Rows, benchsvg.Row{Name: k.name, Group: group(k.key),
			Bars: [][]benchsvg.Bar{{barOf(ratios, len(runs))}, {rssBar(mix)}}})
	}
	return c.SVG()
}
