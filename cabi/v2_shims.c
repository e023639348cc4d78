//go:build duckdb_v2

// v2_shims.c: the V1 shims for info handles, vectors and data chunks in the
// DuckDB 2.0 edition (see v2_entry.c), and the table of all V1 shims the
// core is given (values and logical types: v2_values.c).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs.h"
#include "duckdb_v2_types.h"
#include "duckdb_ext_api_v2.h"
#include "v2.h"
#include "_cgo_export.h"

extern duckdb_ext_api_v2 rs_v2;

// ---- V1 info handles over V2 ------------------------------------------------

static void delete_handle(void *p) { rsDeleteHandle((uintptr_t)p); }

static void *bind_extra_info(duckdb_bind_info info) {
	void *p = NULL;
	rs_v2.duckdb_v2_function_bind_get_user_data(((rs_v2_bind *)info)->args, &p, NULL);
	return p;
}
static duckdb_value bind_get_parameter(duckdb_bind_info info, idx_t index) {
	duckdb_v2_value_handle v = NULL;
	rs_v2.duckdb_v2_function_bind_get_arg_value(((rs_v2_bind *)info)->args, index, &v, NULL);
	return (duckdb_value)v;
}
static duckdb_value bind_get_named_parameter(duckdb_bind_info info, const char *name) {
	rs_v2_bind *b = (rs_v2_bind *)info;
	duckdb_v2_identifier_t id = v2str(name);
	idx_t index = 0;
	bool found = false;
	if (rs_v2.duckdb_v2_function_bind_get_arg_index(b->args, &id, &index, &found, NULL) != DUCKDB_V2_ERROR_NONE || !found) {
		return NULL;
	}
	duckdb_v2_value_handle v = NULL;
	rs_v2.duckdb_v2_function_bind_get_arg_value(b->args, index, &v, NULL);
	if (v) {
		// A named parameter the query did not give reads as its (NULL)
		// default: absent, as in the V1 API.
		bool null = false;
		rs_v2.duckdb_v2_value_is_null(v, &null, NULL);
		if (null) {
			rs_v2.duckdb_v2_value_destroy(&v);
			return NULL;
		}
	}
	return (duckdb_value)v;
}
static void bind_add_result_column(duckdb_bind_info info, const char *name, duckdb_logical_type type) {
	duckdb_v2_identifier_t id = v2str(name);
	rs_v2.duckdb_v2_table_function_bind_add_result_column(((rs_v2_bind *)info)->info, &id,
	                                                       (duckdb_v2_logical_type_handle)type, ((rs_v2_bind *)info)->err);
}
static void bind_set_error(duckdb_bind_info info, const char *error) { rs_v2_set_error(((rs_v2_bind *)info)->err, error); }
static void bind_set_bind_data(duckdb_bind_info info, void *data, duckdb_delete_callback_t destroy) {
	duckdb_v2_opaque o = {data, destroy, NULL};
	rs_v2.duckdb_v2_function_bind_set_bind_data(((rs_v2_bind *)info)->args, &o, ((rs_v2_bind *)info)->err);
}
static void bind_set_cardinality(duckdb_bind_info info, idx_t rows, bool exact) {
	rs_v2.duckdb_v2_table_function_bind_set_cardinality(((rs_v2_bind *)info)->info, rows, exact, NULL);
}

static void *init_get_bind_data(duckdb_init_info info) {
	rs_v2_init *i = (rs_v2_init *)info;
	void *p = NULL;
	if (i->local) {
		rs_v2.duckdb_v2_table_function_init_local_get_bind_data(i->local, &p, NULL);
	} else {
		rs_v2.duckdb_v2_table_function_init_global_get_bind_data(i->global, &p, NULL);
	}
	return p;
}
static idx_t init_get_column_count(duckdb_init_info info) {
	idx_t n = 0;
	rs_v2.duckdb_v2_table_function_init_global_get_column_count(((rs_v2_init *)info)->global, &n, NULL);
	return n;
}
static idx_t init_get_column_index(duckdb_init_info info, idx_t i) {
	idx_t c = 0;
	rs_v2.duckdb_v2_table_function_init_global_get_column_index(((rs_v2_init *)info)->global, i, &c, NULL);
	return c;
}
static void init_set_init_data(duckdb_init_info info, void *data, duckdb_delete_callback_t destroy) {
	rs_v2_init *i = (rs_v2_init *)info;
	duckdb_v2_opaque o = {data, destroy, NULL};
	if (i->local) {
		rs_v2.duckdb_v2_table_function_init_local_set_local_state(i->local, &o, i->err);
	} else {
		rs_v2.duckdb_v2_table_function_init_global_set_global_state(i->global, &o, i->err);
	}
}
static void init_set_max_threads(duckdb_init_info info, idx_t n) {
	rs_v2.duckdb_v2_table_function_init_global_set_max_threads(((rs_v2_init *)info)->global, n, NULL);
}
static void init_set_error(duckdb_init_info info, const char *error) { rs_v2_set_error(((rs_v2_init *)info)->err, error); }

static void *function_get_bind_data(duckdb_function_info info) {
	void *p = NULL;
	rs_v2.duckdb_v2_table_function_exec_get_bind_data(((rs_v2_exec *)info)->info, &p, NULL);
	return p;
}
static void *function_get_init_data(duckdb_function_info info) {
	void *p = NULL;
	rs_v2.duckdb_v2_table_function_exec_get_global_state(((rs_v2_exec *)info)->info, &p, NULL);
	return p;
}
static void *function_get_local_init_data(duckdb_function_info info) {
	void *p = NULL;
	rs_v2.duckdb_v2_table_function_exec_get_local_state(((rs_v2_exec *)info)->info, &p, NULL);
	return p;
}
static void function_set_error(duckdb_function_info info, const char *error) { rs_v2_set_error(((rs_v2_exec *)info)->err, error); }

// ---- vectors and chunks ---------------------------------------------------------

static duckdb_vector chunk_get_vector(duckdb_data_chunk chunk, idx_t i) {
	duckdb_v2_vector_handle v = NULL;
	rs_v2.duckdb_v2_data_chunk_get_vector((duckdb_v2_data_chunk_handle)chunk, i, &v, NULL);
	return (duckdb_vector)v;
}
// The row count of a V2 output chunk is its first vector's size.
static void chunk_set_size(duckdb_data_chunk chunk, idx_t n) {
	duckdb_v2_vector_handle v = NULL;
	idx_t count = 0;
	rs_v2.duckdb_v2_data_chunk_get_vector_count((duckdb_v2_data_chunk_handle)chunk, &count, NULL);
	if (count > 0 && rs_v2.duckdb_v2_data_chunk_get_vector((duckdb_v2_data_chunk_handle)chunk, 0, &v, NULL) == DUCKDB_V2_ERROR_NONE) {
		rs_v2.duckdb_v2_vector_set_size(v, n, NULL);
	}
}
static void *vector_get_data(duckdb_vector vec) {
	void *p = NULL;
	rs_v2.duckdb_v2_vector_get_data_mutable((duckdb_v2_vector_handle)vec, &p, NULL);
	return p;
}
static uint64_t *vector_get_validity(duckdb_vector vec) {
	uint64_t *m = NULL;
	rs_v2.duckdb_v2_vector_flat_get_validity_mutable((duckdb_v2_vector_handle)vec, &m, NULL);
	return m;
}
static void vector_ensure_validity_writable(duckdb_vector vec) { (void)vec; } // the mutable getter does it
static void vector_assign_string_element_len(duckdb_vector vec, idx_t row, const char *s, idx_t len) {
	duckdb_v2_bytes *slots = (duckdb_v2_bytes *)vector_get_data(vec);
	duckdb_v2_bytes *b = &slots[row];
	memset(b, 0, sizeof(*b));
	b->value.pointer.length = (uint32_t)len;
	if (len <= 12) {
		memcpy(b->value.inlined.inlined, s, len);
		return;
	}
	duckdb_v2_arena_handle arena = NULL;
	uint8_t *p = NULL;
	if (rs_v2.duckdb_v2_vector_get_arena((duckdb_v2_vector_handle)vec, &arena, NULL) != DUCKDB_V2_ERROR_NONE ||
	    rs_v2.duckdb_v2_arena_allocate(arena, len, &p, NULL) != DUCKDB_V2_ERROR_NONE || !p) {
		b->value.pointer.length = 0; // out of memory: an empty string beats a crash
		return;
	}
	memcpy(p, s, len);
	memcpy(b->value.pointer.prefix, s, 4);
	b->value.pointer.ptr = (char *)p;
}
static duckdb_vector vector_child(duckdb_vector vec, idx_t i) {
	duckdb_v2_vector_handle c = NULL;
	rs_v2.duckdb_v2_vector_get_child((duckdb_v2_vector_handle)vec, i, &c, NULL);
	return (duckdb_vector)c;
}
static duckdb_vector list_vector_get_child(duckdb_vector vec) { return vector_child(vec, 0); }
static duckdb_vector array_vector_get_child(duckdb_vector vec) { return vector_child(vec, 0); }
static idx_t list_vector_get_size(duckdb_vector vec) {
	idx_t n = 0;
	rs_v2.duckdb_v2_vector_get_size((duckdb_v2_vector_handle)vector_child(vec, 0), &n, NULL);
	return n;
}
static duckdb_state list_vector_set_size(duckdb_vector vec, idx_t n) {
	return rs_v2.duckdb_v2_vector_set_size((duckdb_v2_vector_handle)vector_child(vec, 0), n, NULL) == DUCKDB_V2_ERROR_NONE
	           ? DuckDBSuccess
	           : DuckDBError;
}
// Setting a V2 child vector's size makes room for that many rows.
static duckdb_state list_vector_reserve(duckdb_vector vec, idx_t n) {
	idx_t size = list_vector_get_size(vec);
	if (n <= size) {
		return DuckDBSuccess;
	}
	duckdb_state st = list_vector_set_size(vec, n);
	list_vector_set_size(vec, size);
	return st;
}
static idx_t vector_size(void) { return RS_V2_VECTOR_SIZE; }

// add_named_parameter declares a NAMED_ONLY parameter (rsAddNamedParameters).
void rs_v2_add_named_parameter(duckdb_table_function f, const char *name, duckdb_logical_type type) {
	duckdb_v2_function_signature_handle sig = NULL;
	duckdb_v2_identifier_t id = v2str(name);
	// A named parameter needs a default to be optional: NULL, which
	// bind_get_named_parameter reads as absent.
	duckdb_v2_value_handle null = NULL;
	rs_v2.duckdb_v2_value_create_null(rs_v2_factory(), (duckdb_v2_logical_type_handle)type, &null, NULL);
	if (rs_v2.duckdb_v2_table_function_get_signature((duckdb_v2_table_function_handle)f, &sig, NULL) == DUCKDB_V2_ERROR_NONE) {
		rs_v2.duckdb_v2_function_signature_add_parameter(sig, &id, (duckdb_v2_logical_type_handle)type, null,
		                                                  DUCKDB_V2_FUNCTION_PARAMETER_KIND_NAMED_ONLY, NULL);
	}
	if (null) {
		rs_v2.duckdb_v2_value_destroy(&null);
	}
}

// duckdb_extension.h turns these names into table entries; here they are
// the table's member names.
#undef duckdb_array_vector_get_child
#undef duckdb_bind_add_result_column
#undef duckdb_bind_get_extra_info
#undef duckdb_bind_get_named_parameter
#undef duckdb_bind_get_parameter
#undef duckdb_bind_set_bind_data
#undef duckdb_bind_set_cardinality
#undef duckdb_bind_set_error
#undef duckdb_data_chunk_get_vector
#undef duckdb_data_chunk_set_size
#undef duckdb_function_get_bind_data
#undef duckdb_function_get_init_data
#undef duckdb_function_get_local_init_data
#undef duckdb_function_set_error
#undef duckdb_init_get_bind_data
#undef duckdb_init_get_column_count
#undef duckdb_init_get_column_index
#undef duckdb_init_set_error
#undef duckdb_init_set_init_data
#undef duckdb_init_set_max_threads
#undef duckdb_list_vector_get_child
#undef duckdb_list_vector_get_size
#undef duckdb_list_vector_reserve
#undef duckdb_list_vector_set_size
#undef duckdb_struct_vector_get_child
#undef duckdb_table_function_add_named_parameter
#undef duckdb_vector_assign_string_element_len
#undef duckdb_vector_ensure_validity_writable
#undef duckdb_vector_get_data
#undef duckdb_vector_get_validity
#undef duckdb_vector_size

// rs_v2_fill_v1_shims points every V1 entry the core uses at its V2 shim; the
// rest stay NULL (a call to one would crash at once, never silently misbehave).
void rs_v2_fill_v1_shims(duckdb_ext_api_v1 *t) {
	memset(t, 0, sizeof(*t));
	t->duckdb_bind_get_extra_info = bind_extra_info;
	t->duckdb_bind_get_parameter = bind_get_parameter;
	t->duckdb_bind_get_named_parameter = bind_get_named_parameter;
	t->duckdb_bind_add_result_column = bind_add_result_column;
	t->duckdb_bind_set_error = bind_set_error;
	t->duckdb_bind_set_bind_data = bind_set_bind_data;
	t->duckdb_bind_set_cardinality = bind_set_cardinality;
	t->duckdb_init_get_bind_data = init_get_bind_data;
	t->duckdb_init_get_column_count = init_get_column_count;
	t->duckdb_init_get_column_index = init_get_column_index;
	t->duckdb_init_set_init_data = init_set_init_data;
	t->duckdb_init_set_max_threads = init_set_max_threads;
	t->duckdb_init_set_error = init_set_error;
	t->duckdb_function_get_bind_data = function_get_bind_data;
	t->duckdb_function_get_init_data = function_get_init_data;
	t->duckdb_function_get_local_init_data = function_get_local_init_data;
	t->duckdb_function_set_error = function_set_error;
	t->duckdb_data_chunk_get_vector = chunk_get_vector;
	t->duckdb_data_chunk_set_size = chunk_set_size;
	t->duckdb_vector_get_data = vector_get_data;
	t->duckdb_vector_get_validity = vector_get_validity;
	t->duckdb_vector_ensure_validity_writable = vector_ensure_validity_writable;
	t->duckdb_vector_assign_string_element_len = vector_assign_string_element_len;
	t->duckdb_list_vector_get_child = list_vector_get_child;
	t->duckdb_list_vector_get_size = list_vector_get_size;
	t->duckdb_list_vector_set_size = list_vector_set_size;
	t->duckdb_list_vector_reserve = list_vector_reserve;
	t->duckdb_array_vector_get_child = array_vector_get_child;
	t->duckdb_struct_vector_get_child = vector_child;
	t->duckdb_vector_size = vector_size;
	t->duckdb_table_function_add_named_parameter = rs_v2_add_named_parameter;
	rs_v2_fill_value_shims(t);
}
