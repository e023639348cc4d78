package cabi

/*
#include "rs.h"
*/
import "C"

import "unsafe"

// guardedSum adds every 512th byte of b in C under guard.c's guard, and
// returns the guard's verdict (0, C.RS_GUARD_FAULT): what guard_test.go
// checks the guard with, on a mapping it truncates. own tells the guard
// that b is a mapping the copy reads; without it, a SIGBUS reading b is
// not the guard's to catch.
func guardedSum(b []byte, own bool) (uint64, int) {
	var why C.int
	s := C.rs_guarded_sum((*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b))), C.size_t(len(b)), C.bool(own), &why)
	return uint64(s), int(why)
}

const guardFault = int(C.RS_GUARD_FAULT)
