package scanner

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/scanner/arrowipc"
)

// load reads chunk c, if project only the scan's fields, and decodes it
// with mem; early, if not nil, is its whole read, submitted already. It
// returns the batches, the field → column map for them (nil: the plan's
// schema), and the wire bytes the batches keep referencing (zero-copy
// decode).
func (s *Scan) load(c *Chunk, mem memory.Allocator, project bool, early *earlyFetch) (_ []arrow.RecordBatch, _ []int, _ int64, err error) {
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
	return s.loadWhole(c, mem, early)
}

// loadWhole reads chunk c in one request (early's, if not nil) and
// decodes all of it.
func (s *Scan) loadWhole(c *Chunk, mem memory.Allocator, early *earlyFetch) ([]arrow.RecordBatch, []int, int64, error) {
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
		fetched := s.adoptPrefetch(c)
		n := c.WireLength()
		if n > 0 {
			ca.fetching(int64(budget.PooledSize(int(n))))
			covered = true
		}
		switch {
		case fetched == nil && maps != nil:
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
		case fetched != nil && lease.Adopt(fetched):
			// Bind's buffer, the lease's now as a pooled one: no copy.
			into, data = fetched, fetched
		case early != nil:
			into = early.into
		case n > 0 && lease != nil:
			into = lease.Buffer(int(n)) // the lease's until it closes
		}
		switch {
		case early != nil:
			var err error
			if data, err = early.result(s, c); err != nil {
				return nil, nil, 0, err
			}
		case data != nil:
		case fetched != nil && len(into) >= len(fetched):
			// Into the pool, like every fetched chunk: the budget's bytes
			// are the pool's, and the prefetched buffer goes at once.
			data = into[:copy(into, fetched)]
		case fetched != nil:
			data = fetched
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
	if s.wholeCols != nil {
		// Only the scan's columns of an IPC file: building (and checking)
		// the others is work for nothing, most of a small chunk's decode.
		schema, batches, err := arrowipc.DecodeColumns(data, s.fields, mem)
		switch {
		case err == nil:
			if err := s.checkSchema(schema, batches); err != nil {
				return nil, nil, 0, err
			}
			return batches, s.wholeCols, retained, nil
		case !errors.Is(err, arrowipc.ErrDictionaries) && !errors.Is(err, arrowipc.ErrNotFile):
			return nil, nil, 0, err
		}
		// A stream, or dictionaries: decoded whole.
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
	// Every request of the chunk, of one version (pinned.go).
	sched, st, name := h.Scheduler, pinVersion(h.Store), h.Name
	size := c.WireLength()
	if size < 0 {
		// The tail of an object of unknown size needs a HEAD, which is not
		// a range request of the scheduler: read the chunk whole instead.
		return s.loadWhole(c, mem, nil)
	}
	// The ranges' buffers come from the budget's pool, as a whole chunk's
	// does, and are the lease's until it closes (the batches reference
	// them): fresh buffers for each chunk's ranges would fault in more
	// memory for a projected scan than a whole one takes (see BENCHMARKS.md,
	// "Figures behind the code").
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
		return s.plan.viaCache(s.cache, c, maps.request, s.submit)(sched, reqs)
	}
	plan := s.ipcPlan
	plan.Tail = s.tailWant()
	schema, batches, wire, footerLen, err := arrowipc.ReadColumns(size, plan, s.fields, fetch, mem)
	s.wire.Add(wire)
	if footerLen > 0 {
		s.footerLen.CompareAndSwap(0, footerLen)
	}
	if errors.Is(err, arrowipc.ErrDictionaries) || errors.Is(err, arrowipc.ErrNotFile) {
		return s.loadWhole(c, mem, nil) // dictionaries, or a stream: read it whole
	}
	if err != nil {
		return nil, nil, 0, err
	}
	if err := s.checkSchema(schema, batches); err != nil {
		return nil, nil, 0, err
	}
	cols := columnMap(len(s.plan.Schema.Fields()), s.fields)
	s.projectedChunks.Add(1)
	s.projectionSaved.Add(max(0, size-wire))
	return batches, cols, wire, nil
}

// columnMap is the field → column map (-1: absent) of batches holding
// fields, of a schema of n fields.
func columnMap(n int, fields []int) []int {
	cols := make([]int, n)
	for i := range cols {
		cols[i] = -1
	}
	for j, f := range fields {
		cols[f] = j
	}
	return cols
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
