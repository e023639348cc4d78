package scanner

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/scanner/arrowipc"
)

// maxDecodedRatio bounds the decoded/wire ratio the budget learns: a
// chunk compressed further than that still decodes inside the budget, its
// growth waiting for room (budget.Lease.Extend), but reservations stop
// following it.
const maxDecodedRatio = 64

// maxChunksInFlight bounds the chunks fetched or decoded at once, whatever
// the budget allows: a goroutine each.
const maxChunksInFlight = 4096

// Scan is a running scan. Next, Close and Stats are safe for concurrent use.
type Scan struct {
	id     uint64
	plan   *Plan
	ctx    context.Context
	cancel context.CancelCauseFunc
	start  time.Time
	budget *budget.Budget
	alloc  budget.Allocator // the budget's pool, then cfg.Allocator: every chunk's (countingAllocator)
	limit  int64            // the budget's ceiling (memory_budget, its default, the process limit); its cap starts at the starting cap
	growth capProbe
	fields []int // plan fields to produce, in plan order
	// mappable: the plan's columns may be read from a file's mapping
	// (mmap.go).
	mappable bool
	// projected: fetch only fields' buffers of IPC files. cacheProjects:
	// the scan could, and uses a cache: a chunk the cache holds in
	// projected ranges is read so even when projected is false (a cache
	// filled by a scan whose cost model chose chunk by chunk holds both
	// layouts).
	projected, cacheProjects bool
	// counted: the scan reads no chunk; Next hands out each chunk's
	// catalog row count (nextCounted); countedNext is the chunk it hands
	// out next.
	counted     bool
	countedNext atomic.Int64
	absent      []int // a counted batch's cols: no field read
	// wholeCols, when the scan needs fewer than all fields (and not by
	// name), is the field → column map of a chunk read whole whose
	// fields alone are decoded (loadWhole).
	wholeCols []int
	estimate  int64 // wire bytes of a chunk whose size is unknown
	// probe, if not nil, is closed once the first chunk is decoded (or
	// failed): until then no other chunk is reserved, as nothing is known
	// of how far the chunks decompress. There is none when the catalog
	// gives the first chunk's decoded size or bind saw that its batches
	// are not compressed (Plan.firstPlain): the reservations' guess, a
	// ratio of one, is then the first chunk's own, and waiting for it
	// would only leave the other chunks unread while it is fetched and
	// decoded. As with the probe, later chunks are assumed to be like
	// the first until they are measured.
	probe     chan struct{}
	probeOnce sync.Once
	ready     *readyQueue
	wg        sync.WaitGroup
	unmaps    sync.WaitGroup // Batch.Close's unmapping of chunks closed so far
	slots     chan struct{}
	// work hands a planned chunk to an idle chunk goroutine (runChunks);
	// chunkGoroutines counts the goroutines started for chunks.
	work            chan chunkWork
	chunkGoroutines atomic.Int64
	// fetching counts the chunks whose request planChunks submitted
	// (fetchEarly) and that are not handed to a chunk goroutine yet:
	// planChunks closes work only after the last.
	fetching sync.WaitGroup
	// ahead bounds the chunks reserved that no consumer has reached yet
	// (a slot each, given back when Next hands out the chunk's first
	// batch): the scan's max_parallel_io share. A consumer that stops
	// early (a LIMIT) then leaves at most that many chunks read for
	// nothing, whatever the budget would allow.
	ahead    chan struct{}
	hold     *iosched.Hold      // keeps the first chunk's domain open until Close
	sched    *iosched.Scheduler // the first chunk's domain, for utilization
	ioStart  iosched.Stats
	trace    *traceWriter
	progress *progress
	// cache is the scan's use of the local cache (nil: none), and
	// endCache ends it (cache.go).
	cache    *cacheUse
	endCache func()

	closeOnce sync.Once
	end       time.Time
	ioEnd     iosched.Stats
	closed    atomic.Bool

	chunks, batches, rows, wire                                         atomic.Int64
	requests, gets, retries, hedgesIssued, hedgesWon, splits, coalesced atomic.Int64
	// IO path (projection.go): round trips, projected chunks and the bytes
	// their projection saved, throttled answers, the lowest limit seen,
	// and the footer length the first projected chunk had.
	roundTrips, projectedChunks, projectionSaved, throttled, limitMin, footerLen atomic.Int64
	ipcPlan                                                                      arrowipc.ReadPlan // learned from the first chunk at Start; read-only after
}

// Start begins scanning. fields are the plan's field indexes the caller
// needs (nil: all); batches hold at least those columns (see Batch.Column).
// The scan runs until it is done, ctx is cancelled, or Close is called.
func (p *Plan) Start(ctx context.Context, fields []int) (*Scan, error) {
	if fields == nil {
		fields = make([]int, len(p.Schema.Fields()))
		for i := range fields {
			fields[i] = i
		}
	}
	s := &Scan{id: p.scanID(), plan: p, start: time.Now(), fields: fields,
		slots: make(chan struct{}, maxChunksInFlight), work: make(chan chunkWork)}
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	s.cache, s.endCache = p.useCache(s.ctx, s.id)
	s.estimate = p.firstLen
	s.mappable = p.cfg.MapLocal && mappable(p.Schema)
	s.counted = len(fields) == 0 && rowsKnown(p.Chunks)
	if s.counted {
		s.absent = make([]int, len(p.Schema.Fields()))
		for i := range s.absent {
			s.absent[i] = -1
		}
	}
	s.projected = !s.counted && s.planProjection(fields)
	if n := len(p.Schema.Fields()); !s.counted && !p.cfg.UnionByName && len(fields) < n {
		s.wholeCols = columnMap(n, fields)
	}

	var total, largest int64
	for i := range p.Chunks.Len() {
		n := s.wireLengthEstimate(p.Chunks.WireLength(i), s.projected)
		total += n
		largest = max(largest, n)
	}
	capacity := p.cfg.MemoryBudget
	if capacity <= 0 {
		// The default is never below two chunks (one consumed, the next
		// fetched), the starting cap's floor: a scan of a few large chunks would
		// otherwise fetch and consume them one after the other (see
		// BENCHMARKS.md, "Figures behind the code").
		capacity = max(budget.Size(total, p.cfg.BudgetFraction, 0, 0), min(2*largest, budget.DefaultMax))
	}
	if p.cfg.Process.Memory != nil {
		capacity = min(capacity, p.cfg.Process.Memory.Stats().Cap)
	}
	s.limit = capacity
	// A reservation is the chunk's length and nothing more until the budget
	// has measured a decoded/wire ratio: an uncompressed chunk (the common
	// case) decodes into the bytes it was fetched in. The first chunk's
	// measured ratio then replaces that guess (compressed IPC decodes to
	// many times its length), and ratios up to maxDecodedRatio are learned.
	opts := []budget.Option{budget.WithMultiplier(1), budget.WithFirstRatio(),
		budget.WithMultiplierBounds(budget.DefaultMinMultiplier, maxDecodedRatio)}
	if p.cfg.Process.Memory != nil {
		opts = append(opts, budget.WithParent(p.cfg.Process.Memory))
	}
	s.budget = budget.New(capacity, opts...)
	s.alloc = s.budget.Allocator(p.cfg.Allocator)
	queued := p.Chunks.Len()
	if s.counted {
		queued = 0 // Next hands the counts out itself
	}
	s.ready = newReadyQueue(queued, p.cfg.Ordered)
	if p.cfg.readyWakeAfter > 0 {
		s.ready.wakeAfter = p.cfg.readyWakeAfter
	}
	s.progress = newProgress(p.Chunks)
	if !s.counted && p.Chunks.Len() > 1 && p.Chunks.At(0).DecodedBytes < 0 && !p.firstPlain {
		s.probe = make(chan struct{})
	}
	context.AfterFunc(s.ctx, s.ready.wake)

	hold, err := openObject(p.home, &p.cfg)
	if err != nil {
		s.cancel(err)
		s.endCache()
		return nil, err
	}
	sched := hold.Scheduler
	if p.cfg.MaxParallelIO > 0 {
		// The query's own share of the domain's workers, until Close
		// removes it; other queries keep theirs.
		sched.SetQueryLimit(s.id, p.cfg.MaxParallelIO)
	}
	s.hold, s.sched, s.ioStart = hold, sched, sched.Stats()
	s.growth.step = max(largest, 1<<20)
	// Requests in flight hide round trips; where the store's round trip
	// (Model.Floor: bind's GETs are in it) is under minLatencyToHide there
	// are none to hide, and the starting cap is the chunks' alone (see
	// BENCHMARKS.md, "Figures behind the code").
	parallel := s.share(s.ioStart, s.ioStart.Workers)
	if m := sched.Model(); m.Samples > 0 && m.Floor < minLatencyToHide {
		parallel = 0
	}
	s.budget.SetCap(min(capacity, startingCap(largest, parallel, p.cfg.RequestSize, p.cfg.startingCapFloor)))
	s.ahead = make(chan struct{}, max(1, s.share(s.ioStart, s.ioStart.Workers)))
	// Half the lookahead queued is worth a wake: the other half can be in
	// flight while the consumer wakes, and no more can be queued (wakeRows).
	s.ready.setWakeBatches(max(1, cap(s.ahead)/2))
	if p.cfg.Trace != "" {
		s.trace = newTraceWriter(p.cfg.Trace, s.id, s.start)
		p.cfg.Process.traces.add(s.id, s.trace)
	}
	p.cfg.Process.scans.register(s)
	if !s.counted {
		s.checkVersionsAhead()
		s.wg.Add(1)
		go s.planChunks()
	}
	return s, nil
}

// rowsKnown reports whether the catalog gives every chunk's num_rows.
func rowsKnown(chunks *Chunks) bool {
	for i := range chunks.Len() {
		if chunks.NumRows(i) < 0 {
			return false
		}
	}
	return true
}

// noColumns is the schema of a counted scan's batches.
var noColumns = arrow.NewSchema(nil, nil)

// nextCounted is Next of a scan that needs no column of the chunks
// (count(*), or segment_id and chunk_id alone) over a catalog that gives
// every chunk's num_rows: the chunks are not read, the catalog's counts
// are the rows (batches of no column). The catalog vouches for num_rows
// as it does for length; a chunk that holds another count is not
// noticed, as nothing of it is read.
func (s *Scan) nextCounted() (*Batch, error) {
	for {
		if err := s.ready.stopped(); err != nil {
			return nil, err
		}
		i := int(s.countedNext.Add(1)) - 1
		if i >= s.plan.Chunks.Len() {
			b, err, _ := s.ready.poll() // nothing queued: the end, or the error
			return b, err
		}
		chunk := s.plan.Chunks.At(i)
		c := &chunk
		s.chunks.Add(1)
		if c.NumRows == 0 {
			continue
		}
		s.batches.Add(1)
		s.rows.Add(c.NumRows)
		return &Batch{Chunk: c, Record: array.NewRecordBatch(noColumns, nil, c.NumRows), cols: s.absent, scan: s}, nil
	}
}

// shouldProject reports whether reading only fields' buffers can save
// anything: the fields are fewer bytes than the whole body. Whether it pays
// for a chunk is the cost model's call (projectionSavesTime): the bytes
// saved against two more round trips. A fixed share of the body as the
// threshold was wrong both ways: a projection of most of a chunk's bytes
// read the rest too (see BENCHMARKS.md, "Figures behind the code").
func (p *Plan) shouldProject(fields []int) bool {
	if p.colBytes == nil || p.cfg.UnionByName || p.bodyLen <= 0 || len(fields) == len(p.colBytes) {
		return false
	}
	return p.fieldBytes(fields) < p.bodyLen
}

// fieldBytes is the bytes of fields' buffers in the first chunk's body.
func (p *Plan) fieldBytes(fields []int) int64 {
	var n int64
	for _, f := range fields {
		n += p.colBytes[f]
	}
	return n
}

// wireEstimate is the bytes chunk c will take on the wire, read whole or,
// if project, only the scan's fields.
func (s *Scan) wireEstimate(c *Chunk, project bool) int64 {
	return s.wireLengthEstimate(c.WireLength(), project)
}

// wireLengthEstimate is wireEstimate of a chunk of wire length n (-1:
// unknown).
func (s *Scan) wireLengthEstimate(n int64, project bool) int64 {
	if n < 0 {
		n = s.estimate
	}
	if project && s.plan.bodyLen > 0 {
		need := s.plan.fieldBytes(s.fields)
		// Never more than the whole chunk: a small file is read whole.
		n = min(n, int64(float64(n)*float64(need)/float64(s.plan.bodyLen))+arrowipc.TailGuess)
	}
	return max(n, 1)
}

// MaxThreads is how many threads can usefully call Next at once.
func (s *Scan) MaxThreads() int {
	if s.plan.cfg.Ordered {
		return 1
	}
	return s.plan.Chunks.Len()
}

// ID identifies the scan in Scans and in traces.
func (s *Scan) ID() uint64 { return s.id }

// fail ends the scan with err (the first error wins) and cancels the rest.
func (s *Scan) fail(err error) {
	s.ready.fail(err)
	s.cancel(err)
}

// guard turns a panic of a pipeline goroutine into the scan's error: a
// panic that escapes a goroutine would abort the host process.
func (s *Scan) guard() {
	if r := recover(); r != nil {
		s.fail(fmt.Errorf("remote_segments: internal error (panic): %v\n%s", r, debug.Stack()))
	}
}

// planChunks reserves budget for each chunk in catalog order and starts it.
// Reservations are granted first come, first served, so the chunk a
// consumer needs next always holds one: the budget cannot wedge.
func (s *Scan) planChunks() {
	defer s.wg.Done()
	defer s.guard()
	defer close(s.work) // the idle chunk goroutines end
	defer s.fetching.Wait()
	// Chunks reserved whose requests wait to go in one batch: submitted
	// before planChunks waits for anything, so that it never waits for a
	// consumer that waits for them.
	g := &fetchGroup{}
	defer s.submitGroup(g) // on cancellation, its chunks end as cancelled
	for i := range s.plan.Chunks.Len() {
		// A slot or a reservation free at once is taken even once the
		// scan is cancelled (acquire, TryReserve): no chunk is planned
		// after that.
		if s.ctx.Err() != nil || !s.acquire(s.ahead, g) || !s.acquire(s.slots, g) {
			return
		}
		chunk := s.plan.Chunks.At(i)
		c := &chunk
		// Decided before the reservation, so that it is for the bytes
		// the chunk will be read in: a chunk the cost model reads whole
		// under a reservation for its fields would take several times
		// its share of the budget.
		project := s.chunkProjects(c)
		lease, err := s.reserve(c, project, g)
		if err != nil {
			<-s.slots
			return // cancelled: Close or an earlier failure
		}
		s.ready.start()
		j := chunkJob{i: i, c: c, lease: lease, project: project}
		if !s.fetchEarly(j, g) {
			s.submitGroup(g) // chunks start in catalog order
			s.startChunk(chunkWork{j})
		}
		if i == 0 && s.probe != nil {
			select {
			case <-s.probe:
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// acquire takes a slot of sem (s.ahead, s.slots), first submitting g if
// it must wait for one; false: the scan is cancelled.
func (s *Scan) acquire(sem chan struct{}, g *fetchGroup) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
	}
	s.submitGroup(g)
	select {
	case sem <- struct{}{}:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// reserve takes chunk c's reservation: its decoded size where the catalog
// gives it, else its wire bytes times the ratio the budget learned. It
// submits g first if it must wait for the budget.
func (s *Scan) reserve(c *Chunk, project bool, g *fetchGroup) (*budget.Lease, error) {
	wire := s.wireEstimate(c, project)
	if c.DecodedBytes < 0 {
		if l, ok := s.budget.TryReserve(wire); ok {
			return l, nil
		}
		s.submitGroup(g)
		return s.budget.Reserve(s.ctx, wire)
	}
	// The fetched bytes stay held beside the decoded ones; a projected
	// read decodes the fields' share.
	decoded := c.DecodedBytes
	if whole := s.wireEstimate(c, false); wire < whole {
		decoded = int64(float64(decoded) * float64(wire) / float64(whole))
	}
	size := min(wire+decoded, 1<<50)
	if l, ok := s.budget.TryReserveSize(wire, size); ok {
		return l, nil
	}
	s.submitGroup(g)
	return s.budget.ReserveSize(s.ctx, wire, size)
}

// probed ends the probe of the first chunk: the other chunks may be
// reserved.
func (s *Scan) probed() {
	if s.probe != nil {
		s.probeOnce.Do(func() { close(s.probe) })
	}
}

// chunkJob is a chunk planChunks reserved, for runChunk.
type chunkJob struct {
	i       int
	c       *Chunk
	lease   *budget.Lease
	project bool
	early   *earlyFetch // the chunk's request, if planChunks submitted it
}

// chunkWork is the chunks a chunk goroutine runs one after the other: one,
// or a group whose requests went in one batch.
type chunkWork []chunkJob

// earlyFetch is a chunk's one request that planChunks submitted
// (fetchEarly): the batch, complete when the chunk starts, the request's
// index in it, the hold on its domain, and the lease's buffer it was read
// into.
type earlyFetch struct {
	batch *iosched.Batch
	index int
	hold  *iosched.Hold
	into  []byte
}

// fetchGroup is chunks planChunks reserved whose requests go to one
// scheduler in one batch (submitGroup): a batch, a completion and a chunk
// goroutine's wake for up to limit chunks, not one each.
type fetchGroup struct {
	sched *iosched.Scheduler
	limit int // groupLimit of sched
	jobs  chunkWork
	reqs  []iosched.Request
}

// groupLimit is the most chunks whose requests go to sched in one batch:
// a quarter of the lookahead where the store's round trip is under
// minLatencyToHide, else one. Without a round trip to hide, a small
// chunk's time is its fixed costs, and a group pays some of them once (the
// batch with its context and channels, its completion, the hand-off to a
// chunk goroutine); where round trips are longer, a group would wait for
// its slowest request. Each domain by its own store: a catalog may name
// local files and remote objects.
func (s *Scan) groupLimit(sched *iosched.Scheduler) int {
	if s.plan.cfg.groupMax > 0 {
		return s.plan.cfg.groupMax
	}
	if m := sched.Model(); m.Samples > 0 && m.Floor < minLatencyToHide {
		return max(1, cap(s.ahead)/4)
	}
	return 1
}

// fetchEarly submits j's request, if the chunk is read whole in one
// request into its lease's buffer with nothing to ask first, and starts
// the chunk (startChunk) once the request is complete; it reports whether
// it did. So no chunk goroutine waits for the request: one is woken (or
// started) only when there is a chunk to decode. A chunk it leaves alone
// is the first (bind may hold its bytes), one bind prefetched, one the
// cache may hold, one that may be mapped, and one of unknown length. The
// lease is extended to the pooled buffer's size first, as loadWhole
// would (a younger lease waits for that room as for a reservation).
func (s *Scan) fetchEarly(j chunkJob, g *fetchGroup) bool {
	c := j.c
	n := c.WireLength()
	if j.i == 0 || c.Row == 0 || j.project || s.cache != nil || s.mappable || n <= 0 || c.Size == 0 || s.plan.prefetches(c) {
		return false
	}
	if more := int64(budget.PooledSize(int(n))) - j.lease.Held(); more > 0 && !j.lease.TryExtend(more) {
		s.submitGroup(g)
		if j.lease.Extend(s.ctx, more) != nil {
			return false // cancelled: the chunk goroutine reports it
		}
	}
	h, err := openObject(c.URL, &s.plan.cfg)
	if err != nil {
		return false // the chunk's own fetch reports it
	}
	if g.sched != h.Scheduler {
		s.submitGroup(g) // a batch goes to one scheduler
		g.sched, g.limit = h.Scheduler, s.groupLimit(h.Scheduler)
	}
	if g.jobs == nil {
		g.jobs, g.reqs = make(chunkWork, 0, g.limit), make([]iosched.Request, 0, g.limit)
	}
	j.early = &earlyFetch{index: len(g.reqs), hold: h, into: j.lease.Buffer(int(n))}
	g.jobs = append(g.jobs, j)
	g.reqs = append(g.reqs, iosched.Request{Store: h.Store, Name: h.Name, Offset: c.Offset, Length: n,
		Priority: iosched.Priority{Query: s.id, Seq: int64(c.Row)}, Buffer: j.early.into})
	if len(g.jobs) >= g.limit {
		s.submitGroup(g)
	}
	return true
}

// submitGroup submits g's requests in one batch, if it has any, and
// empties it. Once the batch is complete its chunks go to one chunk
// goroutine, in catalog order.
func (s *Scan) submitGroup(g *fetchGroup) {
	if len(g.jobs) == 0 {
		return
	}
	jobs := g.jobs
	s.fetching.Add(1)
	g.sched.SubmitFunc(s.ctx, g.reqs, func(b *iosched.Batch) {
		// On the IO worker (or a goroutine cancelling the batch): hand
		// the chunks on, no more.
		for k := range jobs {
			jobs[k].early.batch = b
		}
		s.startChunk(jobs)
		s.fetching.Done()
	})
	g.jobs, g.reqs = nil, nil // the batch keeps them
}

// result is the early request's bytes, or its error; it releases the
// hold. The batch's first chunk counts the batch's requests.
func (e *earlyFetch) result(s *Scan, c *Chunk) ([]byte, error) {
	defer e.hold.Release()
	data, err := e.batch.Result(e.index)
	if e.index == 0 {
		s.count(e.batch.Stats())
	} else {
		s.roundTrips.Add(1) // count's, for the batch's first
	}
	if err != nil {
		return nil, &ChunkError{Chunk: c, Err: err}
	}
	return data, nil
}

// startChunk hands w to an idle chunk goroutine, or starts one. A chunk
// goroutine runs chunks until planChunks ends: a goroutine a chunk would
// start each one on a small stack that the fetch and the decode grow
// again, and of many small chunks that is a good part of the work. A
// chunk never waits for a goroutine: one is started when none is idle, so
// the goroutines are at most the chunks in flight (slots), as before.
func (s *Scan) startChunk(w chunkWork) {
	select {
	case s.work <- w:
	default:
		s.wg.Add(1)
		s.chunkGoroutines.Add(1)
		go s.runChunks(w)
	}
}

// runChunks runs w, then the work handed to it, until planChunks ends.
// Of a group whose batch failed, the chunk whose request failed fails the
// scan first: the others' requests were cancelled by that failure.
func (s *Scan) runChunks(w chunkWork) {
	defer s.wg.Done()
	for ok := true; ok; w, ok = <-s.work {
		if len(w) > 1 {
			b := w[0].early.batch
			if k := b.Failed(); k >= 0 {
				_, err := b.Result(k)
				s.fail(&ChunkError{Chunk: w[k].c, Err: err})
			}
		}
		for _, j := range w {
			s.runChunk(j)
		}
	}
}

// runChunk fetches (or takes the early fetch of) and decodes chunk j.i
// (if j.project, only the scan's fields), commits its measured size and
// queues its batches; on any failure it refunds the lease and fails the
// scan.
func (s *Scan) runChunk(j chunkJob) {
	i, c, lease := j.i, j.c, j.lease
	defer func() { <-s.slots }()
	defer s.guard()
	if j.early != nil {
		defer j.early.hold.Release() // idempotent: result releases it too
	}
	if i == 0 {
		defer s.probed()
	}
	// A panic (guard reports it) must not keep the chunk's bytes from the
	// budget and its parent, the process limit, for good: until its
	// batches are queued the lease is this goroutine's to give back.
	var out []*Batch
	queued := false
	defer func() {
		if !queued {
			for _, b := range out {
				b.Close()
			}
			lease.Abandon()
		}
	}()
	// Buffers above budget.PoolMin, fetched or decoded, come from the
	// budget's pool: memory earlier chunks already faulted in.
	mem := &countingAllocator{Allocator: s.alloc, lease: lease,
		ctx: s.ctx, charged: lease.Held()}
	if s.mappable {
		mem.maps = &mapping{lease: lease}
	}
	batches, cols, retained, err := s.load(c, mem, j.project, j.early)
	if err != nil {
		// A failed fetch may still be writing into the lease's buffer
		// (the deferred Abandon).
		if s.ctx.Err() == nil {
			var ce *ChunkError
			if !errors.As(err, &ce) {
				err = &ChunkError{Chunk: c, Err: err}
			}
			s.fail(err)
		}
		return
	}
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	// The catalog's num_rows is what a count(*) answers without reading
	// the chunk (nextCounted): a chunk read that holds another count
	// would make two queries of one dataset disagree.
	if c.NumRows >= 0 && rows != c.NumRows {
		arrowipc.ReleaseAll(batches)
		if s.ctx.Err() == nil {
			s.fail(&ChunkError{Chunk: c, Err: fmt.Errorf("%w: it holds %d rows, and the catalog's num_rows says %d (a count(*) answers from the catalog)", ErrBadChunk, rows, c.NumRows)})
		}
		return
	}
	actual := mem.commit(retained)
	s.trace.budget(s.budget)
	s.chunks.Add(1)
	out = make([]*Batch, 0, len(batches))
	cl := &chunkLease{lease: lease, open: len(batches), ahead: s.ahead}
	// Bytes the batches reference zero-copy in the fetched buffer are freed
	// only when the last batch of the chunk goes: they stay held until then
	// (the chunk lease's Close). The decoded, separately allocated bytes of
	// a batch are freed when it closes, and go back then, not as its rows
	// are consumed: until the batch closes its arrays are live.
	decoded := actual - retained
	left := decoded
	for k, b := range batches {
		share := left
		if rows > 0 && k < len(batches)-1 {
			share = int64(float64(decoded) * float64(b.NumRows()) / float64(rows))
		}
		left -= share
		out = append(out, &Batch{Chunk: c, Record: b, cols: cols, share: share, cl: cl, scan: s, mapped: mem.maps.mapped()})
		s.batches.Add(1)
		s.rows.Add(b.NumRows())
	}
	if s.plan.cfg.DebugPanic == "chunk" {
		panic("remote_segments: debug_panic at chunk")
	}
	queued = true
	if len(batches) == 0 {
		lease.Close()
		cl.handedOut() // nothing for a consumer to reach
	}
	s.ready.put(i, out)
}

// Next returns the next batch, or nil at the end of the scan. The caller
// owns the batch: it calls Consumed as it copies rows out and Close when
// done. After an error every call returns that error. Next blocks while the
// pipeline has nothing ready.
func (s *Scan) Next() (*Batch, error) {
	if s.plan.cfg.DebugPanic == "next" {
		panic("remote_segments: debug_panic at next")
	}
	if s.counted {
		b, err := s.nextCounted()
		s.progress.handedOut(b, err)
		return b, err
	}
	b, err, ok := s.ready.poll()
	if !ok {
		s.starved()
		b, err = s.ready.pop(s.ctx)
	}
	if b != nil {
		b.cl.handedOut()
	}
	s.progress.handedOut(b, err)
	return b, err
}

// Close cancels the scan, waits for its goroutines, and frees every batch
// not handed out; their bytes go back to the budget. Batches a caller holds
// stay valid until closed. Close is idempotent.
func (s *Scan) Close() {
	s.closeOnce.Do(func() {
		s.cancel(context.Canceled)
		s.ready.close()
		s.wg.Wait()
		s.ready.close() // batches queued while the goroutines wound down
		s.unmaps.Wait()
		s.end = time.Now()
		s.ioEnd = s.sched.Stats()
		s.sched.SetQueryLimit(s.id, 0)
		s.hold.Release()
		// The registry keeps finished scans: they must not pin memory. The
		// first chunk's bytes (if this scan did not use them) are fetched
		// again by a later Start; the pool's free buffers go to the collector.
		s.plan.firstMu.Lock()
		s.plan.first = nil
		s.plan.firstMu.Unlock()
		s.plan.dropPrefetch(nil)
		s.endCache()
		s.budget.ClosePool()
		s.closed.Store(true)
		if s.trace != nil {
			s.plan.cfg.Process.traces.remove(s.id)
			s.trace.budget(s.budget)
			s.trace.write()
		}
		s.plan.cfg.Process.scans.finish(s)
	})
}

// Stats returns a snapshot of the scan's counters.
func (s *Scan) Stats() Stats {
	end, io := time.Now(), s.sched.Stats()
	if s.closed.Load() {
		end, io = s.end, s.ioEnd
	}
	st := Stats{
		Chunks: s.chunks.Load(), Batches: s.batches.Load(), Rows: s.rows.Load(), WireBytes: s.wire.Load(),
		Wall:     end.Sub(s.start),
		Requests: s.requests.Load(), GETs: s.gets.Load(), Retries: s.retries.Load(),
		HedgesIssued: s.hedgesIssued.Load(), HedgesWon: s.hedgesWon.Load(),
		Splits: s.splits.Load(), Coalesced: s.coalesced.Load(),
		IOUtilization: io.Utilization(s.ioStart), Parallelism: s.share(io, io.Workers),
		ProjectedIO: s.projected,
		Budget:      s.budget.Stats(),
		RoundTrips:  s.roundTrips.Load(), ProjectedChunks: s.projectedChunks.Load(),
		ProjectionSaved: s.projectionSaved.Load(), Throttled: s.throttled.Load(),
		LimitMin: int(s.limitMin.Load()), LimitFinal: io.Limit,
		BudgetLimit: s.limit, CapRaises: s.growth.raises.Load(),
		Pool:           s.budget.PoolStats(),
		Pruned:         s.plan.pruned,
		SchemaRequests: s.plan.schemaRequests, SchemaBytes: s.plan.schemaBytes,
		Progress: s.progress.fraction(),
	}
	if s.cache != nil {
		st.CacheHits, st.CacheBytes = s.cache.hits.n.Load(), s.cache.hits.bytes.Load()
	}
	return st
}

// state says how the scan stands: running, done, cancelled or error.
func (s *Scan) state() (string, error) {
	err := s.ready.error()
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		return "error", err
	case !s.closed.Load():
		return "running", nil
	case s.ready.finished():
		return "done", nil
	}
	return "cancelled", nil
}
