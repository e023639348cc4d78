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
	"fmt"
	"io"
	"os"
	"runtime/cgo"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"unsafe"

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
	// progress is the share of the scan's bytes handed out, and parts the
	// partition of each thread's rows (partition.go); nil for
	// remote_segments_stats().
	progress func() float64
	parts    *partitions
}

// scanState is the global init data of one query.
type scanState struct {
	bind       *bindState
	rows       *rowSource
	projection []int // output column index for each column of the output chunk
}

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
	cfg.PruneAfterBind = host.prunesAfterBind
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
	for i := range plan.Chunks.Len() {
		n := plan.Chunks.NumRows(i)
		if n < 0 {
			exact = false
			break
		}
		rows += n
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
		progress := func() float64 { return scan.Stats().Progress }
		return &rowSource{next: scan.Next, close: sync.OnceFunc(closeScan), threads: scan.MaxThreads(), progress: progress, parts: &partitions{}}, nil
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
