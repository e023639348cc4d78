package scanner

// Whether reading only some columns of a chunk pays.
//
// A projected read of an IPC file costs round trips a whole read does not:
// the file's tail (footer), then the batches' metadata, then the columns'
// ranges, against one GET. It saves the bytes of the other columns. Both
// are priced with what the scheduler has measured of the store as the scan
// runs (iosched.Model): the bytes saved at one GET's bandwidth against the
// extra round trips at the store's round trip (Model.Floor). A chunk below
// that break-even, such as a small chunk behind a high-latency store, is
// read whole in one GET.
//
// Not at the time to headers under the scan's load (Model.Latency): where
// that is queueing at a store short of CPU, reading whole chunks to save
// round trips only queues more bytes, no faster and with more memory (see
// BENCHMARKS.md, "Figures behind the code").

import (
	"time"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/cache"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/scanner/arrowipc"
)

// extraRoundTrips is what a projected read adds to a whole one.
const extraRoundTrips = 2

// minRequestCost is the least a request costs, however fast the store
// answers: its trip through the scheduler's queue to an IO worker and
// back, and for a local file an open, a stat and a close (or a mapping).
// A store's measured round trip (Model.Floor) is the time to its answer
// only; on local disk that is less than these fixed costs, and the model
// would split a small file into three requests to save the copy of a few
// KiB.
const minRequestCost = 100 * time.Microsecond

// projectionSavesTime reports whether reading need bytes of a chunk of size
// bytes in extraRoundTrips more round trips beats reading all of it, by m.
func projectionSavesTime(m iosched.Model, size, need int64) bool {
	saved := size - need
	if saved <= 0 || m.Bandwidth <= 0 {
		return false
	}
	return float64(saved)/m.Bandwidth > extraRoundTrips*max(m.Floor, minRequestCost).Seconds()
}

// projectedBytes estimates the bytes a projected read of a chunk of size
// bytes fetches: the fields' share of the body and the tail.
func (s *Scan) projectedBytes(size int64) int64 {
	need := s.plan.fieldBytes(s.fields)
	return int64(float64(size)*float64(need)/float64(s.plan.bodyLen)) + s.tailWant()
}

// tailWant is how much of a file's end a projected read asks for first:
// the first chunk's footer with room to spare (learned at Start, or from
// the first projected chunk when the first chunk was no IPC file); until
// then arrowipc.TailGuess.
func (s *Scan) tailWant() int64 {
	if s.ipcPlan.Tail > 0 {
		return s.ipcPlan.Tail
	}
	if f := s.footerLen.Load(); f > 0 {
		return f + f/4 + 1<<10 + arrowipc.TrailerLen
	}
	return arrowipc.TailGuess
}

// planProjection decides whether the scan may read only fields' buffers
// (shouldProject) and, if so, takes from bind's reading of the first chunk
// where its footer and its columns sit: a projected read of a similar
// chunk then takes two sequential round trips, the tail and then the
// metadata with the predicted column ranges in one wave.
//
// It is false as well when even the scan's largest chunk would be read
// whole by the cost model as the store's domain knows it now (bind read
// the first chunk through it), so that the budget reserves whole chunks
// for a scan of small ones.
func (s *Scan) planProjection(fields []int) bool {
	if !s.plan.shouldProject(fields) {
		return false
	}
	s.ipcPlan = s.plan.readPlan
	largest := int64(-1)
	for i := range s.plan.Chunks.Len() {
		largest = max(largest, s.plan.Chunks.WireLength(i))
	}
	if largest < 0 {
		return false // no length known: every chunk is read whole
	}
	h, err := openObject(s.plan.home, &s.plan.cfg)
	if err != nil {
		return false
	}
	defer h.Release()
	s.cacheProjects = s.cache != nil
	if s.modelSaysProject(h.Scheduler.Model(), largest) {
		return true
	}
	// A cache that holds the first chunk bind did not read projected
	// (its tail, not the chunk whole) was filled by a scan that projected:
	// the budget reserves for projected reads. Each chunk reads as the
	// cache holds it, whatever this says (chunkProjects).
	for i := 0; s.cache != nil && i < s.plan.Chunks.Len(); i++ {
		c := s.plan.Chunks.At(i)
		if size := c.WireLength(); size >= 0 && !s.atBind(&c) {
			whole, known := s.cachedLayout(&c, size)
			return known && !whole
		}
	}
	return false
}

// modelSaysProject is the cost model m's verdict on a projected read of a
// chunk of size bytes (projectionSavesTime), or the one the tests set.
func (s *Scan) modelSaysProject(m iosched.Model, size int64) bool {
	if v := s.plan.cfg.projectModel; v != 0 {
		return v > 0
	}
	return projectionSavesTime(m, size, s.projectedBytes(size))
}

// chunkProjects decides for chunk c whether the scan reads only its
// fields' buffers: the scan can project (shouldProject), the chunk's
// length is known, bind did not read it whole already, and either the
// cache holds it so or (the cache does not hold it) the scan projects and
// the cost model says it pays.
func (s *Scan) chunkProjects(c *Chunk) bool {
	if !s.projected && !s.cacheProjects {
		return false
	}
	size := c.WireLength()
	if size < 0 || s.atBind(c) {
		return false
	}
	if whole, known := s.cachedLayout(c, size); known {
		return !whole
	}
	return s.projected && s.modelSaysProject(s.sched.Model(), size)
}

// cachedLayout tells, when the scan uses a cache, whether it holds chunk
// c (of size bytes) whole, or else the tail a projected read of it asks
// first (known: either). The cost model weighs the store's latency, which
// changes from scan to scan, and a process that has not yet heard the
// store (a new CLI over the same cache_dir) has no model at all: a scan
// that chose the other way than the one that filled the cache would fetch
// the chunk again. The version is the one the chunk's read looks its
// ranges up by (lookupVersion, waited for as the read would).
func (s *Scan) cachedLayout(c *Chunk, size int64) (whole, known bool) {
	cu := s.cache
	if cu == nil {
		return false, false
	}
	h, err := openObject(c.URL, &s.plan.cfg)
	if err != nil {
		return false, false // the chunk's read reports it
	}
	defer h.Release()
	if _, ok := h.Store.(store.Versioner); !ok {
		return false, false // not cached (viaCache)
	}
	object := s.plan.objectKey(h.Store, h.Name)
	// Checked once a scan (ahead, or here): the chunk's read waits for
	// the same answer.
	version := cu.lookupVersion(c, object, h.Scheduler, h.Store, h.Name, iosched.Priority{Query: s.id, Seq: int64(c.Row)})
	if version == "" {
		return false, false
	}
	if cu.c.Holds(cache.Key{Object: object, Version: version, Offset: c.Offset, Length: size}) {
		return true, true
	}
	tail := arrowipc.TailLen(size, s.tailWant())
	if cu.c.Holds(cache.Key{Object: object, Version: version, Offset: c.Offset + size - tail, Length: tail}) {
		return false, true
	}
	return false, false
}

// share is the scan's max_parallel_io: its own share (SetQueryLimit) when
// it set one, else the domain's parallelism in io; at most limit (the
// domain's workers, or its throttling limit).
func (s *Scan) share(io iosched.Stats, limit int) int {
	n := s.plan.cfg.MaxParallelIO
	if n <= 0 {
		n = io.Parallelism
	}
	return min(n, limit)
}

// atBind reports whether bind read (or is reading) chunk c whole: the first
// chunk whose bytes it kept, or one of its prefetches. Reading it whole
// then costs no more IO at all.
func (s *Scan) atBind(c *Chunk) bool {
	s.plan.firstMu.Lock()
	defer s.plan.firstMu.Unlock()
	return (c.Row == 0 && s.plan.first != nil) || s.plan.prefetched[c.Row] != nil
}
