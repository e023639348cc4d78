//go:build duckdb_v2

package cabi

/*
#cgo CFLAGS: -I${SRCDIR}/../build/include-v2
#include <stdlib.h>
#include "v2.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"

	"github.com/remote-segments/remote_segments/internal/policy"
	"github.com/remote-segments/remote_segments/scanner"
)

// The DuckDB 2.0 edition's Go side: what the V2 adapter (v2_entry.c,
// v2_extras.c) calls besides the core's callbacks.

// rsV2Bind is the 2.0 edition's bind of remote_segments: the core's bind.
//
//export rsV2Bind
func rsV2Bind(info C.duckdb_bind_info) {
	rsBind(info)
}

// rsV2HostForDatabase is the Host of one database that loads the 2.0
// edition's file: rsHostForDatabase's, which also reads the
// remote_segments_<name> settings. The entry point owns the handle it
// returns until it hands it to a registered function.
//
//export rsV2HostForDatabase
func rsV2HostForDatabase() C.uintptr_t {
	h := loadableHost()
	h.settings = readV2Setting
	h.prunesAfterBind = true
	return C.uintptr_t(cgo.NewHandle(h))
}

func readV2Setting(info C.duckdb_bind_info, setting string) (string, bool) {
	cs := C.CString(setting)
	defer C.free(unsafe.Pointer(cs))
	v := C.rs_v2_setting(info, cs)
	if v == nil {
		return "", false
	}
	defer C.free(unsafe.Pointer(v))
	return C.GoString(v), true
}

// rsV2AddSettings registers remote_segments_<name> for every named
// parameter; a failure leaves the extension's error slot set.
//
//export rsV2AddSettings
func rsV2AddSettings(ext C.duckdb_v2_extension_handle, ctx C.duckdb_v2_context_handle, err *C.duckdb_v2_error_info_handle) {
	defer func() { // at load time: a missing setting beats a crash
		if r := recover(); r != nil {
			reportPanic("rsV2AddSettings", r)
		}
	}()
	for _, p := range policy.Parameters() {
		name, param, desc := C.CString(policy.SettingName(p.Name)), C.CString(p.Name), C.CString(policy.ParameterDoc(p.Name))
		ok := C.rs_v2_add_setting(ext, ctx, name, param, desc, duckType(p.Kind), err)
		C.free(unsafe.Pointer(name))
		C.free(unsafe.Pointer(param))
		C.free(unsafe.Pointer(desc))
		if !ok {
			return
		}
	}
}

// rsV2CheckSetting checks a SET of the setting of parameter param: it
// returns the error text (malloc'd, the caller frees it), or NULL.
//
//export rsV2CheckSetting
func rsV2CheckSetting(param, value *C.char) (msg *C.char) {
	defer func() {
		if r := recover(); r != nil {
			msg = C.CString(reportPanic("rsV2CheckSetting", r)) // the SET fails saying so
		}
	}()
	if msg := policy.CheckSetting(C.GoString(param), C.GoString(value)); msg != "" {
		return C.CString(msg)
	}
	return nil
}

// rsV2PushFilter prunes the scan of bind (a bindState handle) to the chunks
// whose declared column is one of values, when that column is segment_id or
// chunk_id: it returns whether it did, that is applied the filter fully.
//
//export rsV2PushFilter
func rsV2PushFilter(bind C.uintptr_t, column C.idx_t, values **C.char, n C.idx_t) (ok C.bool) {
	defer func() {
		if r := recover(); r != nil {
			reportPanic("rsV2PushFilter", r)
			ok = false // not applied: DuckDB keeps the filter
		}
	}()
	b := cgo.Handle(bind).Value().(*bindState)
	if b.plan == nil || int(column) >= len(b.columns) {
		return false
	}
	var key func(c *scanner.Chunk) string
	switch b.columns[column].field {
	case fieldSegmentID:
		key = func(c *scanner.Chunk) string { return c.SegmentID }
	case fieldChunkID:
		key = func(c *scanner.Chunk) string { return c.ChunkID }
	default:
		return false
	}
	keep := map[string]bool{}
	for _, v := range unsafe.Slice(values, int(n)) {
		keep[C.GoString(v)] = true
	}
	b.plan.Select(func(c *scanner.Chunk) bool { return keep[key(c)] })
	return true
}

// constantTypes names the DuckDB types whose name as a constant's type
// differs from logicalName's.
var constantTypes = map[string]string{"TIMESTAMP_TZ": "TIMESTAMP WITH TIME ZONE"}

// comparisons are the DuckDB comparisons a filter prunes by the
// catalog's bounds with.
var comparisons = map[C.int32_t]scanner.Op{
	C.DUCKDB_V2_EXPRESSION_TYPE_COMPARE_EQUAL:                scanner.OpEqual,
	C.DUCKDB_V2_EXPRESSION_TYPE_COMPARE_LESSTHAN:             scanner.OpLess,
	C.DUCKDB_V2_EXPRESSION_TYPE_COMPARE_LESSTHANOREQUALTO:    scanner.OpLessEqual,
	C.DUCKDB_V2_EXPRESSION_TYPE_COMPARE_GREATERTHAN:          scanner.OpGreater,
	C.DUCKDB_V2_EXPRESSION_TYPE_COMPARE_GREATERTHANOREQUALTO: scanner.OpGreaterEqual,
	C.DUCKDB_V2_EXPRESSION_TYPE_COMPARE_IN:                   scanner.OpIn,
	C.DUCKDB_V2_EXPRESSION_TYPE_COMPARE_BETWEEN:              scanner.OpBetween,
}

// rsV2PruneBounds drops the chunks of the scan of bind (a bindState
// handle) whose catalog bounds of declared column rule out every row of
// `column op constants` (c op column when flipped), op being a DuckDB
// comparison (=, <, <=, >, >=, IN, BETWEEN); texts and types are the
// constants' text and type names. The filter stays DuckDB's: this only
// prunes, so a comparison it cannot read (a constant of another type than
// the column's, a type without an order) prunes nothing.
//
//export rsV2PruneBounds
func rsV2PruneBounds(bind C.uintptr_t, column C.idx_t, op C.int32_t, flipped C.bool, texts, types **C.char, n C.idx_t) {
	defer func() {
		if r := recover(); r != nil {
			reportPanic("rsV2PruneBounds", r) // nothing pruned: DuckDB filters every row anyway
		}
	}()
	b := cgo.Handle(bind).Value().(*bindState)
	if b.plan == nil || int(column) >= len(b.columns) || b.columns[column].field < 0 {
		return
	}
	col := b.columns[column]
	want := logicalName(col.typ)
	if name, ok := constantTypes[want]; ok {
		want = name
	}
	values := make([]string, int(n))
	for i := range values {
		if C.GoString(unsafe.Slice(types, int(n))[i]) != want {
			return
		}
		values[i] = C.GoString(unsafe.Slice(texts, int(n))[i])
	}
	cmp, ok := comparisons[op]
	if !ok {
		return
	}
	if flipped {
		cmp = cmp.Flip()
	}
	name := b.plan.Schema.Field(col.field).Name
	_, _ = b.plan.PruneByBounds(name, cmp, values) // an error: nothing pruned
}

// rsV2IsSegmentColumn reports whether declared column is segment_id.
//
//export rsV2IsSegmentColumn
func rsV2IsSegmentColumn(bind C.uintptr_t, column C.idx_t) C.bool {
	defer func() {
		if r := recover(); r != nil {
			reportPanic("rsV2IsSegmentColumn", r) // false: not a partition column
		}
	}()
	b := cgo.Handle(bind).Value().(*bindState)
	return C.bool(int(column) < len(b.columns) && b.columns[column].field == fieldSegmentID)
}

// rsV2Progress is the fraction of the scan's bytes delivered (global: a
// scanState handle).
//
//export rsV2Progress
func rsV2Progress(global C.uintptr_t) (f C.double) {
	defer func() {
		if r := recover(); r != nil {
			reportPanic("rsV2Progress", r) // no progress to show
		}
	}()
	s := cgo.Handle(global).Value().(*scanState)
	if s.rows.progress == nil {
		return 0
	}
	return C.double(s.rows.progress())
}

// rsV2Partition returns the segment (malloc'd) and, in index, the batch
// index of the rows the thread of local (a threadState handle) produced
// last; NULL when it has produced none.
//
//export rsV2Partition
func rsV2Partition(global, local C.uintptr_t, index *C.idx_t) *C.char {
	defer func() {
		if r := recover(); r != nil {
			reportPanic("rsV2Partition", r) // no partition: DuckDB keeps the rows in one
		}
	}()
	s := cgo.Handle(global).Value().(*scanState)
	t := cgo.Handle(local).Value().(*threadState)
	if s.rows.parts == nil {
		return nil
	}
	i, seg := s.rows.parts.of(t)
	*index = C.idx_t(i)
	if i == 0 {
		return nil
	}
	return C.CString(seg)
}
