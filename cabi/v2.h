// v2.h: the DuckDB 2.0 edition's adapter (build tag duckdb_v2): what its C
// files (v2_entry.c, v2_shims.c, v2_values.c, v2_types.c, v2_extras.c) share.
// See v2_entry.c.
#ifndef RS_V2_H
#define RS_V2_H

#include <string.h>

#include "rs.h"
#include "duckdb_v2_types.h"

// Rows per output chunk this edition assumes (DuckDB's default
// STANDARD_VECTOR_SIZE); exec checks the engine's chunk capacity against it.
#define RS_V2_VECTOR_SIZE 2048

// What a V1 duckdb_bind_info points at in this edition.
typedef struct rs_v2_bind {
	duckdb_v2_function_bind_info_handle args;
	duckdb_v2_table_function_bind_info_handle info;
	duckdb_v2_context_handle ctx;
	duckdb_v2_error_info_handle *err;
} rs_v2_bind;

// What a V1 duckdb_init_info points at: a global or a local init.
typedef struct rs_v2_init {
	duckdb_v2_table_function_init_global_info_handle global;
	duckdb_v2_table_function_init_local_info_handle local;
	duckdb_v2_error_info_handle *err;
} rs_v2_init;

// What a V1 duckdb_function_info points at.
typedef struct rs_v2_exec {
	duckdb_v2_table_function_exec_info_handle info;
	duckdb_v2_error_info_handle *err;
} rs_v2_exec;

void rs_v2_set_error(duckdb_v2_error_info_handle *err, const char *msg);

static inline duckdb_v2_str v2str(const char *s) { return (duckdb_v2_str){s, s ? strlen(s) : 0}; }

// The factory and the error slot of the V2 callback running on this thread
// (v2_entry.c keeps them in thread-locals): the shims that have no info
// argument (type constructors) use them.
duckdb_v2_factory_handle rs_v2_factory(void);
duckdb_v2_error_info_handle *rs_v2_cur_err(void);

// The V1 function table the core is given (v2_shims.c, v2_values.c).
void rs_v2_fill_v1_shims(duckdb_ext_api_v1 *t);
void rs_v2_fill_value_shims(duckdb_ext_api_v1 *t);
duckdb_logical_type rs_v2_create_logical_type(duckdb_type type);
void rs_v2_destroy_logical_type(duckdb_logical_type *t);
void rs_v2_add_named_parameter(duckdb_table_function f, const char *name, duckdb_logical_type type);

// rs_v2_value_text returns a value's text (VARCHAR as is, others as DuckDB
// prints them) in malloc'd memory.
char *rs_v2_value_text(duckdb_v2_value_handle v);

// SQL type names for the V1 type ids the core uses, and back.
const char *rs_v2_type_name(duckdb_type t);
duckdb_type rs_v2_type_from_text(const char *text);

// The 2.0-only parts (v2_extras.c): filter pushdown, progress, partitions on
// the scan function, and the remote_segments_<name> settings.
bool rs_v2_register_scan_extras(duckdb_v2_table_function_handle f, duckdb_v2_error_info_handle *err);
void rs_v2_register_settings(duckdb_v2_extension_handle ext, duckdb_v2_context_handle ctx, duckdb_v2_error_info_handle *err);

// Settings (v2_extras.c).
char *rs_v2_setting(duckdb_bind_info info, const char *name);
bool rs_v2_add_setting(duckdb_v2_extension_handle ext, duckdb_v2_context_handle ctx, const char *name,
                       const char *param, const char *description, duckdb_type t, duckdb_v2_error_info_handle *err);

// rs_v2_use_duckdb_settings makes the core's reader of DuckDB's settings
// (settings.h: the sandbox) read the V2 context's config.
void rs_v2_use_duckdb_settings(void);

#endif
