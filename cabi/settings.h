// settings.h: reading DuckDB settings from a table function's bind, through
// the few functions of the C extension API v1.5.6 that do it. The extension
// is built for API v1.2.0 (it must load in DuckDB 1.4), so these functions
// are not in its table: an engine that has them hands them over once (the
// entry point asks get_api("v1.5.6") of an engine >= 1.5.6; a host that
// links DuckDB passes its own, rs_settings_use). Without them, an engine's
// settings cannot be read and rs_bind_config_option returns NULL.
#ifndef RS_SETTINGS_H
#define RS_SETTINGS_H

#include "rs.h"

// rs_settings_api holds the functions, in this order (a host passes an
// array of three function addresses in it).
typedef struct rs_settings_api {
	void (*table_function_get_client_context)(duckdb_bind_info info, duckdb_client_context *out_context);
	// duckdb_client_context_get_config_option; out_scope is a
	// duckdb_config_option_scope *, always NULL here.
	duckdb_value (*client_context_get_config_option)(duckdb_client_context context, const char *name, void *out_scope);
	void (*destroy_client_context)(duckdb_client_context *context);
} rs_settings_api;

// rs_engine_has_settings reports whether an engine whose
// duckdb_library_version() is version ("v1.5.6", "v2.0.0",
// "v1.5.6-dev12") offers the C extension API v1.5.6.
bool rs_engine_has_settings(const char *version);

// rs_settings_from_v156 takes the functions from the v1.5.6 function table
// an engine's get_api returned. It returns false (and takes nothing) when the
// table does not look like one: its v1.2.0 part must be the one in use.
bool rs_settings_from_v156(const void *table);

// rs_settings_use copies a host's functions; only the first call copies.
void rs_settings_use(const rs_settings_api *api);

// rs_settings_ready reports whether settings can be read.
bool rs_settings_ready(void);

// rs_bind_config_option returns the value of the setting name in the client
// context of a bind, or NULL when it cannot be read (no functions, no
// context, unknown setting). Destroy it with rs_value_destroy.
duckdb_value rs_bind_config_option(duckdb_bind_info info, const char *name);

// rs_settings_value_bool returns a BOOLEAN value.
bool rs_settings_value_bool(duckdb_value v);

#endif
