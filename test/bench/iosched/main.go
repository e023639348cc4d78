// Command iosched compares the IO scheduler with a raw ranged-GET loop and with the nested buffered(k) design it replaces, on the same objects behind a latency proxy.
//
//	go run ./test/bench/iosched -out test/bench/
//
// For each parallelism P it runs, on a fresh proxy (30 ms per request by
// default) in front of net/http's file server on 127.0.0.1:
//
//	(a) raw:       P goroutines pulling whole-object GETs from a shared counter — the ceiling;
//	(b) scheduler: all requests submitted to iosched at max_parallel_io P, decoded
//	               (checksummed) on the caller's side as results stream out;
//	(c) nested:    segments k1 at a time × chunks k2 at a time (k1·k2 = P), each level
//	               waiting for its whole wave, decode between waves.
//
// It prints throughput ratios and the time-averaged in-flight count / P seen
// at the proxy, and draws in-flight over time of (b) and (c) as SVG.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/test/faultproxy"
	"github.com/remote-segments/remote_segments/test/s3server"
)

type config struct {
	objects, segments int
	size              int64
	latency, jitter   time.Duration
	ps                []int
	out               string
	rounds            int
	verbose           bool
	svgName           string
	s3                bool
	s3srv             *s3server.Server
}

type run struct {
	name     string
	p        int
	dur      time.Duration
	bytes    int64
	avgUtil  float64 // time-averaged in flight / P while requests were being issued
	maxIn    int
	events   []faultproxy.Sample
	start    time.Time
	hedges   int64
	requests int64
}

func (r run) mbps() float64 { return float64(r.bytes) / r.dur.Seconds() / 1e6 }

func main() {
	var c config
	var ps, size string
	flag.IntVar(&c.objects, "objects", 128, "number of objects (chunks)")
	flag.StringVar(&size, "size", "4MiB", "object size (KiB/MiB suffix)")
	flag.IntVar(&c.segments, "segments", 16, "segments the chunks belong to (for the nested design)")
	flag.DurationVar(&c.latency, "latency", 30*time.Millisecond, "latency the proxy adds to every request")
	flag.DurationVar(&c.jitter, "jitter", 0, "extra uniform random latency in [0, jitter)")
	flag.StringVar(&ps, "p", "8,32,64", "parallelism values")
	flag.StringVar(&c.out, "out", "test/bench/", "directory for the SVG (empty: none)")
	flag.StringVar(&c.svgName, "svg", "iosched_inflight.svg", "file name of the SVG")
	flag.IntVar(&c.rounds, "rounds", 3, "runs of each design per P, interleaved; the table shows the median")
	flag.BoolVar(&c.verbose, "v", false, "print every run")
	flag.BoolVar(&c.s3, "s3", false, "use versitygw (.tools/bin/versitygw, `make versitygw`) as the upstream instead of the file server")
	flag.Parse()
	var err error
	if c.size, err = parseSize(size); err != nil {
		log.Fatal(err)
	}
	for _, f := range strings.Split(ps, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 {
			log.Fatalf("bad -p %q", ps)
		}
		c.ps = append(c.ps, p)
	}
	if c.objects%c.segments != 0 {
		log.Fatalf("-objects %d is not a multiple of -segments %d", c.objects, c.segments)
	}

	dir, err := os.MkdirTemp("", "iosched-bench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sums := make([]uint32, c.objects)
	rng := rand.NewChaCha8([32]byte{1})
	buf := make([]byte, c.size)
	for i := range c.objects {
		rng.Read(buf)
		sums[i] = crc32.ChecksumIEEE(buf)
		if err := os.WriteFile(filepath.Join(dir, objName(i)), buf, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	upstream := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer upstream.Close()
	upstreamURL, kind := upstream.URL, "net/http file server"
	if c.s3 {
		srv, err := s3server.Start(context.Background(), filepath.Join(dir, "s3"), "bench")
		if err != nil {
			log.Fatal(err)
		}
		defer srv.Close()
		for i := range c.objects {
			data, err := os.ReadFile(filepath.Join(dir, objName(i)))
			if err == nil {
				err = srv.PutObject(context.Background(), "bench", objName(i), data)
			}
			if err != nil {
				log.Fatal(err)
			}
		}
		c.s3srv = srv
		upstreamURL, kind = srv.Endpoint, "versitygw (S3)"
	}

	fmt.Printf("iosched benchmark: %d objects × %s (%d segments × %d chunks), proxy latency %v",
		c.objects, size, c.segments, c.objects/c.segments, c.latency)
	if c.jitter > 0 {
		fmt.Printf(" + [0, %v)", c.jitter)
	}
	fmt.Printf(", upstream %s, GOMAXPROCS %d\n", kind, runtimeProcs())
	fmt.Printf("nested design: k1 segments × k2 chunks at a time =")
	for _, p := range c.ps {
		k1, k2 := splitP(p, c.segments, c.objects/c.segments)
		fmt.Printf(" %d×%d", k1, k2)
	}
	fmt.Printf("\n\n")
	fmt.Printf("median of %d interleaved runs per design\n", c.rounds)
	fmt.Printf("%4s %10s %10s %10s %6s %6s %7s %7s %7s %6s\n",
		"P", "a raw MB/s", "b sched", "c nested", "b/a", "b/c", "util a", "util b", "util c", "hedges")
	var drawn [][3]run
	for _, p := range c.ps {
		var as, bs, ns []run
		for range c.rounds { // interleaved, so that load from elsewhere hits all three
			as = append(as, measure(c, upstreamURL, p, "raw", sums, runRaw))
			bs = append(bs, measure(c, upstreamURL, p, "scheduler", sums, runScheduler))
			ns = append(ns, measure(c, upstreamURL, p, "nested", sums, runNested))
		}
		a, b, n := median(as), median(bs), median(ns)
		fmt.Printf("%4d %10.1f %10.1f %10.1f %6.2f %6.2f %7.2f %7.2f %7.2f %6d\n",
			p, a.mbps(), b.mbps(), n.mbps(), b.mbps()/a.mbps(), b.mbps()/n.mbps(), a.avgUtil, b.avgUtil, n.avgUtil, b.hedges)
		drawn = append(drawn, [3]run{b, n, a})
	}
	fmt.Println("\nutil = time-averaged in-flight requests at the proxy / P, from the first request to the last one issued.")
	if c.out != "" {
		path := filepath.Join(c.out, c.svgName)
		if err := os.WriteFile(path, []byte(svg(c, drawn)), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Println("wrote", path)
	}
}

// median returns the run with the median throughput.
func median(runs []run) run {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(x, y run) int { return cmp.Compare(x.mbps(), y.mbps()) })
	return sorted[len(sorted)/2]
}

func objName(i int) string { return fmt.Sprintf("chunk-%04d.arrow", i) }

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "MiB"):
		mult, s = 1<<20, strings.TrimSuffix(s, "MiB")
	case strings.HasSuffix(s, "KiB"):
		mult, s = 1<<10, strings.TrimSuffix(s, "KiB")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

type runner func(c config, st store.Store, prefix string, p int, sums []uint32) (int64, int64, error)

// measure runs one design on a fresh proxy and store.
func measure(c config, upstream string, p int, name string, sums []uint32, fn runner) run {
	proxy, err := faultproxy.New(upstream, faultproxy.Config{Latency: c.latency, Jitter: c.jitter, Seed: uint64(p)})
	if err != nil {
		log.Fatal(err)
	}
	defer proxy.Close()
	base, so := proxy.URL+"/", store.Options{MaxConns: p + p/8 + 1}
	if c.s3srv != nil {
		base = "s3://bench/"
		so.S3Endpoint, so.S3AccessKeyID, so.S3SecretAccessKey = proxy.URL, c.s3srv.AccessKey, c.s3srv.SecretKey
	}
	st, prefix, err := store.Open(base, so)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	bytes, hedges, err := fn(c, st, prefix, p, sums)
	dur := time.Since(start)
	if err != nil {
		log.Fatalf("%s at P=%d: %v", name, p, err)
	}
	ev := proxy.Events()
	var first, last time.Time
	for i, e := range ev {
		if first.IsZero() && e.InFlight > 0 {
			first = e.T
		}
		if i > 0 && e.InFlight > ev[i-1].InFlight {
			last = e.T
		}
	}
	if c.verbose {
		fmt.Fprintf(os.Stderr, "  %-9s P=%-3d %8.1f MB/s in %v, %d GETs, util %.2f, max in flight %d\n", name, p,
			float64(bytes)/dur.Seconds()/1e6, dur.Round(time.Millisecond), proxy.Stats().Requests,
			faultproxy.Average(ev, first, last)/float64(p), proxy.Stats().MaxInFlight)
	}
	return run{
		name: name, p: p, dur: dur, bytes: bytes, start: start, events: ev, hedges: hedges,
		avgUtil: faultproxy.Average(ev, first, last) / float64(p), maxIn: proxy.Stats().MaxInFlight,
		requests: proxy.Stats().Requests,
	}
}

func check(i int, data []byte, sums []uint32) error {
	if crc32.ChecksumIEEE(data) != sums[i] {
		return fmt.Errorf("%s: checksum mismatch", objName(i))
	}
	return nil
}

func get(ctx context.Context, st store.Store, name string, size int64) ([]byte, error) {
	body, err := st.GetRange(ctx, name, 0, size)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	buf := make([]byte, size)
	_, err = io.ReadFull(body, buf)
	return buf, err
}

// runRaw is the ceiling: P goroutines, each GETting the next object.
func runRaw(c config, st store.Store, prefix string, p int, sums []uint32) (int64, int64, error) {
	var next atomic.Int64
	var total atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for range p {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= c.objects || firstErr.Load() != nil {
					return
				}
				data, err := get(context.Background(), st, prefix+objName(i), c.size)
				if err == nil {
					err = check(i, data, sums)
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				total.Add(int64(len(data)))
			}
		})
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return 0, 0, *e
	}
	return total.Load(), 0, nil
}

// runScheduler submits every chunk at once and decodes results as they come.
func runScheduler(c config, st store.Store, prefix string, p int, sums []uint32) (int64, int64, error) {
	s := iosched.New(iosched.Options{Parallelism: p})
	defer s.Close()
	reqs := make([]iosched.Request, c.objects)
	for i := range reqs {
		reqs[i] = iosched.Request{Store: st, Name: prefix + objName(i), Length: c.size,
			Priority: iosched.Priority{Query: 1, Seq: int64(i)}}
	}
	var total int64
	for r := range s.Submit(context.Background(), reqs).Results() {
		if r.Err != nil {
			return 0, 0, r.Err
		}
		if err := check(r.Index, r.Data, sums); err != nil {
			return 0, 0, err
		}
		total += int64(len(r.Data))
	}
	return total, s.Stats().HedgesIssued, nil
}

// runNested is the design iosched replaces: segments k1 at a time, and in
// each segment chunks k2 at a time, every level waiting for its whole wave
// before starting the next; decoding happens between the waves.
func runNested(c config, st store.Store, prefix string, p int, sums []uint32) (int64, int64, error) {
	perSeg := c.objects / c.segments
	k1, k2 := splitP(p, c.segments, perSeg)
	var total atomic.Int64
	var firstErr atomic.Pointer[error]
	fail := func(err error) { firstErr.CompareAndSwap(nil, &err) }
	segment := func(seg int) {
		for w := 0; w < perSeg && firstErr.Load() == nil; w += k2 {
			n := min(k2, perSeg-w)
			data := make([][]byte, n)
			var wg sync.WaitGroup
			for k := range n {
				wg.Go(func() {
					i := seg*perSeg + w + k
					d, err := get(context.Background(), st, prefix+objName(i), c.size)
					if err != nil {
						fail(err)
					}
					data[k] = d
				})
			}
			wg.Wait()
			for k, d := range data { // decode between awaits
				if d == nil {
					return
				}
				if err := check(seg*perSeg+w+k, d, sums); err != nil {
					fail(err)
					return
				}
				total.Add(int64(len(d)))
			}
		}
	}
	for s := 0; s < c.segments && firstErr.Load() == nil; s += k1 {
		var wg sync.WaitGroup
		for k := range min(k1, c.segments-s) {
			wg.Go(func() { segment(s + k) })
		}
		wg.Wait()
	}
	if e := firstErr.Load(); e != nil {
		return 0, 0, *e
	}
	return total.Load(), 0, nil
}

// splitP factors p into k1 (segments at a time) × k2 (chunks at a time),
// both near √p: 8 = 2×4, 32 = 4×8, 64 = 8×8.
func splitP(p, segments, perSeg int) (k1, k2 int) {
	k1 = int(math.Sqrt(float64(p)))
	for k1 > 1 && p%k1 != 0 {
		k1--
	}
	k1 = max(1, min(k1, segments))
	k2 = max(1, min(p/k1, perSeg))
	return k1, k2
}

// svg draws in-flight over time of the scheduler, the nested design and
// the raw loop (the ceiling), one panel per P, hand-written: each line is the time-weighted average in flight
// per 1/400 of the panel's time span.
func svg(c config, runs [][3]run) string {
	const W, left, top, panelH, gap = 900, 60, 40, 170, 50
	height := top + len(runs)*(panelH+gap) + 20
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15">Requests in flight at the proxy: iosched (blue), nested buffered(k1)×buffered(k2) (orange), raw GET loop (grey); %d × %d KiB, latency %v</text>`+"\n",
		left, c.objects, c.size>>10, c.latency)
	plotW := float64(W - left - 30)
	for pi, pair := range runs {
		y0 := float64(top + pi*(panelH+gap))
		p := pair[0].p
		tmax := max(pair[0].dur, pair[1].dur, pair[2].dur).Seconds()
		ymax := float64(p + max(2, p/8))
		fmt.Fprintf(&b, `<text x="%d" y="%.0f">P = %d: scheduler %.2f s, nested %.2f s, raw loop %.2f s</text>`+"\n", left, y0-6, p, pair[0].dur.Seconds(), pair[1].dur.Seconds(), pair[2].dur.Seconds())
		fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%.0f" height="%d" fill="none" stroke="#999"/>`+"\n", left, y0, plotW, panelH)
		yOf := func(v float64) float64 { return y0 + panelH - v/ymax*panelH }
		// The P line and axis labels.
		fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#2a2" stroke-dasharray="4 3"/>`+"\n", left, float64(left)+plotW, yOf(float64(p)), yOf(float64(p)))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n", left-4, yOf(float64(p))+4, p)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">0</text>`+"\n", left-4, yOf(0)+4)
		for k := 0; k <= 4; k++ {
			x := float64(left) + plotW*float64(k)/4
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%.2fs</text>`+"\n", x, y0+panelH+14, tmax*float64(k)/4)
		}
		for ri, r := range pair {
			color := []string{"#1f5fbf", "#e07b00", "#888888"}[ri]
			// One point per 2 px: the time-weighted average in flight over
			// that slice of time (a step per event would be unreadable).
			var pts strings.Builder
			const buckets = 400
			for k := range buckets {
				from := r.start.Add(time.Duration(float64(k) / buckets * tmax * float64(time.Second)))
				to := r.start.Add(time.Duration(float64(k+1) / buckets * tmax * float64(time.Second)))
				if from.After(r.start.Add(r.dur)) {
					break
				}
				v := faultproxy.Average(r.events, from, to)
				fmt.Fprintf(&pts, "%.1f,%.1f ", float64(left)+plotW*(float64(k)+0.5)/buckets, yOf(v))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.2" points="%s"/>`+"\n", color, strings.TrimSpace(pts.String()))
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}
