//go:build duckdb_v2

// v2_entry.c: the DuckDB 2.0 edition's entry point, remote_segments_init_c_api_v2,
// and its thin adapter onto the one core.
//
// The core (rs.c's registration helpers and copy kernels, and the Go bind,
// init and fill) calls DuckDB through the C extension API v1.2.0 function
// table. This edition fills that table with shims over the V2 C API (the
// names and the handles differ: duckdb_v2_*, an error slot per call), so the
// core runs unchanged: no second copy of any kernel. A V1 "info" handle seen
// by the core is here a pointer to one of the small structs below, which
// carry the V2 callback's handles; a V1 vector or data chunk is the V2 handle
// itself.
//
// Each V2 callback runs the core on the calling thread, so the trampolines
// keep the callback's context and error slot in thread-locals for the shims
// that have no info argument (type constructors): they are set on entry and
// cleared on return.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs.h"
#include "duckdb_v2_types.h"
#include "duckdb_ext_api_v2.h"
#include "v2.h"
#include "_cgo_export.h"

// The V2 function table, copied from DuckDB's get_api at load.
duckdb_ext_api_v2 rs_v2;

static __thread duckdb_v2_context_handle cur_ctx;
static __thread duckdb_v2_error_info_handle *cur_err;

static duckdb_v2_str v2str(const char *s) { return (duckdb_v2_str){s, s ? strlen(s) : 0}; }

// set_error reports msg through a V2 error slot.
void rs_v2_set_error(duckdb_v2_error_info_handle *err, const char *msg) {
	if (!err || !*err) {
		return;
	}
	duckdb_v2_str s = v2str(msg);
	rs_v2.duckdb_v2_error_info_set_code(*err, 1 /* DUCKDB_V2_ERROR_API */);
	rs_v2.duckdb_v2_error_info_set_text(*err, &s);
}

static duckdb_v2_factory_handle factory(void) {
	duckdb_v2_factory_handle f = NULL;
	if (cur_ctx) {
		rs_v2.duckdb_v2_context_get_factory(cur_ctx, &f, NULL);
	}
	return f;
}

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

// ---- values ------------------------------------------------------------------------

static void destroy_value(duckdb_value *v) {
	if (v && *v) {
		rs_v2.duckdb_v2_value_destroy((duckdb_v2_value_handle *)v);
		*v = NULL;
	}
}
static bool get_bool(duckdb_value v) {
	bool b = false;
	rs_v2.duckdb_v2_value_get_bool((duckdb_v2_value_handle)v, &b, NULL);
	return b;
}
static bool is_null_value(duckdb_value v) {
	bool null = true;
	rs_v2.duckdb_v2_value_is_null((duckdb_v2_value_handle)v, &null, NULL);
	return null;
}
// rs_v2_value_text returns v as text in malloc'd memory (the caller frees it).
char *rs_v2_value_text(duckdb_v2_value_handle v) {
	duckdb_v2_str s = {0};
	if (rs_v2.duckdb_v2_value_get_varchar(v, &s, NULL) == DUCKDB_V2_ERROR_NONE) {
		char *out = malloc(s.len + 1);
		memcpy(out, s.ptr ? s.ptr : "", s.len);
		out[s.len] = 0;
		return out;
	}
	idx_t n = 0;
	rs_v2.duckdb_v2_value_to_string(v, NULL, 0, &n, NULL);
	char *out = calloc(n + 1, 1);
	rs_v2.duckdb_v2_value_to_string(v, out, n + 1, &n, NULL);
	return out;
}
static char *get_varchar(duckdb_value v) { return rs_v2_value_text((duckdb_v2_value_handle)v); }
static int64_t get_int64(duckdb_value v) {
	int64_t n = 0;
	if (rs_v2.duckdb_v2_value_get_bigint((duckdb_v2_value_handle)v, &n, NULL) == DUCKDB_V2_ERROR_NONE) {
		return n;
	}
	char *s = rs_v2_value_text((duckdb_v2_value_handle)v);
	n = strtoll(s, NULL, 10);
	free(s);
	return n;
}
static uint64_t get_uint64(duckdb_value v) {
	char *s = rs_v2_value_text((duckdb_v2_value_handle)v);
	uint64_t n = strtoull(s, NULL, 10);
	free(s);
	return n;
}
// A value's "logical type", for the core's value readers, is the value
// itself: the readers below ask it for its type text.
static duckdb_logical_type get_value_type(duckdb_value v) { return (duckdb_logical_type)v; }

static duckdb_v2_logical_type_handle value_type(duckdb_logical_type v) {
	duckdb_v2_logical_type_handle t = NULL;
	rs_v2.duckdb_v2_value_get_logical_type((duckdb_v2_value_handle)v, &t, NULL);
	return t;
}
static duckdb_type get_type_id(duckdb_logical_type v) {
	duckdb_v2_logical_type_handle t = value_type(v);
	if (!t) {
		return DUCKDB_TYPE_INVALID;
	}
	char buf[256] = {0};
	idx_t n = 0;
	rs_v2.duckdb_v2_logical_type_to_text(t, buf, sizeof(buf) - 1, &n, NULL);
	rs_v2.duckdb_v2_logical_type_destroy(&t);
	buf[n < sizeof(buf) ? n : sizeof(buf) - 1] = 0;
	return rs_v2_type_from_text(buf);
}
static idx_t get_list_size(duckdb_value v) {
	idx_t n = 0;
	rs_v2.duckdb_v2_value_get_child_count((duckdb_v2_value_handle)v, &n, NULL);
	return n;
}
static duckdb_value get_list_child(duckdb_value v, idx_t i) {
	duckdb_v2_value_handle c = NULL;
	rs_v2.duckdb_v2_value_get_child((duckdb_v2_value_handle)v, i, &c, NULL);
	return (duckdb_value)c;
}
static idx_t struct_type_child_count(duckdb_logical_type v) { return get_list_size((duckdb_value)v); }
static char *struct_type_child_name(duckdb_logical_type v, idx_t i) {
	duckdb_v2_logical_type_handle t = value_type(v);
	duckdb_v2_identifier_t name = {0};
	duckdb_v2_value_handle pv = NULL;
	char *out = NULL;
	if (t && rs_v2.duckdb_v2_logical_type_get_param(t, i, &name, &pv, NULL) == DUCKDB_V2_ERROR_NONE) {
		out = malloc(name.len + 1);
		memcpy(out, name.ptr ? name.ptr : "", name.len);
		out[name.len] = 0;
	}
	if (pv) {
		rs_v2.duckdb_v2_value_destroy(&pv);
	}
	if (t) {
		rs_v2.duckdb_v2_logical_type_destroy(&t);
	}
	return out ? out : calloc(1, 1);
}
static duckdb_value get_struct_child(duckdb_value v, idx_t i) { return get_list_child(v, i); }

// ---- logical types: built from their SQL text ------------------------------------

static duckdb_logical_type type_from_text(const char *text) {
	duckdb_v2_logical_type_handle t = NULL;
	duckdb_v2_str s = v2str(text);
	if (rs_v2.duckdb_v2_factory_create_type_from_text(factory(), &s, &t, cur_err) != DUCKDB_V2_ERROR_NONE) {
		return NULL;
	}
	return (duckdb_logical_type)t;
}
// type_text returns t's SQL text in malloc'd memory.
static char *type_text(duckdb_logical_type t) {
	idx_t n = 0;
	rs_v2.duckdb_v2_logical_type_to_text((duckdb_v2_logical_type_handle)t, NULL, 0, &n, NULL);
	char *out = calloc(n + 1, 1);
	rs_v2.duckdb_v2_logical_type_to_text((duckdb_v2_logical_type_handle)t, out, n + 1, &n, NULL);
	return out;
}
static duckdb_logical_type create_logical_type(duckdb_type type) {
	const char *name = rs_v2_type_name(type);
	return name ? type_from_text(name) : NULL;
}
static duckdb_logical_type create_decimal_type(uint8_t width, uint8_t scale) {
	char buf[32];
	snprintf(buf, sizeof buf, "DECIMAL(%u,%u)", width, scale);
	return type_from_text(buf);
}
static duckdb_logical_type create_list_type(duckdb_logical_type child) {
	char *c = type_text(child);
	size_t n = strlen(c) + 3;
	char *buf = malloc(n);
	snprintf(buf, n, "%s[]", c);
	duckdb_logical_type t = type_from_text(buf);
	free(buf);
	free(c);
	return t;
}
static duckdb_logical_type create_array_type(duckdb_logical_type child, idx_t size) {
	char *c = type_text(child);
	size_t n = strlen(c) + 24;
	char *buf = malloc(n);
	snprintf(buf, n, "%s[%llu]", c, (unsigned long long)size);
	duckdb_logical_type t = type_from_text(buf);
	free(buf);
	free(c);
	return t;
}
static duckdb_logical_type create_map_type(duckdb_logical_type key, duckdb_logical_type value) {
	char *k = type_text(key), *v = type_text(value);
	size_t n = strlen(k) + strlen(v) + 8;
	char *buf = malloc(n);
	snprintf(buf, n, "MAP(%s, %s)", k, v);
	duckdb_logical_type t = type_from_text(buf);
	free(buf);
	free(k);
	free(v);
	return t;
}
static duckdb_logical_type create_struct_type(duckdb_logical_type *members, const char **names, idx_t n) {
	// STRUCT("name" type, ...): names quoted, their quotes doubled.
	size_t cap = 16, len = 0;
	char *buf = malloc(cap);
	len += (size_t)snprintf(buf, cap, "STRUCT(");
	for (idx_t i = 0; i < n; i++) {
		char *ty = type_text(members[i]);
		size_t need = len + 2 * strlen(names[i]) + strlen(ty) + 8;
		if (need > cap) {
			cap = need * 2;
			buf = realloc(buf, cap);
		}
		if (i) {
			buf[len++] = ',';
			buf[len++] = ' ';
		}
		buf[len++] = '"';
		for (const char *p = names[i]; *p; p++) {
			if (*p == '"') {
				buf[len++] = '"';
			}
			buf[len++] = *p;
		}
		buf[len++] = '"';
		buf[len++] = ' ';
		memcpy(buf + len, ty, strlen(ty));
		len += strlen(ty);
		free(ty);
	}
	if (len + 2 > cap) {
		buf = realloc(buf, len + 2);
	}
	buf[len++] = ')';
	buf[len] = 0;
	duckdb_logical_type t = type_from_text(buf);
	free(buf);
	return t;
}
static void destroy_logical_type(duckdb_logical_type *t) {
	if (t && *t) {
		rs_v2.duckdb_v2_logical_type_destroy((duckdb_v2_logical_type_handle *)t);
		*t = NULL;
	}
}

static void shim_free(void *p) { free(p); }

// add_named_parameter declares a NAMED_ONLY parameter (rsAddNamedParameters).
static void table_function_add_named_parameter(duckdb_table_function f, const char *name, duckdb_logical_type type) {
	duckdb_v2_function_signature_handle sig = NULL;
	duckdb_v2_identifier_t id = v2str(name);
	// A named parameter needs a default to be optional: NULL, which
	// bind_get_named_parameter reads as absent.
	duckdb_v2_value_handle null = NULL;
	rs_v2.duckdb_v2_value_create_null(factory(), (duckdb_v2_logical_type_handle)type, &null, NULL);
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
#undef duckdb_create_array_type
#undef duckdb_create_decimal_type
#undef duckdb_create_list_type
#undef duckdb_create_logical_type
#undef duckdb_create_map_type
#undef duckdb_create_struct_type
#undef duckdb_data_chunk_get_vector
#undef duckdb_data_chunk_set_size
#undef duckdb_destroy_logical_type
#undef duckdb_destroy_value
#undef duckdb_free
#undef duckdb_function_get_bind_data
#undef duckdb_function_get_init_data
#undef duckdb_function_get_local_init_data
#undef duckdb_function_set_error
#undef duckdb_get_int64
#undef duckdb_get_list_child
#undef duckdb_get_list_size
#undef duckdb_get_struct_child
#undef duckdb_get_type_id
#undef duckdb_get_uint64
#undef duckdb_get_value_type
#undef duckdb_get_varchar
#undef duckdb_init_get_bind_data
#undef duckdb_init_get_column_count
#undef duckdb_init_get_column_index
#undef duckdb_init_set_error
#undef duckdb_init_set_init_data
#undef duckdb_init_set_max_threads
#undef duckdb_is_null_value
#undef duckdb_get_bool
#undef duckdb_list_vector_get_child
#undef duckdb_list_vector_get_size
#undef duckdb_list_vector_reserve
#undef duckdb_list_vector_set_size
#undef duckdb_struct_type_child_count
#undef duckdb_struct_type_child_name
#undef duckdb_struct_vector_get_child
#undef duckdb_table_function_add_named_parameter
#undef duckdb_vector_assign_string_element_len
#undef duckdb_vector_ensure_validity_writable
#undef duckdb_vector_get_data
#undef duckdb_vector_get_validity
#undef duckdb_vector_size

// fill_v1_shims points every V1 entry the core uses at its V2 shim; the rest
// stay NULL (a call to one would crash at once, never silently misbehave).
static void fill_v1_shims(duckdb_ext_api_v1 *t) {
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
	t->duckdb_destroy_value = destroy_value;
	t->duckdb_is_null_value = is_null_value;
	t->duckdb_get_bool = get_bool;
	t->duckdb_get_varchar = get_varchar;
	t->duckdb_get_int64 = get_int64;
	t->duckdb_get_uint64 = get_uint64;
	t->duckdb_get_value_type = get_value_type;
	t->duckdb_get_type_id = get_type_id;
	t->duckdb_get_list_size = get_list_size;
	t->duckdb_get_list_child = get_list_child;
	t->duckdb_struct_type_child_count = struct_type_child_count;
	t->duckdb_struct_type_child_name = struct_type_child_name;
	t->duckdb_get_struct_child = get_struct_child;
	t->duckdb_create_logical_type = create_logical_type;
	t->duckdb_create_decimal_type = create_decimal_type;
	t->duckdb_create_list_type = create_list_type;
	t->duckdb_create_array_type = create_array_type;
	t->duckdb_create_map_type = create_map_type;
	t->duckdb_create_struct_type = create_struct_type;
	t->duckdb_destroy_logical_type = destroy_logical_type;
	t->duckdb_free = shim_free;
	t->duckdb_table_function_add_named_parameter = table_function_add_named_parameter;
}

// ---- callbacks: V2 trampolines into the core ------------------------------------

#define ENTER(ctx, err)                                                                                                \
	duckdb_v2_context_handle saved_ctx = cur_ctx;                                                                  \
	duckdb_v2_error_info_handle *saved_err = cur_err;                                                              \
	cur_ctx = (ctx);                                                                                               \
	cur_err = (err)
#define LEAVE()                                                                                                        \
	cur_ctx = saved_ctx;                                                                                           \
	cur_err = saved_err

static void scan_bind(duckdb_v2_function_bind_info_handle args, duckdb_v2_table_function_bind_info_handle info,
                      duckdb_v2_context_handle ctx, duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	rs_v2_bind b = {args, info, ctx, err};
	rsV2Bind((duckdb_bind_info)&b);
	LEAVE();
}
static void stats_bind(duckdb_v2_function_bind_info_handle args, duckdb_v2_table_function_bind_info_handle info,
                       duckdb_v2_context_handle ctx, duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	rs_v2_bind b = {args, info, ctx, err};
	rsStatsBind((duckdb_bind_info)&b);
	LEAVE();
}
static void chunks_bind(duckdb_v2_function_bind_info_handle args, duckdb_v2_table_function_bind_info_handle info,
                        duckdb_v2_context_handle ctx, duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	rs_v2_bind b = {args, info, ctx, err};
	rsChunksBind((duckdb_bind_info)&b);
	LEAVE();
}
static void init_global(duckdb_v2_table_function_init_global_info_handle info, duckdb_v2_context_handle ctx,
                        duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	rs_v2_init i = {info, NULL, err};
	rsInit((duckdb_init_info)&i);
	LEAVE();
}
static void init_local(duckdb_v2_table_function_init_local_info_handle info, duckdb_v2_context_handle ctx,
                       duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	rs_v2_init i = {NULL, info, err};
	rsLocalInit((duckdb_init_info)&i);
	LEAVE();
}
static void exec(duckdb_v2_table_function_exec_info_handle info, duckdb_v2_context_handle ctx,
                 duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	duckdb_v2_data_chunk_handle chunk = NULL;
	idx_t capacity = 0;
	if (rs_v2.duckdb_v2_table_function_exec_get_output_chunk(info, &chunk, err) == DUCKDB_V2_ERROR_NONE) {
		rs_v2.duckdb_v2_data_chunk_get_capacity(chunk, &capacity, NULL);
		if (capacity < RS_V2_VECTOR_SIZE) {
			char msg[160];
			snprintf(msg, sizeof msg, "remote_segments: the output chunk holds %llu rows, this build assumes %d",
			         (unsigned long long)capacity, RS_V2_VECTOR_SIZE);
			rs_v2_set_error(err, msg);
		} else {
			rs_v2_exec e = {info, err};
			rsFunction((duckdb_function_info)&e, (duckdb_data_chunk)chunk);
		}
	}
	LEAVE();
}

// ---- registration -----------------------------------------------------------------

// register_scan registers one table function on the extension; host (a
// cgo.Handle, 0: none) becomes its user data, deleted with the function. A
// scan takes the source and the named parameters; extras adds the 2.0-only
// callbacks (pruning, progress, partitions).
static bool register_scan(duckdb_v2_extension_handle ext, duckdb_v2_context_handle ctx, const char *name,
                          duckdb_v2_table_function_bind_callback_fn bind, bool scan, bool extras, uintptr_t host,
                          duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	duckdb_v2_table_function_handle f = NULL;
	bool ok = rs_v2.duckdb_v2_table_function_create(factory(), &f, err) == DUCKDB_V2_ERROR_NONE;
	duckdb_v2_identifier_t id = v2str(name);
	ok = ok && rs_v2.duckdb_v2_table_function_set_name(f, &id, err) == DUCKDB_V2_ERROR_NONE;
	if (ok && host) {
		duckdb_v2_opaque o = {(void *)host, delete_handle, NULL};
		ok = rs_v2.duckdb_v2_table_function_set_user_data(f, &o, err) == DUCKDB_V2_ERROR_NONE;
	}
	if (ok && scan) {
		duckdb_v2_function_signature_handle sig = NULL;
		// ANY has no SQL text: it is built from its type id.
		duckdb_v2_logical_type_handle any2 = NULL;
		rs_v2.duckdb_v2_factory_create_type_from_id(factory(), DUCKDB_V2_LOGICAL_TYPE_ID_ANY, NULL, NULL, 0, &any2, err);
		duckdb_logical_type any = (duckdb_logical_type)any2;
		duckdb_v2_identifier_t src = v2str("source");
		ok = any && rs_v2.duckdb_v2_table_function_get_signature(f, &sig, err) == DUCKDB_V2_ERROR_NONE &&
		     rs_v2.duckdb_v2_function_signature_add_parameter(sig, &src, (duckdb_v2_logical_type_handle)any, NULL,
		                                                       DUCKDB_V2_FUNCTION_PARAMETER_KIND_POSITIONAL_ONLY,
		                                                       err) == DUCKDB_V2_ERROR_NONE;
		destroy_logical_type(&any);
		if (ok) {
			rsAddNamedParameters((uintptr_t)f);
			if (bind == chunks_bind) {
				// the n of remote_segments_chunks' shard column
				duckdb_logical_type bigint = create_logical_type(DUCKDB_TYPE_BIGINT);
				table_function_add_named_parameter((duckdb_table_function)f, "shards", bigint);
				destroy_logical_type(&bigint);
			}
		}
	}
	ok = ok && rs_v2.duckdb_v2_table_function_set_bind_callback(f, bind, err) == DUCKDB_V2_ERROR_NONE;
	ok = ok && rs_v2.duckdb_v2_table_function_set_init_global_callback(f, init_global, err) == DUCKDB_V2_ERROR_NONE;
	ok = ok && rs_v2.duckdb_v2_table_function_set_init_local_callback(f, init_local, err) == DUCKDB_V2_ERROR_NONE;
	ok = ok && rs_v2.duckdb_v2_table_function_set_exec_callback(f, exec, err) == DUCKDB_V2_ERROR_NONE;
	ok = ok && rs_v2.duckdb_v2_table_function_set_projection_pushdown(f, true, err) == DUCKDB_V2_ERROR_NONE;
	if (ok && extras) {
		ok = rs_v2_register_scan_extras(f, err);
	}
	ok = ok && rs_v2.duckdb_v2_extension_register_table_function(ext, f, err) == DUCKDB_V2_ERROR_NONE;
	if (f) {
		rs_v2.duckdb_v2_table_function_destroy(&f);
	}
	LEAVE();
	return ok;
}

DUCKDB_EXTENSION_EXTERN_C_GUARD_OPEN
DUCKDB_CAPI_ENTRY_VISIBILITY void remote_segments_init_c_api_v2(struct duckdb_v2_extension_input *in) {
	// A refusal of get_api is already recorded by DuckDB: return.
	const duckdb_ext_api_v2 *api = in->get_api ? in->get_api(in->extension, "v2.0.0") : NULL;
	if (!api) {
		return;
	}
	rs_v2 = *api;
	duckdb_ext_api_v1 shims;
	fill_v1_shims(&shims);
	if (!rs_use_api(&shims, sizeof(shims))) {
		rs_v2_set_error(in->err, "remote_segments: the V1 shim table has the wrong size");
		return;
	}
	rs_v2_use_duckdb_settings();
	uintptr_t host = rsV2LoadableHost();
	// Each function owns a handle of its own to the one Go Host.
	uintptr_t stats_host = rsShareHandle(host);
	uintptr_t chunks_host = rsShareHandle(host);
	if (!register_scan(in->extension, in->context, "remote_segments", scan_bind, true, true, host, in->err)) {
		rsDeleteHandle(stats_host);
		rsDeleteHandle(chunks_host);
		if (in->err && *in->err) {
			DUCKDB_V2_ERROR code = 0;
			rs_v2.duckdb_v2_error_info_get_code(*in->err, &code);
			if (code == DUCKDB_V2_ERROR_NONE) {
				rs_v2_set_error(in->err, "remote_segments: could not register table function remote_segments");
			}
		}
		return;
	}
	if (!register_scan(in->extension, in->context, "remote_segments_chunks", chunks_bind, true, false, chunks_host, in->err)) {
		rsDeleteHandle(stats_host);
		return;
	}
	if (!register_scan(in->extension, in->context, "remote_segments_stats", stats_bind, false, false, stats_host, in->err)) {
		return;
	}
	rs_v2_register_settings(in->extension, in->context, in->err);
}
DUCKDB_EXTENSION_EXTERN_C_GUARD_CLOSE
