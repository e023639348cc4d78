// Package staticapi gives package cabi the DuckDB C API function table of a
// program that links DuckDB statically through the DuckDB Go driver, and the
// few C API calls beyond API v1.2.0 that the Go-driver host needs (reading
// a setting and the connection in a bind).
//
// It is the project's second cgo package, and must stay separate from cabi:
// it names the real duckdb_* functions, which the loadable extension (built
// from cabi) must never reference. It has no LDFLAGS of its own; the
// driver's bindings link DuckDB.
package staticapi

//go:generate go run ./gen -header ../../../build/include/duckdb_extension.h -out table.c

/*
#cgo CFLAGS: -I${SRCDIR}/../../../build/include -O2 -Wall
#include "table.h"

static const void *rsapi_table_start(void) { return (const void *)rsapi_table; }

#ifndef DUCKDB_API_VERSION_AT_LEAST
// duckdb.h of DuckDB 1.4 (build/include) predates it: stable since C API
// v1.5.6, which the linked engine has. The last parameter is a
// duckdb_config_option_scope *, unused (NULL) by cabi.
duckdb_value duckdb_client_context_get_config_option(duckdb_client_context context, const char *name, void *out_scope);
#endif

// rsapi_settings: the functions cabi.UseSettingsAPI takes, in its order.
static const rsapi_fn rsapi_settings[3] = {
	(rsapi_fn)duckdb_table_function_get_client_context,
	(rsapi_fn)duckdb_client_context_get_config_option,
	(rsapi_fn)duckdb_destroy_client_context,
};

static const void *rsapi_settings_start(void) { return (const void *)rsapi_settings; }

// rsapi_context_id returns the connection id of ctx and destroys it.
static uint64_t rsapi_context_id(duckdb_client_context ctx) {
	if (!ctx) {
		return UINT64_MAX;
	}
	uint64_t id = duckdb_client_context_get_connection_id(ctx);
	duckdb_destroy_client_context(&ctx);
	return id;
}

static uint64_t rsapi_connection_id(duckdb_connection con) {
	duckdb_client_context ctx = NULL;
	duckdb_connection_get_client_context(con, &ctx);
	return rsapi_context_id(ctx);
}

static uint64_t rsapi_bind_connection_id(duckdb_bind_info info) {
	duckdb_client_context ctx = NULL;
	duckdb_table_function_get_client_context(info, &ctx);
	return rsapi_context_id(ctx);
}
*/
import "C"

import (
	"unsafe"

	_ "github.com/duckdb/duckdb-go/v2/mapping" // links DuckDB (the bindings' static library)
)

// NoConnection is what ConnectionID and BindConnectionID return when DuckDB
// gives no client context.
const NoConnection = ^uint64(0)

// Table returns the API v1.2.0 function table: n function addresses in the
// order of the members of duckdb_ext_api_v1. The memory is static and
// read-only.
func Table() (table unsafe.Pointer, n int) {
	return unsafe.Pointer(C.rsapi_table_start()), int(C.rsapi_table_len)
}

// SettingsTable returns the functions that read a DuckDB setting in a table
// function's bind, in the order cabi.UseSettingsAPI takes them
// (duckdb_table_function_get_client_context,
// duckdb_client_context_get_config_option, duckdb_destroy_client_context).
// The memory is static and read-only.
func SettingsTable() (table unsafe.Pointer, n int) {
	return unsafe.Pointer(C.rsapi_settings_start()), 3
}

// LibraryVersion returns the version of the linked DuckDB, such as "v1.5.6".
func LibraryVersion() string {
	return C.GoString(C.duckdb_library_version())
}

// ConnectionID returns the id DuckDB reports for the duckdb_connection con
// (duckdb_client_context_get_connection_id), or NoConnection.
func ConnectionID(con unsafe.Pointer) uint64 {
	return uint64(C.rsapi_connection_id(C.duckdb_connection(con)))
}

// BindConnectionID returns the id of the connection a table function's bind
// runs on; info is its duckdb_bind_info. It returns NoConnection when DuckDB
// gives no client context.
func BindConnectionID(info unsafe.Pointer) uint64 {
	return uint64(C.rsapi_bind_connection_id(C.duckdb_bind_info(info)))
}
