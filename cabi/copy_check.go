package cabi

/*
#include "rs.h"
*/
import "C"

import "unsafe"

// guardedCopyUTF8 copies rows [p, p+n) of a string column through the C
// string kernel under the guard, into slots (DuckDB's 16-byte string_t,
// each inline), and returns the guard's verdict (0, guardBadBytes): what
// copy_test.go checks the kernel with. offsets are []int32 or []int64;
// chars may be memory outside the Go heap (a page between unmapped pages);
// no string may be longer than 12 bytes, since the kernel would hand a
// longer one to DuckDB, which a test has not.
func guardedCopyUTF8[T int32 | int64](slots [][16]byte, offsets []T, chars []byte, validity []byte, p, n int) int {
	var why C.int
	var val *C.uint8_t
	if validity != nil {
		val = (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(validity)))
	}
	C.rs_guarded_copy_utf8((*C.duckdb_string_t)(unsafe.Pointer(unsafe.SliceData(slots))), unsafe.Pointer(unsafe.SliceData(offsets)),
		C.int32_t(unsafe.Sizeof(offsets[0])), (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(chars))), C.int64_t(len(chars)),
		val, C.int64_t(p), C.idx_t(n), &why)
	return int(why)
}

const (
	guardBadBytes = int(C.RS_GUARD_BAD_BYTES)
	guardRange    = int(C.RS_GUARD_RANGE)
)
