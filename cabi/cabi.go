// Package cabi registers remote_segments with DuckDB through the C extension
// API function table. It is the project's cgo package for DuckDB and never
// names a real duckdb_* symbol, so the loadable extension links none; the
// Go-driver host gives it a table filled from the driver's statically linked
// DuckDB (sql/internal/staticapi, the only other package importing "C").
//
// Go state crosses to C as cgo.Handle values stored as DuckDB bind, init and
// local-init data; DuckDB's delete callbacks free them. Every exported
// function recovers panics and reports them through the matching
// duckdb_*_set_error call, so a bug surfaces as a query error, never as a
// crash of the host.
//
// cabi owns the C boundary only: the C files (entry, registration and
// values, copy kernels, the SIGBUS guard, DuckDB's settings, the 2.0 shims
// behind the duckdb_v2 tag) and the Go trampolines they call. The rules it
// applies to a query (the sandbox, the parameter table, the shard spec) are
// internal/policy's, which must never import cabi; nothing but a host
// (extension, sql, test hosts) may import cabi.
package cabi

/*
#cgo CFLAGS: -I${SRCDIR}/../build/include -O2 -Wall -Wno-unused-function
#include <stdlib.h>
#include "rs.h"
void rs_add_named_parameter(uintptr_t f, const char *name, duckdb_type t);
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/cgo"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/remote-segments/remote_segments/internal/policy"
	"github.com/remote-segments/remote_segments/scanner"
)

// bindState is the bind data of one query: its output columns in DuckDB's
// order and how to start producing rows.
type bindState struct {
	columns []column
	// start is called once, at global init, with the fields (record column
	// indexes) the query needs.
	start func(fields []int) (*rowSource, error)
	// plan is the scan's plan (nil for remote_segments_stats()): the 2.0
	// edition's filter pushdown prunes its chunks before start.
	plan *scanner.Plan
}

// rowSource is what the threads of one query fill from.
type rowSource struct {
	next    func() (*scanner.Batch, error) // nil batch at the end; safe for concurrent use
	close   func()                         // idempotent; ends the source early if still running
	threads int                            // how many threads can usefully fill at once
	// delivery follows the batches handed out (progress.go); nil for
	// remote_segments_stats().
	delivery *delivery
}

// scanState is the global init data of one query.
type scanState struct {
	bind       *bindState
	rows       *rowSource
	projection []int // output column index for each column of the output chunk
}

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

// vectorSize is the most rows one output chunk holds: the engine's
// STANDARD_VECTOR_SIZE, a build-time constant of DuckDB (2048 by default,
// other values in some builds), so it is asked, once, not assumed.
var vectorSize = sync.OnceValue(func() int64 { return int64(C.rs_vector_size()) })

// errorText turns a recovered panic value into an error message.
func errorText(r any) string {
	return fmt.Sprintf("remote_segments: internal error (panic): %v", r)
}

// panicReports is where a recovered panic that no DuckDB error can carry is
// reported (a delete callback, a load-time registration, a progress or
// filter callback): the host's standard error, which the CLI shows and a Go
// program keeps. Tests replace it.
var panicReports io.Writer = os.Stderr

// reportPanic reports r, recovered in the exported function where, with the
// stack that raised it, and returns the message it wrote first. A recovered
// panic is never dropped without a word.
func reportPanic(where string, r any) string {
	msg := fmt.Sprintf("remote_segments: internal error (panic) in %s: %v", where, r)
	fmt.Fprintf(panicReports, "%s\n%s\n", msg, debug.Stack())
	return msg
}

func setBindError(info C.duckdb_bind_info, msg string) {
	withCString(msg, func(cs *C.char) { C.rs_bind_set_error(info, cs) })
}

func withCString(s string, f func(*C.char)) {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	f(cs)
}

//export rsDeleteHandle
func rsDeleteHandle(h C.uintptr_t) {
	if h != 0 {
		deleteHandle(cgo.Handle(h))
	}
}

// deleteHandle closes what DuckDB no longer holds (a query's scan, a
// thread's batch) and deletes its handle, also when closing panics: no
// DuckDB error can be set from a delete callback, so the panic is reported
// (reportPanic) and the host goes on.
func deleteHandle(handle cgo.Handle) {
	defer func() {
		if r := recover(); r != nil {
			reportPanic("rsDeleteHandle", r)
		}
	}()
	defer handle.Delete()
	switch s := handle.Value().(type) {
	case *scanState:
		s.rows.close()
	case *threadState:
		s.dropBatch()
	}
}

// rsShareHandle returns a new handle to the value of h (0 for 0), for a
// second owner that deletes its own: each registered function holds one
// to the same Host.
//
//export rsShareHandle
func rsShareHandle(h C.uintptr_t) (shared C.uintptr_t) {
	defer func() {
		if r := recover(); r != nil {
			reportPanic("rsShareHandle", r)
			shared = 0 // the function runs with a zero Host
		}
	}()
	if h == 0 {
		return 0
	}
	return C.uintptr_t(cgo.NewHandle(cgo.Handle(h).Value()))
}

//export rsAddNamedParameters
func rsAddNamedParameters(f C.uintptr_t) {
	defer func() { // at load time: a missing parameter beats a crash
		if r := recover(); r != nil {
			reportPanic("rsAddNamedParameters", r)
		}
	}()
	for _, p := range policy.Parameters() {
		withCString(p.Name, func(cs *C.char) { C.rs_add_named_parameter(f, cs, duckType(p.Kind)) })
	}
}

//export rsBind
func rsBind(info C.duckdb_bind_info) {
	defer func() {
		if r := recover(); r != nil {
			setBindError(info, errorText(r))
		}
	}()
	if err := bind(info); err != nil {
		setBindError(info, err.Error())
	}
}

func bind(info C.duckdb_bind_info) error {
	host, cfg, shard, err := bindConfig(info)
	if err != nil {
		return err
	}
	statement := host.statement(info)
	cfg.Keep = shard.Keep()
	plan, err := scanner.Bind(statement(), cfg)
	if err != nil {
		return err
	}
	cols, err := outputColumns(plan.Schema)
	if err != nil {
		return err
	}
	var rows int64
	exact := true
	for _, ch := range plan.Chunks {
		if ch.NumRows < 0 {
			exact = false
			break
		}
		rows += ch.NumRows
	}
	if exact {
		C.rs_bind_set_cardinality(info, C.idx_t(rows), true)
	}
	start := func(fields []int) (*rowSource, error) {
		scan, err := plan.Start(statement(), fields)
		if err != nil {
			return nil, err
		}
		host.budgetsChanged()
		closeScan := func() {
			scan.Close()
			host.budgetsChanged()
		}
		d := newDelivery(plan.Chunks)
		host.progress.add(scan.ID(), d.bytes)
		return &rowSource{next: d.track(scan.Next), close: sync.OnceFunc(closeScan), threads: scan.MaxThreads(), delivery: d}, nil
	}
	setBindData(info, cols, start).plan = plan
	return nil
}

// bindConfig reads what every function over a source reads at bind: the
// host it was registered with, the process's sandbox, the source argument,
// the named parameters and the shard.
func bindConfig(info C.duckdb_bind_info) (*Host, scanner.Config, policy.Shard, error) {
	host := hostOf(info)
	if host.loadErr != nil {
		return nil, scanner.Config{}, policy.Shard{}, host.loadErr
	}
	sandbox, err := bindSandboxes(info)
	if err != nil {
		return nil, scanner.Config{}, policy.Shard{}, err
	}
	cfg := scanner.Config{Allocator: mallocator.NewMallocator(), Process: host.Process, Owner: host.owner, Admit: sandbox.Sources()}
	if err := readSource(info, &cfg); err != nil {
		return nil, cfg, policy.Shard{}, err
	}
	chosen, err := readNamedParameters(info, host, &cfg)
	if err != nil {
		return nil, cfg, policy.Shard{}, err
	}
	if err := sandbox.Confine(&cfg, chosen); err != nil {
		return nil, cfg, policy.Shard{}, err
	}
	shard, err := readShard(info)
	return host, cfg, shard, err
}

// readSource reads the first argument: a VARCHAR source, a LIST of URLs, or
// a LIST of STRUCT catalog rows.
func readSource(info C.duckdb_bind_info, cfg *scanner.Config) error {
	v := C.rs_bind_get_value(info, 0)
	if v == nil {
		return fmt.Errorf("remote_segments: missing the source argument")
	}
	defer C.rs_value_destroy(v)
	if bool(C.rs_value_is_null(v)) {
		return fmt.Errorf("remote_segments: source is NULL")
	}
	switch C.rs_value_type(v) {
	case C.DUCKDB_TYPE_VARCHAR:
		cfg.Source = valueString(v)
		return nil
	case C.DUCKDB_TYPE_LIST:
	default:
		return fmt.Errorf("remote_segments: the source must be a VARCHAR (path, URL, glob or catalog file) or a LIST of URLs or of catalog STRUCTs, not a %s", typeName(C.rs_value_type(v)))
	}
	n := int(C.rs_value_list_size(v))
	var urls []string
	var rows []scanner.Row
	for i := range n {
		item := C.rs_value_list_child(v, C.idx_t(i))
		switch {
		case bool(C.rs_value_is_null(item)):
			C.rs_value_destroy(item)
			return fmt.Errorf("remote_segments: LIST element %d is NULL", i)
		case C.rs_value_type(item) == C.DUCKDB_TYPE_VARCHAR:
			urls = append(urls, valueString(item))
		case C.rs_value_type(item) == C.DUCKDB_TYPE_STRUCT:
			row := scanner.Row{}
			for f := range int(C.rs_value_struct_size(item)) {
				cname := C.rs_value_struct_name(item, C.idx_t(f))
				name := C.GoString(cname)
				C.rs_free(unsafe.Pointer(cname))
				field := C.rs_value_struct_child(item, C.idx_t(f))
				row[name] = valueScalar(field)
				C.rs_value_destroy(field)
			}
			rows = append(rows, row)
		default:
			t := C.rs_value_type(item)
			C.rs_value_destroy(item)
			return fmt.Errorf("remote_segments: LIST element %d is a %s; give URLs (VARCHAR) or catalog rows (STRUCT with a url field)", i, typeName(t))
		}
		C.rs_value_destroy(item)
	}
	switch {
	case urls != nil && rows != nil:
		return fmt.Errorf("remote_segments: the LIST mixes URLs and catalog rows")
	case rows != nil:
		cfg.Rows = rows
	default:
		cfg.URLs = urls
		if cfg.URLs == nil {
			cfg.URLs = []string{}
		}
	}
	return nil
}

func valueString(v C.duckdb_value) string {
	cs := C.rs_value_varchar(v)
	defer C.rs_free(unsafe.Pointer(cs))
	return C.GoString(cs)
}

// valueScalar converts a catalog field: integers to int64 (or uint64),
// NULL to nil, anything else to its text.
func valueScalar(v C.duckdb_value) any {
	if bool(C.rs_value_is_null(v)) {
		return nil
	}
	switch C.rs_value_type(v) {
	case C.DUCKDB_TYPE_TINYINT, C.DUCKDB_TYPE_SMALLINT, C.DUCKDB_TYPE_INTEGER, C.DUCKDB_TYPE_BIGINT,
		C.DUCKDB_TYPE_UTINYINT, C.DUCKDB_TYPE_USMALLINT, C.DUCKDB_TYPE_UINTEGER:
		return int64(C.rs_value_int64(v))
	case C.DUCKDB_TYPE_UBIGINT:
		return uint64(C.rs_value_uint64(v))
	case C.DUCKDB_TYPE_HUGEINT, C.DUCKDB_TYPE_UHUGEINT:
		n, err := strconv.ParseInt(valueString(v), 10, 64)
		if err != nil {
			return valueString(v)
		}
		return n
	}
	return valueString(v)
}

func typeName(t C.duckdb_type) string {
	names := map[C.duckdb_type]string{C.DUCKDB_TYPE_BIGINT: "BIGINT", C.DUCKDB_TYPE_INTEGER: "INTEGER", C.DUCKDB_TYPE_STRUCT: "STRUCT",
		C.DUCKDB_TYPE_LIST: "LIST", C.DUCKDB_TYPE_MAP: "MAP", C.DUCKDB_TYPE_BOOLEAN: "BOOLEAN", C.DUCKDB_TYPE_DOUBLE: "DOUBLE", C.DUCKDB_TYPE_BLOB: "BLOB"}
	if n, ok := names[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", int(t))
}

// setBindData declares the output columns and stores the bind state, which
// it returns.
func setBindData(info C.duckdb_bind_info, cols []column, start func(fields []int) (*rowSource, error)) *bindState {
	for _, c := range cols {
		lt := logicalType(c.typ)
		withCString(c.name, func(cs *C.char) { C.rs_bind_add_column_type(info, cs, lt) })
		C.rs_type_destroy(lt)
	}
	b := &bindState{columns: cols, start: start}
	C.rs_bind_set_data(info, C.uintptr_t(cgo.NewHandle(b)))
	return b
}

//export rsInit
func rsInit(info C.duckdb_init_info) {
	defer func() {
		if r := recover(); r != nil {
			withCString(errorText(r), func(cs *C.char) { C.rs_init_set_error(info, cs) })
		}
	}()
	b := cgo.Handle(C.rs_init_get_bind_data(info)).Value().(*bindState)
	n := int(C.rs_init_column_count(info))
	proj := make([]int, n)
	for i := range proj {
		proj[i] = int(C.rs_init_column_index(info, C.idx_t(i)))
	}
	fields, err := neededFields(b.columns, proj)
	if err != nil {
		withCString(err.Error(), func(cs *C.char) { C.rs_init_set_error(info, cs) })
		return
	}
	rows, err := b.start(fields)
	if err != nil {
		withCString(err.Error(), func(cs *C.char) { C.rs_init_set_error(info, cs) })
		return
	}
	s := &scanState{bind: b, rows: rows, projection: proj}
	C.rs_init_set_max_threads(info, C.idx_t(max(1, rows.threads)))
	C.rs_init_set_data(info, C.uintptr_t(cgo.NewHandle(s)))
}

// neededFields lists, in order and once each, the record columns the
// projected output columns read. It fails on an index that names no output
// column: every later use of the projection indexes cols with it.
func neededFields(cols []column, proj []int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, oc := range proj {
		if oc < 0 || oc >= len(cols) {
			return nil, fmt.Errorf("remote_segments: DuckDB asked for output column %d, bind declared %d", oc, len(cols))
		}
		if f := cols[oc].field; f >= 0 && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	slices.Sort(out)
	if out == nil {
		out = []int{} // none: e.g. count(*) reads no column
	}
	return out, nil
}

//export rsLocalInit
func rsLocalInit(info C.duckdb_init_info) {
	defer func() {
		if r := recover(); r != nil {
			withCString(errorText(r), func(cs *C.char) { C.rs_init_set_error(info, cs) })
		}
	}()
	// The local init receives the global state through the function info only
	// at fill time, so the thread state binds to it lazily there.
	C.rs_local_init_set_data(info, C.uintptr_t(cgo.NewHandle(&threadState{})))
}

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
		arrowType = t.batch.Record.Schema().Field(col.field).Type.String()
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
