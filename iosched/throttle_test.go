package iosched_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/test/faultproxy"
)

// checkAll fails t unless got holds every object of wholeReqs' order.
func checkAll(t *testing.T, got [][]byte, objects map[string][]byte) {
	t.Helper()
	for i := range got {
		if !bytes.Equal(got[i], objects[fmt.Sprintf("obj-%03d.bin", i)]) {
			t.Fatalf("object %d: wrong bytes", i)
		}
	}
}

// TestRandomThrottlesKeepThePipe: 5 % of GETs answered 503 SlowDown at
// random, whatever the load, neither fail the batch nor collapse the
// parallelism (issue 8: AIMD went from 54 in flight to 1.1).
func TestRandomThrottlesKeepThePipe(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(20, 600, 2<<10)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{Latency: 3 * time.Millisecond, SlowDown: 0.05, Seed: 7})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	const P = 16
	s := newScheduler(t, iosched.Options{Parallelism: P, NoHedge: true, Backoff: 2 * time.Millisecond,
		MaxBackoff: 20 * time.Millisecond, AIMDInterval: 50 * time.Millisecond})
	got, err := s.Fetch(context.Background(), wholeReqs(st, pre, objects, 0))
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, got, objects)
	ss := s.Stats()
	t.Logf("throttled %d, cuts %d, undos %d, limit min %d final %d, background %.3f, retry tokens %d",
		ss.Throttled, ss.Decreases, ss.Undos, ss.LimitMin, ss.Limit, ss.BackgroundThrottle, ss.RetryTokens)
	if ss.Throttled == 0 {
		t.Fatal("no throttled answer: the test did not test anything")
	}
	if ss.LimitMin < P/2 {
		t.Fatalf("random 5 %% throttling cut the limit to %d of %d", ss.LimitMin, P)
	}
}

// TestCapacityBacksOff: a store that serves 4 GETs at once and answers 503
// SlowDown beyond gets about 4 from a scheduler allowed 16.
func TestCapacityBacksOff(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(21, 400, 2<<10)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{Latency: 3 * time.Millisecond, Capacity: 4})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	s := newScheduler(t, iosched.Options{Parallelism: 16, NoHedge: true, Backoff: 2 * time.Millisecond,
		MaxBackoff: 20 * time.Millisecond, AIMDInterval: time.Minute})
	// The growth interval is a minute: a run slowed by a loaded machine
	// must not grow the limit back between throttles (growth is
	// TestAIMD's); this test is about the cuts.
	got, err := s.Fetch(context.Background(), wholeReqs(st, pre, objects, 0))
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, got, objects)
	ss, ps := s.Stats(), p.Stats()
	t.Logf("throttled %d of %d GETs, cuts %d, undos %d, limit min %d final %d", ss.Throttled, ss.Issued, ss.Decreases, ss.Undos, ss.LimitMin, ss.Limit)
	if ss.Decreases == 0 || ss.LimitMin > 5 || ss.Limit > 6 {
		t.Fatalf("against a capacity of 4: cuts %d, limit min %d final %d", ss.Decreases, ss.LimitMin, ss.Limit)
	}
	if ps.OverCapacity != ss.Throttled {
		t.Fatalf("the proxy refused %d GETs, the scheduler saw %d throttled", ps.OverCapacity, ss.Throttled)
	}
}

// TestRetryBudgetExhausted: a store that throttles everything empties the
// retry budget, and the batch fails naming both causes instead of
// retrying for ever.
func TestRetryBudgetExhausted(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(22, 8, 1<<10)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{SlowDown: 1})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	s := newScheduler(t, iosched.Options{Parallelism: 4, NoHedge: true, RetryBudget: 20, Retries: 100,
		Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	_, err := s.Fetch(context.Background(), wholeReqs(st, pre, objects, 0))
	if !errors.Is(err, iosched.ErrRetryBudget) || !errors.Is(err, store.ErrThrottled) {
		t.Fatalf("every GET throttled, budget of 20 tokens: %v", err)
	}
	// 20 tokens pay 4 retries; the batch fails at the first refused one.
	if ss := s.Stats(); ss.Retries != 4 || ss.BudgetFailures == 0 {
		t.Fatalf("retries %d, budget failures %d; want 4 retries", ss.Retries, ss.BudgetFailures)
	}
}

// TestRetryAfter: a throttled answer's Retry-After is honoured over the
// (much shorter) back-off.
func TestRetryAfter(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(23, 1, 1<<10)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{RetryAfter: time.Second,
		Rule: func(r *http.Request, n int64) (faultproxy.Fault, bool) {
			if n == 1 {
				return faultproxy.Fault{Kind: faultproxy.SlowDown}, true
			}
			return faultproxy.Fault{}, true
		}})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	var mu sync.Mutex
	var starts []time.Time
	s := newScheduler(t, iosched.Options{Parallelism: 1, NoHedge: true, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
		Tracer: iosched.TracerFunc(func(e iosched.Event) {
			mu.Lock()
			starts = append(starts, e.Start)
			mu.Unlock()
		})})
	got, err := s.Fetch(context.Background(), wholeReqs(st, pre, objects, 0))
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, got, objects)
	mu.Lock()
	defer mu.Unlock()
	if len(starts) != 2 {
		t.Fatalf("%d GETs, want 2", len(starts))
	}
	if gap := starts[1].Sub(starts[0]); gap < time.Second {
		t.Fatalf("retried %v after a 503 with Retry-After: 1", gap)
	}
}

// TestHedgeMidBodyStall: a body that stops half-way is hedged for its
// missing bytes only, and the bytes are right (whether the hedge or a retry
// after it delivers them is the machine's timing).
func TestHedgeMidBodyStall(t *testing.T) {
	leakCheck(t)
	const size, stallAt = 256 << 10, 64 << 10
	objects := randomObjects(24, 80, size)
	var mu sync.Mutex
	seen := map[string]int{}
	p := proxied(t, fileServer(t, objects), faultproxy.Config{StallFor: time.Minute,
		Rule: func(r *http.Request, n int64) (faultproxy.Fault, bool) {
			mu.Lock()
			defer mu.Unlock()
			seen[r.URL.Path]++
			switch {
			case r.URL.Path == "/obj-070.bin" && seen[r.URL.Path] == 1:
				return faultproxy.Fault{Kind: faultproxy.Stall, After: stallAt, Delay: 5 * time.Millisecond}, true
			}
			return faultproxy.Fault{Delay: 5 * time.Millisecond}, true
		}})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	var emu sync.Mutex
	var hedges []iosched.Event
	// Every GET may be hedged (HedgeFraction 1: one hedge beside each of
	// the 4 workers): slow GETs of a loaded machine cannot use up the
	// budget before the stall this test is about. A hedge floor of 300 ms:
	// the hedge's patience, which a loaded machine under -race must not
	// outrun. Timeouts of ten minutes and a stall of a minute: only the
	// hedge can end it in time.
	s := newScheduler(t, iosched.Options{Parallelism: 4, CoalesceGap: -1, Backoff: time.Millisecond, HedgeFraction: 1,
		HedgeFloor:       300 * time.Millisecond,
		FirstByteTimeout: 10 * time.Minute, IdleTimeout: 10 * time.Minute,
		Tracer: iosched.TracerFunc(func(e iosched.Event) {
			if e.Name == "hedge" {
				emu.Lock()
				hedges = append(hedges, e)
				emu.Unlock()
			}
		})})
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second) // catches a stall left to itself
	defer cancel()
	got, err := s.Fetch(ctx, wholeReqs(st, pre, objects, 0))
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, got, objects)
	ss := s.Stats()
	t.Logf("hedges %d won %d", ss.HedgesIssued, ss.HedgesWon)
	emu.Lock()
	defer emu.Unlock()
	// The first hedge of obj-070 is the stalled body's (a later one would
	// be of its retry). It asks for the missing bytes whether or not a
	// loaded machine let it win.
	var found bool
	for _, e := range hedges {
		if e.URL == st.URL(pre+"obj-070.bin") && !found {
			found = true
			// The missing bytes: from what the first GET had read when it
			// was hedged, all of the stallAt bytes sent unless a loaded
			// machine was slow to read them, to the end.
			if e.Offset <= 0 || e.Offset > stallAt || e.Offset+e.Length != size {
				t.Fatalf("hedge of the stalled body asked %d+%d, want the missing bytes (%d+%d)", e.Offset, e.Length, stallAt, size-stallAt)
			}
		}
	}
	if !found {
		t.Fatalf("the stalled body was not hedged (hedges %v)", hedges)
	}
}

// queryStore counts the GETs running at once per object-name prefix (one
// prefix per query).
type queryStore struct {
	memStore
	mu       sync.Mutex
	cur, max map[string]int
}

func (q *queryStore) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	prefix, _, _ := strings.Cut(name, "/")
	q.mu.Lock()
	q.cur[prefix]++
	q.max[prefix] = max(q.max[prefix], q.cur[prefix])
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.cur[prefix]--
		q.mu.Unlock()
	}()
	return q.memStore.GetRange(ctx, name, off, length)
}

// TestQueryLimits: two queries on one scheduler each run at most their own
// share, and one query's share leaves the other's alone (issue 9: the last
// query to start set the worker count for all).
func TestQueryLimits(t *testing.T) {
	leakCheck(t)
	objects := map[string][]byte{}
	for name, data := range randomObjects(25, 40, 1<<10) {
		objects["a/"+name] = data
		objects["b/"+name] = data
	}
	qs := &queryStore{memStore: memStore{objects: objects, delay: func(string, int64) time.Duration { return 10 * time.Millisecond }},
		cur: map[string]int{}, max: map[string]int{}}
	s := newScheduler(t, iosched.Options{Parallelism: 8, NoHedge: true})
	s.SetQueryLimit(1, 2)
	s.SetQueryLimit(2, 5)
	reqs := func(prefix string, q uint64) []iosched.Request {
		var out []iosched.Request
		for i := range 40 {
			out = append(out, iosched.Request{Store: qs, Name: fmt.Sprintf("%s/obj-%03d.bin", prefix, i), Length: 1 << 10,
				Priority: iosched.Priority{Query: q, Seq: int64(i)}})
		}
		return out
	}
	a := s.Submit(context.Background(), reqs("a", 1))
	b := s.Submit(context.Background(), reqs("b", 2))
	for _, batch := range []*iosched.Batch{a, b} {
		if _, err := batch.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.max["a"] != 2 || qs.max["b"] != 5 {
		t.Fatalf("at most %d and %d GETs at once, want the shares 2 and 5", qs.max["a"], qs.max["b"])
	}
	if p := s.Parallelism(); p != 8 {
		t.Fatalf("parallelism %d after setting shares, want 8", p)
	}
}

// firstFaults is a faultproxy rule: the k-th request of path gets
// faults[k-1], every other request other.
func firstFaults(path string, other faultproxy.Fault, faults ...faultproxy.Fault) func(*http.Request, int64) (faultproxy.Fault, bool) {
	var mu sync.Mutex
	seen := 0
	return func(r *http.Request, n int64) (faultproxy.Fault, bool) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == path {
			if seen++; seen <= len(faults) {
				return faults[seen-1], true
			}
		}
		return other, true
	}
}

// TestHedgeFailsRetries: when the hedge of a stalled GET fails, or stalls
// too, the stalled GET is ended as a timeout and retried, instead of
// waiting out its stall.
func TestHedgeFailsRetries(t *testing.T) {
	for _, c := range []struct {
		name  string
		hedge faultproxy.Fault
	}{
		{"hedge fails", faultproxy.Fault{Kind: faultproxy.Status, Status: 500}},
		{"hedge stalls", faultproxy.Fault{Kind: faultproxy.Stall, After: 10, Delay: 2 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			leakCheck(t)
			objects := randomObjects(26, 60, 8<<10)
			p := proxied(t, fileServer(t, objects), faultproxy.Config{StallFor: time.Minute,
				Rule: firstFaults("/obj-050.bin", faultproxy.Fault{Delay: 2 * time.Millisecond},
					faultproxy.Fault{Kind: faultproxy.Stall, After: 1000, Delay: 2 * time.Millisecond}, c.hedge)})
			st, pre := openStore(t, p.URL+"/", store.Options{})
			var mu sync.Mutex
			var hedges []iosched.Event // of obj-050
			// HedgeFraction 1: a hedge beside each worker, so slow GETs of a
			// loaded machine cannot take the budget the stalled GET needs.
			// Timeouts of ten minutes: only the hedge's end can end the stall.
			s := newScheduler(t, iosched.Options{Parallelism: 4, CoalesceGap: -1, Backoff: time.Millisecond, HedgeFraction: 1,
				HedgeFloor: 300 * time.Millisecond, FirstByteTimeout: 10 * time.Minute, IdleTimeout: 10 * time.Minute,
				Tracer: iosched.TracerFunc(func(e iosched.Event) {
					if e.Name == "hedge" && strings.HasSuffix(e.URL, "/obj-050.bin") {
						mu.Lock()
						hedges = append(hedges, e)
						mu.Unlock()
					}
				})})
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second) // catches a stall left to itself
			defer cancel()
			got, err := s.Fetch(ctx, wholeReqs(st, pre, objects, 0))
			if err != nil {
				t.Fatal(err)
			}
			checkAll(t, got, objects)
			// The first GET of obj-050 stalls (for a minute), its hedge fails
			// or stalls: both end, and a third GET answers. (A loaded machine
			// may hedge the retry too: at least 3.)
			mu.Lock()
			defer mu.Unlock()
			if len(hedges) == 0 || hedges[0].Err == nil {
				t.Fatalf("obj-050's hedges %v; want the first to fail", hedges)
			}
			if n := p.Count("/obj-050.bin"); n < 3 {
				t.Fatalf("obj-050 was asked %d times, want 3 (stalled, hedge, retry)", n)
			}
			if ss := s.Stats(); ss.Retries < 1 {
				t.Fatalf("retries %d, want the stalled GET retried", ss.Retries)
			}
		})
	}
}

// TestHedgeBeforeSamples: a GET of a size never seen before is hedged on
// what the model expects, so a scan's first GETs are covered too.
func TestHedgeBeforeSamples(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(27, 2, 256<<10)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{StallFor: time.Minute,
		Rule: firstFaults("/obj-001.bin", faultproxy.Fault{}, faultproxy.Fault{Kind: faultproxy.Stall, After: 0})})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	// HedgeFraction 1: slow small GETs of a loaded machine cannot take the
	// hedge budget the stall needs; a hedge floor of 300 ms gives the hedge
	// that much patience before it counts as stalled too.
	s := newScheduler(t, iosched.Options{Parallelism: 1, HedgeFraction: 1, HedgeFloor: 300 * time.Millisecond, FirstByteTimeout: 10 * time.Minute, IdleTimeout: 10 * time.Minute})
	reqs := wholeReqs(st, pre, objects, 0)
	// Small GETs teach the model the latency; then the whole objects.
	for range 40 {
		if _, err := s.Fetch(context.Background(), []iosched.Request{{Store: st, Name: reqs[0].Name, Length: 100}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // catches a watch that never ends the stall
	defer cancel()
	got, err := s.Fetch(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, got, objects)
	// Hedged: never left to its stall (the minute's context would have
	// failed the Fetch).
	if n, h := p.Count("/obj-001.bin"), s.Stats().HedgesWon; n < 2 || h == 0 {
		t.Fatalf("obj-001 asked %d times, hedges won %d; want the stalled first GET of its size hedged", n, h)
	}
}

// TestHedgeFirstGETs: a new scheduler's first GETs are hedged too: a stall
// among them is looked at again once other GETs have taught the model
// what to expect.
func TestHedgeFirstGETs(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(28, 40, 4<<10)
	p := proxied(t, fileServer(t, objects), faultproxy.Config{StallFor: time.Minute,
		Rule: firstFaults("/obj-000.bin", faultproxy.Fault{Delay: 2 * time.Millisecond}, faultproxy.Fault{Kind: faultproxy.Stall, After: 0})})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	// Timeouts of ten minutes: only the watch can end the stall, and the
	// context's minute catches a watch that does not.
	s := newScheduler(t, iosched.Options{Parallelism: 40, CoalesceGap: -1, FirstByteTimeout: 10 * time.Minute, IdleTimeout: 10 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := s.Fetch(ctx, wholeReqs(st, pre, objects, 0))
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, got, objects)
	// Hedged, or (when slow GETs on a loaded machine took the 5 % hedge
	// budget of 40 GETs first) ended and retried: asked twice.
	if n := p.Count("/obj-000.bin"); n != 2 {
		t.Fatalf("obj-000 asked %d times; want its stalled first GET hedged or retried once", n)
	}
}

// TestQueryShareEndsWithQuery: a query's share larger than the domain's
// parallelism grows the worker pool while the query runs, without changing
// the share of a query that set none, and the pool is the domain's again
// once the query's share is removed (it ended): max_parallel_io := 512 in
// one query must not raise the workers of every later query in the
// process.
func TestQueryShareEndsWithQuery(t *testing.T) {
	leakCheck(t)
	objects := map[string][]byte{}
	for name, data := range randomObjects(26, 20, 1<<10) {
		for _, p := range []string{"a", "b", "c"} {
			objects[p+"/"+name] = data
		}
	}
	qs := &queryStore{memStore: memStore{objects: objects, gate: make(chan struct{})}, cur: map[string]int{}, max: map[string]int{}}
	s := newScheduler(t, iosched.Options{Parallelism: 4, NoHedge: true})
	reqs := func(prefix string, q uint64, n int) []iosched.Request {
		var out []iosched.Request
		for i := range n {
			out = append(out, iosched.Request{Store: qs, Name: fmt.Sprintf("%s/obj-%03d.bin", prefix, i), Length: 1 << 10,
				Priority: iosched.Priority{Query: q, Seq: int64(i)}})
		}
		return out
	}
	running := func(prefix string) int {
		qs.mu.Lock()
		defer qs.mu.Unlock()
		return qs.cur[prefix]
	}

	// Query 1 asks for 12, more than the domain's 4, and runs 6 GETs;
	// query 2 sets nothing and keeps the domain's 4.
	s.SetQueryLimit(1, 12)
	if p, w := s.Parallelism(), s.Stats().Workers; p != 4 || w != 12 {
		t.Fatalf("with a share of 12 running: parallelism %d, workers %d; want 4 and 12", p, w)
	}
	a := s.Submit(context.Background(), reqs("a", 1, 6))
	b := s.Submit(context.Background(), reqs("b", 2, 20))
	if !eventually(5*time.Second, func() bool { return running("a") == 6 && running("b") == 4 }) {
		t.Fatalf("%d and %d GETs in flight, want 6 (all of query 1's) and 4 (the domain's share)", running("a"), running("b"))
	}
	if n := s.Stats().InFlight; n != 10 {
		t.Fatalf("%d GETs in flight, want 10", n)
	}
	close(qs.gate)
	for _, batch := range []*iosched.Batch{a, b} {
		if _, err := batch.Wait(); err != nil {
			t.Fatal(err)
		}
	}

	// Query 1 ends. Query 3 sets nothing: the domain's parallelism, and at
	// most that many GETs at once.
	s.SetQueryLimit(1, 0)
	if p, st := s.Parallelism(), s.Stats(); p != 4 || st.Workers != 4 || st.Limit != 4 {
		t.Fatalf("after the query ended: parallelism %d, workers %d, limit %d; want 4", p, st.Workers, st.Limit)
	}
	qs.gate = make(chan struct{}) // no GET runs: the batches are done
	c := s.Submit(context.Background(), reqs("c", 3, 20))
	if n := s.Stats().InFlight; n != 4 {
		t.Fatalf("%d GETs started for a query with no share of its own, want the domain's 4", n)
	}
	if !eventually(5*time.Second, func() bool { return running("c") == 4 }) {
		t.Fatalf("%d GETs of query 3 at the store, want 4", running("c"))
	}
	close(qs.gate)
	if _, err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.max["a"] != 6 || qs.max["b"] != 4 || qs.max["c"] != 4 {
		t.Fatalf("at most %d, %d and %d GETs at once, want 6, 4 and 4", qs.max["a"], qs.max["b"], qs.max["c"])
	}
}

// TestParallelismBounded: however large a query's share or the domain's
// parallelism asks to be, the scheduler has at most MaxParallelism worker
// slots: a setting must not size the scheduler's bookkeeping, which
// outlives the query, without bound.
func TestParallelismBounded(t *testing.T) {
	leakCheck(t)
	s := newScheduler(t, iosched.Options{Parallelism: 1 << 40})
	if p := s.Parallelism(); p != iosched.MaxParallelism {
		t.Fatalf("parallelism %d, want MaxParallelism", p)
	}
	s.SetParallelism(4)
	s.SetQueryLimit(1, 1<<40)
	if st := s.Stats(); st.Parallelism != 4 || st.Workers != iosched.MaxParallelism {
		t.Fatalf("a share of 2⁴⁰: parallelism %d, workers %d; want 4 and MaxParallelism", st.Parallelism, st.Workers)
	}
	s.SetQueryLimit(1, 0)
	s.SetParallelism(1 << 40)
	if st := s.Stats(); st.Parallelism != iosched.MaxParallelism || st.Workers != iosched.MaxParallelism {
		t.Fatalf("SetParallelism(2⁴⁰): parallelism %d, workers %d; want MaxParallelism", st.Parallelism, st.Workers)
	}
}
