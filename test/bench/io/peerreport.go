package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/remote-segments/remote_segments/test/bench/benchsvg"
	"github.com/remote-segments/remote_segments/test/faultproxy"
)

// okRuns are the runs of rs that did not fail.
func okRuns(rs []runResult) []runResult {
	return slices.DeleteFunc(slices.Clone(rs), func(r runResult) bool { return r.err != nil })
}

func failed(rs []runResult) int { return len(rs) - len(okRuns(rs)) }

// speedRatio is, over the rounds where both ran without failing, the
// median, min and max of ref's window ÷ x's window (x's speed as a
// multiple of ref's), and how many rounds counted.
func speedRatio(x, ref []runResult) (med, lo, hi float64, n int) {
	var xs []float64
	for i := range min(len(x), len(ref)) {
		if x[i].err == nil && ref[i].err == nil && x[i].window > 0 {
			xs = append(xs, ref[i].window.Seconds()/x[i].window.Seconds())
		}
	}
	med, lo, hi = medianMinMax(xs)
	return med, lo, hi, len(xs)
}

// ratioText is "**1.23×** (1.01–1.40)", or "–" when no round counted.
func ratioText(med, lo, hi float64, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("**%.2f×** (%.2f–%.2f)", med, lo, hi)
}

func medianText(rs []runResult, format string, key func(runResult) float64) string {
	ok := okRuns(rs)
	if len(ok) == 0 {
		return "–"
	}
	return fmt.Sprintf(format, medianOf(ok, key))
}

func rssMedian(rs []runResult) string {
	ok := okRuns(rs)
	if len(ok) == 0 || ok[0].rss == 0 {
		return "in process"
	}
	med, lo, hi := medianMinMax(mapRuns(ok, func(r runResult) float64 { return float64(r.rss) / (1 << 20) }))
	return fmt.Sprintf("%.0f (%.0f–%.0f)", med, lo, hi)
}

func mapRuns(rs []runResult, f func(runResult) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// firstErr is the first failure of rs, for the report ("" if none).
func firstErr(rs []runResult) string {
	for _, r := range rs {
		if r.err != nil {
			s := r.err.Error()
			if len(s) > 200 {
				s = s[:200] + "…"
			}
			return strings.ReplaceAll(s, "|", "\\|")
		}
	}
	return ""
}

// w2PeersSection writes the peers' part of W2 (and its goal line) when
// the run had peers.
func (m *markdown) w2PeersSection(w, g func(string, ...any), mid *dataset) {
	if !m.hasW2Peers() {
		return
	}
	pd, top := m.midPeers, m.w2[len(m.w2)-1]
	files := pd.files
	speed := func(x runResult) float64 { return x.mibps(files) }
	w("### W2 against the peer engines\n\n")
	w("Polars' `scanIPC` reads Arrow IPC files, not streams, so the peers read a copy of the same rows in which every chunk is an IPC file (`%s/`, %d objects, %.1f MiB), and in the same rounds the raw loop and remote_segments read that copy too: every ratio below is within one round, on the same objects, behind the same proxy (%v per request). LanceDB reads the same rows written as a Lance dataset by one `createTable` (%.1f MiB, LanceDB's own layout: a few large files instead of one object per chunk). Polars runs `scanIPC` over the glob `s3://bench/%s/chunks/*/*.arrow` with the streaming engine; LanceDB `query().select(…).execute()`, summing in JavaScript; each prints its answer (rows, sum(x); wide also sum(i), sum(d), count of true b, bytes of s), checked against the generator's before its time counts. *remote_segments in the DuckDB CLI* is the table function itself in its own process (`.tools/bin/duckdb` with the extension, the glob `s3://bench/%s/chunks/**/*.arrow`, defaults otherwise: max_parallel_io 64, the adaptive budget; and the same at `memory_budget := '64MiB'`), listing the objects as Polars does, where *remote_segments* is its pipeline in the bench process with the catalog (every object's URL and length) and no listing. The peers run at their defaults (`POLARS_CONCURRENCY_BUDGET`, `LANCE_IO_THREADS` unset), remote_segments and the raw loop at max_parallel_io %d. MiB/s is the copy's IPC bytes over the window at the proxy (first request to last, Polars' listing and LanceDB's manifest reads included); peak RSS is `/usr/bin/time -v` of the contender's own process. %d rounds; ratios are medians of the rounds' ratios (min–max); a failed run counts as failed and in no ratio.\n\n",
		files.name, len(files.keys), float64(files.bytes)/(1<<20), *latency, float64(pd.lanceSz)/(1<<20), files.name, files.name, top.p, len(top.load))
	w("| contender | reads | narrow MiB/s | narrow × raw loop | wide MiB/s | wide × raw loop | requests narrow / wide | in flight narrow / wide | peak RSS MiB narrow / wide | failed runs |\n")
	w("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	raw := top.peers["raw-files"]
	w("| raw ranged-GET loop (ceiling) | IPC-file copy | %s | 1.00 | | | %s | %s | | %d |\n", medianText(raw, "%.1f", speed),
		medianText(raw, "%.0f", func(x runResult) float64 { return float64(x.requests) }),
		medianText(raw, "%.1f", func(x runResult) float64 { return x.inFlight }), failed(raw))
	for _, r := range contenders() {
		n, wd := top.peers[r.key+"-narrow"], top.peers[r.key+"-wide"]
		if len(n)+len(wd) == 0 {
			continue // not run (-peers)
		}
		w("| %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s / %s | %d of %d |\n", r.name, r.reads,
			medianText(n, "%.1f", speed), ratioText(speedRatio(n, raw)), medianText(wd, "%.1f", speed), ratioText(speedRatio(wd, raw)),
			medianText(n, "%.0f", func(x runResult) float64 { return float64(x.requests) }), medianText(wd, "%.0f", func(x runResult) float64 { return float64(x.requests) }),
			medianText(n, "%.1f", func(x runResult) float64 { return x.inFlight }), medianText(wd, "%.1f", func(x runResult) float64 { return x.inFlight }),
			rssMedian(n), rssMedian(wd), failed(n)+failed(wd), len(n)+len(wd))
	}
	w("\n")
	if *w2SVG != "" {
		w("![W2 against the peers: throughput and peak RSS](%s)\n\n*Throughput and peak RSS of each contender above, narrow and wide (medians of the rounds; the raw loop and the in-process pipeline have no RSS of their own).*\n\n", benchsvg.Link(*w2SVG))
	}
	var goal []string
	for _, k := range peerKinds {
		if strings.HasPrefix(k.key, "cli") || len(top.peers[k.key+"-narrow"]) == 0 {
			continue
		}
		ratio := func(rs string) string {
			n, nlo, nhi, nn := speedRatio(top.peers[rs+"-narrow"], top.peers[k.key+"-narrow"])
			wd, wlo, whi, wn := speedRatio(top.peers[rs+"-wide"], top.peers[k.key+"-wide"])
			return fmt.Sprintf("narrow %s, wide %s", ratioText(n, nlo, nhi, nn), ratioText(wd, wlo, whi, wn))
		}
		at64 := ""
		if len(top.peers["cli64-narrow"]) > 0 {
			at64 = fmt.Sprintf("at memory_budget 64MiB %s; ", ratio("cli64"))
		}
		line := fmt.Sprintf("%s: in the DuckDB CLI %s (%sthe pipeline with the catalog %s)", k.name, ratio("cli"), at64, ratio("rs"))
		if f := failed(top.peers[k.key+"-narrow"]) + failed(top.peers[k.key+"-wide"]); f > 0 {
			line += fmt.Sprintf("; %s failed %d of %d runs: %s", k.name, f, len(top.peers[k.key+"-narrow"])+len(top.peers[k.key+"-wide"]),
				firstErr(append(slices.Clone(top.peers[k.key+"-narrow"]), top.peers[k.key+"-wide"]...)))
		}
		goal = append(goal, line)
		w("remote_segments ÷ %s, throughput within each round: %s.\n\n", k.name, strings.TrimPrefix(line, k.name+": "))
	}
	g("- **W2 against the peers** (%d objects as IPC files, %v per request; remote_segments' throughput as a multiple of the peer's, per round): %s.\n", len(files.keys), *latency, strings.Join(goal, "; "))
}

// w3Split is the fault-free and the mix runs of runs, and the mix's time
// ÷ the fault-free run's of each pair where neither failed.
func w3Split(runs []w3Run) (clean, mix []runResult, ratios []float64) {
	for _, r := range runs {
		clean, mix = append(clean, r.clean), append(mix, r.mix)
		if r.clean.err == nil && r.mix.err == nil {
			ratios = append(ratios, r.mix.window.Seconds()/r.clean.window.Seconds())
		}
	}
	return clean, mix, ratios
}

// w3PeersSection writes the peers' part of W3 (and its goal line) when
// the run had peers.
func (m *markdown) w3PeersSection(w, g func(string, ...any), tiny *dataset) {
	if !m.hasW3Peers() {
		return
	}
	pd := m.tinyPeers
	w("### W3 for the peer engines\n\n")
	w("The same rows for the peers, as in W2: an IPC-file copy (`%s/`, %d objects, %.1f MiB) for Polars `scanIPC` and for remote_segments on the same objects (its pipeline in the bench process with the catalog, and the DuckDB CLI with a glob), and a Lance dataset (%.1f MiB) for LanceDB; the narrow query (x only), answers checked. %d run(s) of each; each run of the mix (the same seeds as above) follows a fault-free run of the same contender and is taken as a multiple of it. A run that fails (an error, a wrong answer, or killed: after %v, or under the mix after 10× its fault-free run if that is longer) is counted and in no ratio.\n\n",
		pd.files.name, len(pd.files.keys), float64(pd.files.bytes)/(1<<20), float64(pd.lanceSz)/(1<<20), *peerMixRuns, *peerTimeout)
	w("| contender | reads | fault-free time | mix time | mix × fault-free | failed fault-free / mix | requests per run, mix | peak RSS MiB, mix | first failure |\n|---|---|--:|--:|--:|--:|--:|--:|---|\n")
	var goal []string
	for _, k := range contenders() {
		runs := m.w3peers[k.key]
		if len(runs) == 0 {
			continue // not run (-peers)
		}
		clean, mix, xs := w3Split(runs)
		med, lo, hi := medianMinMax(xs)
		dur := func(x runResult) float64 { return float64(x.window) }
		durText := func(rs []runResult) string {
			if len(okRuns(rs)) == 0 {
				return "–"
			}
			return time.Duration(medianOf(okRuns(rs), dur)).Round(time.Millisecond).String()
		}
		w("| %s | %s | %s | %s | %s | %d / %d of %d | %s | %s | %s |\n", k.name, k.reads, durText(clean), durText(mix), ratioText(med, lo, hi, len(xs)),
			failed(clean), failed(mix), len(runs), medianText(mix, "%.0f", func(x runResult) float64 { return float64(x.requests) }), rssMedian(mix),
			firstErr(append(slices.Clone(clean), mix...)))
		line := fmt.Sprintf("%s %s", k.name, ratioText(med, lo, hi, len(xs)))
		if f := failed(clean) + failed(mix); f > 0 {
			line += fmt.Sprintf(", %d of %d runs failed (%s)", f, 2*len(runs), firstErr(append(slices.Clone(clean), mix...)))
		}
		goal = append(goal, line)
	}
	w("\n")
	if *w3SVG != "" {
		w("![W3 for the peers: the mix × fault-free and peak RSS](%s)\n\n*Each contender's time under the fault mix as a multiple of its fault-free time, and its peak RSS under the mix (medians of the runs above).*\n\n", benchsvg.Link(*w3SVG))
	}
	g("- **W3 for the peers** (the mix's time × the same contender's fault-free time, %d run(s) of each): %s.\n", *peerMixRuns, strings.Join(goal, "; "))
}

// inflightSVG draws requests in flight over time at the proxy for the raw
// loop, remote_segments (narrow) and the nested design, in the round of
// the highest P whose narrow ratio is the median: one line each, the
// time-weighted average per 1/400 of the time span.
func (m *markdown) inflightSVG(d *dataset) string {
	top := m.w2[len(m.w2)-1]
	ratios := mapRuns(top.narrow, func(r runResult) float64 { return 0 })
	for i := range top.narrow {
		ratios[i] = top.raw[i].window.Seconds() / top.narrow[i].window.Seconds()
	}
	med, _, _ := medianMinMax(ratios)
	round := slices.Index(ratios, med)
	runs := []struct {
		name, colour string
		r            runResult
	}{
		{"remote_segments (narrow)", "#1f5fbf", top.narrow[round]},
		{"nested buffered(k)", "#e07b00", top.nested[round]},
		{"raw GET loop", "#888888", top.raw[round]},
	}
	const W, left, top0, panelH = 900, 60, 60, 260
	height := top0 + panelH + 50
	var b strings.Builder
	benchsvg.Begin(&b, W, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15">W2: requests in flight at the proxy, %d objects × ~%.0f KiB, %v per request, max_parallel_io %d (round %d of %d)</text>`+"\n",
		left, len(d.keys), float64(d.bytes)/float64(len(d.keys))/1024, *latency, top.p, round+1, len(top.narrow))
	var tmax float64
	for _, x := range runs {
		tmax = max(tmax, x.r.window.Seconds())
	}
	for i, x := range runs {
		fmt.Fprintf(&b, `<text x="%d" y="42" fill="%s">%s %.2f s (%.1f MiB/s, %.1f in flight on average)</text>`+"\n", left+i*280, x.colour, x.name, x.r.window.Seconds(), x.r.mibps(d), x.r.inFlight)
	}
	plotW := float64(W - left - 30)
	p := top.p
	ymax := float64(p + max(2, p/8))
	y0 := float64(top0)
	yOf := func(v float64) float64 { return y0 + panelH - v/ymax*panelH }
	fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%.0f" height="%d" fill="none" stroke="#999"/>`+"\n", left, y0, plotW, panelH)
	fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#2a2" stroke-dasharray="4 3"/>`+"\n", left, float64(left)+plotW, yOf(float64(p)), yOf(float64(p)))
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n", left-4, yOf(float64(p))+4, p)
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">0</text>`+"\n", left-4, yOf(0)+4)
	for k := 0; k <= 4; k++ {
		x := float64(left) + plotW*float64(k)/4
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%.2fs</text>`+"\n", x, y0+panelH+14, tmax*float64(k)/4)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="middle">time since the run's first request at the proxy</text>`+"\n", left+int(plotW/2), y0+panelH+34)
	for _, x := range runs {
		ev := x.r.events
		if len(ev) == 0 {
			continue
		}
		start := ev[0].T
		var pts strings.Builder
		const buckets = 400
		for k := range buckets {
			from := start.Add(time.Duration(float64(k) / buckets * tmax * float64(time.Second)))
			to := start.Add(time.Duration(float64(k+1) / buckets * tmax * float64(time.Second)))
			if from.After(ev[len(ev)-1].T) {
				break
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", float64(left)+plotW*(float64(k)+0.5)/buckets, yOf(faultproxy.Average(ev, from, to)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.4" points="%s"/>`+"\n", x.colour, strings.TrimSpace(pts.String()))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
