package iosched

import (
	"slices"
	"sync"
	"time"
)

// HistogramBounds are the upper bounds of the histogram buckets; a last
// bucket counts everything above.
var HistogramBounds = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
}

// Histogram counts durations in the fixed HistogramBounds buckets.
type Histogram struct {
	Counts []int64 // len(HistogramBounds)+1
	Count  int64
	Sum    time.Duration
}

func (h *Histogram) add(d time.Duration) {
	if h.Counts == nil {
		h.Counts = make([]int64, len(HistogramBounds)+1)
	}
	i, _ := slices.BinarySearch(HistogramBounds, d)
	h.Counts[i]++
	h.Count++
	h.Sum += d
}

func (h Histogram) clone() Histogram {
	h.Counts = slices.Clone(h.Counts)
	return h
}

// Mean returns the average duration, 0 for an empty histogram.
func (h Histogram) Mean() time.Duration {
	if h.Count == 0 {
		return 0
	}
	return h.Sum / time.Duration(h.Count)
}

// Quantile returns the upper bound of the bucket holding quantile q (0..1);
// for the open last bucket, twice the last bound.
func (h Histogram) Quantile(q float64) time.Duration {
	if h.Count == 0 {
		return 0
	}
	want := int64(q*float64(h.Count) + 0.5)
	var seen int64
	for i, c := range h.Counts {
		seen += c
		if seen >= want && c > 0 {
			if i < len(HistogramBounds) {
				return HistogramBounds[i]
			}
			break
		}
	}
	return 2 * HistogramBounds[len(HistogramBounds)-1]
}

// Stats is a snapshot of a scheduler's counters since it was created.
type Stats struct {
	Parallelism int // max_parallel_io now
	Limit       int // effective parallelism after AIMD back-off, ≤ Parallelism
	InFlight    int // worker slots busy now
	Hedging     int // hedged GETs running now (beyond InFlight)
	Queued      int // GETs waiting for a worker
	Backoff     int // GETs waiting to be retried

	Requests     int64 // requests submitted by callers
	Failed       int64 // requests that failed (not counting cancellations)
	Canceled     int64 // requests canceled before they completed
	Issued       int64 // GETs sent to stores, hedges and retries included
	Bytes        int64 // body bytes read from stores
	Retries      int64
	Throttled    int64 // answers that asked to slow down (429, 503)
	Decreases    int64 // times AIMD halved the limit
	HedgesIssued int64
	HedgesWon    int64 // hedges that answered first
	Splits       int64 // extra GETs created by splitting large requests
	Coalesced    int64 // requests served by another request's GET

	QueueWait Histogram // from queueing (or re-queueing) to a worker taking it
	Latency   Histogram // of successful GETs, from sending to the last byte

	// BusyTime is the integral of InFlight over time and CapacityTime that
	// of Parallelism: their ratio between two snapshots is the average
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
}

// latencies keeps recent GET latencies per size class (power of two of the
// length) and answers their 95th percentile for hedging.
type latencies struct {
	mu      sync.Mutex
	classes [64]latencyClass
}

const latencyWindow = 128

type latencyClass struct {
	ring  [latencyWindow]time.Duration
	n     int // samples held, ≤ latencyWindow
	next  int
	p95   time.Duration
	stale int // samples added since p95 was computed
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

// threshold returns how long a GET of length bytes may run before it is
// hedged, and false while the class has fewer than minSamples samples.
func (l *latencies) threshold(length int64, floor time.Duration, minSamples int) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.classes[sizeClass(length)]
	if c.n < minSamples {
		return 0, false
	}
	// Recompute the percentile every 16 samples: sorting 128 durations per
	// GET would cost more than it tells.
	if c.stale >= 16 || c.p95 == 0 {
		s := slices.Clone(c.ring[:c.n])
		slices.Sort(s)
		c.p95 = s[(len(s)*95)/100]
		c.stale = 0
	}
	return max(floor, c.p95), true
}
