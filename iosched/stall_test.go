package iosched_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/test/faultproxy"
)

// stallFirst returns a memStore delay under which the first stalls[name]
// GETs of each named object block until they are canceled (only the
// scheduler's watch can end them) and every other GET answers at once.
func stallFirst(stalls map[string]int) func(name string, off int64) time.Duration {
	var mu sync.Mutex
	seen := map[string]int{}
	return func(name string, off int64) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		seen[name]++
		if seen[name] <= stalls[name] {
			return time.Hour
		}
		return 0
	}
}

// TestStallsAreFree: GETs the hedge watch ends as stalled (no hedge
// allowed) are retried without drawing from the retry budget or counting
// as broken connections, so a patient client's scan does not fail. Before,
// each such end cost 10 tokens: under CPU load (a machine too busy to
// read its sockets for a second makes every GET in flight look stalled)
// a real scan failed with "timeout: stalled, and no hedge was allowed
// (retry budget exhausted)". Here 8 stalls against a budget of 20 tokens,
// and one object stalled twice with Retries 1.
func TestStallsAreFree(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(30, 48, 4<<10)
	stalls := map[string]int{}
	for i := 40; i < 48; i++ {
		stalls[fmt.Sprintf("obj-%03d.bin", i)] = 1
	}
	stalls["obj-047.bin"] = 2
	m := &memStore{objects: objects, delay: stallFirst(stalls)}
	// HedgeFraction 1e-9: no hedge is ever allowed, so the watch ends the
	// stalls itself; timeouts of ten minutes leave it the only way.
	s := newScheduler(t, iosched.Options{Parallelism: 8, CoalesceGap: -1, RetryBudget: 20, Retries: 1,
		Backoff: time.Millisecond, HedgeFraction: 1e-9, HedgeFloor: 20 * time.Millisecond,
		FirstByteTimeout: 10 * time.Minute, IdleTimeout: 10 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // catches a stall left to itself
	defer cancel()
	got, err := s.Fetch(ctx, wholeReqs(m, "", objects, 0))
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, got, objects)
	ss := s.Stats()
	t.Logf("retries %d, stall retries %d, retry tokens %d, budget failures %d", ss.Retries, ss.StallRetries, ss.RetryTokens, ss.BudgetFailures)
	// 7 objects stalled once and one twice: 9 GETs only the watch could end.
	if ss.StallRetries < 9 || ss.HedgesIssued != 0 {
		t.Fatalf("stall retries %d, hedges %d; want at least 9 stalls ended by the watch and no hedge", ss.StallRetries, ss.HedgesIssued)
	}
	if ss.BudgetFailures != 0 {
		t.Fatalf("%d budget failures", ss.BudgetFailures)
	}
}

// TestEveryGETStalls: a pause of the whole machine (every GET in flight
// stalls at once, as when the process is not scheduled for a second) with
// the default options. The stalls take their hedges and first retries
// with them, as a pause of a few seconds would: 64 GETs ended twice by the
// watch drew 1,280 tokens from a budget of 500, and the batch failed with
// the error a real scan under CPU load saw ("timeout: stalled, and no hedge
// was allowed (retry budget exhausted)").
func TestEveryGETStalls(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(33, 800, 1<<10)
	stalls := map[string]int{}
	for i := 500; i < 564; i++ {
		stalls[fmt.Sprintf("obj-%03d.bin", i)] = 3 // the GET, its hedge, the retry
	}
	m := &memStore{objects: objects, delay: stallFirst(stalls)}
	s := newScheduler(t, iosched.Options{CoalesceGap: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, not a speed limit
	defer cancel()
	got, err := s.Fetch(ctx, wholeReqs(m, "", objects, 0))
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, got, objects)
	ss := s.Stats()
	t.Logf("retries %d, stall retries %d, hedges %d (won %d), retry tokens %d", ss.Retries, ss.StallRetries, ss.HedgesIssued, ss.HedgesWon, ss.RetryTokens)
	if ss.StallRetries < 64 || ss.BudgetFailures != 0 {
		t.Fatalf("stall retries %d, budget failures %d; want the 64 stalls ended by the watch, for free", ss.StallRetries, ss.BudgetFailures)
	}
}

// TestStallTimesOut: a store that never answers one object is still
// reported, as a timeout naming how long no byte came, once that object's
// GETs have gone without a byte for FirstByteTimeout over all attempts;
// the watch, waiting twice as long after each stall in a row, sent it a
// few GETs meanwhile, not one a second.
func TestStallTimesOut(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(31, 21, 4<<10)
	m := &memStore{objects: objects, delay: stallFirst(map[string]int{"obj-020.bin": 1 << 30})}
	s := newScheduler(t, iosched.Options{Parallelism: 4, CoalesceGap: -1, Backoff: time.Millisecond,
		HedgeFraction: 1e-9, HedgeFloor: 20 * time.Millisecond,
		FirstByteTimeout: 2 * time.Second, IdleTimeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, not a speed limit
	defer cancel()
	_, err := s.Fetch(ctx, wholeReqs(m, "", objects, 0))
	var re *iosched.RequestError
	if !errors.As(err, &re) || !errors.Is(err, iosched.ErrTimeout) || ctx.Err() != nil {
		t.Fatalf("an object that never answers: %v; want its timeout", err)
	}
	t.Log(err)
	if !strings.HasSuffix(re.URL, "obj-020.bin") || !strings.Contains(err.Error(), "no byte for") || re.Attempts < 2 || re.Attempts > 4 {
		t.Fatalf("error %q after %d attempts; want obj-020's timeout after 2-4 attempts (the watch's free retries)", err, re.Attempts)
	}
}

// TestResetRetriedAtOnce: a connection reset mid-body is not throttling:
// the first in a row is retried at once, the second in a row backs off
// (a restarting server resets its connections, then refuses new ones for
// a while). The back-off is an hour: a retry that waits for it does not
// come within the test's minute.
func TestResetRetriedAtOnce(t *testing.T) {
	for _, resets := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d resets", resets), func(t *testing.T) {
			leakCheck(t)
			objects := randomObjects(32, 4, 64<<10)
			reset := faultproxy.Fault{Kind: faultproxy.Reset, After: 1000}
			p := proxied(t, fileServer(t, objects), faultproxy.Config{
				Rule: firstFaults("/obj-002.bin", faultproxy.Fault{}, slices.Repeat([]faultproxy.Fault{reset}, resets)...)})
			st, pre := openStore(t, p.URL+"/", store.Options{})
			s := newScheduler(t, iosched.Options{Parallelism: 2, NoHedge: true, CoalesceGap: -1,
				Backoff: time.Hour, MaxBackoff: time.Hour})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard: waiting out an hour's back-off is the failure
			defer cancel()
			if resets == 1 {
				got, err := s.Fetch(ctx, wholeReqs(st, pre, objects, 0))
				if err != nil {
					t.Fatalf("one reset: %v", err)
				}
				checkAll(t, got, objects)
				if n := p.Count("/obj-002.bin"); n != 2 {
					t.Fatalf("obj-002 asked %d times, want 2", n)
				}
				return
			}
			b := s.Submit(ctx, wholeReqs(st, pre, objects, 0))
			if !eventually(30*time.Second, func() bool { return p.Count("/obj-002.bin") == 2 && s.Stats().Backoff == 1 }) {
				t.Fatalf("obj-002 asked %d times, %d GETs backing off; want the second reset in a row backing off",
					p.Count("/obj-002.bin"), s.Stats().Backoff)
			}
			cancel()
			if _, err := b.Wait(); !errors.Is(err, context.Canceled) {
				t.Fatalf("canceled while backing off: %v", err)
			}
		})
	}
}
