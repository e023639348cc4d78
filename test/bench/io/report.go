package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/remote-segments/remote_segments/test/bench/benchsvg"
)

// markdown collects what -md writes: the W2 and W3 sections of
// BENCHMARKS.md. The file has the goal lines first, then a line
// "<!-- sections -->", then the sections; test/bench/peers puts the goal
// lines at the top of the report and the sections after W1.
type markdown struct {
	w2       []w2Row
	w3       []w3Run
	overload [][2]runResult // per round: told 16, asks 64
	// hostOverload is the same for each host of -hosts.
	hostOverload map[string][][2]runResult
	large        *largeResult

	midPeers, tinyPeers *peerData          // nil: no peers in this run
	w3peers             map[string][]w3Run // "rs" (on the IPC-file copy), "polars", "lance"
}

// w2Row is one P of the first table: its rounds, in order.
type w2Row struct {
	p                         int
	raw, narrow, wide, nested []runResult
	channel                   []runResult
	load                      []float64
	// At the highest P with peers: "raw-files", "rs-narrow", "rs-wide"
	// (on the IPC-file copy), "polars-narrow", "polars-wide",
	// "lance-narrow", "lance-wide"; one per round, failed runs included.
	peers map[string][]runResult
	// hosts: "<host>-narrow", "<host>-wide" for each host of -hosts,
	// one per round, failed runs included.
	hosts map[string][]runResult
}

// hostRatios are host's narrow and wide ratios to the raw loop of their
// round as "median× (min–max)"; ok is false when no run of it succeeded.
func (r w2Row) hostRatios(host string) (narrow, wide string, ok bool) {
	text := func(runs []runResult) string {
		var xs []float64
		failed := 0
		for i, h := range runs {
			if h.err != nil {
				failed++
				continue
			}
			xs = append(xs, r.raw[i].window.Seconds()/h.window.Seconds())
		}
		if len(xs) == 0 {
			return fmt.Sprintf("failed (%d of %d runs)", failed, len(runs))
		}
		med, lo, hi := medianMinMax(xs)
		t := fmt.Sprintf("%.2f× (%.2f–%.2f)", med, lo, hi)
		if failed > 0 {
			t += fmt.Sprintf(", %d of %d runs failed", failed, len(runs))
		}
		ok = true
		return t
	}
	narrow, wide = text(r.hosts[host+"-narrow"]), text(r.hosts[host+"-wide"])
	return narrow, wide, ok
}

// ratios are the per-round raw window ÷ scan window (the scan's speed as a
// multiple of the loop's): median, min, max.
func (r w2Row) ratios(scan []runResult) (med, lo, hi float64) {
	var xs []float64
	for i := range scan {
		xs = append(xs, r.raw[i].window.Seconds()/scan[i].window.Seconds())
	}
	return medianMinMax(xs)
}

type w3Run struct {
	clean, mix runResult
	load       float64
}

type largeResult struct {
	d                 *dataset
	raw, wide, narrow []runResult // one per round
}

func medianMinMax(xs []float64) (med, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

func medianOf(rs []runResult, key func(runResult) float64) float64 {
	var xs []float64
	for _, r := range rs {
		xs = append(xs, key(r))
	}
	m, _, _ := medianMinMax(xs)
	return m
}

// loadAvg1 is the 1-minute load average.
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v
}

// verdict says whether got meets the goal (at least: got >= goal; else
// got <= goal) and by how much it misses.
func verdict(got, goal float64, atLeast bool) string {
	if atLeast && got >= goal || !atLeast && got <= goal {
		return "**met**"
	}
	return fmt.Sprintf("**not met**, %.1f %% short", 100*abs(got-goal)/goal)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func (m *markdown) write(path string, mid, tiny *dataset) error {
	var goals, body strings.Builder
	g := func(f string, a ...any) { fmt.Fprintf(&goals, f, a...) }
	w := func(f string, a ...any) { fmt.Fprintf(&body, f, a...) }
	when := time.Now().UTC().Format("2006-01-02 15:04 UTC")

	if len(m.w2) > 0 {
		top := m.w2[len(m.w2)-1]
		n, nlo, nhi := top.ratios(top.narrow)
		wd, wlo, whi := top.ratios(top.wide)
		g("- **W2** (%d objects × ~%.0f KiB at %v per request, max_parallel_io %d): narrow query **%.2f×** the raw ranged-GET loop (%.2f–%.2f), wide **%.2f×** (%.2f–%.2f); goal ≥ 0.9×: narrow %s, wide %s.\n",
			len(mid.keys), float64(mid.bytes)/float64(len(mid.keys))/1024, *latency, top.p, n, nlo, nhi, wd, wlo, whi,
			verdict(n, 0.9, true), verdict(wd, 0.9, true))

		w("## W2: %d objects of ~%.0f KiB behind a %v proxy, narrow and wide queries\n\n", len(mid.keys), float64(mid.bytes)/float64(len(mid.keys))/1024, *latency)
		w("%d objects (%.1f MiB, half Arrow IPC files, half IPC streams, %d rows) on versitygw behind `test/faultproxy`, which adds %v to every request; the catalog gives every chunk's length. The narrow query reads one column (`x`, checked against the generator's sum), the wide one every column. remote_segments is the table function's pipeline (the `scanner` package: bind, plan, budget, IO scheduler, decode) in a Go process, with two consumer goroutines; the reference is the **raw ranged-GET loop**: P goroutines GETting whole objects from the same proxy, no decoding. MiB/s is the objects' bytes over the window from the first request's arrival at the proxy to the last one's end (bind's first GET included). Each P runs %d interleaved rounds (raw, narrow, wide, nested, channel; at the highest P also the runs of the peers below); ratios are medians of the rounds' ratios with their min–max; MiB/s, requests and in-flight are medians. Measured %s (`go run ./test/bench/io -md …`).\n\n",
			len(mid.keys), float64(mid.bytes)/(1<<20), mid.rows, *latency, max(1, *rounds), when)
		w("| max_parallel_io | raw loop MiB/s | narrow MiB/s | narrow × raw | wide MiB/s | wide × raw | nested buffered(k) × raw | byte-capped channel × raw | requests narrow / wide | round trips per chunk (narrow) | in flight raw / narrow / wide / nested / channel | client CPU s per GiB (narrow) | load avg |\n")
		w("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range m.w2 {
			n, nlo, nhi := r.ratios(r.narrow)
			wd, wlo, whi := r.ratios(r.wide)
			speed := func(x runResult) float64 { return x.mibps(mid) }
			rt := medianOf(r.narrow, func(x runResult) float64 { return float64(x.stats.RoundTrips) / float64(max(1, x.stats.Chunks)) })
			lo, hi := slices.Min(r.load), slices.Max(r.load)
			ns, nslo, nshi := r.ratios(r.nested)
			ch, chlo, chhi := r.ratios(r.channel)
			w("| %d | %.1f | %.1f | **%.2f×** (%.2f–%.2f) | %.1f | **%.2f×** (%.2f–%.2f) | %.2f× (%.2f–%.2f) | %.2f× (%.2f–%.2f) | %.0f / %.0f | %.2f | %.1f / %.1f / %.1f / %.1f / %.1f | %.2f | %.1f–%.1f |\n",
				r.p, medianOf(r.raw, speed), medianOf(r.narrow, speed), n, nlo, nhi, medianOf(r.wide, speed), wd, wlo, whi, ns, nslo, nshi, ch, chlo, chhi,
				medianOf(r.narrow, func(x runResult) float64 { return float64(x.requests) }), medianOf(r.wide, func(x runResult) float64 { return float64(x.requests) }),
				rt,
				medianOf(r.raw, func(x runResult) float64 { return x.inFlight }), medianOf(r.narrow, func(x runResult) float64 { return x.inFlight }),
				medianOf(r.wide, func(x runResult) float64 { return x.inFlight }), medianOf(r.nested, func(x runResult) float64 { return x.inFlight }), medianOf(r.channel, func(x runResult) float64 { return x.inFlight }),
				medianOf(r.narrow, func(x runResult) float64 { return x.cpu.Seconds() / (float64(mid.bytes) / (1 << 30)) }), lo, hi)
		}
		w("\nRequests are counted at the proxy (bind included). The client's CPU includes the proxy, which runs in the same process; versitygw's is apart. *Nested buffered(k)* is the design the IO scheduler replaces, over the same objects and store: segments k1 at a time × chunks k2 at a time (k1·k2 = max_parallel_io), each level waiting for its whole wave, every chunk fetched whole and decoded (every column) between the waves. The *byte-capped channel* is the other design it replaces: max_parallel_io goroutines each GET the next chunk whole, decode it themselves and send its batches into a channel capped at 64 MiB of decoded bytes (fetched bytes not counted), one consumer summing.\n\n")
		m.w2HostsSection(w, g, mid)
		m.w2PeersSection(w, g, mid)
		if l := m.large; l != nil && len(l.raw) > 0 {
			wd, wlo, whi, _ := speedRatio(l.wide, l.raw)
			nr, nlo, nhi, _ := speedRatio(l.narrow, l.raw)
			speed := func(x runResult) float64 { return x.mibps(l.d) }
			w("Large objects in the same run: %d objects of ~%.0f MiB read in 8 MiB `request_size` parts at max_parallel_io 16, %d interleaved rounds (medians of the rounds' ratios, min–max): wide scan %.2f× (%.2f–%.2f) the raw loop of the same parts (%.1f against %.1f MiB/s); narrow scan %.2f× (%.2f–%.2f) the loop's speed with %.0f chunks projected and %.1f MiB not fetched.\n\n",
				len(l.d.keys), float64(l.d.bytes)/float64(len(l.d.keys))/(1<<20), len(l.raw), wd, wlo, whi, medianOf(l.wide, speed), medianOf(l.raw, speed),
				nr, nlo, nhi, medianOf(l.narrow, func(x runResult) float64 { return float64(x.stats.ProjectedChunks) }),
				medianOf(l.narrow, func(x runResult) float64 { return float64(x.stats.ProjectionSaved) / (1 << 20) }))
		}
		if *svgPath != "" {
			link := benchsvg.Link(*svgPath)
			w("Requests in flight over time at the proxy while remote_segments (the narrow query), the nested `buffered(k)` design and the raw loop read the W2 objects above at max_parallel_io %d (one round: the one with the median narrow ratio):\n\n![requests in flight over time at the proxy, W2](%s)\n\n", top.p, link)
		}
	}

	if len(m.w3) > 0 {
		var ratios []float64
		failures := 0
		var clean, mix []runResult
		for _, r := range m.w3 {
			clean = append(clean, r.clean)
			if r.mix.err != nil {
				failures++
				continue
			}
			mix = append(mix, r.mix)
			ratios = append(ratios, r.mix.window.Seconds()/r.clean.window.Seconds())
		}
		med, lo, hi := medianMinMax(ratios)
		g("- **W3** (%d tiny chunks, fault mix of 5 %% 503 SlowDown, 1 %% resets mid-body, 1 %% 5-s stalls): **%.2f×** the fault-free time (%.2f–%.2f over %d runs), %d failed runs; goal ≤ 1.2×: %s.\n",
			len(tiny.keys), med, lo, hi, len(m.w3), failures, verdict(med, 1.2, false))
		w("## W3: %d tiny chunks, fault-free and under the fault mix\n\n", len(tiny.keys))
		w("%d objects of ~%.1f KiB (%d rows), one column, max_parallel_io 64, %v per request at the proxy. Each run of the mix (5 %% of requests answered `503 SlowDown`, 1 %% of connections reset mid-body, 1 %% of requests stalled 5 s; a different seed per run) follows a fault-free run of the same scan, and its time is taken as a multiple of that run's: load that varies between runs cancels. Measured %s.\n\n",
			len(tiny.keys), float64(tiny.bytes)/float64(len(tiny.keys))/1024, tiny.rows, *latency, when)
		w("| | fault-free | fault mix |\n|---|--:|--:|\n")
		w("| runs (failed) | %d | %d (%d) |\n", len(clean), len(m.w3), failures)
		w("| time, median | %v | %v |\n", time.Duration(medianOf(clean, func(x runResult) float64 { return float64(x.window) })).Round(time.Millisecond),
			time.Duration(medianOf(mix, func(x runResult) float64 { return float64(x.window) })).Round(time.Millisecond))
		w("| × fault-free, median (min–max) | 1.00 | **%.2f×** (%.2f–%.2f) |\n", med, lo, hi)
		perObj := func(x runResult) float64 { return float64(x.requests) / float64(len(tiny.keys)) }
		w("| requests per object, median | %.2f | %.2f |\n", medianOf(clean, perObj), medianOf(mix, perObj))
		w("| retries / hedges / throttled answers, median | – | %.0f / %.0f / %.0f |\n",
			medianOf(mix, func(x runResult) float64 { return float64(x.stats.Retries) }),
			medianOf(mix, func(x runResult) float64 { return float64(x.stats.HedgesIssued) }),
			medianOf(mix, func(x runResult) float64 { return float64(x.stats.Throttled) }))
		w("| requests in flight, time-averaged at the proxy, median | %.1f | %.1f |\n",
			medianOf(clean, func(x runResult) float64 { return x.inFlight }), medianOf(mix, func(x runResult) float64 { return x.inFlight }))
		var loads []float64
		for _, r := range m.w3 {
			loads = append(loads, r.load)
		}
		w("| load average during the runs | %.1f–%.1f | |\n\n", slices.Min(loads), slices.Max(loads))
		m.w3PeersSection(w, g, tiny)
		if o := m.overload; len(o) > 0 {
			var asks []runResult
			var ratios []float64 // asks 64 ÷ told 16, time, per round
			for _, r := range o {
				asks = append(asks, r[1])
				ratios = append(ratios, r[1].window.Seconds()/r[0].window.Seconds())
			}
			t, tlo, thi := medianMinMax(ratios)
			w("Overload in the same run: a store that serves 16 GETs at once and answers `503 SlowDown` beyond, %d objects of W2, every column, %d interleaved rounds: the scan asking for 64 took %.2f× (%.2f–%.2f) the time of the scan told 16 (median of the rounds' ratios), with %.1f %% of its %.0f requests answered SlowDown (medians; its limit on requests in flight went down to %.0f and ended at %.0f).\n\n",
				len(mid.keys), len(o), t, tlo, thi,
				medianOf(asks, func(x runResult) float64 { return 100 * float64(x.proxy.OverCapacity) / float64(max(1, x.requests)) }),
				medianOf(asks, func(x runResult) float64 { return float64(x.requests) }),
				medianOf(asks, func(x runResult) float64 { return float64(x.stats.LimitMin) }),
				medianOf(asks, func(x runResult) float64 { return float64(x.stats.LimitFinal) }))
		}
	}
	out := goals.String() + "<!-- sections -->\n" + body.String()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// w2HostsSection writes the goal lines and the table of W2 through the
// hosts of -hosts: each goal is met when the median of the rounds meets it
// and the worst round is within 10 % of it.
func (m *markdown) w2HostsSection(w, g func(string, ...any), mid *dataset) {
	hosts := hostsOn()
	if len(hosts) == 0 {
		return
	}
	w("W2 through the hosts users run, in the same rounds: each host is its own process (`/usr/bin/time -v`) reading the same objects through a CSV catalog of their URLs and lengths (*with a glob*: found by an S3 listing instead, whose requests count in the window), at the same max_parallel_io, the query printing its sums, checked. The window is the proxy's as above (bind's first request to the last); the process's time adds its start, LOAD and the catalog's read. Ratios are to the raw loop of the same round. *Store CPU* is versitygw's, and *CPUs busy* the machine's CPU time not idle over the process's run, any process's: the host, the proxy (in the bench's process) and the store share the machine's CPUs, and where they are near 100 %% a request's client work waits for a CPU.\n\n")
	w("| host | max_parallel_io | narrow × raw | wide × raw | in flight narrow / wide | process s narrow / wide | CPU s narrow / wide | store CPU s narrow / wide | CPUs busy narrow / wide | peak RSS narrow / wide |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range m.w2 {
		for _, h := range hosts {
			nr, nw := r.hosts[h+"-narrow"], r.hosts[h+"-wide"]
			n, wd, ok := r.hostRatios(h)
			if !ok {
				w("| %s | %d | %s | %s | | | | | | |\n", hostName(h), r.p, n, wd)
				continue
			}
			ok2 := func(x runResult) bool { return x.err == nil }
			med := func(rs []runResult, f func(runResult) float64) float64 {
				var xs []float64
				for _, x := range rs {
					if ok2(x) {
						xs = append(xs, f(x))
					}
				}
				v, _, _ := medianMinMax(xs)
				return v
			}
			inflight := func(x runResult) float64 { return x.inFlight }
			wall := func(x runResult) float64 { return x.wall.Seconds() }
			cpu := func(x runResult) float64 { return x.hostCPU.Seconds() }
			store := func(x runResult) float64 { return x.storeCPU.Seconds() }
			busy := func(x runResult) float64 { return 100 * x.busy }
			rss := func(x runResult) float64 { return float64(x.rss) / (1 << 20) }
			w("| %s | %d | **%s** | **%s** | %.1f / %.1f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.0f / %.0f %% | %.0f / %.0f MiB |\n", hostName(h), r.p, n, wd,
				med(nr, inflight), med(nw, inflight), med(nr, wall), med(nw, wall), med(nr, cpu), med(nw, cpu), med(nr, store), med(nw, store),
				med(nr, busy), med(nw, busy), med(nr, rss), med(nw, rss))
		}
	}
	w("\n")
	top := m.w2[len(m.w2)-1]
	for _, h := range hosts {
		if h == rawProcHost {
			if n, _, ok := top.hostRatios(h); ok {
				g("- **The raw loop in a process of its own** (max_parallel_io %d, %d rounds, two runs each): %s the raw loop in the bench's process. It is what a fresh process costs by itself (its start, its first connections, its heap grown from nothing), with no DuckDB and no decode: no host reaches more.\n", top.p, len(top.raw), n)
			}
			continue
		}
		var xs []float64
		var fl []float64
		failed := 0
		for _, kind := range []string{"-narrow", "-wide"} {
			for i, x := range top.hosts[h+kind] {
				if x.err != nil {
					failed++
					continue
				}
				xs = append(xs, top.raw[i].window.Seconds()/x.window.Seconds())
				fl = append(fl, x.inFlight)
			}
		}
		if len(xs) == 0 {
			g("- **W2 through %s** (max_parallel_io %d): every run failed; goal ≥ 0.9×: **not met**.\n", hostName(h), top.p)
			continue
		}
		med, lo, _ := medianMinMax(xs)
		fmed, flo, _ := medianMinMax(fl)
		n, wd, _ := top.hostRatios(h)
		g("- **W2 through %s** (max_parallel_io %d, narrow and wide, %d rounds): narrow %s, wide %s the raw loop; goal ≥ 0.9× (worst ≥ 0.81×): %s; requests in flight %.1f (worst %.1f), goal ≥ %.1f: %s%s.\n",
			hostName(h), top.p, len(top.raw), n, wd, verdict2(med >= 0.9 && lo >= 0.81 && failed == 0, med, 0.9),
			fmed, flo, 0.9*float64(top.p), verdict2(fmed >= 0.9*float64(top.p) && flo >= 0.81*float64(top.p), fmed, 0.9*float64(top.p)),
			failedText(failed))
	}
	for _, h := range hosts {
		o := m.hostOverload[h]
		var ratios, slow []float64
		failed := 0
		for _, r := range o {
			if r[0].err != nil || r[1].err != nil {
				failed++
				continue
			}
			ratios = append(ratios, r[1].window.Seconds()/r[0].window.Seconds())
			slow = append(slow, 100*float64(r[1].proxy.OverCapacity)/float64(max(1, r[1].requests)))
		}
		if len(ratios) == 0 {
			continue
		}
		t, tlo, thi := medianMinMax(ratios)
		sm, _, shi := medianMinMax(slow)
		g("- **Overload through %s** (asks 64 of a store serving 16, every column, %d rounds): **%.2f×** (%.2f–%.2f) the time of the same host told 16, goal ≤ 1.2× (worst ≤ 1.32×): %s; %.1f %% of requests answered SlowDown (worst %.1f %%), goal ≤ 10 %%: %s%s.\n",
			hostName(h), len(o), t, tlo, thi, verdict2(t <= 1.2 && thi <= 1.32 && failed == 0, t, 1.2), sm, shi, verdict2(sm <= 10 && shi <= 11, sm, 10), failedText(failed))
	}
}

// verdict2 is "**met**" or "**not met**" with how far got is from goal.
func verdict2(ok bool, got, goal float64) string {
	if ok {
		return "**met**"
	}
	return fmt.Sprintf("**not met** (median %.1f %% from the goal)", 100*abs(got-goal)/goal)
}

func failedText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d runs failed)", n)
}
