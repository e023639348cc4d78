package iosched

import (
	"slices"
	"sync"
	"time"
)

// histogramBounds are the upper bounds of the histogram buckets; a last
// bucket counts everything above. It is never written.
var histogramBounds = [...]time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
}

// Histogram counts durations in fixed buckets with the upper bounds 1, 2,
// 5, 10, 20, 50, 100, 200, 500 ms, 1, 2, 5, 10 s, and a last one above.
type Histogram struct {
	Counts []int64 // 14 buckets
	Count  int64
	Sum    time.Duration
}

func (h *Histogram) add(d time.Duration) {
	if h.Counts == nil {
		h.Counts = make([]int64, len(histogramBounds)+1)
	}
	i, _ := slices.BinarySearch(histogramBounds[:], d)
	h.Counts[i]++
	h.Count++
	h.Sum += d
}

func (h Histogram) clone() Histogram {
	h.Counts = slices.Clone(h.Counts)
	return h
}

// Stats is a snapshot of a scheduler's counters since it was created.
type Stats struct {
	// Parallelism is the domain's max_parallel_io now: the share of a
	// query that sets none of its own. Workers is the worker slots now:
	// Parallelism, or the largest share a query holds (SetQueryLimit) if
	// that is larger.
	Parallelism int
	Workers     int
	Limit       int // effective worker slots after throttling, ≤ Workers
	LimitMin    int // the lowest Limit since the scheduler was created
	InFlight    int // worker slots busy now
	Hedging     int // hedged GETs running now (beyond InFlight)
	Queued      int // GETs waiting for a worker
	Backoff     int // GETs waiting to be retried

	Requests  int64 // requests submitted by callers
	Failed    int64 // requests that failed (not counting cancellations)
	Canceled  int64 // requests canceled before they completed
	Issued    int64 // GETs sent to stores, hedges and retries included
	Bytes     int64 // body bytes read from stores
	Retries   int64
	Throttled int64 // answers that asked to slow down (429, 503)
	Decreases int64 // times throttling cut the limit
	Undos     int64 // cuts taken back: the throttling did not follow our load
	// BackgroundThrottle is the learned share of answers throttled whatever
	// the load (random throttling), which the limit does not react to.
	BackgroundThrottle float64
	RetryTokens        int   // tokens left in the retry budget
	BudgetFailures     int64 // GETs failed because the retry budget was empty
	// StallRetries counts GETs the hedge watch ended as stalled and retried
	// at once, free of the retry budget (see Options.Retries).
	StallRetries int64
	HedgesIssued int64
	HedgesWon    int64 // hedges that answered first
	Splits       int64 // extra GETs created by splitting large requests
	Coalesced    int64 // requests served by another request's GET

	QueueWait Histogram // from queueing (or re-queueing) to a worker taking it
	Latency   Histogram // of successful GETs, from sending to the last byte

	// BusyTime is the integral of InFlight over time and CapacityTime that
	// of Workers: their ratio between two snapshots is the average
	// utilization of the IO slots (see Utilization).
	BusyTime, CapacityTime time.Duration
}

// Utilization returns the average fraction of IO slots busy between the
// snapshot prev and s (avg in-flight / parallelism); 0 if no time passed.
func (s Stats) Utilization(prev Stats) float64 {
	c := s.CapacityTime - prev.CapacityTime
	if c <= 0 {
		return 0
	}
	return float64(s.BusyTime-prev.BusyTime) / float64(c)
}

// BatchStats counts the work of one batch.
type BatchStats struct {
	Requests     int
	Issued       int64 // GETs, hedges and retries included
	Bytes        int64 // body bytes read
	Retries      int64
	HedgesIssued int64
	HedgesWon    int64
	Splits       int64
	Coalesced    int64
	QueueWait    time.Duration // summed over GETs
	Throttled    int64         // throttled answers (429, 503)
	LimitMin     int           // lowest effective parallelism while the batch ran
}

// latencies keeps recent GET latencies per size class (power of two of the
// length) and answers their 95th percentile for hedging.
type latencies struct {
	mu        sync.Mutex
	classes   [64]latencyClass
	firstByte latencyClass // time to the first body byte, all sizes
}

const latencyWindow = 128

type latencyClass struct {
	ring  [latencyWindow]time.Duration
	n     int // samples held, ≤ latencyWindow
	next  int
	p95v  time.Duration
	stale int // samples added since p95v was computed
}

func sizeClass(length int64) int {
	c := 0
	for length > 1 && c < 63 {
		length >>= 1
		c++
	}
	return c
}

func (l *latencies) add(length int64, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.classes[sizeClass(length)]
	c.ring[c.next] = d
	c.next = (c.next + 1) % latencyWindow
	if c.n < latencyWindow {
		c.n++
	}
	c.stale++
}

func (l *latencies) addFirstByte(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.firstByte
	c.ring[c.next] = d
	c.next = (c.next + 1) % latencyWindow
	if c.n < latencyWindow {
		c.n++
	}
	c.stale++
}

// stallGap is how long a body may send nothing before its GET counts as
// stalled: the p95 of the time to the first byte (a server that answers
// within that usually keeps its body flowing), at least floor; floor
// alone while fewer than minSamples first bytes were seen.
func (l *latencies) stallGap(floor time.Duration, minSamples int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.firstByte.n < minSamples {
		return floor
	}
	return max(floor, l.firstByte.p95())
}

// threshold returns how long a GET of length bytes may run before it is
// hedged, and false while the class has fewer than minSamples samples.
func (l *latencies) threshold(length int64, floor time.Duration, minSamples int) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.classes[sizeClass(length)]
	if c.n < minSamples {
		return 0, false
	}
	return max(floor, c.p95()), true
}

// p95 returns the class's 95th percentile. It is recomputed every 16
// samples: sorting 128 durations per GET would cost more than it tells.
func (c *latencyClass) p95() time.Duration {
	if c.stale >= 16 || c.p95v == 0 {
		s := slices.Clone(c.ring[:c.n])
		slices.Sort(s)
		c.p95v = s[(len(s)*95)/100]
		c.stale = 0
	}
	return c.p95v
}

// Model is what the scheduler has learned of its store: the time a GET
// waits for the store's answer (its headers), and how fast one GET's body
// then arrives.
// Callers weigh extra round trips against bytes with it.
//
// Floor is the shortest time to headers of the GETs measured in the
// current floorEpoch and the one before it: the store's round trip without
// the queueing the scans' own requests add, as a TCP sender takes the
// smallest RTT for the path's. Latency rises with the load, Floor does not:
// a server short of CPU answers a lone GET at once and a scan's many
// slowly, and more requests in flight there only queue longer.
type Model struct {
	Latency   time.Duration // time to the answer's headers (an EMA)
	Floor     time.Duration // the store's round trip (before any GET: Latency's prior)
	Bandwidth float64       // body bytes per second of one GET (an EMA over GETs of at least modelMinBytes)
	Samples   int64         // GETs measured
}

// Priors of Model before any GET was measured.
const (
	priorLatency   = 20 * time.Millisecond
	priorBandwidth = 100e6
	modelMinBytes  = 32 << 10 // smaller bodies say more about latency than bandwidth
	modelAlpha     = 0.1
	// floorEpoch is how long a shortest time to headers counts for Floor
	// (at least one epoch, at most two): long enough to span a scan's
	// bind, which waits for few requests, and the scan after it, short
	// enough to forget a path that changed.
	floorEpoch = 10 * time.Second
)

// model learns a Model from finished GETs.
type model struct {
	mu sync.Mutex
	m  Model
	bw int64 // bandwidth samples
	// The shortest time to headers of the current floor epoch (begun at
	// epoch) and of the one before it; 0: none measured.
	epoch             time.Time
	minNow, minBefore time.Duration
}

// add learns from a GET whose headers came after headers and whose n body
// bytes were all in after total.
func (l *model) add(headers, total time.Duration, n int64) {
	l.addAt(time.Now(), headers, total, n)
}

// addAt is add for a GET that ended at now.
func (l *model) addAt(now time.Time, headers, total time.Duration, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m.Samples == 0 {
		l.m.Latency = headers
	} else {
		l.m.Latency += time.Duration(modelAlpha * float64(headers-l.m.Latency))
	}
	if gap := now.Sub(l.epoch); gap >= floorEpoch {
		l.epoch, l.minBefore, l.minNow = now, l.minNow, 0
		if gap >= 2*floorEpoch {
			l.minBefore = 0 // no GET for more than an epoch: the last one is stale too
		}
	}
	if l.minNow == 0 || headers < l.minNow {
		l.minNow = max(headers, 1)
	}
	l.m.Samples++
	if body := total - headers; n >= modelMinBytes && body > 0 {
		bw := float64(n) / body.Seconds()
		if l.bw == 0 {
			l.m.Bandwidth = bw
		} else {
			l.m.Bandwidth += modelAlpha * (bw - l.m.Bandwidth)
		}
		l.bw++
	}
}

func (l *model) get() Model {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.m
	if m.Samples == 0 {
		m.Latency = priorLatency
	}
	m.Floor = m.Latency
	if l.minNow > 0 {
		m.Floor = l.minNow
	}
	if l.minBefore > 0 {
		m.Floor = min(m.Floor, l.minBefore)
	}
	if l.bw == 0 {
		m.Bandwidth = priorBandwidth
	}
	return m
}

// hedgeAfter is how long a GET of length bytes may run before it is hedged
// while its size class has too few samples for a percentile: four times
// what the model expects it to take, at least floor; false before any GET
// was measured.
func (l *model) hedgeAfter(length int64, floor time.Duration) (time.Duration, bool) {
	m := l.get()
	if m.Samples == 0 {
		return 0, false
	}
	expect := m.Latency + time.Duration(float64(length)/m.Bandwidth*float64(time.Second))
	return max(floor, 4*expect), true
}
