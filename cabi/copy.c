// copy.c: the vector copy: the dispatch by kind (rs_fill, rs_fill_vector)
// and the kernels of nested values (dictionaries, lists, arrays, structs),
// which fill their children through it. Leaf kernels: copy_values.c.
#include <string.h>

#include "copy.h"

static void fill(duckdb_vector vec, const rs_col *col, idx_t dst, int64_t src, idx_t n);

// copy_dict gathers dictionary values: a fixed-width or string dictionary is
// copied directly, any other by filling one row at a time.
static void copy_dict(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	const rs_col *dict = &col->children[0];
	for (idx_t r = 0; r < n; r++) {
		int64_t i = p + (int64_t)r;
		if (col->validity && !bit_at(col->validity, i)) {
			continue;
		}
		const uint8_t *ip = col->data + i * col->in_width;
		int64_t k = col->signed_index ? (int64_t)read_int(ip, col->in_width) : (int64_t)read_uint(ip, col->in_width);
		int64_t dp = dict->base + k;
		if (dict->validity && !bit_at(dict->validity, dp)) {
			set_invalid(vec, dst + r);
			continue;
		}
		switch (dict->kind) {
		case RS_FIXED:
			memcpy(out + (dst + r) * dict->width, dict->data + dp * dict->width, dict->width);
			break;
		case RS_UTF8: {
			int64_t o0 = offset_at(dict->offsets, dict->width, dp), o1 = offset_at(dict->offsets, dict->width, dp + 1);
			if (o1 - o0 > (int64_t)UINT32_MAX) {
				rs_out_of_range(0, false); // more than a DuckDB string holds (copy_utf8_w)
				break;
			}
			write_string(vec, (duckdb_string_t *)out + dst + r, dst + r, (const char *)dict->data + o0, (uint32_t)(o1 - o0));
			break;
		}
		default:
			fill(vec, dict, dst + r, k, 1);
		}
	}
}

static void copy_list(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	const rs_col *child = &col->children[0];
	int64_t first = offset_at(col->offsets, col->width, p);
	int64_t last = offset_at(col->offsets, col->width, p + (int64_t)n);
	idx_t base = duckdb_list_vector_get_size(vec); // lists of this chunk so far
	idx_t total = base + (idx_t)(last - first);
	duckdb_list_vector_reserve(vec, total);
	duckdb_list_entry *e = (duckdb_list_entry *)out + dst;
	for (idx_t r = 0; r < n; r++) {
		int64_t o0 = offset_at(col->offsets, col->width, p + (int64_t)r);
		int64_t o1 = offset_at(col->offsets, col->width, p + (int64_t)r + 1);
		e[r].offset = base + (uint64_t)(o0 - first);
		e[r].length = (uint64_t)(o1 - o0);
	}
	fill(duckdb_list_vector_get_child(vec), child, base, first, (idx_t)(last - first));
	duckdb_list_vector_set_size(vec, total);
}

static void copy_array(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	idx_t size = (idx_t)col->width;
	fill(duckdb_array_vector_get_child(vec), &col->children[0], dst * size, p * (int64_t)size, n * size);
}

// copy_struct fills each field; a NULL struct has NULL fields in DuckDB,
// while Arrow leaves them arbitrary.
static void copy_struct(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	for (int32_t c = 0; c < col->nchildren; c++) {
		duckdb_vector child = duckdb_struct_vector_get_child(vec, (idx_t)c);
		fill(child, &col->children[c], dst, p, n);
		for (idx_t r = 0; col->validity && r < n; r++) {
			if (!bit_at(col->validity, p + (int64_t)r)) {
				set_invalid(child, dst + r);
			}
		}
	}
}

// copies is the dispatch table of the kernels, by enum rs_kind.
// copies is the dispatch table of the kernels, by enum rs_kind.
static const copy_fn copies[] = {
	[RS_FIXED] = rs_copy_fixed,
	[RS_BOOL] = rs_copy_bool,
	[RS_UTF8] = rs_copy_utf8,
	[RS_CONST_STR] = rs_copy_const_str,
	[RS_VIEW] = rs_copy_view,
	[RS_FIXED_BINARY] = rs_copy_fixed_binary,
	[RS_SCALE_I64] = rs_copy_scale_i64,
	[RS_I32_TO_I64] = rs_copy_i32_to_i64,
	[RS_DATE64] = rs_copy_date64,
	[RS_DATE32] = rs_copy_date32,
	[RS_DECIMAL] = rs_copy_decimal,
	[RS_DURATION] = rs_copy_duration,
	[RS_INTERVAL_YM] = rs_copy_interval_ym,
	[RS_INTERVAL_DT] = rs_copy_interval_dt,
	[RS_INTERVAL_MDN] = rs_copy_interval_mdn,
	[RS_FLOAT16] = rs_copy_float16,
	[RS_DICT] = copy_dict,
	[RS_LIST] = copy_list,
	[RS_ARRAY] = copy_array,
	[RS_STRUCT] = copy_struct,
};

// fill copies logical rows [src, src+n) of col into vec at rows [dst, dst+n):
// the kind's copy, then the validity.
static void fill(duckdb_vector vec, const rs_col *col, idx_t dst, int64_t src, idx_t n) {
	if (n == 0) {
		return;
	}
	int64_t p = col->base + src; // physical index of the first row
	if (col->kind > 0 && (size_t)col->kind < sizeof(copies) / sizeof(copies[0]) && copies[col->kind]) {
		copies[col->kind](vec, col, (uint8_t *)duckdb_vector_get_data(vec), dst, p, n);
	}
	if (col->validity) {
		copy_validity(vec, col->validity, p, dst, n);
	}
}

void rs_fill_vector(duckdb_vector vec, const rs_col *col, idx_t dst, int64_t src, idx_t n) { fill(vec, col, dst, src, n); }

void rs_fill(duckdb_data_chunk out, const rs_col *cols, idx_t ncols, int64_t start, idx_t nrows) {
	for (idx_t c = 0; c < ncols; c++) {
		rs_guard_column(c);
		fill(duckdb_data_chunk_get_vector(out, c), &cols[c], 0, start, nrows);
	}
	duckdb_data_chunk_set_size(out, nrows);
}
