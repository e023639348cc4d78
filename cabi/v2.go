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
)

// The DuckDB 2.0 edition's Go side: what the V2 adapter (v2_entry.c,
// v2_extras.c) calls besides the core's callbacks.

// rsV2Bind is the 2.0 edition's bind of remote_segments: the core's bind.
//
//export rsV2Bind
func rsV2Bind(info C.duckdb_bind_info) {
	rsBind(info)
}

// rsV2LoadableHost is rsLoadableHost with the 2.0 edition's settings.
//
//export rsV2LoadableHost
func rsV2LoadableHost() C.uintptr_t {
	h := cgo.Handle(rsLoadableHost()).Value().(*Host)
	h.settings = readV2Setting
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
func rsV2AddSettings(ext, ctx, err C.uintptr_t) {
	defer func() { _ = recover() }() // at load time: a missing setting beats a crash
	for _, p := range namedParameters {
		name, param, desc := C.CString(settingName(p.name)), C.CString(p.name), C.CString(parameterDoc(p.name))
		ok := C.rs_v2_add_setting(C.duckdb_v2_extension_handle(unsafe.Pointer(uintptr(ext))), C.duckdb_v2_context_handle(unsafe.Pointer(uintptr(ctx))),
			name, param, desc, p.duckType, (*C.duckdb_v2_error_info_handle)(unsafe.Pointer(uintptr(err))))
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
func rsV2CheckSetting(param, value *C.char) *C.char {
	defer func() { _ = recover() }()
	if msg := checkSetting(C.GoString(param), C.GoString(value)); msg != "" {
		return C.CString(msg)
	}
	return nil
}
