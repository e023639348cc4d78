// rs.c: the C API table, table-function registration, DuckDB callbacks,
// parameter and value access, and logical types (the vector copy is in
// copy.c). Go state lives behind cgo.Handle values stored as bind/init data.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rs.h"
#include "_cgo_export.h"

// ---- the API table ------------------------------------------------------

// The one definition of the function table. The loadable extension copies
// DuckDB's table into it in the entry point (entry.c); a host that links
// DuckDB itself copies its own (rs_use_api).
DUCKDB_EXTENSION_GLOBAL

static pthread_mutex_t api_mu = PTHREAD_MUTEX_INITIALIZER;
static bool api_set;

bool rs_api_ready(void) {
	// The name is the table's entry (duckdb_extension.h's macro).
	return duckdb_create_table_function != NULL;
}

bool rs_use_api(const void *table, size_t size) {
	if (size != sizeof(duckdb_ext_api)) {
		return false;
	}
	pthread_mutex_lock(&api_mu);
	if (!api_set) {
		// Once: the table is read without a lock by every call, so it is
		// written before the first registration and never again.
		memcpy(&duckdb_ext_api, table, size);
		api_set = true;
	}
	pthread_mutex_unlock(&api_mu);
	return true;
}

// ---- callbacks (trampolines into Go) -------------------------------------

static void rs_delete_handle(void *p) { rsDeleteHandle((uintptr_t)p); }

static void rs_bind_cb(duckdb_bind_info info) { rsBind(info); }
static void rs_stats_bind_cb(duckdb_bind_info info) { rsStatsBind(info); }
static void rs_chunks_bind_cb(duckdb_bind_info info) { rsChunksBind(info); }
static void rs_cache_bind_cb(duckdb_bind_info info) { rsCacheBind(info); }
static void rs_init_cb(duckdb_init_info info) { rsInit(info); }
static void rs_local_init_cb(duckdb_init_info info) { rsLocalInit(info); }
static void rs_function_cb(duckdb_function_info info, duckdb_data_chunk out) { rsFunction(info, out); }

static void add_named(duckdb_table_function f, const char *name, duckdb_type t) {
	duckdb_logical_type lt = duckdb_create_logical_type(t);
	duckdb_table_function_add_named_parameter(f, name, lt);
	duckdb_destroy_logical_type(&lt);
}

// register_scan registers one table function whose init, local init and fill
// are the shared Go ones; bind decides what it produces. It takes ownership
// of the host handle (0: none): DuckDB deletes it with the function.
static bool register_scan(duckdb_connection con, const char *name, duckdb_table_function_bind_t bind, bool scan,
                          uintptr_t host) {
	duckdb_table_function f = duckdb_create_table_function();
	if (host) {
		duckdb_table_function_set_extra_info(f, (void *)host, rs_delete_handle);
	}
	duckdb_table_function_set_name(f, name);
	if (scan) {
		// ANY: a VARCHAR source, or a LIST of URLs or of catalog-row STRUCTs.
		duckdb_logical_type any = duckdb_create_logical_type(DUCKDB_TYPE_ANY);
		duckdb_table_function_add_parameter(f, any);
		duckdb_destroy_logical_type(&any);
		rsAddNamedParameters((uintptr_t)f);
		if (bind == rs_chunks_bind_cb) {
			add_named(f, "shards", DUCKDB_TYPE_BIGINT); // the n of its shard column
		}
	}
	duckdb_table_function_set_bind(f, bind);
	duckdb_table_function_set_init(f, rs_init_cb);
	duckdb_table_function_set_local_init(f, rs_local_init_cb);
	duckdb_table_function_set_function(f, rs_function_cb);
	duckdb_table_function_supports_projection_pushdown(f, true);
	duckdb_state st = duckdb_register_table_function(con, f);
	duckdb_destroy_table_function(&f);
	return st != DuckDBError;
}

bool rs_register(duckdb_connection con, uintptr_t host, char **error) {
	// Each function owns a handle of its own to the one Go Host: DuckDB
	// deletes a function's extra info with the function, which may be at
	// once (a second registration on the same database).
	uintptr_t stats_host = rsShareHandle(host);
	uintptr_t chunks_host = rsShareHandle(host);
	uintptr_t cache_host = rsShareHandle(host);
	if (!register_scan(con, "remote_segments", rs_bind_cb, true, host)) {
		rsDeleteHandle(stats_host);
		rsDeleteHandle(chunks_host);
		rsDeleteHandle(cache_host);
		*error = "remote_segments: could not register table function remote_segments";
		return false;
	}
	// remote_segments_chunks resolves sources as the scan does, with the same host.
	if (!register_scan(con, "remote_segments_chunks", rs_chunks_bind_cb, true, chunks_host)) {
		rsDeleteHandle(stats_host);
		rsDeleteHandle(cache_host);
		*error = "remote_segments: could not register table function remote_segments_chunks";
		return false;
	}
	if (!register_scan(con, "remote_segments_stats", rs_stats_bind_cb, false, stats_host)) {
		rsDeleteHandle(cache_host);
		*error = "remote_segments: could not register table function remote_segments_stats";
		return false;
	}
	if (!register_scan(con, "remote_segments_cache", rs_cache_bind_cb, false, cache_host)) {
		*error = "remote_segments: could not register table function remote_segments_cache";
		return false;
	}
	return true;
}

// rs_add_named_parameter is called back from Go (rsAddNamedParameters) once per
// named parameter, so the list of parameters lives in one Go table.
void rs_add_named_parameter(uintptr_t f, const char *name, duckdb_type t) {
	add_named((duckdb_table_function)f, name, t);
}

// ---- parameter access ---------------------------------------------------

// rs_bind_get_named_varchar returns named parameter name as a string the
// caller frees with rs_free (NULL when it is NULL); *present says whether
// the query gave it.
char *rs_bind_get_named_varchar(duckdb_bind_info info, const char *name, bool *present) {
	duckdb_value v = duckdb_bind_get_named_parameter(info, name);
	*present = v != NULL;
	if (!v) {
		return NULL;
	}
	char *s = duckdb_is_null_value(v) ? NULL : duckdb_get_varchar(v);
	duckdb_destroy_value(&v);
	return s;
}

void rs_bind_set_error(duckdb_bind_info info, const char *error) { duckdb_bind_set_error(info, error); }
uintptr_t rs_bind_get_host(duckdb_bind_info info) { return (uintptr_t)duckdb_bind_get_extra_info(info); }
void rs_bind_set_data(duckdb_bind_info info, uintptr_t h) { duckdb_bind_set_bind_data(info, (void *)h, rs_delete_handle); }
void rs_bind_set_cardinality(duckdb_bind_info info, idx_t rows, bool exact) { duckdb_bind_set_cardinality(info, rows, exact); }
uintptr_t rs_init_get_bind_data(duckdb_init_info info) { return (uintptr_t)duckdb_init_get_bind_data(info); }
idx_t rs_init_column_count(duckdb_init_info info) { return duckdb_init_get_column_count(info); }
idx_t rs_init_column_index(duckdb_init_info info, idx_t i) { return duckdb_init_get_column_index(info, i); }
void rs_init_set_data(duckdb_init_info info, uintptr_t h) { duckdb_init_set_init_data(info, (void *)h, rs_delete_handle); }
void rs_local_init_set_data(duckdb_init_info info, uintptr_t h) { duckdb_init_set_init_data(info, (void *)h, rs_delete_handle); }
void rs_init_set_max_threads(duckdb_init_info info, idx_t n) { duckdb_init_set_max_threads(info, n); }
void rs_init_set_error(duckdb_init_info info, const char *error) { duckdb_init_set_error(info, error); }
uintptr_t rs_function_get_init_data(duckdb_function_info info) { return (uintptr_t)duckdb_function_get_init_data(info); }
uintptr_t rs_function_get_local_data(duckdb_function_info info) { return (uintptr_t)duckdb_function_get_local_init_data(info); }
void rs_function_set_error(duckdb_function_info info, const char *error) { duckdb_function_set_error(info, error); }
void rs_data_chunk_set_size(duckdb_data_chunk out, idx_t n) { duckdb_data_chunk_set_size(out, n); }
void rs_free(void *p) { duckdb_free(p); }
idx_t rs_vector_size(void) { return duckdb_vector_size(); }

duckdb_value rs_bind_get_value(duckdb_bind_info info, idx_t index) { return duckdb_bind_get_parameter(info, index); }
void rs_value_destroy(duckdb_value v) { duckdb_destroy_value(&v); }
duckdb_type rs_value_type(duckdb_value v) {
	duckdb_logical_type t = duckdb_get_value_type(v); // owned by the value
	return duckdb_get_type_id(t);
}
bool rs_value_is_null(duckdb_value v) { return duckdb_is_null_value(v); }
char *rs_value_varchar(duckdb_value v) { return duckdb_get_varchar(v); }
int64_t rs_value_int64(duckdb_value v) { return duckdb_get_int64(v); }
uint64_t rs_value_uint64(duckdb_value v) { return duckdb_get_uint64(v); }
idx_t rs_value_list_size(duckdb_value v) { return duckdb_get_list_size(v); }
duckdb_value rs_value_list_child(duckdb_value v, idx_t i) { return duckdb_get_list_child(v, i); }
idx_t rs_value_struct_size(duckdb_value v) { return duckdb_struct_type_child_count(duckdb_get_value_type(v)); }
char *rs_value_struct_name(duckdb_value v, idx_t i) { return duckdb_struct_type_child_name(duckdb_get_value_type(v), i); }
duckdb_value rs_value_struct_child(duckdb_value v, idx_t i) { return duckdb_get_struct_child(v, i); }

// ---- logical types ------------------------------------------------------

duckdb_logical_type rs_type_primitive(duckdb_type t) { return duckdb_create_logical_type(t); }
duckdb_logical_type rs_type_decimal(uint8_t width, uint8_t scale) { return duckdb_create_decimal_type(width, scale); }
duckdb_logical_type rs_type_list(duckdb_logical_type child) { return duckdb_create_list_type(child); }
duckdb_logical_type rs_type_array(duckdb_logical_type child, idx_t size) { return duckdb_create_array_type(child, size); }
duckdb_logical_type rs_type_map(duckdb_logical_type key, duckdb_logical_type value) {
	return duckdb_create_map_type(key, value);
}
duckdb_logical_type rs_type_struct(duckdb_logical_type *children, const char **names, idx_t n) {
	return duckdb_create_struct_type(children, names, n);
}
void rs_type_destroy(duckdb_logical_type t) { duckdb_destroy_logical_type(&t); }
void rs_bind_add_column_type(duckdb_bind_info info, const char *name, duckdb_logical_type t) {
	duckdb_bind_add_result_column(info, name, t);
}
