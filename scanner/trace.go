package scanner

import (
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
)

// maxTraceEvents bounds a trace's memory; later events are dropped (and
// counted in the trace's metadata).
const maxTraceEvents = 1 << 20

// traceRouter is the Tracer of every scheduler of a Process: it hands each
// GET to the trace of the scan (query) that asked for it, if that scan
// traces.
type traceRouter struct {
	mu    sync.RWMutex
	scans map[uint64]*traceWriter
	// n is len(scans): while no scan traces, Traces answers without the
	// lock, and the scheduler builds no Event.
	n atomic.Int64
}

var _ iosched.QueryTracer = (*traceRouter)(nil)

func newTraceRouter() *traceRouter { return &traceRouter{scans: map[uint64]*traceWriter{}} }

// Traces reports whether the scan query traces.
func (r *traceRouter) Traces(query uint64) bool {
	if r.n.Load() == 0 {
		return false
	}
	r.mu.RLock()
	_, ok := r.scans[query]
	r.mu.RUnlock()
	return ok
}

func (r *traceRouter) TraceRequest(e iosched.Event) {
	r.mu.RLock()
	w := r.scans[e.Query]
	r.mu.RUnlock()
	w.request(e)
}

func (r *traceRouter) add(id uint64, w *traceWriter) {
	r.mu.Lock()
	r.scans[id] = w
	r.n.Store(int64(len(r.scans)))
	r.mu.Unlock()
}

func (r *traceRouter) remove(id uint64) {
	r.mu.Lock()
	delete(r.scans, id)
	r.n.Store(int64(len(r.scans)))
	r.mu.Unlock()
}

// traceWriter collects one scan's Chrome-trace events: a complete event per
// GET on its IO worker's track, and the budget as counters over time.
type traceWriter struct {
	path    string
	id      uint64
	start   time.Time
	mu      sync.Mutex
	events  []traceEvent
	dropped int
	last    time.Time
}

// traceEvent is one event of the Chrome trace event format.
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"` // microseconds
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

func newTraceWriter(path string, id uint64, start time.Time) *traceWriter {
	return &traceWriter{path: path, id: id, start: start}
}

func (w *traceWriter) add(e traceEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.events) >= maxTraceEvents {
		w.dropped++
		return
	}
	w.events = append(w.events, e)
}

func (w *traceWriter) request(e iosched.Event) {
	if w == nil {
		return
	}
	args := map[string]any{"url": e.URL, "offset": e.Offset, "length": e.Length, "bytes": e.Bytes}
	if e.Err != nil {
		args["error"] = e.Err.Error()
	}
	w.add(traceEvent{Name: e.Name, Cat: "io", Ph: "X", Ts: w.micros(e.Start), Dur: float64(e.Dur.Microseconds()),
		Pid: 1, Tid: e.Worker + 1, Args: args})
}

// budget samples b, at most once per 100µs. It is called per consumed
// vector: without a trace it must cost nothing, so it takes the budget, not
// its Stats.
func (w *traceWriter) budget(b *budget.Budget) {
	if w == nil {
		return
	}
	now := time.Now()
	w.mu.Lock()
	if now.Sub(w.last) < 100*time.Microsecond {
		w.mu.Unlock()
		return
	}
	w.last = now
	w.mu.Unlock()
	st := b.Stats()
	w.add(traceEvent{Name: "budget", Ph: "C", Ts: w.micros(now), Pid: 1,
		Args: map[string]any{"in_use": st.InUse, "cap": st.Cap}})
}

func (w *traceWriter) micros(t time.Time) float64 { return float64(t.Sub(w.start).Nanoseconds()) / 1e3 }

// write stores the trace as JSON; errors are dropped (a trace is a debugging
// aid and must not fail the query that asked for it).
func (w *traceWriter) write() {
	w.mu.Lock()
	defer w.mu.Unlock()
	meta := []traceEvent{
		{Name: "process_name", Ph: "M", Pid: 1, Args: map[string]any{"name": "remote_segments scan"}},
	}
	doc := map[string]any{
		"traceEvents":     append(meta, w.events...),
		"displayTimeUnit": "ms",
		"otherData":       map[string]any{"scan_id": w.id, "dropped_events": w.dropped},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return
	}
	tmp := w.path + ".tmp"
	if os.WriteFile(tmp, data, 0o644) == nil {
		_ = os.Rename(tmp, w.path)
	}
}
