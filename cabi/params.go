package cabi

/*
#include <stdlib.h>
#include "rs.h"
#include "settings.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/remote-segments/remote_segments/internal/policy"
	"github.com/remote-segments/remote_segments/scanner"
)

// duckType is DuckDB's type of a named parameter of kind k.
func duckType(k policy.Kind) C.duckdb_type {
	switch k {
	case policy.Bigint:
		return C.DUCKDB_TYPE_BIGINT
	case policy.Double:
		return C.DUCKDB_TYPE_DOUBLE
	case policy.Boolean:
		return C.DUCKDB_TYPE_BOOLEAN
	case policy.Varchar:
		return C.DUCKDB_TYPE_VARCHAR
	}
	panic(fmt.Sprintf("cabi: named parameter kind %d has no DuckDB type", k))
}

// readNamedParameters fills cfg from the environment defaults, then from the
// host's settings remote_segments_<name> (the 2.0 edition), then from the
// query's named parameters (policy.Apply), and returns the parameters whose
// value the query chose. A SET was already checked by the same parser. A
// setting counts as the operator's only while DuckDB's lock_configuration is
// on: otherwise any query may have SET it.
func readNamedParameters(info C.duckdb_bind_info, host *Host, cfg *scanner.Config) (policy.Chosen, error) {
	src := policy.ParameterSources{
		Env:   os.LookupEnv,
		Query: func(name string) (string, bool) { return namedValue(info, name) },
	}
	if host != nil && host.settings != nil {
		src.Setting = func(name string) (string, bool) { return host.settingValue(info, name) }
		src.SettingsLocked = settingsLocked(info)
	}
	return policy.Apply(cfg, src)
}

// settingsLocked reports whether DuckDB's lock_configuration is on in the
// client context of a bind; false when it cannot be read.
func settingsLocked(info C.duckdb_bind_info) bool {
	v := bindSetting(info, "lock_configuration")
	if v == nil {
		return false
	}
	defer C.rs_value_destroy(v)
	return bool(C.rs_settings_value_bool(v))
}

// namedValue is the query's value of named parameter name as text, and
// whether the query gave one that is not NULL.
func namedValue(info C.duckdb_bind_info, name string) (string, bool) {
	var present C.bool
	cname := C.CString(name)
	cv := C.rs_bind_get_named_varchar(info, cname, &present)
	C.free(unsafe.Pointer(cname))
	if !present || cv == nil { // absent, or NULL: the default
		return "", false
	}
	defer C.rs_free(unsafe.Pointer(cv))
	return C.GoString(cv), true
}
