package iosched

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// Defaults of Options.
const (
	DefaultParallelism = 64
	// DefaultLocalParallelism is what Domains uses for file:// and plain
	// paths. It is well above what a local disk or the page cache needs in
	// flight, because a scan's lookahead is its max_parallel_io share: the
	// chunks it may read ahead of its consumer (the bound a LIMIT relies
	// on). Each time the consumer, on one of DuckDB's threads, has taken
	// all of that and waits, the runtime must park and later wake that
	// thread and move a P to it; of small local files a lookahead of 8
	// chunks made that wait come every few chunks, and it cost more than
	// the chunks' reads (BENCHMARKS.md, "Figures behind the code"). Reads
	// of large local chunks are held back by the memory budget long before
	// 32 of them are in flight.
	DefaultLocalParallelism = 32
	DefaultRequestSize      = 8 << 20
	DefaultCoalesceGap      = 64 << 10
	DefaultRetries          = 3
	DefaultBackoff          = 50 * time.Millisecond
	DefaultMaxBackoff       = 5 * time.Second
	DefaultTimeout          = 30 * time.Second
	DefaultHedgeFloor       = 50 * time.Millisecond
	DefaultHedgeMinSamples  = 20
	DefaultHedgeFraction    = 0.05
	DefaultAIMDInterval     = 500 * time.Millisecond
	DefaultRetryBudget      = 500
)

// MaxParallelism bounds the worker slots of a scheduler, whatever its
// Parallelism or a query's share asks for: the slots' bookkeeping lasts as
// long as the scheduler, so a query's setting must not size it without
// bound.
const MaxParallelism = 4096

// Options configure a Scheduler. A zero Options is valid and means the
// defaults above; negative values switch a feature off where noted.
type Options struct {
	// Parallelism is max_parallel_io: how many requests run at once (at most
	// MaxParallelism).
	Parallelism int
	// MaxReadToEnd bounds a read to the end of an object; 0: the constant
	// MaxReadToEnd.
	MaxReadToEnd int64
	// RequestSize is the largest GET; longer requests are split into
	// parallel parts of at most this size.
	RequestSize int64
	// CoalesceGap merges requests to the same object whose ranges are at
	// most this many bytes apart (and fit in RequestSize) into one GET;
	// negative disables merging.
	CoalesceGap int64
	// Retries is how many times a GET that failed with a server error
	// (5xx other than 503) is retried; negative means never retry anything.
	// Throttled (429, 503), reset and timed-out GETs are retried while the
	// retry budget lasts instead (at most 20 attempts each), except that a
	// GET whose connection broke (reset, short body, timeout) more than
	// Retries times fails. A GET the hedge watch ends as stalled is our
	// impatience, not a failure: it is retried at once and costs nothing;
	// the request fails with ErrTimeout once it has had no byte for
	// FirstByteTimeout (IdleTimeout once a byte came) over all its
	// attempts. With Retries negative the watch ends no GET.
	Retries int
	// RetryBudget is the capacity in tokens of the retry budget: a retry of
	// a throttled or reset GET costs 5, of a timed-out one 10, and every GET
	// that succeeds at once gives 1 back. Negative means unlimited.
	RetryBudget int
	// Backoff and MaxBackoff bound the exponential back-off between retries
	// (the n-th retry waits between d/2 and d, d = min(MaxBackoff, Backoff·2ⁿ⁻¹)).
	Backoff, MaxBackoff time.Duration
	// FirstByteTimeout bounds the wait for the first body byte of an
	// attempt, IdleTimeout the wait between two reads of its body.
	FirstByteTimeout, IdleTimeout time.Duration
	// NoHedge switches hedging off. Otherwise a GET running longer than the
	// 95th percentile of recent GETs of its size class (at least HedgeFloor,
	// known from at least HedgeMinSamples GETs) is sent once more, as long as
	// hedges stay below HedgeFraction of all GETs (and of the parallelism at
	// any moment: at most max(1, HedgeFraction·P) hedges run beside the P
	// workers) and nothing is throttled. Domains sets it for local files.
	NoHedge         bool
	HedgeFloor      time.Duration
	HedgeMinSamples int
	HedgeFraction   float64
	// AIMDInterval is how long the scheduler must go without a throttled
	// answer before the effective parallelism grows by one.
	AIMDInterval time.Duration
	// Tracer, when set, receives one Event per GET.
	Tracer Tracer
}

func (o Options) withDefaults() Options {
	if o.Parallelism <= 0 {
		o.Parallelism = DefaultParallelism
	}
	o.Parallelism = min(o.Parallelism, MaxParallelism)
	if o.RequestSize <= 0 {
		o.RequestSize = DefaultRequestSize
	}
	if o.MaxReadToEnd <= 0 {
		o.MaxReadToEnd = MaxReadToEnd
	}
	if o.CoalesceGap == 0 {
		o.CoalesceGap = DefaultCoalesceGap
	}
	if o.Retries == 0 {
		o.Retries = DefaultRetries
	} else if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.FirstByteTimeout <= 0 {
		o.FirstByteTimeout = DefaultTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultTimeout
	}
	if o.HedgeFloor <= 0 {
		o.HedgeFloor = DefaultHedgeFloor
	}
	if o.HedgeMinSamples <= 0 {
		o.HedgeMinSamples = DefaultHedgeMinSamples
	}
	if o.HedgeFraction <= 0 {
		o.HedgeFraction = DefaultHedgeFraction
	}
	if o.RetryBudget == 0 {
		o.RetryBudget = DefaultRetryBudget
	}
	if o.AIMDInterval <= 0 {
		o.AIMDInterval = DefaultAIMDInterval
	}
	return o
}

// MaxReadToEnd bounds a read to the end of an object, whose length nobody
// told (no catalog length, no listing size): its body grows a buffer as it
// arrives, so an endless or huge body must stop somewhere absolute rather
// than at the process's memory. A larger chunk needs its length in the
// catalog, which reads it in ranges.
const MaxReadToEnd = 4 << 30

// Errors. ErrNotFound and ErrForbidden are the store's sentinels, so either
// package's name works with errors.Is.
var (
	ErrNotFound  = store.ErrNotFound
	ErrForbidden = store.ErrForbidden
	ErrShortBody = errors.New("short body")                // the body ended before the asked length
	ErrTimeout   = errors.New("timeout")                   // no first byte, or no byte for too long
	ErrClosed    = errors.New("iosched: scheduler closed") // Submit after Close, or Close during a batch
	ErrInvalid   = errors.New("invalid request")           // a negative offset
	// ErrTooLarge: a read to the end of an object (its length unknown)
	// went past MaxReadToEnd. Never retried.
	ErrTooLarge = errors.New("object too large")
	// ErrChanged: the rest of a range that a GET cut short (or a hedge)
	// came from another version of the object than its first bytes, which
	// are then dropped: the range is read again from its start.
	ErrChanged = errors.New("the object changed while it was read")
	// ErrRetryBudget is wrapped beside the cause when a GET was not retried
	// because the retry budget was empty: the store kept failing.
	ErrRetryBudget = errors.New("retry budget exhausted")
)

// RequestError is the error of one submitted request. Its message names the
// URL and the request's range; Err is the cause (a store error, ErrShortBody,
// ErrTimeout, a context error).
type RequestError struct {
	URL      string
	Offset   int64
	Length   int64 // < 0: to the end
	Attempts int   // GETs made for the failing part, 0 if none
	Err      error
}

func (e *RequestError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "iosched: GET %s ", e.URL)
	if e.Length < 0 {
		fmt.Fprintf(&b, "bytes=%d-", e.Offset)
	} else {
		fmt.Fprintf(&b, "bytes=%d-%d", e.Offset, e.Offset+e.Length-1)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

func (e *RequestError) Unwrap() error { return e.Err }

// Event describes one GET for tracing: a Chrome-trace "complete" event.
type Event struct {
	Name   string // "GET", or "hedge" for a hedged second GET
	URL    string
	Offset int64
	Length int64
	Query  uint64
	Worker int // IO worker slot, 0 ≤ Worker < parallelism
	Start  time.Time
	Dur    time.Duration
	Bytes  int64 // body bytes read
	Err    error // nil on success
}

// Tracer receives an Event after every GET. It is called on IO workers:
// it must be quick and safe for concurrent use.
type Tracer interface {
	TraceRequest(Event)
}

// QueryTracer is a Tracer that traces some queries only: the scheduler
// builds no Event of a query for which Traces reports false. Traces is
// called on IO workers, for every GET: it must be quicker still.
type QueryTracer interface {
	Tracer
	Traces(query uint64) bool
}

// TracerFunc adapts a function to Tracer.
type TracerFunc func(Event)

// TraceRequest calls f(e).
func (f TracerFunc) TraceRequest(e Event) { f(e) }
