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
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
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
	limit  int64 // the budget's ceiling (memory_budget, its default, the process limit); its cap starts at the knee
	knee   kneeProbe
	fields []int // plan fields to produce, in plan order
	// mappable: the plan's columns may be read from a file's mapping
	// (mmap.go).
	mappable bool
	// projected: fetch only fields' buffers of IPC files.
	projected bool
	estimate  int64 // wire bytes of a chunk whose size is unknown
	// probe, if not nil, is closed once the first chunk is decoded (or
	// failed): until then no other chunk is reserved, as nothing is known
	// of how far the chunks decompress.
	probe     chan struct{}
	probeOnce sync.Once
	ready     *readyQueue
	wg        sync.WaitGroup
	unmaps    sync.WaitGroup // Batch.Close's unmapping of chunks closed so far
	slots     chan struct{}
	hold      *iosched.Hold      // keeps the first chunk's domain open until Close
	sched     *iosched.Scheduler // the first chunk's domain, for utilization
	ioStart   iosched.Stats
	trace     *traceWriter

	closeOnce sync.Once
	end       time.Time
	ioEnd     iosched.Stats
	closed    atomic.Bool

	chunks, batches, rows, wire                                         atomic.Int64
	requests, gets, retries, hedgesIssued, hedgesWon, splits, coalesced atomic.Int64
	// IO path (iocost.go): round trips, projected chunks and the bytes
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
		slots: make(chan struct{}, maxChunksInFlight)}
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	s.estimate = p.firstLen
	s.mappable = mappable(p.Schema)
	s.projected = s.planProjection(fields)

	var total, largest int64
	for i := range p.Chunks {
		n := s.wireEstimate(&p.Chunks[i], s.projected)
		total += n
		largest = max(largest, n)
	}
	capacity := p.cfg.MemoryBudget
	if capacity <= 0 {
		// The default is never below two chunks (one consumed, the next
		// fetched), the knee's floor: a scan of a few large chunks would
		// otherwise fetch and consume them one after the other (4 chunks of
		// 66 MiB: a fraction of 66 MiB, one at a time, 0.46-0.58x the raw
		// loop; 132 MiB, 0.57-0.66x).
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
	s.ready = newReadyQueue(len(p.Chunks), p.cfg.Ordered)
	if len(p.Chunks) > 1 && p.Chunks[0].DecodedBytes < 0 {
		s.probe = make(chan struct{})
	}
	context.AfterFunc(s.ctx, s.ready.wake)

	hold, err := openObject(p.home, &p.cfg)
	if err != nil {
		s.cancel(err)
		return nil, err
	}
	sched := hold.Scheduler
	if p.cfg.MaxParallelIO > 0 {
		// The query's own share of the domain's workers, until Close
		// removes it; other queries keep theirs.
		sched.SetQueryLimit(s.id, p.cfg.MaxParallelIO)
	}
	s.hold, s.sched, s.ioStart = hold, sched, sched.Stats()
	s.knee.step = max(largest, 1<<20)
	// Requests in flight hide round trips; where the store's round trip
	// (Model.Floor: bind's GETs are in it) is under kneeMinLatency there
	// are none to hide, and the knee is the chunks' alone (versitygw on
	// this machine, W4: 64 and 128 MiB equally fast, 127 against 194-216
	// MiB of RSS).
	parallel := s.share(s.ioStart, s.ioStart.Workers)
	if m := sched.Model(); m.Samples > 0 && m.Floor < kneeMinLatency {
		parallel = 0
	}
	s.budget.SetCap(min(capacity, knee(largest, parallel, p.cfg.RequestSize, p.cfg.kneeFloor)))
	if p.cfg.Trace != "" {
		s.trace = newTraceWriter(p.cfg.Trace, s.id, s.start)
		p.cfg.Process.traces.add(s.id, s.trace)
	}
	p.cfg.Process.scans.register(s)
	s.wg.Add(1)
	go s.planChunks()
	return s, nil
}

// shouldProject reports whether reading only fields' buffers can save
// anything: the fields are fewer bytes than the whole body. Whether it pays
// for a chunk is the cost model's call (projectionSavesTime): the bytes
// saved against two more round trips. A fixed share of the body (half,
// once) made a local scan of x, i and d, two thirds of the bytes, read the
// strings too: 1.10 GB instead of 0.83, 0.19-0.25 s against 0.18-0.23 s
// after (three alternating rounds).
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
	n := c.WireLength()
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
	return len(s.plan.Chunks)
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
	for i := range s.plan.Chunks {
		select {
		case s.slots <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		c := &s.plan.Chunks[i]
		// Decided before the reservation, so that it is for the bytes
		// the chunk will be read in: a chunk the cost model reads whole
		// under a reservation for its fields would take several times
		// its share (versitygw under a scan's own load, sum of one
		// column of four: budget_peak 1.5-2.5x the cap).
		project := s.chunkProjects(c)
		lease, err := s.reserve(c, project)
		if err != nil {
			<-s.slots
			return // cancelled: Close or an earlier failure
		}
		s.wg.Add(1)
		go s.runChunk(i, lease, project)
		if i == 0 && s.probe != nil {
			select {
			case <-s.probe:
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// reserve takes chunk c's reservation: its decoded size where the catalog
// gives it, else its wire bytes times the ratio the budget learned.
func (s *Scan) reserve(c *Chunk, project bool) (*budget.Lease, error) {
	wire := s.wireEstimate(c, project)
	if c.DecodedBytes < 0 {
		return s.budget.Reserve(s.ctx, wire)
	}
	// The fetched bytes stay held beside the decoded ones; a projected
	// read decodes the fields' share.
	decoded := c.DecodedBytes
	if whole := s.wireEstimate(c, false); wire < whole {
		decoded = int64(float64(decoded) * float64(wire) / float64(whole))
	}
	return s.budget.ReserveSize(s.ctx, wire, min(wire+decoded, 1<<50))
}

// probed ends the probe of the first chunk: the other chunks may be
// reserved.
func (s *Scan) probed() {
	if s.probe != nil {
		s.probeOnce.Do(func() { close(s.probe) })
	}
}

// runChunk fetches and decodes chunk i (if project, only the scan's
// fields), commits its measured size and queues its batches; on any
// failure it refunds the lease and fails the scan.
func (s *Scan) runChunk(i int, lease *budget.Lease, project bool) {
	defer s.wg.Done()
	defer func() { <-s.slots }()
	defer s.guard()
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
	c := &s.plan.Chunks[i]
	// Buffers above budget.PoolMin, fetched or decoded, come from the
	// budget's pool: memory earlier chunks already faulted in.
	mem := &countingAllocator{Allocator: s.budget.Allocator(s.plan.cfg.Allocator), lease: lease,
		ctx: s.ctx, charged: lease.Held()}
	if s.mappable {
		mem.maps = &mapping{lease: lease}
	}
	batches, cols, retained, err := s.load(c, mem, project)
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
	actual := mem.commit(retained)
	s.trace.budget(s.budget)
	s.chunks.Add(1)
	out = make([]*Batch, 0, len(batches))
	cl := &chunkLease{lease: lease, open: len(batches)}
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
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
	}
	s.ready.put(i, out)
}

// load reads chunk c, if project only the scan's fields, and decodes it
// with mem. It returns the batches, the field → column map for them (nil:
// the plan's schema), and the wire bytes the batches keep referencing
// (zero-copy decode).
func (s *Scan) load(c *Chunk, mem memory.Allocator, project bool) (_ []arrow.RecordBatch, _ []int, _ int64, err error) {
	defer func() {
		r := recover()
		if e, ok := r.(errDecodeCancelled); ok {
			err = e.err
		} else if r != nil {
			panic(r)
		}
	}()
	defer func() { err = resizedError(err, c) }()
	defer faultFails(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // the decode of a mapping
	if ca, ok := mem.(*countingAllocator); ok {
		defer func() { err = mappedError(err, ca.maps) }()
	}
	if project {
		return s.loadColumns(c, mem)
	}
	return s.loadWhole(c, mem)
}

// loadWhole reads chunk c in one request and decodes all of it.
func (s *Scan) loadWhole(c *Chunk, mem memory.Allocator) ([]arrow.RecordBatch, []int, int64, error) {
	var data []byte
	if c.Row == 0 {
		s.plan.firstMu.Lock()
		data, s.plan.first = s.plan.first, nil
		s.plan.firstMu.Unlock()
	}
	var lease *budget.Lease
	var maps *mapping
	ca, _ := mem.(*countingAllocator)
	if ca != nil {
		lease, maps = ca.lease, ca.maps
	}
	var into []byte
	covered := false // the fetched bytes are covered by the lease
	if data == nil {
		early := s.adoptEarly(c)
		n := c.WireLength()
		if n > 0 {
			ca.fetching(int64(budget.PooledSize(int(n))))
			covered = true
		}
		switch {
		case early == nil && maps != nil:
			// A mapping where the store maps (maps.request decides);
			// else the pool's buffer, the lease's until it closes.
			prepare := func(r *iosched.Request) {
				r.Alloc = func(k int) []byte { into = lease.Buffer(k); return into }
				maps.request(r)
			}
			var err error
			if data, err = s.plan.fetchWhole(c, s.id, prepare, s.submit); err != nil {
				return nil, nil, 0, err
			}
			if maps.mapped() {
				fr, err := arrowipc.Inspect(data)
				if err != nil {
					return nil, nil, 0, err
				}
				if fr.Compressed { // see mmap.go
					data = maps.copyOut(data, &into)
				}
			}
		case n > 0 && lease != nil:
			into = lease.Buffer(int(n)) // the lease's until it closes
		}
		switch {
		case data != nil:
		case early != nil && len(into) >= len(early):
			// Into the pool, like every fetched chunk: the budget's bytes
			// are the pool's, and the early buffer goes at once.
			data = into[:copy(into, early)]
		case early != nil:
			data = early
		default:
			var err error
			if data, err = s.plan.fetchWhole(c, s.id, func(r *iosched.Request) { r.Buffer = into }, s.submit); err != nil {
				return nil, nil, 0, err
			}
		}
	}
	s.wire.Add(int64(len(data)))
	// The batches, of a file or a stream, slice their buffers out of data.
	retained := int64(len(data))
	if len(data) > 0 && len(into) > 0 && &data[0] == &into[0] {
		retained = int64(cap(into)) // the pooled buffer, rounded up to its class
	}
	if !covered {
		ca.fetching(retained) // the first chunk's, or of a size not known before
	}
	schema, batches, err := arrowipc.Decode(data, mem)
	if err != nil {
		return nil, nil, 0, err
	}
	if s.plan.cfg.UnionByName {
		out, err := conform(schema, batches, s.plan.Schema, mem)
		return out, nil, retained, err
	}
	if err := s.checkSchema(schema, batches); err != nil {
		return nil, nil, 0, err
	}
	return batches, nil, retained, nil
}

// checkSchema fails (and frees batches) when a chunk's schema is not the
// plan's.
func (s *Scan) checkSchema(schema *arrow.Schema, batches []arrow.RecordBatch) error {
	if schema.Equal(s.plan.Schema) {
		return nil
	}
	arrowipc.ReleaseAll(batches)
	return fmt.Errorf("%w: schema %s differs from the first chunk's (%s): %s; use union_by_name := true to match columns by name",
		ErrBadChunk, schema, store.RedactURL(s.plan.home), s.plan.Schema)
}

// loadColumns reads only the scan's fields of an IPC file chunk.
func (s *Scan) loadColumns(c *Chunk, mem memory.Allocator) ([]arrow.RecordBatch, []int, int64, error) {
	h, err := openObject(c.URL, &s.plan.cfg)
	if err != nil {
		return nil, nil, 0, err
	}
	defer h.Release()
	sched, st, name := h.Scheduler, h.Store, h.Name
	size := c.WireLength()
	if size < 0 {
		// The tail of an object of unknown size needs a HEAD, which is not
		// a range request of the scheduler: read the chunk whole instead.
		return s.loadWhole(c, mem)
	}
	// The ranges' buffers come from the budget's pool, as a whole chunk's
	// does, and are the lease's until it closes (the batches reference
	// them): fresh ones each chunk made a scan of one column of four on
	// versitygw peak at 183 MiB of RSS and 39k page faults, against 129 MiB
	// and 22k for all four.
	var alloc func(int) []byte
	var maps *mapping
	ca, _ := mem.(*countingAllocator)
	if ca != nil && ca.lease != nil {
		alloc, maps = ca.lease.Buffer, ca.maps
	}
	fetch := func(rs []arrowipc.Range) ([][]byte, error) {
		var n int64
		for _, r := range rs {
			n += int64(budget.PooledSize(int(r.Length)))
		}
		ca.fetching(n)
		reqs := make([]iosched.Request, len(rs))
		for i, r := range rs {
			reqs[i] = iosched.Request{Store: st, Name: name, Offset: c.Offset + r.Offset, Length: r.Length,
				Priority: iosched.Priority{Query: s.id, Seq: int64(c.Row)}, Alloc: alloc}
			maps.request(&reqs[i])
		}
		return s.submit(sched, reqs)
	}
	plan := s.ipcPlan
	plan.Tail = s.tailWant()
	schema, batches, wire, footerLen, err := arrowipc.ReadColumns(size, plan, s.fields, fetch, mem)
	s.wire.Add(wire)
	if footerLen > 0 {
		s.footerLen.CompareAndSwap(0, footerLen)
	}
	if errors.Is(err, arrowipc.ErrDictionaries) || errors.Is(err, arrowipc.ErrNotFile) {
		return s.loadWhole(c, mem) // dictionaries, or a stream: read it whole
	}
	if err != nil {
		return nil, nil, 0, err
	}
	if err := s.checkSchema(schema, batches); err != nil {
		return nil, nil, 0, err
	}
	cols := make([]int, len(s.plan.Schema.Fields()))
	for i := range cols {
		cols[i] = -1
	}
	for j, f := range s.fields {
		cols[f] = j
	}
	s.projectedChunks.Add(1)
	s.projectionSaved.Add(max(0, size-wire))
	return batches, cols, wire, nil
}

// submit runs one vector of requests and adds its IO counters to the scan's.
func (s *Scan) submit(sched *iosched.Scheduler, reqs []iosched.Request) ([][]byte, error) {
	b := sched.Submit(s.ctx, reqs)
	data, err := b.Wait()
	s.count(b.Stats())
	return data, err
}

// count adds one vector of requests' IO counters to the scan's.
func (s *Scan) count(st iosched.BatchStats) {
	s.requests.Add(int64(st.Requests))
	s.gets.Add(st.Issued)
	s.retries.Add(st.Retries)
	s.hedgesIssued.Add(st.HedgesIssued)
	s.hedgesWon.Add(st.HedgesWon)
	s.splits.Add(st.Splits)
	s.coalesced.Add(st.Coalesced)
	s.roundTrips.Add(1)
	s.throttled.Add(st.Throttled)
	for cur := s.limitMin.Load(); (cur == 0 || int64(st.LimitMin) < cur) && st.LimitMin > 0; cur = s.limitMin.Load() {
		if s.limitMin.CompareAndSwap(cur, int64(st.LimitMin)) {
			break
		}
	}
}

// conform maps batches of schema onto the plan's schema by column name; a
// column the chunk lacks becomes NULLs. Types were checked at bind.
func conform(schema *arrow.Schema, batches []arrow.RecordBatch, plan *arrow.Schema, mem memory.Allocator) ([]arrow.RecordBatch, error) {
	out := make([]arrow.RecordBatch, 0, len(batches))
	for _, b := range batches {
		cols := make([]arrow.Array, len(plan.Fields()))
		for i, f := range plan.Fields() {
			if j := schema.FieldIndices(f.Name); len(j) > 0 {
				if !arrow.TypeEqual(schema.Field(j[0]).Type, f.Type) {
					for _, c := range cols[:i] { // this batch's columns built so far
						c.Release()
					}
					arrowipc.ReleaseAll(batches)
					arrowipc.ReleaseAll(out)
					return nil, fmt.Errorf("%w: column %q is %s, not %s as in the other chunks", ErrBadChunk, f.Name, schema.Field(j[0]).Type, f.Type)
				}
				cols[i] = b.Column(j[0])
				cols[i].Retain()
			} else {
				cols[i] = array.MakeArrayOfNull(mem, f.Type, int(b.NumRows()))
			}
		}
		out = append(out, array.NewRecordBatch(plan, cols, b.NumRows()))
		for _, c := range cols {
			c.Release()
		}
	}
	arrowipc.ReleaseAll(batches)
	return out, nil
}

// Next returns the next batch, or nil at the end of the scan. The caller
// owns the batch: it calls Consumed as it copies rows out and Close when
// done. After an error every call returns that error. Next blocks while the
// pipeline has nothing ready.
func (s *Scan) Next() (*Batch, error) {
	if s.plan.cfg.DebugPanic == "next" {
		panic("remote_segments: debug_panic at next")
	}
	if b, err, ok := s.ready.poll(); ok {
		return b, err
	}
	s.starved()
	return s.ready.pop(s.ctx)
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
		s.plan.dropEarly(nil)
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
	return Stats{
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
		BudgetLimit: s.limit, CapRaises: s.knee.raises.Load(),
		Pool:   s.budget.PoolStats(),
		Pruned: s.plan.pruned,
	}
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

// chunkLease is one chunk's budget lease, shared by its batches.
type chunkLease struct {
	mu    sync.Mutex
	lease *budget.Lease
	open  int // batches not closed
}

// Batch is one decoded record batch of one chunk, consumed by one thread at a
// time in slices of at most a DuckDB vector.
type Batch struct {
	Chunk  *Chunk
	Record arrow.RecordBatch
	cols   []int // plan field → record column, -1 if not read; nil: the same index
	pos    int64 // rows already taken
	share  int64 // this batch's bytes of the chunk's lease, given back at Close
	cl     *chunkLease
	scan   *Scan
	mapped bool // some buffers are a file's mapping (see mmap.go)
}

// Mapped reports whether some of the batch's buffers are a mapping of a
// local file, which another process may change or truncate under the scan:
// a reader must check every offset it follows, and survive SIGBUS.
func (b *Batch) Mapped() bool { return b.mapped }

// Column returns the array of plan field f, or nil if the batch does not
// hold it (a field the scan was not asked for).
func (b *Batch) Column(f int) arrow.Array {
	if b.cols == nil {
		return b.Record.Column(f)
	}
	if j := b.cols[f]; j >= 0 {
		return b.Record.Column(j)
	}
	return nil
}

// Take hands out the next at most max rows: it returns the first row and the
// count, 0 when the batch is used up.
func (b *Batch) Take(max int64) (start, n int64) {
	start = b.pos
	n = min(max, b.Record.NumRows()-b.pos)
	b.pos += n
	return start, n
}

// Consumed tells the batch the caller has copied n rows out. It gives
// nothing back to the budget: the batch's arrays stay allocated until
// Close frees them, and the budget counts what is live.
func (b *Batch) Consumed(n int64) {}

// Close releases the batch's memory and what it still holds of the budget.
// It is idempotent and safe on nil.
func (b *Batch) Close() {
	if b == nil || b.Record == nil {
		return
	}
	b.Record.Release()
	b.Record = nil
	if b.cl == nil {
		return
	}
	b.cl.mu.Lock()
	if b.share > 0 {
		b.cl.lease.Release(b.share)
		b.share = 0
		b.scan.trace.budget(b.scan.budget)
	}
	if b.cl.open--; b.cl.open == 0 {
		if b.mapped {
			// munmap tears down the chunk's page tables and waits for the
			// other CPUs to flush their TLBs: 8 % of a local scan's wall
			// time on the consumer's thread (1.02 GiB in 31 MB chunks,
			// 0.36 s against 0.33 s without unmapping). Off it, then; the
			// bytes go back to the budget once the pages are gone.
			b.scan.unmaps.Add(1)
			go func(l *budget.Lease) {
				defer b.scan.unmaps.Done()
				l.Close()
			}(b.cl.lease)
		} else {
			b.cl.lease.Close() // rounding leftovers
		}
	}
	b.cl.mu.Unlock()
}

// countingAllocator counts the bytes an allocator holds for one chunk. It
// carries the chunk's lease (nil outside a scan), whose pooled buffers the
// chunk's fetch fills, and, until the lease is committed, makes the lease
// cover every allocation before it happens: a chunk being decoded holds its
// fetched bytes and its decoded ones at once, and what the
// reservation does not cover waits for room in the budget (Lease.Extend)
// before it is allocated.
type countingAllocator struct {
	memory.Allocator
	live  atomic.Int64
	lease *budget.Lease
	ctx   context.Context // the scan's: a cancelled scan's decode stops (errDecodeCancelled)
	maps  *mapping        // nil: the chunk is never mapped

	mu        sync.Mutex // orders allocations' Extend before the Commit
	committed bool
	charged   int64 // the lease's size: its reservation and what Extend added
	fetched   int64 // the chunk's fetched (or mapped) bytes covered so far
}

// errDecodeCancelled is the panic of an allocation whose room the scan
// was cancelled while waiting for: arrow-go's decoders have no other way
// out. Decode turns it into an error, and load into the scan's cause.
type errDecodeCancelled struct{ err error }

// The counts are of capacities: a pooled buffer is rounded up to its class,
// and those are the bytes held.
func (a *countingAllocator) Allocate(n int) []byte {
	a.cover(int64(budget.PooledSize(n)))
	b := a.Allocator.Allocate(n)
	a.live.Add(int64(cap(b)))
	return b
}

func (a *countingAllocator) Reallocate(n int, b []byte) []byte {
	was := cap(b)
	a.cover(int64(budget.PooledSize(n) - was))
	b = a.Allocator.Reallocate(n, b)
	a.live.Add(int64(cap(b) - was))
	return b
}

// cover makes the lease hold the chunk's bytes plus n more before they are
// allocated, waiting for room as Extend does.
func (a *countingAllocator) cover(n int64) {
	if n <= 0 || a.lease == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.committed {
		return // the lease's size is final
	}
	if need := a.fetched + a.live.Load() + n; need > a.charged {
		if err := a.lease.Extend(a.ctx, need-a.charged); err != nil {
			panic(errDecodeCancelled{err})
		}
		a.charged = need
	}
}

// commit commits to the lease the bytes the allocator holds plus retained
// (wire bytes the batches reference) and returns that size. Allocations
// after it are counted but no longer charged: the lease's size is final.
func (a *countingAllocator) commit(retained int64) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.committed = true
	actual := a.live.Load() + retained
	a.lease.Commit(actual)
	return actual
}

// fetching makes the lease cover n more fetched (or mapped) bytes of the
// chunk before they are fetched (or, where the size was unknown, right
// after), waiting for room as cover does: a projected read may fetch more
// than its estimate (the footer, ranges a prediction missed), and must not
// overrun the budget at Commit.
func (a *countingAllocator) fetching(n int64) {
	if a == nil || a.lease == nil || n <= 0 {
		return
	}
	a.cover(n)
	a.mu.Lock()
	a.fetched += n
	a.mu.Unlock()
}

func (a *countingAllocator) Free(b []byte) {
	a.live.Add(-int64(cap(b)))
	a.Allocator.Free(b)
}

// readyQueue holds decoded batches until a thread takes them: in any order,
// or in catalog order when ordered.
type readyQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	ordered bool
	q       []*Batch
	pending map[int][]*Batch // ordered: chunks waiting for an earlier one
	next    int              // ordered: the chunk to deliver next
	done    int              // chunks whose batches arrived
	total   int
	err     error
	closed  bool
	drained bool // a consumer reached the end
}

func newReadyQueue(total int, ordered bool) *readyQueue {
	r := &readyQueue{ordered: ordered, total: total, pending: map[int][]*Batch{}}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// put queues chunk i's batches (possibly none). After close or an error
// they are freed instead.
func (r *readyQueue) put(i int, batches []*Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	if r.closed || r.err != nil {
		for _, b := range batches {
			b.Close()
		}
		return
	}
	if !r.ordered {
		r.q = append(r.q, batches...)
	} else {
		r.pending[i] = batches
		for {
			bs, ok := r.pending[r.next]
			if !ok {
				break
			}
			delete(r.pending, r.next)
			r.q = append(r.q, bs...)
			r.next++
		}
	}
	r.cond.Broadcast()
}

// pop returns the next batch, nil at the end, or the first error.
func (r *readyQueue) pop(ctx context.Context) (*Batch, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if b, err, ok := r.takeLocked(); ok {
			return b, err
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		r.cond.Wait()
	}
}

// poll is pop without waiting: ok is false when pop would wait.
func (r *readyQueue) poll() (b *Batch, err error, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.takeLocked()
}

func (r *readyQueue) takeLocked() (*Batch, error, bool) {
	switch {
	case r.err != nil:
		return nil, r.err, true
	case r.closed:
		return nil, context.Canceled, true
	case len(r.q) > 0:
		b := r.q[0]
		r.q[0] = nil
		r.q = r.q[1:]
		return b, nil, true
	case r.done == r.total && len(r.pending) == 0:
		r.drained = true
		return nil, nil, true
	}
	return nil, nil, false
}

func (r *readyQueue) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.close()
}

func (r *readyQueue) wake() {
	r.mu.Lock()
	r.cond.Broadcast()
	r.mu.Unlock()
}

// close frees every queued batch; later puts free theirs at once.
func (r *readyQueue) close() {
	r.mu.Lock()
	r.closed = true
	q, pending := r.q, r.pending
	r.q, r.pending = nil, map[int][]*Batch{}
	r.cond.Broadcast()
	r.mu.Unlock()
	for _, b := range q {
		b.Close()
	}
	for _, bs := range pending {
		for _, b := range bs {
			b.Close()
		}
	}
}

func (r *readyQueue) error() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// finished reports whether a consumer read the scan to its end.
func (r *readyQueue) finished() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drained
}
