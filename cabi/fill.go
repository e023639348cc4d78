package cabi

/*
#include "rs.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/scanner"
)

// The fill: a DuckDB thread copies the rows of the batches it takes into
// its output chunks (rsFunction), one whole chunk per call into C.

// threadState is one DuckDB thread's local init data.
type threadState struct {
	scan  *scanState
	batch *scanner.Batch
	cols  []C.rs_col // reused for every fill; Go memory holding pinned pointers
	pin   runtime.Pinner
	// mapped lists the buffers of the batch that are a file's mapping: the
	// only addresses where the guard takes a SIGBUS for a truncated file.
	mapped    []C.rs_range
	recording bool // describe is collecting mapped
}

// ErrOutOfRange is wrapped by the error of a scan that meets a value its
// DuckDB type cannot hold (a duration of MinInt64 seconds, a DECIMAL with
// more digits than its precision): never a wrapped or cut value.
var ErrOutOfRange = errors.New("value out of range")

//export rsFunction
func rsFunction(info C.duckdb_function_info, out C.duckdb_data_chunk) {
	// A batch's buffers may be a file's mapping (scanner/mmap.go): a fault
	// reading one in Go (the validity's null count) becomes an error.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			withCString(errorText(r), func(cs *C.char) { C.rs_function_set_error(info, cs) })
		}
	}()
	t := cgo.Handle(C.rs_function_get_local_data(info)).Value().(*threadState)
	if t.scan == nil {
		t.scan = cgo.Handle(C.rs_function_get_init_data(info)).Value().(*scanState)
		t.cols = make([]C.rs_col, len(t.scan.projection))
	}
	if err := t.fill(out); err != nil {
		withCString(err.Error(), func(cs *C.char) { C.rs_function_set_error(info, cs) })
	}
}

// fill copies the next slice of at most vectorSize() rows into out; it leaves
// out empty at the end of the scan. A batch is described (and its buffers
// pinned) once, when the thread takes it, and unpinned when it is used up.
func (t *threadState) fill(out C.duckdb_data_chunk) error {
	for {
		if t.batch == nil {
			b, err := t.scan.rows.next()
			if err != nil {
				return err
			}
			if b == nil {
				C.rs_data_chunk_set_size(out, 0)
				return nil
			}
			t.batch = b
			t.describe(b)
		}
		start, n := t.batch.Take(vectorSize())
		if n == 0 {
			t.dropBatch()
			continue
		}
		var f C.rs_fault
		C.rs_fill_guarded(out, unsafe.SliceData(t.cols), C.idx_t(len(t.cols)), C.int64_t(start), C.idx_t(n),
			unsafe.SliceData(t.mapped), C.size_t(len(t.mapped)), &f)
		if f.why != 0 {
			return &scanner.ChunkError{Chunk: t.batch.Chunk, Err: t.fault(&f)}
		}
		t.batch.Consumed(n) // the copy is the consumption: give the bytes back
		return nil
	}
}

// fault describes why a guarded copy stopped.
func (t *threadState) fault(f *C.rs_fault) error {
	switch f.why {
	case C.RS_GUARD_FAULT:
		return fmt.Errorf("%w: SIGBUS reading the file's mapping: it was truncated during the scan", scanner.ErrBadChunk)
	case C.RS_GUARD_BAD_BYTES:
		return fmt.Errorf("%w: a string offset does not fit its buffer: the file is corrupt, or was written during the scan", scanner.ErrBadChunk)
	}
	col := t.scan.bind.columns[t.scan.projection[f.column]]
	arrowType := "?"
	if col.field >= 0 {
		// By the batch's field map: a batch may hold the scan's fields
		// alone (a projected read, or a chunk read whole).
		if a := t.batch.Column(col.field); a != nil {
			arrowType = a.DataType().String()
		}
	}
	switch f.why {
	case C.RS_GUARD_RANGE:
		value := "a value"
		if f.has_value != 0 {
			value = fmt.Sprintf("the value %d", int64(f.value))
		}
		return fmt.Errorf("%w: column %q (Arrow %s): %s does not fit DuckDB's %s", ErrOutOfRange, col.name, arrowType, value, logicalName(col.typ))
	}
	return stoppedCopy(col.name, f.why == C.RS_GUARD_NO_MEMORY, int(f.why), int64(f.value))
}

// stoppedCopy is the error of a copy of column that stopped for want of
// memory (a value of size bytes) or another guard verdict why. The caller
// wraps it in a scanner.ChunkError, which carries the package prefix.
func stoppedCopy(column string, noMemory bool, why int, size int64) error {
	if noMemory {
		return fmt.Errorf("column %q: no memory to copy a value of %d bytes", column, size)
	}
	return fmt.Errorf("column %q: the copy stopped (guard verdict %d)", column, why)
}

// installGuard installs guard.c's SIGBUS handler, once: before the first
// copy of a mapped batch, and never in a process that maps no file.
var installGuard = sync.OnceFunc(func() { C.rs_guard_install() })

// dropBatch unpins and closes the thread's current batch, and clears the
// descriptors: their pointers would keep the batch's buffers reachable.
func (t *threadState) dropBatch() {
	t.pin.Unpin()
	clear(t.cols)
	clear(t.mapped)
	t.mapped = t.mapped[:0]
	t.batch.Close()
	t.batch = nil
}

// describe points t.cols at the buffers of b, pinning every Go buffer until
// the next Unpin.
func (t *threadState) describe(b *scanner.Batch) {
	clear(t.mapped)
	t.mapped, t.recording = t.mapped[:0], b.Mapped()
	defer func() { t.recording = false }()
	for i, oc := range t.scan.projection {
		d := &t.cols[i]
		col := t.scan.bind.columns[oc]
		switch col.field {
		case fieldSegmentID:
			t.constString(d, b.Chunk.SegmentID)
		case fieldChunkID:
			t.constString(d, b.Chunk.ChunkID)
		default:
			t.describeData(d, &col.typ, b.Column(col.field).Data())
		}
	}
	if b.Mapped() { // only flat columns are mapped: no child to mark
		installGuard() // before the first copy of a mapped batch
		for i := range t.cols {
			t.cols[i].mapped = 1
		}
	}
}

func (t *threadState) constString(d *C.rs_col, s string) {
	*d = C.rs_col{kind: C.RS_CONST_STR, length: C.int64_t(len(s))}
	d.data = (*C.uint8_t)(t.pinBytes([]byte(s)))
}

// describeData fills d for the Arrow array data a of type typ, recursing into
// children. Buffer positions follow the Arrow columnar format.
func (t *threadState) describeData(d *C.rs_col, typ *colType, a arrow.ArrayData) {
	bufs := a.Buffers()
	*d = C.rs_col{
		kind:     C.int32_t(typ.kind),
		width:    C.int32_t(typ.width),
		in_width: C.int32_t(typ.inWidth),
		unit:     C.int64_t(typ.unit),
		base:     C.int64_t(a.Offset()),
		lo:       C.int64_t(typ.lo),
		hi:       C.int64_t(typ.hi),
	}
	if typ.signedIndex {
		d.signed_index = 1
	}
	if a.NullN() > 0 && len(bufs) > 0 && bufs[0] != nil {
		d.validity = (*C.uint8_t)(t.pinBuffer(bufs[0]))
	}
	switch typ.kind {
	case kindUTF8:
		d.offsets = t.pinBuffer(bufs[1])
		d.data = (*C.uint8_t)(t.pinBuffer(bufs[2]))
		if bufs[2] != nil {
			d.length = C.int64_t(bufs[2].Len())
		}
	case kindList:
		d.offsets = t.pinBuffer(bufs[1])
		t.describeChildren(d, typ.children, a.Children())
	case kindArray, kindStruct:
		t.describeChildren(d, typ.children, a.Children())
	case kindView:
		d.data = (*C.uint8_t)(t.pinBuffer(bufs[1]))
		if extra := bufs[2:]; len(extra) > 0 {
			ptrs := make([]*C.uint8_t, len(extra))
			for i, b := range extra {
				ptrs[i] = (*C.uint8_t)(t.pinBuffer(b))
			}
			t.pin.Pin(&ptrs[0])
			d.buffers = &ptrs[0]
		}
	case kindDict:
		d.data = (*C.uint8_t)(t.pinBuffer(bufs[1]))
		t.describeChildren(d, typ.children, []arrow.ArrayData{a.Dictionary()})
	default: // one values buffer
		d.data = (*C.uint8_t)(t.pinBuffer(bufs[1]))
	}
}

func (t *threadState) describeChildren(d *C.rs_col, types []colType, data []arrow.ArrayData) {
	kids := make([]C.rs_col, len(types))
	for i := range types {
		t.describeData(&kids[i], &types[i], data[i])
	}
	t.pin.Pin(&kids[0])
	d.children = &kids[0]
	d.nchildren = C.int32_t(len(kids))
}

func (t *threadState) pinBuffer(b *memory.Buffer) unsafe.Pointer {
	if b == nil {
		return nil
	}
	p := t.pinBytes(b.Bytes())
	if t.recording && p != nil {
		t.mapped = append(t.mapped, C.rs_range{p: (*C.uint8_t)(p), n: C.size_t(b.Len())})
	}
	return p
}

// pinBytes pins b's backing array (Go or C memory) and returns its address.
func (t *threadState) pinBytes(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	t.pin.Pin(p)
	return p
}
