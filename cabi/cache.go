package cabi

/*
#include "rs.h"
*/
import "C"

import "github.com/remote-segments/remote_segments/scanner"

// rsCacheBind binds remote_segments_cache(): one row per cache directory
// the process's scans opened, as scanner.Process.CacheTable has them.
//
//export rsCacheBind
func rsCacheBind(info C.duckdb_bind_info) {
	defer func() {
		if r := recover(); r != nil {
			setBindError(info, errorText(r))
		}
	}()
	bindTable(info, scanner.CacheSchema(), hostOf(info).Process.CacheTable)
}
