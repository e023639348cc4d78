//go:build duckdb_v2

// v2_values.c: the V1 shims for values and logical types in the DuckDB 2.0
// edition (see v2_entry.c): a V1 value or logical type is the V2 handle, and
// a logical type is built from its SQL text.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs.h"
#include "duckdb_v2_types.h"
#include "duckdb_ext_api_v2.h"
#include "v2.h"
#include "_cgo_export.h"

extern duckdb_ext_api_v2 rs_v2;

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
static char *type_text(duckdb_logical_type t);
// get_type_id reads the type from its whole text: a LIST's type ends in
// "[]" however long its STRUCT's fields make it (a catalog of many
// min_/max_ fields).
static duckdb_type get_type_id(duckdb_logical_type v) {
	duckdb_v2_logical_type_handle t = value_type(v);
	if (!t) {
		return DUCKDB_TYPE_INVALID;
	}
	char *text = type_text((duckdb_logical_type)t);
	rs_v2.duckdb_v2_logical_type_destroy(&t);
	if (!text) {
		return DUCKDB_TYPE_INVALID;
	}
	duckdb_type id = rs_v2_type_from_text(text);
	free(text);
	return id;
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
	if (rs_v2.duckdb_v2_factory_create_type_from_text(rs_v2_factory(), &s, &t, rs_v2_cur_err()) != DUCKDB_V2_ERROR_NONE) {
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
duckdb_logical_type rs_v2_create_logical_type(duckdb_type type) {
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
void rs_v2_destroy_logical_type(duckdb_logical_type *t) {
	if (t && *t) {
		rs_v2.duckdb_v2_logical_type_destroy((duckdb_v2_logical_type_handle *)t);
		*t = NULL;
	}
}

static void shim_free(void *p) { free(p); }

// duckdb_extension.h turns these names into table entries; here they are
// the table's member names.
#undef duckdb_create_array_type
#undef duckdb_create_decimal_type
#undef duckdb_create_list_type
#undef duckdb_create_logical_type
#undef duckdb_create_map_type
#undef duckdb_create_struct_type
#undef duckdb_destroy_logical_type
#undef duckdb_destroy_value
#undef duckdb_free
#undef duckdb_get_int64
#undef duckdb_get_list_child
#undef duckdb_get_list_size
#undef duckdb_get_struct_child
#undef duckdb_get_type_id
#undef duckdb_get_uint64
#undef duckdb_get_value_type
#undef duckdb_get_varchar
#undef duckdb_is_null_value
#undef duckdb_get_bool
#undef duckdb_struct_type_child_count
#undef duckdb_struct_type_child_name

// rs_v2_fill_value_shims points the V1 entries for values and logical types
// at their V2 shims (rs_v2_fill_v1_shims calls it).
void rs_v2_fill_value_shims(duckdb_ext_api_v1 *t) {
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
	t->duckdb_create_logical_type = rs_v2_create_logical_type;
	t->duckdb_create_decimal_type = create_decimal_type;
	t->duckdb_create_list_type = create_list_type;
	t->duckdb_create_array_type = create_array_type;
	t->duckdb_create_map_type = create_map_type;
	t->duckdb_create_struct_type = create_struct_type;
	t->duckdb_destroy_logical_type = rs_v2_destroy_logical_type;
	t->duckdb_free = shim_free;
}
