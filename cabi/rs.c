// rs.c: table-function registration, DuckDB callbacks and the vector copy
// kernels. Go state lives behind cgo.Handle values stored as bind/init data.
#include <stdlib.h>
#include <string.h>

#include "rs.h"
#include "_cgo_export.h"

// ---- the API table ------------------------------------------------------

// The one definition of the function table. The loadable extension copies
// DuckDB's table into it in the entry point (entry.c).
DUCKDB_EXTENSION_GLOBAL

// ---- callbacks (trampolines into Go) -------------------------------------

static void rs_delete_handle(void *p) { rsDeleteHandle((uintptr_t)p); }

static void rs_bind_cb(duckdb_bind_info info) { rsBind(info); }
static void rs_stats_bind_cb(duckdb_bind_info info) { rsStatsBind(info); }
static void rs_init_cb(duckdb_init_info info) { rsInit(info); }
static void rs_local_init_cb(duckdb_init_info info) { rsLocalInit(info); }
static void rs_function_cb(duckdb_function_info info, duckdb_data_chunk out) { rsFunction(info, out); }

static void add_named(duckdb_table_function f, const char *name, duckdb_type t) {
	duckdb_logical_type lt = duckdb_create_logical_type(t);
	duckdb_table_function_add_named_parameter(f, name, lt);
	duckdb_destroy_logical_type(&lt);
}

// register_scan registers one table function whose init, local init and fill
// are the shared Go ones; bind decides what it produces.
static bool register_scan(duckdb_connection con, const char *name, duckdb_table_function_bind_t bind, bool scan) {
	duckdb_table_function f = duckdb_create_table_function();
	duckdb_table_function_set_name(f, name);
	if (scan) {
		duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
		duckdb_table_function_add_parameter(f, varchar);
		duckdb_destroy_logical_type(&varchar);
		rsAddNamedParameters((uintptr_t)f);
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

bool rs_register(duckdb_connection con, char **error) {
	if (!register_scan(con, "remote_segments", rs_bind_cb, true)) {
		*error = "remote_segments: could not register table function remote_segments";
		return false;
	}
	if (!register_scan(con, "remote_segments_stats", rs_stats_bind_cb, false)) {
		*error = "remote_segments: could not register table function remote_segments_stats";
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

// rs_bind_get_varchar returns parameter index as a string the caller frees with
// rs_free, or NULL when it is NULL.
char *rs_bind_get_varchar(duckdb_bind_info info, idx_t index) {
	duckdb_value v = duckdb_bind_get_parameter(info, index);
	if (!v) {
		return NULL;
	}
	char *s = duckdb_is_null_value(v) ? NULL : duckdb_get_varchar(v);
	duckdb_destroy_value(&v);
	return s;
}

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

int64_t rs_bind_get_named_int64(duckdb_bind_info info, const char *name, bool *present) {
	duckdb_value v = duckdb_bind_get_named_parameter(info, name);
	*present = v != NULL;
	if (!v) {
		return 0;
	}
	int64_t r = duckdb_get_int64(v);
	duckdb_destroy_value(&v);
	return r;
}

void rs_bind_add_column(duckdb_bind_info info, const char *name, duckdb_type type) {
	duckdb_logical_type lt = duckdb_create_logical_type(type);
	duckdb_bind_add_result_column(info, name, lt);
	duckdb_destroy_logical_type(&lt);
}

void rs_bind_set_error(duckdb_bind_info info, const char *error) { duckdb_bind_set_error(info, error); }
void rs_bind_set_data(duckdb_bind_info info, uintptr_t h) { duckdb_bind_set_bind_data(info, (void *)h, rs_delete_handle); }
void rs_bind_set_cardinality(duckdb_bind_info info, idx_t rows, bool exact) { duckdb_bind_set_cardinality(info, rows, exact); }
uintptr_t rs_init_get_bind_data(duckdb_init_info info) { return (uintptr_t)duckdb_init_get_bind_data(info); }
idx_t rs_init_column_count(duckdb_init_info info) { return duckdb_init_get_column_count(info); }
idx_t rs_init_column_index(duckdb_init_info info, idx_t i) { return duckdb_init_get_column_index(info, i); }
void rs_init_set_data(duckdb_init_info info, uintptr_t h) { duckdb_init_set_init_data(info, (void *)h, rs_delete_handle); }
void rs_local_init_set_data(duckdb_init_info info, uintptr_t h) { duckdb_init_set_init_data(info, (void *)h, rs_delete_handle); }
void rs_init_set_max_threads(duckdb_init_info info, idx_t n) { duckdb_init_set_max_threads(info, n); }
void rs_init_set_error(duckdb_init_info info, const char *error) { duckdb_init_set_error(info, error); }
uintptr_t rs_function_get_bind_data(duckdb_function_info info) { return (uintptr_t)duckdb_function_get_bind_data(info); }
uintptr_t rs_function_get_init_data(duckdb_function_info info) { return (uintptr_t)duckdb_function_get_init_data(info); }
uintptr_t rs_function_get_local_data(duckdb_function_info info) { return (uintptr_t)duckdb_function_get_local_init_data(info); }
void rs_function_set_error(duckdb_function_info info, const char *error) { duckdb_function_set_error(info, error); }
void rs_data_chunk_set_size(duckdb_data_chunk out, idx_t n) { duckdb_data_chunk_set_size(out, n); }
void rs_free(void *p) { duckdb_free(p); }

// ---- copy kernels -------------------------------------------------------

// copy_validity turns the Arrow bitmap bits [start, start+n) into DuckDB's
// validity mask. Both are LSB-first bit arrays, so an aligned start is a plain
// memcpy; otherwise each output byte is stitched from two input bytes.
static void copy_validity(duckdb_vector vec, const uint8_t *bits, int64_t start, idx_t n) {
	duckdb_vector_ensure_validity_writable(vec);
	uint8_t *mask = (uint8_t *)duckdb_vector_get_validity(vec);
	const uint8_t *src = bits + (start >> 3);
	int shift = (int)(start & 7);
	idx_t nbytes = (n + 7) / 8;
	if (shift == 0) {
		memcpy(mask, src, nbytes);
		return;
	}
	// The last input byte we may touch is src[(shift+n-1)/8]; never read past it.
	idx_t last = (idx_t)((shift + n - 1) >> 3);
	for (idx_t i = 0; i < nbytes; i++) {
		uint8_t lo = src[i] >> shift;
		uint8_t hi = (i + 1 <= last) ? (uint8_t)(src[i + 1] << (8 - shift)) : 0;
		mask[i] = lo | hi;
	}
}

static void write_string(duckdb_vector vec, duckdb_string_t *slot, idx_t row, const char *s, uint32_t len) {
	if (len <= 12) {
		// Inline: DuckDB compares the whole 16 bytes, so the padding must be zero.
		memset(slot, 0, sizeof(*slot));
		slot->value.inlined.length = len;
		memcpy(slot->value.inlined.inlined, s, len);
		return;
	}
	duckdb_vector_assign_string_element_len(vec, row, s, len);
}

static bool is_valid(const uint8_t *bits, int64_t i) { return !bits || ((bits[i >> 3] >> (i & 7)) & 1); }

void rs_fill(duckdb_data_chunk out, const rs_col *cols, idx_t ncols, idx_t nrows) {
	for (idx_t c = 0; c < ncols; c++) {
		const rs_col *col = &cols[c];
		duckdb_vector vec = duckdb_data_chunk_get_vector(out, c);
		void *dst = duckdb_vector_get_data(vec);
		switch (col->kind) {
		case RS_FIXED:
			memcpy(dst, col->data + col->start * col->width, nrows * (idx_t)col->width);
			break;
		case RS_BOOL: {
			uint8_t *b = (uint8_t *)dst;
			for (idx_t r = 0; r < nrows; r++) {
				int64_t i = col->start + (int64_t)r;
				b[r] = (col->data[i >> 3] >> (i & 7)) & 1;
			}
			break;
		}
		case RS_UTF8: {
			const int32_t *off = (const int32_t *)col->offsets;
			duckdb_string_t *slots = (duckdb_string_t *)dst;
			for (idx_t r = 0; r < nrows; r++) {
				int64_t i = col->start + (int64_t)r;
				if (!is_valid(col->validity, i)) {
					continue;
				}
				write_string(vec, &slots[r], r, (const char *)col->data + off[i], (uint32_t)(off[i + 1] - off[i]));
			}
			break;
		}
		case RS_LARGE_UTF8: {
			const int64_t *off = (const int64_t *)col->offsets;
			duckdb_string_t *slots = (duckdb_string_t *)dst;
			for (idx_t r = 0; r < nrows; r++) {
				int64_t i = col->start + (int64_t)r;
				if (!is_valid(col->validity, i)) {
					continue;
				}
				write_string(vec, &slots[r], r, (const char *)col->data + off[i], (uint32_t)(off[i + 1] - off[i]));
			}
			break;
		}
		case RS_CONST_STR: {
			// Assign once, then copy the 16-byte string_t: a long string's pointer
			// refers to this vector's own heap, valid for every row of it.
			duckdb_string_t *slots = (duckdb_string_t *)dst;
			if (nrows == 0) {
				break;
			}
			write_string(vec, &slots[0], 0, (const char *)col->data, (uint32_t)col->length);
			for (idx_t r = 1; r < nrows; r++) {
				slots[r] = slots[0];
			}
			break;
		}
		}
		if (col->validity && col->kind != RS_CONST_STR) {
			copy_validity(vec, col->validity, col->start, nrows);
		}
	}
	duckdb_data_chunk_set_size(out, nrows);
}
