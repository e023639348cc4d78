package iosched

import (
	"math/rand/v2"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// simulate runs the controller against a store for rounds round trips of
// rtt: each round trip, the effective limit's worth of GETs is answered, throttled
// when throttle(limit, i) says so (i counts the GETs of the round trip).
// It returns the share of throttled answers and the lowest and the mean
// limit seen.
func simulate(c *congestion, t0 time.Time, rounds int, rtt time.Duration, throttle func(limit, i int) bool) (share float64, low int, mean float64) {
	now := t0
	var answers, throttled, sum int
	low = c.limit
	for range rounds {
		now = now.Add(rtt)
		c.grow(now)
		l := c.effective() // throttled answers of the round hold GETs back
		for i := range l {
			th := throttle(l, i)
			c.answer(now, now, th)
			answers++
			if th {
				throttled++
			}
		}
		low = min(low, c.limit)
		sum += c.limit
	}
	return float64(throttled) / float64(answers), low, float64(sum) / float64(rounds)
}

// TestCongestionRandomThrottles: 5 % of answers throttled at random, whatever
// the load, must not empty the pipe (issue 8: AIMD fell from 64 to ~1).
func TestCongestionRandomThrottles(t *testing.T) {
	for seed := range uint64(5) {
		t0 := time.Now()
		c := newCongestion(64, 500*time.Millisecond, t0)
		rng := rand.New(rand.NewPCG(seed, 2))
		_, low, mean := simulate(c, t0, 2000, 35*time.Millisecond, func(int, int) bool { return rng.Float64() < 0.05 })
		t.Logf("seed %d: low %d mean %.1f final %d; cuts %d undos %d background %.3f", seed, low, mean, c.limit, c.cuts, c.undos, c.bg)
		if low < 48 || mean < 60 {
			t.Fatalf("seed %d: random 5 %% throttling pulled the limit down to %d (mean %.1f), want ≥ 48 and a mean ≥ 60", seed, low, mean)
		}
	}
}

// TestCongestionCapacity: a store that serves 16 at once and throttles the
// rest gets about 16 GETs, in one step, and sees few throttled answers.
func TestCongestionCapacity(t *testing.T) {
	t0 := time.Now()
	c := newCongestion(64, 500*time.Millisecond, t0)
	const capacity = 16
	over := func(limit, i int) bool { return i >= capacity }
	simulate(c, t0, 1, 35*time.Millisecond, over)
	if c.limit != capacity {
		t.Fatalf("limit %d after one round trip at 64 against capacity %d", c.limit, capacity)
	}
	share, low, mean := simulate(c, t0.Add(35*time.Millisecond), 2000, 35*time.Millisecond, over)
	t.Logf("throttled %.3f, low %d mean %.1f final %d; cuts %d undos %d background %.3f", share, low, mean, c.limit, c.cuts, c.undos, c.bg)
	if share > 0.05 || low < capacity-2 || mean > capacity+2 || mean < capacity-1 {
		t.Fatalf("against capacity %d: throttled share %.3f, limit low %d mean %.1f", capacity, share, low, mean)
	}
}

// TestCongestionCapacityAndRandom: both at once; the limit still settles
// near the capacity.
func TestCongestionCapacityAndRandom(t *testing.T) {
	for seed := range uint64(5) {
		t0 := time.Now()
		c := newCongestion(64, 500*time.Millisecond, t0)
		rng := rand.New(rand.NewPCG(seed, 4))
		share, low, mean := simulate(c, t0, 2000, 35*time.Millisecond, func(limit, i int) bool {
			return i >= 24 || rng.Float64() < 0.05
		})
		t.Logf("seed %d: throttled %.3f, low %d mean %.1f final %d; cuts %d undos %d background %.3f", seed, share, low, mean, c.limit, c.cuts, c.undos, c.bg)
		if mean < 18 || mean > 28 || share > 0.15 {
			t.Fatalf("seed %d: capacity 24 with 5 %% random: mean limit %.1f, throttled share %.3f", seed, mean, share)
		}
	}
}

// TestCongestionAllThrottled: every answer throttled drives the limit to 1
// and keeps it there; once answers are clean it grows by one per interval,
// not above the parallelism.
func TestCongestionAllThrottled(t *testing.T) {
	t0 := time.Now()
	c := newCongestion(16, time.Second, t0)
	end := t0
	for i := range 200 {
		end = t0.Add(time.Duration(i) * time.Millisecond)
		c.answer(end, end, true)
		if i > 32 && c.limit != 1 {
			t.Fatalf("limit %d after %d throttled answers", c.limit, i+1)
		}
	}
	if c.minLimit != 1 || c.undos != 0 {
		t.Fatalf("min limit %d, undos %d", c.minLimit, c.undos)
	}
	// Clean from here on: the round under way ends (its throttled part may
	// cut once more), the round testing the cut ends clean (the cut stays),
	// then +1 per second.
	for range 3 * minRound {
		c.answer(end, end, false)
	}
	if c.testing {
		t.Fatal("still testing a cut after clean rounds")
	}
	start := end
	c.grow(start.Add(999 * time.Millisecond))
	if c.limit != 1 {
		t.Fatalf("limit %d before a clean second", c.limit)
	}
	c.grow(start.Add(3 * time.Second))
	if c.limit != 4 {
		t.Fatalf("limit %d after three clean seconds, want 4", c.limit)
	}
	c.grow(start.Add(time.Minute))
	if c.limit != 16 {
		t.Fatalf("limit %d after a clean minute, want 16", c.limit)
	}
}

// TestCongestionStaleAnswers: answers to GETs sent before the round began
// do not count.
func TestCongestionStaleAnswers(t *testing.T) {
	t0 := time.Now()
	c := newCongestion(64, time.Second, t0)
	for range 1000 {
		c.answer(t0.Add(-time.Millisecond), t0.Add(time.Millisecond), true)
	}
	if c.limit != 64 || c.n != 0 {
		t.Fatalf("stale answers moved the limit to %d (round count %d)", c.limit, c.n)
	}
}

// TestRetryBudget: retries take tokens, successes give them back, an empty
// budget refuses, and a negative capacity never does.
func TestRetryBudget(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r := retryBudget{tokens: 12, capacity: 12}
	if !r.take(retryCost) || !r.take(retryCost) || r.take(retryCost) {
		t.Fatalf("12 tokens should pay two retries of %d, not three (left %d)", retryCost, r.tokens)
	}
	r.refund(100)
	if r.tokens != 12 {
		t.Fatalf("refund above the capacity: %d tokens", r.tokens)
	}
	u := retryBudget{capacity: -1}
	for range 1000 {
		if !u.take(timeoutCost) {
			t.Fatal("an unlimited budget refused")
		}
	}
	s := New(Options{RetryBudget: 7})
	defer s.Close()
	if st := s.Stats(); st.RetryTokens != 7 {
		t.Fatalf("RetryTokens %d, want 7", st.RetryTokens)
	}
}

// TestModel: priors before any GET, then the answer latency and the body
// bandwidth of large GETs.
func TestModel(t *testing.T) {
	var m model
	if g := m.get(); g.Latency != priorLatency || g.Bandwidth != priorBandwidth || g.Samples != 0 {
		t.Fatalf("empty model %+v, want the priors", g)
	}
	m.add(30*time.Millisecond, 40*time.Millisecond, 1<<20) // 1 MiB in 10 ms
	g := m.get()
	if g.Latency != 30*time.Millisecond || g.Bandwidth < 104e6 || g.Bandwidth > 105e6 || g.Samples != 1 {
		t.Fatalf("after one GET: %+v", g)
	}
	m.add(10*time.Millisecond, 11*time.Millisecond, 100) // small: latency only
	g = m.get()
	if g.Latency != 28*time.Millisecond || g.Bandwidth < 104e6 || g.Bandwidth > 105e6 {
		t.Fatalf("after a small GET: %+v", g)
	}
}

// TestModelFloor: Floor is the shortest time to headers of the current
// epoch and the one before, whatever queueing raised the EMA to since, and
// forgets what is older.
func TestModelFloor(t *testing.T) {
	var m model
	if g := m.get(); g.Floor != priorLatency {
		t.Fatalf("empty model: Floor %v, want the prior %v", g.Floor, priorLatency)
	}
	t0 := time.Unix(1000, 0)
	m.addAt(t0, 3*time.Millisecond, 4*time.Millisecond, 100) // bind: few requests in flight
	for i := range 200 {                                     // the scan: its own requests queue
		m.addAt(t0.Add(time.Duration(i)*time.Millisecond), 47*time.Millisecond, 50*time.Millisecond, 100)
	}
	if g := m.get(); g.Floor != 3*time.Millisecond || g.Latency < 40*time.Millisecond {
		t.Fatalf("after queueing: %+v, want Floor 3ms under a Latency near 47ms", g)
	}
	m.addAt(t0.Add(floorEpoch), 40*time.Millisecond, 41*time.Millisecond, 100)
	if g := m.get(); g.Floor != 3*time.Millisecond {
		t.Fatalf("one epoch later: Floor %v, want the last epoch's 3ms", g.Floor)
	}
	m.addAt(t0.Add(2*floorEpoch), 30*time.Millisecond, 31*time.Millisecond, 100)
	if g := m.get(); g.Floor != 30*time.Millisecond {
		t.Fatalf("two epochs later: Floor %v, want 30ms (3ms is two epochs old; 40ms is above 30ms)", g.Floor)
	}
	m.addAt(t0.Add(5*floorEpoch), 35*time.Millisecond, 36*time.Millisecond, 100)
	if g := m.get(); g.Floor != 35*time.Millisecond {
		t.Fatalf("after an idle epoch: Floor %v, want 35ms alone", g.Floor)
	}
}
