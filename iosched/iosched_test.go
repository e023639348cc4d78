package iosched_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/test/faultproxy"
	"github.com/remote-segments/remote_segments/test/s3server"
)

// TestStores reads the same ranges through the scheduler from every store:
// local files, net/http's file server and versitygw.
func TestStores(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(1, 4, 3<<20)
	srv := s3server.ForTest(t, "bkt")
	for name, data := range objects {
		if err := srv.PutObject(context.Background(), "bkt", "ds/"+name, data); err != nil {
			t.Fatal(err)
		}
	}
	bases := map[string]func(t *testing.T) (store.Store, string){
		"file": func(t *testing.T) (store.Store, string) {
			return openStore(t, writeDir(t, objects)+"/", store.Options{})
		},
		"http": func(t *testing.T) (store.Store, string) {
			return openStore(t, fileServer(t, objects)+"/", store.Options{})
		},
		"s3": func(t *testing.T) (store.Store, string) {
			return openStore(t, "s3://bkt/ds/", store.Options{S3Endpoint: srv.Endpoint,
				S3AccessKeyID: srv.AccessKey, S3SecretAccessKey: srv.SecretKey})
		},
	}
	for kind, open := range bases {
		t.Run(kind, func(t *testing.T) {
			st, pre := open(t)
			s := newScheduler(t, iosched.Options{Parallelism: 4, RequestSize: 1 << 20})
			a := objects["obj-000.bin"]
			reqs := []iosched.Request{
				{Store: st, Name: pre + "obj-000.bin", Offset: 0, Length: int64(len(a))},       // split in 3
				{Store: st, Name: pre + "obj-001.bin", Offset: 10, Length: 100},                // merged …
				{Store: st, Name: pre + "obj-001.bin", Offset: 200, Length: 50},                // … with this
				{Store: st, Name: pre + "obj-002.bin", Offset: 3<<20 - 7, Length: -1},          // to the end
				{Store: st, Name: pre + "obj-003.bin", Offset: 5, Length: 0},                   // empty
				{Store: st, Name: pre + "obj-003.bin", Offset: 1 << 20, Length: 2<<20 + 1 - 1}, // split in 2
				{Store: st, Name: pre + "obj-003.bin", Offset: 1<<20 + 9, Length: 1, Priority: iosched.Priority{Seq: 3}},
			}
			got, err := s.Fetch(context.Background(), reqs)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range reqs {
				data := objects[strings.TrimPrefix(r.Name, pre)]
				want := data[r.Offset:]
				if r.Length >= 0 {
					want = data[r.Offset : r.Offset+r.Length]
				}
				if !bytes.Equal(got[i], want) {
					t.Errorf("request %d: got %d bytes, want %d", i, len(got[i]), len(want))
				}
			}
			_, err = s.Fetch(context.Background(), []iosched.Request{{Store: st, Name: pre + "missing.bin", Length: 10}})
			if !errors.Is(err, iosched.ErrNotFound) || !strings.Contains(err.Error(), st.URL(pre+"missing.bin")) {
				t.Fatalf("missing object: %v", err)
			}
		})
	}
}

// TestSplitAndCoalesce checks that large requests become parallel parts and
// nearby small ones one GET, and that every caller gets its own bytes.
func TestSplitAndCoalesce(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(2, 2, 4<<20)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{Latency: 20 * time.Millisecond})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	s := newScheduler(t, iosched.Options{Parallelism: 8, RequestSize: 1 << 20, CoalesceGap: 4 << 10, NoHedge: true})

	a, b := objects["obj-000.bin"], objects["obj-001.bin"]
	reqs := []iosched.Request{{Store: st, Name: pre + "obj-000.bin", Offset: 1, Length: 4<<20 - 1}} // 4 parts
	// 40 small requests to obj-001: pairs 1 KiB apart merge; groups 256 KiB apart do not.
	for g := range 10 {
		for k := range 4 {
			off := int64(g)*(256<<10) + int64(k)*2048
			reqs = append(reqs, iosched.Request{Store: st, Name: pre + "obj-001.bin", Offset: off, Length: 1024})
		}
	}
	// Overlapping requests share bytes.
	reqs = append(reqs, iosched.Request{Store: st, Name: pre + "obj-001.bin", Offset: 500, Length: 2000})
	p.StartWindow()
	batch := s.Submit(context.Background(), reqs)
	got, err := batch.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		src := a
		if strings.HasSuffix(r.Name, "obj-001.bin") {
			src = b
		}
		if !bytes.Equal(got[i], src[r.Offset:r.Offset+r.Length]) {
			t.Fatalf("request %d (%s @%d+%d): wrong bytes", i, r.Name, r.Offset, r.Length)
		}
		if cap(got[i]) != len(got[i]) {
			t.Fatalf("request %d: cap %d > len %d: appending would overwrite a neighbour", i, cap(got[i]), len(got[i]))
		}
	}
	bs := batch.Stats()
	// 4 parts + 10 merged groups.
	if bs.Splits != 3 || bs.Coalesced != 31 || bs.Issued != 14 || p.Stats().Requests != 14 {
		t.Fatalf("splits %d coalesced %d issued %d proxy saw %d; want 3, 31, 14, 14", bs.Splits, bs.Coalesced, bs.Issued, p.Stats().Requests)
	}
	if _, max, _ := p.Window(); max < 4 {
		t.Fatalf("parts of a split request ran %d at a time; want them in parallel", max)
	}
	st2 := s.Stats()
	if st2.Splits != 3 || st2.Coalesced != 31 || st2.Requests != int64(len(reqs)) {
		t.Fatalf("scheduler stats %+v", st2)
	}
}

// TestFailFast: 404 and 403 fail at once with the URL and without retries.
func TestFailFast(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(3, 20, 10<<10)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{Rule: func(r *http.Request, n int64) (faultproxy.Fault, bool) {
		if strings.HasSuffix(r.URL.Path, "obj-013.bin") {
			return faultproxy.Fault{Kind: faultproxy.Status, Status: 403}, true
		}
		return faultproxy.Fault{Delay: 20 * time.Millisecond}, true
	}})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	s := newScheduler(t, iosched.Options{Parallelism: 2, Retries: 5})
	for _, c := range []struct {
		name string
		want error
	}{{"missing.bin", iosched.ErrNotFound}, {"obj-013.bin", iosched.ErrForbidden}} {
		reqs := wholeReqs(st, pre, objects, 0)
		bad := iosched.Request{Store: st, Name: pre + c.name, Length: 100, Priority: iosched.Priority{Seq: -1}}
		reqs = append([]iosched.Request{bad}, reqs...)
		_, err := s.Fetch(context.Background(), reqs)
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if !strings.Contains(err.Error(), p.URL+"/"+c.name) || !strings.HasPrefix(err.Error(), "iosched: ") {
			t.Fatalf("%s: error %q does not name the URL", c.name, err)
		}
		var re *iosched.RequestError
		if !errors.As(err, &re) || re.Attempts != 1 || p.Count("/"+c.name) != 1 {
			t.Fatalf("%s: %d GETs (attempts %d), want exactly 1", c.name, p.Count("/"+c.name), re.Attempts)
		}
		// The failure canceled the rest: far fewer GETs than requests.
		t.Logf("%s: %v", c.name, err)
	}
	if got := p.Stats().Requests; got > 10 {
		t.Fatalf("proxy saw %d GETs: the first error did not cancel the batch", got)
	}
	if s.Stats().Retries != 0 {
		t.Fatalf("retries %d, want 0", s.Stats().Retries)
	}
}

// TestCancelRemovesQueued: a canceled context removes its queued requests at
// once and aborts the running ones.
func TestCancelRemovesQueued(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(4, 50, 1<<10)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{Latency: 10 * time.Second})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	s := newScheduler(t, iosched.Options{Parallelism: 2})
	ctx, cancel := context.WithCancel(context.Background())
	batch := s.Submit(ctx, wholeReqs(st, pre, objects, 0))
	if !eventually(5*time.Second, func() bool { return p.Stats().InFlight == 2 }) {
		t.Fatal("the first two GETs never arrived")
	}
	if q := s.Stats().Queued; q != 48 {
		t.Fatalf("queued %d, want 48", q)
	}
	cancel()
	_, err := batch.Wait() // the 10 s GETs are aborted, not awaited
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel: %v", err)
	}
	st2 := s.Stats()
	if st2.Queued != 0 || st2.Canceled != 50 || st2.Failed != 0 {
		t.Fatalf("after cancel: queued %d canceled %d failed %d", st2.Queued, st2.Canceled, st2.Failed)
	}
	n := 0
	for r := range batch.Results() {
		if !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("result %d: %v", r.Index, r.Err)
		}
		n++
	}
	if n != 50 {
		t.Fatalf("%d results, want 50", n)
	}
	if !eventually(5*time.Second, func() bool { return p.Stats().InFlight == 0 && s.Stats().InFlight == 0 }) {
		t.Fatal("aborted GETs still running")
	}
	if got := p.Stats().Requests; got != 2 {
		t.Fatalf("proxy saw %d GETs, want 2: queued requests were sent after cancel", got)
	}
}

// TestInFlightLimitCPUConsumer: a consumer that burns CPU per result while
// the queue stays fed does not hold IO back: the proxy never sees more than
// P requests in flight, the worker slots stay busy, and a batch whose
// results nobody reads completes all the same.
//
// GETs take 100 ms at the proxy so that the HTTP stack's own CPU time
// (slow under -race on a busy machine) stays small beside them.
func TestInFlightLimitCPUConsumer(t *testing.T) {
	leakCheck(t)
	const P = 8
	objects := randomObjects(5, 12*P, 16<<10)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{Latency: 100 * time.Millisecond})
	st, pre := openStore(t, p.URL+"/", store.Options{MaxConns: P})
	s := newScheduler(t, iosched.Options{Parallelism: P, NoHedge: true})
	before := s.Stats()
	batch := s.Submit(context.Background(), wholeReqs(st, pre, objects, 0))
	var sink uint32
	var fed iosched.Stats // scheduler stats when the queue ran empty
	for r := range batch.Results() {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if fed.Requests == 0 {
			if st := s.Stats(); st.Queued == 0 {
				fed = st
			}
		}
		// Decode stand-in: 5 ms of CPU per result on the caller's side,
		// about half a core at this request rate.
		for deadline := time.Now().Add(5 * time.Millisecond); time.Now().Before(deadline); {
			sink += sum(r.Data)
		}
	}
	_ = sink
	ev := p.Events()
	// Measure from the first arrival to the last: the ramp-down after the
	// queue is empty is not the scheduler's to fill.
	var first, last time.Time
	for i, e := range ev {
		if i > 0 && e.InFlight > ev[i-1].InFlight {
			last = e.T
		}
		if first.IsZero() && e.InFlight > 0 {
			first = e.T
		}
	}
	avg := faultproxy.Average(ev, first, last)
	maxIn := p.Stats().MaxInFlight
	slots := fed.Utilization(before)
	t.Logf("in flight at the proxy: avg %.2f of %d, max %d; worker slots busy while fed: %.2f", avg, P, maxIn, slots)
	if maxIn > P {
		t.Fatalf("proxy saw %d in flight, limit %d", maxIn, P)
	}
	if slots < 0.9 {
		t.Fatalf("worker slots busy %.2f < 0.9 while the queue was fed", slots)
	}
	// The average in flight is logged, not asserted: on a loaded machine
	// it measures the machine. That IO never waits for the consumer is
	// asserted below, without timing.
	stalled := s.Submit(context.Background(), wholeReqs(st, pre, objects, 1))
	select {
	case <-stalled.Done(): // every GET done while nobody read a result
	case <-time.After(time.Minute):
		t.Fatal("the batch did not complete while its results were not read")
	}
	n := 0
	for r := range stalled.Results() {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		n++
	}
	if n != len(objects) {
		t.Fatalf("%d results, want %d", n, len(objects))
	}
}

// TestChaos: with 5 % 503 SlowDown, 1 % mid-body resets, 1 % stalls and 1 %
// short bodies every byte arrives intact.
func TestChaos(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(6, 64, 256<<10)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{
		Latency: 2 * time.Millisecond, Jitter: 5 * time.Millisecond,
		SlowDown: 0.05, Reset: 0.01, Stall: 0.01, Short: 0.01, Seed: 42,
	})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	s := newScheduler(t, iosched.Options{
		Parallelism: 16, RequestSize: 64 << 10, CoalesceGap: -1, Retries: 10,
		Backoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		// Long enough that a GET of this machine's under -race and load
		// is not taken for a stall once it has had its retries: the
		// proxy's stalls are ended by the hedge and the stall watch first.
		IdleTimeout: 2 * time.Second, AIMDInterval: 20 * time.Millisecond,
	})
	var reqs []iosched.Request
	for i := range 64 {
		name := fmt.Sprintf("obj-%03d.bin", i)
		// Whole objects (split in 4) and odd ranges.
		reqs = append(reqs, iosched.Request{Store: st, Name: pre + name, Length: 256 << 10, Priority: iosched.Priority{Seq: int64(i)}})
		reqs = append(reqs, iosched.Request{Store: st, Name: pre + name, Offset: int64(i * 1000), Length: 77777, Priority: iosched.Priority{Seq: int64(i)}})
	}
	got, err := s.Fetch(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		data := objects[strings.TrimPrefix(r.Name, pre)]
		if sum(got[i]) != sum(data[r.Offset:r.Offset+r.Length]) {
			t.Fatalf("request %d: checksum mismatch", i)
		}
	}
	ps, ss := p.Stats(), s.Stats()
	t.Logf("proxy: %d GETs, faults %v; scheduler: issued %d retries %d throttled %d decreases %d hedges %d/%d",
		ps.Requests, ps.Faults, ss.Issued, ss.Retries, ss.Throttled, ss.Decreases, ss.HedgesWon, ss.HedgesIssued)
	if ps.Faults[faultproxy.SlowDown] == 0 || ps.Faults[faultproxy.Reset] == 0 || ss.Retries == 0 {
		t.Fatalf("the faults did not happen: %v", ps.Faults)
	}
}

// TestSetParallelism changes max_parallel_io while a batch runs.
func TestSetParallelism(t *testing.T) {
	leakCheck(t)
	ms := &memStore{objects: randomObjects(7, 150, 1<<10), delay: func(string, int64) time.Duration { return 10 * time.Millisecond }}
	var mu sync.Mutex
	type span struct{ start, end time.Time }
	var spans []span
	s := newScheduler(t, iosched.Options{Parallelism: 2, NoHedge: true, Tracer: iosched.TracerFunc(func(e iosched.Event) {
		mu.Lock()
		spans = append(spans, span{e.Start, e.Start.Add(e.Dur)})
		mu.Unlock()
	})})
	batch := s.Submit(context.Background(), wholeReqs(ms, "", ms.objects, 0))
	// concurrency returns the most GETs overlapping at a start after t0.
	concurrency := func(t0 time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		best := 0
		for _, a := range spans {
			if a.start.Before(t0) {
				continue
			}
			n := 0
			for _, b := range spans {
				if !b.start.After(a.start) && b.end.After(a.start) {
					n++
				}
			}
			best = max(best, n)
		}
		return best
	}
	if !eventually(5*time.Second, func() bool { return s.Stats().Issued >= 10 }) {
		t.Fatalf("%d GETs issued at parallelism 2, want 10", s.Stats().Issued)
	}
	if c := concurrency(time.Time{}); c > 2 {
		t.Fatalf("concurrency %d with parallelism 2", c)
	}
	t1 := time.Now()
	s.SetParallelism(6)
	if !eventually(5*time.Second, func() bool { return s.Stats().InFlight == 6 }) {
		t.Fatalf("in flight %d after SetParallelism(6)", s.Stats().InFlight)
	}
	if !eventually(5*time.Second, func() bool { return s.Stats().Issued >= 60 }) {
		t.Fatalf("%d GETs issued after SetParallelism(6), want 60", s.Stats().Issued)
	}
	if c := concurrency(t1); c > 6 || c < 5 {
		t.Fatalf("concurrency %d after SetParallelism(6)", c)
	}
	t2 := time.Now()
	s.SetParallelism(1)
	// GETs that start after the shrink start only once the older ones are
	// done, so from the second one on at most 1 runs.
	if !eventually(5*time.Second, func() bool { return s.Stats().Issued >= 100 }) {
		t.Fatalf("%d GETs issued after SetParallelism(1), want 100", s.Stats().Issued)
	}
	mu.Lock()
	var after []span
	for _, a := range spans {
		if a.start.After(t2) {
			after = append(after, a)
		}
	}
	mu.Unlock()
	for i := 1; i < len(after); i++ {
		if after[i].start.Before(after[i-1].end) {
			t.Fatalf("two GETs overlap after SetParallelism(1)")
		}
	}
	if _, err := batch.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, mx, _ := ms.snapshot(); mx > 6 {
		t.Fatalf("store saw %d concurrent GETs", mx)
	}
}

// TestAIMD: 503 SlowDown answers to every GET from S3 (versitygw behind the
// proxy) cut the effective parallelism to 1, which grows back by one per
// clean interval.
func TestAIMD(t *testing.T) {
	leakCheck(t)
	srv := s3server.ForTest(t, "bkt")
	objects := randomObjects(8, 64, 8<<10)
	for name, data := range objects {
		if err := srv.PutObject(context.Background(), "bkt", name, data); err != nil {
			t.Fatal(err)
		}
	}
	var throttle sync.Mutex // held: every GET answers 503 SlowDown
	throttling := true
	p := proxied(t, srv.Endpoint, faultproxy.Config{Rule: func(r *http.Request, n int64) (faultproxy.Fault, bool) {
		throttle.Lock()
		defer throttle.Unlock()
		if throttling && r.Method == http.MethodGet {
			return faultproxy.Fault{Kind: faultproxy.SlowDown, Delay: 5 * time.Millisecond}, true
		}
		return faultproxy.Fault{Delay: 5 * time.Millisecond}, true
	}})
	st, pre := openStore(t, "s3://bkt/", store.Options{S3Endpoint: p.URL, S3AccessKeyID: srv.AccessKey, S3SecretAccessKey: srv.SecretKey})
	const P = 16
	s := newScheduler(t, iosched.Options{Parallelism: P, Retries: 100, Backoff: 2 * time.Millisecond,
		MaxBackoff: 10 * time.Millisecond, AIMDInterval: 100 * time.Millisecond, NoHedge: true})
	batch := s.Submit(context.Background(), wholeReqs(st, pre, objects, 0))
	if !eventually(10*time.Second, func() bool { return s.Stats().Limit == 1 }) {
		t.Fatalf("limit %d after throttling, want 1", s.Stats().Limit)
	}
	st1 := s.Stats()
	// Every answer throttled: one round shows the store serves nothing, and
	// the limit is cut to 1 at once; throttling that does not fall at 1 is
	// never taken for random noise (no undo).
	if st1.Decreases < 1 || st1.Undos != 0 || st1.LimitMin != 1 || st1.Throttled < 32 {
		t.Fatalf("decreases %d undos %d min limit %d throttled %d", st1.Decreases, st1.Undos, st1.LimitMin, st1.Throttled)
	}
	// GETs sent before the cut drain first.
	if !eventually(10*time.Second, func() bool { return p.Stats().InFlight <= 1 }) {
		t.Fatalf("%d GETs still in flight at limit 1", p.Stats().InFlight)
	}
	p.ResetMax()
	// A few rounds at limit 1: wait for more throttled answers, not for time.
	thr := s.Stats().Throttled
	if !eventually(10*time.Second, func() bool { return s.Stats().Throttled >= thr+5 }) {
		t.Fatalf("%d throttled answers at limit 1, want %d", s.Stats().Throttled, thr+5)
	}
	if mx := p.Stats().MaxInFlight; mx > 2 {
		t.Fatalf("%d GETs in flight at limit 1", mx)
	}
	throttle.Lock()
	throttling = false
	throttle.Unlock()
	if _, err := batch.Wait(); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return s.Stats().Limit == P }) {
		t.Fatalf("limit %d did not grow back to %d", s.Stats().Limit, P)
	}
	t.Logf("throttled %d, decreases %d, retries %d", st1.Throttled, st1.Decreases, s.Stats().Retries)
}

// TestHedging: a GET much slower than its peers is sent again; the second
// answer wins and the slow one is canceled; hedges stay within 5 %.
//
// The stragglers stall for a minute, so only the watch can end them; the
// hedge floor is high (500 ms) so that 10 ms GETs slowed by a loaded
// machine under -race are not hedged and leave the 5 % budget to the
// stragglers.
func TestHedging(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(9, 200, 4<<10)
	var mu sync.Mutex
	seen := map[string]bool{}
	p := proxied(t, fileServer(t, objects), faultproxy.Config{Rule: func(r *http.Request, n int64) (faultproxy.Fault, bool) {
		mu.Lock()
		defer mu.Unlock()
		var i int
		fmt.Sscanf(r.URL.Path, "/obj-%d.bin", &i)
		first := !seen[r.URL.Path]
		seen[r.URL.Path] = true
		if first && i >= 40 && i%25 == 0 {
			return faultproxy.Fault{Delay: time.Minute}, true // a straggler; its hedge is quick
		}
		return faultproxy.Fault{Delay: 10 * time.Millisecond}, true
	}})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	s := newScheduler(t, iosched.Options{Parallelism: 4, CoalesceGap: -1, HedgeFloor: 500 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second) // catches stragglers left to their stall
	defer cancel()
	got, err := s.Fetch(ctx, wholeReqs(st, pre, objects, 0))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if !bytes.Equal(got[i], objects[fmt.Sprintf("obj-%03d.bin", i)]) {
			t.Fatalf("object %d: wrong bytes", i)
		}
	}
	ss := s.Stats()
	t.Logf("issued %d hedges %d won %d; latency sum %v over %d GETs", ss.Issued, ss.HedgesIssued, ss.HedgesWon, ss.Latency.Sum, ss.Latency.Count)
	if ss.HedgesWon == 0 {
		t.Fatal("no hedge won against stalled stragglers")
	}
	if float64(ss.HedgesIssued) > 0.05*float64(ss.Issued) {
		t.Fatalf("%d hedges of %d GETs: more than 5 %%", ss.HedgesIssued, ss.Issued)
	}
	// 4 workers and 1 hedge; a straggler whose hedge won may still be
	// counted at the proxy while it notices the cancel.
	if mx := p.Stats().MaxInFlight; mx > 4+1+int(ss.HedgesWon) {
		t.Fatalf("%d in flight at the proxy, limit 4 + 1 hedge (+ %d losers being canceled)", mx, ss.HedgesWon)
	}
	if !eventually(5*time.Second, func() bool { return p.Stats().InFlight == 0 }) {
		t.Fatal("the losing GETs were not canceled")
	}
}

// TestTimeouts: a stalled body and a late first byte are retried.
//
// The faults last a minute, so only the timeouts can end them; the
// timeouts are long enough (300 ms, 600 ms) that a loaded machine rarely
// trips them on a healthy GET, and a spurious timeout is only one more
// retry: the assertion is that each faulty GET was retried.
func TestTimeouts(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(10, 2, 64<<10)
	var mu sync.Mutex
	faulted := map[string]bool{}
	p := proxied(t, fileServer(t, objects), faultproxy.Config{Rule: func(r *http.Request, n int64) (faultproxy.Fault, bool) {
		mu.Lock()
		defer mu.Unlock()
		if faulted[r.URL.Path] {
			return faultproxy.Fault{}, true
		}
		faulted[r.URL.Path] = true
		switch r.URL.Path {
		case "/obj-000.bin":
			return faultproxy.Fault{Kind: faultproxy.Stall, After: 1000}, true
		case "/obj-001.bin":
			return faultproxy.Fault{Delay: time.Minute}, true
		}
		return faultproxy.Fault{}, true
	}})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	s := newScheduler(t, iosched.Options{Parallelism: 1, NoHedge: true,
		FirstByteTimeout: 600 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, Backoff: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // catches a timeout that never fires
	defer cancel()
	got, err := s.Fetch(ctx, wholeReqs(st, pre, objects, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[0], objects["obj-000.bin"]) || !bytes.Equal(got[1], objects["obj-001.bin"]) {
		t.Fatal("wrong bytes")
	}
	if r := s.Stats().Retries; r < 2 || p.Count("/obj-000.bin") < 2 || p.Count("/obj-001.bin") < 2 {
		t.Fatalf("retries %d, GETs %d and %d; want each object retried (one stall, one late first byte)",
			r, p.Count("/obj-000.bin"), p.Count("/obj-001.bin"))
	}
	// With no retries left the timeout is the error.
	p.SetConfig(faultproxy.Config{Stall: 1})
	s2 := newScheduler(t, iosched.Options{Parallelism: 1, NoHedge: true, Retries: -1, IdleTimeout: 50 * time.Millisecond})
	_, err = s2.Fetch(context.Background(), wholeReqs(st, pre, objects, 0)[:1])
	if !errors.Is(err, iosched.ErrTimeout) {
		t.Fatalf("stalled GET without retries: %v", err)
	}
	t.Log(err)
}

// TestShortBodyRetried: a body that ends early is detected by its length
// and retried from where it broke.
func TestShortBodyRetried(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(11, 1, 1<<20)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{Rule: func(r *http.Request, n int64) (faultproxy.Fault, bool) {
		if n == 1 {
			return faultproxy.Fault{Kind: faultproxy.Short, After: 300 << 10}, true
		}
		return faultproxy.Fault{}, true
	}})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	var ranges []string
	var mu sync.Mutex
	s := newScheduler(t, iosched.Options{Parallelism: 1, Backoff: time.Millisecond, Tracer: iosched.TracerFunc(func(e iosched.Event) {
		mu.Lock()
		ranges = append(ranges, fmt.Sprintf("%d+%d:%d", e.Offset, e.Length, e.Bytes))
		mu.Unlock()
	})})
	got, err := s.Fetch(context.Background(), wholeReqs(st, pre, objects, 0))
	if err != nil || !bytes.Equal(got[0], objects["obj-000.bin"]) {
		t.Fatalf("err %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The retry asks only for the bytes still missing.
	if len(ranges) != 2 || !strings.HasPrefix(ranges[0], "0+1048576:") || ranges[1] != fmt.Sprintf("%d+%d:%d", 300<<10, 1<<20-300<<10, 1<<20-300<<10) {
		t.Fatalf("GETs %v", ranges)
	}
}

// TestPriorityAndFairness: within a query lower Seq goes first; queries
// take turns.
func TestPriorityAndFairness(t *testing.T) {
	leakCheck(t)
	ms := &memStore{objects: randomObjects(12, 40, 100), delay: func(string, int64) time.Duration { return time.Millisecond }}
	s := newScheduler(t, iosched.Options{Parallelism: 1, CoalesceGap: -1, NoHedge: true})
	// Block the only worker on a GET the test releases, so that both
	// batches queue up behind it.
	gate := &memStore{objects: map[string][]byte{"gate": {1}}, gate: make(chan struct{})}
	g := s.Submit(context.Background(), []iosched.Request{{Store: gate, Name: "gate", Length: 1, Priority: iosched.Priority{Query: 9}}})
	if !eventually(5*time.Second, func() bool { return s.Stats().InFlight == 1 }) {
		t.Fatalf("%d GETs in flight, want the gate's 1", s.Stats().InFlight)
	}
	var a, b []iosched.Request
	for i := range 20 {
		name := fmt.Sprintf("obj-%03d.bin", i)
		a = append(a, iosched.Request{Store: ms, Name: name, Length: 100, Priority: iosched.Priority{Query: 1, Seq: int64(19 - i)}})
		name = fmt.Sprintf("obj-%03d.bin", 20+i)
		b = append(b, iosched.Request{Store: ms, Name: name, Length: 100, Priority: iosched.Priority{Query: 2, Seq: int64(i)}})
	}
	ba := s.Submit(context.Background(), a)
	bb := s.Submit(context.Background(), b)
	close(gate.gate) // both batches are queued: Submit queues before it returns
	for _, x := range []*iosched.Batch{g, ba, bb} {
		if _, err := x.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	order, _, _ := ms.snapshot()
	for i, o := range order {
		wantA := fmt.Sprintf("obj-%03d.bin@0", 19-i/2)
		wantB := fmt.Sprintf("obj-%03d.bin@0", 20+i/2)
		if (i%2 == 0 && o != wantA) || (i%2 == 1 && o != wantB) {
			t.Fatalf("GET %d was %s; want queries to alternate in catalog order: %v", i, o, order)
		}
	}
}

// TestClose: Close fails running batches with ErrClosed; Submit after Close
// fails too.
func TestClose(t *testing.T) {
	leakCheck(t)
	ms := &memStore{objects: randomObjects(13, 10, 10), delay: func(string, int64) time.Duration { return 10 * time.Second }}
	s := iosched.New(iosched.Options{Parallelism: 2})
	b := s.Submit(context.Background(), wholeReqs(ms, "", ms.objects, 0))
	if !eventually(5*time.Second, func() bool { return s.Stats().InFlight == 2 }) {
		t.Fatalf("%d GETs in flight, want 2 running when Close comes", s.Stats().InFlight)
	}
	s.Close()
	if _, err := b.Wait(); !errors.Is(err, iosched.ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
	if _, err := s.Fetch(context.Background(), wholeReqs(ms, "", ms.objects, 0)); !errors.Is(err, iosched.ErrClosed) {
		t.Fatalf("Fetch after Close: %v", err)
	}
	s.Close()
}

// TestEmptyAndInvalid: zero-length requests succeed without IO, an empty
// batch completes, a negative offset fails.
func TestEmptyAndInvalid(t *testing.T) {
	leakCheck(t)
	ms := &memStore{objects: map[string][]byte{"a": []byte("hello")}}
	s := newScheduler(t, iosched.Options{})
	if got, err := s.Fetch(context.Background(), nil); err != nil || len(got) != 0 {
		t.Fatalf("empty batch: %v %v", got, err)
	}
	got, err := s.Fetch(context.Background(), []iosched.Request{{Store: ms, Name: "a", Offset: 2, Length: 0}, {Store: ms, Name: "a", Offset: 1, Length: 3}})
	if err != nil || len(got[0]) != 0 || string(got[1]) != "ell" {
		t.Fatalf("got %q %v", got, err)
	}
	_, err = s.Fetch(context.Background(), []iosched.Request{{Store: ms, Name: "a", Offset: -1, Length: 3}})
	if !errors.Is(err, iosched.ErrInvalid) {
		t.Fatalf("negative offset: %v", err)
	}
	_, err = s.Fetch(context.Background(), []iosched.Request{{Store: ms, Name: "a", Offset: 3, Length: 10}})
	if !errors.Is(err, store.ErrOutOfRange) || s.Stats().Retries != 0 {
		t.Fatalf("range past the end: %v (retries %d)", err, s.Stats().Retries)
	}
}

// TestConcurrentQueries: many goroutines share one scheduler.
func TestConcurrentQueries(t *testing.T) {
	leakCheck(t)
	ms := &memStore{objects: randomObjects(14, 30, 4<<10), delay: func(string, int64) time.Duration { return time.Millisecond }}
	// No hedges: they run beside the 5 workers (Options.NoHedge), and a GET
	// slowed past the hedge floor by a busy machine would be one.
	s := newScheduler(t, iosched.Options{Parallelism: 5, RequestSize: 1000, NoHedge: true})
	var wg sync.WaitGroup
	for q := range 8 {
		wg.Go(func() {
			got, err := s.Fetch(context.Background(), wholeReqs(ms, "", ms.objects, uint64(q)))
			if err != nil {
				t.Error(err)
				return
			}
			for i := range got {
				if !bytes.Equal(got[i], ms.objects[fmt.Sprintf("obj-%03d.bin", i)]) {
					t.Errorf("query %d object %d: wrong bytes", q, i)
				}
			}
		})
	}
	wg.Wait()
	if _, mx, _ := ms.snapshot(); mx > 5 {
		t.Fatalf("%d concurrent GETs, limit 5", mx)
	}
}

// TestDomains: one scheduler and store per domain.
func TestDomains(t *testing.T) {
	leakCheck(t)
	d := iosched.NewDomains(iosched.Options{})
	defer d.Close()
	dir := writeDir(t, map[string][]byte{"a.bin": []byte("abc")})
	open := func(u string, so store.Options) *iosched.Hold {
		t.Helper()
		h, err := d.Open(u, so, iosched.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Release)
		return h
	}
	s3opts := func(secret string) store.Options {
		return store.Options{S3Endpoint: "127.0.0.1:1", S3AccessKeyID: "a", S3SecretAccessKey: secret}
	}
	h1 := open(dir+"/a.bin", store.Options{})
	h2 := open("file://"+dir+"/b.bin", store.Options{})
	h3 := open("s3://bkt/k", s3opts("b"))
	h4 := open("s3://other/k", s3opts("b"))
	h5 := open("s3://bkt/k", s3opts("c"))
	if h1.Scheduler != h2.Scheduler || h1.Store != h2.Store || h3.Scheduler != h4.Scheduler ||
		h3.Scheduler == h5.Scheduler || h1.Scheduler == h3.Scheduler || h3.Name != "bkt/k" {
		t.Fatal("domains not shared as expected")
	}
	if h1.Scheduler.Parallelism() != iosched.DefaultLocalParallelism || h3.Scheduler.Parallelism() != iosched.DefaultParallelism {
		t.Fatalf("parallelism %d / %d", h1.Scheduler.Parallelism(), h3.Scheduler.Parallelism())
	}
	got, err := h1.Scheduler.Fetch(context.Background(), []iosched.Request{{Store: h1.Store, Name: h1.Name, Offset: 1, Length: 2}})
	if err != nil || string(got[0]) != "bc" {
		t.Fatalf("%q %v", got, err)
	}
}

// TestDomainsEvictIdle: a domain nobody holds stays open for the next query,
// but only the 16 most recently released idle domains do; a held domain is
// never closed, however many others come and go (issue 9: Domains never
// evicted, so every endpoint or credential met kept a pool forever).
func TestDomainsEvictIdle(t *testing.T) {
	leakCheck(t)
	d := iosched.NewDomains(iosched.Options{})
	defer d.Close()
	dir := writeDir(t, map[string][]byte{"a.bin": []byte("abc")})
	tuned := func(i int) iosched.Options { return iosched.Options{RequestSize: int64(1<<20 + i)} }

	held, err := d.Open(dir+"/a.bin", store.Options{}, tuned(1000))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	first, err := d.Open(dir+"/a.bin", store.Options{}, tuned(0))
	if err != nil {
		t.Fatal(err)
	}
	firstSched := first.Scheduler
	first.Release()
	first.Release() // twice is safe
	again, err := d.Open(dir+"/a.bin", store.Options{}, tuned(0))
	if err != nil {
		t.Fatal(err)
	}
	if again.Scheduler != firstSched {
		t.Fatal("an idle domain was not reused by the next query")
	}
	again.Release()
	for i := 1; i <= 40; i++ {
		h, err := d.Open(dir+"/a.bin", store.Options{}, tuned(i))
		if err != nil {
			t.Fatal(err)
		}
		h.Release()
	}
	if n := d.Len(); n != 16+1 {
		t.Fatalf("%d domains open after 41 released and 1 held, want the 16 newest idle ones and the held one", n)
	}
	got, err := held.Scheduler.Fetch(context.Background(), []iosched.Request{{Store: held.Store, Name: held.Name, Offset: 0, Length: 3}})
	if err != nil || string(got[0]) != "abc" {
		t.Fatalf("the held domain after evictions: %q %v", got, err)
	}
	reopened, err := d.Open(dir+"/a.bin", store.Options{}, tuned(0))
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Release()
	if reopened.Scheduler == firstSched {
		t.Fatal("the least recently released domain was not evicted")
	}
}

// TestSubmitCanceledContext: a context canceled before Submit fails the batch
// at once. Regression test for the race on b.stop fixed in b8ae0ec (the
// AfterFunc callback finished the batch while Submit was assigning it).
func TestSubmitCanceledContext(t *testing.T) {
	leakCheck(t)
	ms := &memStore{objects: randomObjects(15, 3, 100)}
	s := newScheduler(t, iosched.Options{Parallelism: 2})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 200 {
		if _, err := s.Fetch(ctx, wholeReqs(ms, "", ms.objects, 0)); !errors.Is(err, context.Canceled) {
			t.Fatalf("Fetch with a canceled context: %v", err)
		}
	}
	if _, _, gets := ms.snapshot(); gets != 0 {
		t.Fatalf("%d GETs for canceled batches", gets)
	}
}

// TestDomainsTracer: a domain's scheduler serves every query with its
// tuning, so its tracer is the registry's (each event names its query),
// never the one of the query that happened to open it first: that one
// would go on hearing of every later query's GETs. Open refuses a tuning
// that sets one.
func TestDomainsTracer(t *testing.T) {
	leakCheck(t)
	var mu sync.Mutex
	var queries []uint64
	d := iosched.NewDomains(iosched.Options{Tracer: iosched.TracerFunc(func(e iosched.Event) {
		mu.Lock()
		queries = append(queries, e.Query)
		mu.Unlock()
	})})
	defer d.Close()
	dir := writeDir(t, map[string][]byte{"a.bin": []byte("abc")})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Open with a query's own Tracer did not panic")
			}
		}()
		h, err := d.Open(dir+"/a.bin", store.Options{}, iosched.Options{Tracer: iosched.TracerFunc(func(iosched.Event) {})})
		if err == nil {
			h.Release()
		}
	}()
	for q := range uint64(2) {
		h, err := d.Open(dir+"/a.bin", store.Options{}, iosched.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Scheduler.Fetch(context.Background(), []iosched.Request{{Store: h.Store, Name: h.Name, Length: 3,
			Priority: iosched.Priority{Query: q}}}); err != nil {
			t.Fatal(err)
		}
		h.Release()
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(queries, []uint64{0, 1}) {
		t.Fatalf("the registry's tracer heard of queries %v, want [0 1]", queries)
	}
}

// TestDomainsOpenAllocs guards the cost of a hold on a domain already
// open, which a scan takes once per chunk: the domain's key is looked up
// as a value (no text made of the tuning), and the URL is parsed once. The
// bound is generous: it fails only when those come back.
func TestDomainsOpenAllocs(t *testing.T) {
	leakCheck(t)
	d := iosched.NewDomains(iosched.Options{})
	defer d.Close()
	dir := writeDir(t, map[string][]byte{"a.bin": []byte("abc")})
	tuning := iosched.Options{RequestSize: 1 << 20, Retries: 2}
	first, err := d.Open(dir+"/a.bin", store.Options{}, tuning)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	n := testing.AllocsPerRun(100, func() {
		h, err := d.Open(dir+"/a.bin", store.Options{}, tuning)
		if err != nil || h.Scheduler != first.Scheduler || h.Name != first.Name {
			t.Fatalf("another hold: %v", err)
		}
		h.Release()
	})
	if n > 2 {
		t.Errorf("a hold on an open domain: %.0f allocations, want at most 2", n)
	}
}
