package cabi

/*
#include <stdlib.h>
#include "rs.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/remote-segments/remote_segments/scanner"
)

// namedParameter is one named parameter of remote_segments(...) and how it
// lands in the scanner's Config.
type namedParameter struct {
	name     string
	duckType C.duckdb_type
	set      func(cfg *scanner.Config, v string) error
}

// namedParameters is the one list of named parameters; registration and bind
// both read it.
var namedParameters = []namedParameter{
	{
		// Test-only: makes the scan panic at "bind" or "next", to prove that a
		// panic becomes a DuckDB error and the host keeps running.
		name: "debug_panic", duckType: C.DUCKDB_TYPE_VARCHAR,
		set: func(cfg *scanner.Config, v string) error {
			switch v {
			case "", "bind", "next":
				cfg.DebugPanic = v
				return nil
			}
			return fmt.Errorf("remote_segments: debug_panic must be 'bind' or 'next', not %q", v)
		},
	},
}

func readNamedParameters(info C.duckdb_bind_info, cfg *scanner.Config) error {
	for _, p := range namedParameters {
		var present C.bool
		cname := C.CString(p.name)
		cv := C.rs_bind_get_named_varchar(info, cname, &present)
		C.free(unsafe.Pointer(cname))
		if !present {
			continue
		}
		v := ""
		if cv != nil {
			v = C.GoString(cv)
			C.rs_free(unsafe.Pointer(cv))
		}
		if err := p.set(cfg, v); err != nil {
			return err
		}
	}
	return nil
}
