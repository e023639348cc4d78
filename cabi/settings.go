package cabi

/*
#include <stdlib.h>
#include "settings.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/remote-segments/remote_segments/internal/policy"
)

// ErrNoSettingsAPI means a host offered no usable functions to read DuckDB
// settings (UseSettingsAPI).
var ErrNoSettingsAPI = errors.New("cabi: the engine has no C API v1.5.6 to read settings")

// UseSettingsAPI gives cabi a host's functions to read DuckDB settings in a
// bind, so that scans honour DuckDB's sandbox (enable_external_access,
// allowed_directories, allowed_paths). version is the linked engine's
// duckdb_library_version(); table holds n = 3 function addresses:
// duckdb_table_function_get_client_context,
// duckdb_client_context_get_config_option and duckdb_destroy_client_context,
// in that order. An engine older than 1.5.6 lacks them as stable API: then
// it returns ErrNoSettingsAPI and scans cannot see the sandbox. Only the
// first successful call copies.
func UseSettingsAPI(version string, table unsafe.Pointer, n int) error {
	if !engineHasSettings(version) {
		return fmt.Errorf("%w: it is DuckDB %s", ErrNoSettingsAPI, version)
	}
	if table == nil || n != 3 {
		return fmt.Errorf("%w: %d functions given, want 3", ErrNoSettingsAPI, n)
	}
	C.rs_settings_use((*C.rs_settings_api)(table))
	if !bool(C.rs_settings_ready()) {
		return fmt.Errorf("%w: a function address is NULL", ErrNoSettingsAPI)
	}
	return nil
}

// engineHasSettings is the entry point's test (rs_engine_has_settings): does
// an engine whose duckdb_library_version() is version offer C API v1.5.6?
func engineHasSettings(version string) bool {
	cv := C.CString(version)
	defer C.free(unsafe.Pointer(cv))
	return bool(C.rs_engine_has_settings(cv))
}

// bindSandbox reads DuckDB's sandbox settings in the client context of a
// bind. ok is false when the engine cannot tell (DuckDB 1.4: no API v1.5.6).
func bindSandbox(info C.duckdb_bind_info) (s policy.DuckDBAccess, ok bool, err error) {
	if !bool(C.rs_settings_ready()) {
		return s, false, nil
	}
	ext := bindSetting(info, "enable_external_access")
	if ext == nil {
		// The API is there, so the setting must be: fail closed.
		return s, false, fmt.Errorf("remote_segments: %w: cannot read DuckDB's setting enable_external_access", policy.ErrNotAllowed)
	}
	s.ExternalAccess = bool(C.rs_settings_value_bool(ext))
	C.rs_value_destroy(ext)
	if s.ExternalAccess {
		return s, true, nil
	}
	if s.AllowedDirectories, err = bindStringList(info, "allowed_directories"); err != nil {
		return s, false, err
	}
	if s.AllowedPaths, err = bindStringList(info, "allowed_paths"); err != nil {
		return s, false, err
	}
	return s, true, nil
}

func bindSetting(info C.duckdb_bind_info, name string) C.duckdb_value {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	v := C.rs_bind_config_option(info, cs)
	if v != nil && bool(C.rs_value_is_null(v)) {
		C.rs_value_destroy(v)
		return nil
	}
	return v
}

// bindStringList reads a VARCHAR[] setting; a missing or NULL one is empty.
func bindStringList(info C.duckdb_bind_info, name string) ([]string, error) {
	v := bindSetting(info, name)
	if v == nil {
		return nil, nil
	}
	defer C.rs_value_destroy(v)
	if t := C.rs_value_type(v); t != C.DUCKDB_TYPE_LIST {
		return nil, fmt.Errorf("remote_segments: %w: DuckDB's setting %s is a %s, not a VARCHAR[]", policy.ErrNotAllowed, name, typeName(t))
	}
	n := int(C.rs_value_list_size(v))
	out := make([]string, 0, n)
	for i := range n {
		item := C.rs_value_list_child(v, C.idx_t(i))
		if !bool(C.rs_value_is_null(item)) {
			out = append(out, valueString(item))
		}
		C.rs_value_destroy(item)
	}
	return out, nil
}

// bindSandboxes reads both for a bind.
func bindSandboxes(info C.duckdb_bind_info) (policy.Sandboxes, error) {
	db, ok, err := bindSandbox(info)
	if err != nil {
		return policy.Sandboxes{}, err
	}
	if !ok {
		return policy.NewSandboxes(nil)
	}
	return policy.NewSandboxes(&db)
}
