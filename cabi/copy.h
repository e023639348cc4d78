// copy.h: what the vector copy kernels share (copy.c, copy_values.c); not
// part of the interface Go sees (rs.h). Each kernel copies physical rows
// [p, p+n) of col into vec at rows [dst, dst+n); out is vec's data.
// rs_fill_vector dispatches to them by kind and then copies the validity, so
// a kernel only writes values (and marks NULLs a dictionary or a STRUCT adds).
#ifndef RS_COPY_H
#define RS_COPY_H

#include <string.h>

#include "rs.h"

typedef void (*copy_fn)(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);

static inline bool bit_at(const uint8_t *bits, int64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }

// copy_validity turns Arrow validity bits [src, src+n) into DuckDB's mask at
// rows [dst, dst+n). Both are LSB-first bit arrays, so byte-aligned positions
// are a plain memcpy; otherwise each bit is moved.
static inline void copy_validity(duckdb_vector vec, const uint8_t *bits, int64_t src, idx_t dst, idx_t n) {
	duckdb_vector_ensure_validity_writable(vec);
	uint64_t *mask = duckdb_vector_get_validity(vec);
	if ((src & 7) == 0 && (dst & 7) == 0 && (n & 7) == 0) {
		memcpy((uint8_t *)mask + dst / 8, bits + src / 8, n / 8);
		return;
	}
	for (idx_t r = 0; r < n; r++) {
		if (!bit_at(bits, src + (int64_t)r)) {
			idx_t d = dst + r;
			mask[d >> 6] &= ~((uint64_t)1 << (d & 63));
		}
	}
}

static inline void set_invalid(duckdb_vector vec, idx_t row) {
	duckdb_vector_ensure_validity_writable(vec);
	uint64_t *mask = duckdb_vector_get_validity(vec);
	mask[row >> 6] &= ~((uint64_t)1 << (row & 63));
}

static inline void write_string(duckdb_vector vec, duckdb_string_t *slot, idx_t row, const char *s, uint32_t len) {
	if (len <= 12) {
		// Inline: DuckDB compares the whole 16 bytes, so the padding must be zero.
		memset(slot, 0, sizeof(*slot));
		slot->value.inlined.length = len;
		if (len) {
			memcpy(slot->value.inlined.inlined, s, len);
		}
		return;
	}
	duckdb_vector_assign_string_element_len(vec, row, s, len);
}

static inline int64_t offset_at(const void *offsets, int width, int64_t i) {
	return width == 8 ? ((const int64_t *)offsets)[i] : (int64_t)((const int32_t *)offsets)[i];
}

// read_int reads a little-endian two's-complement integer of w bytes.
static inline __int128 read_int(const uint8_t *p, int w) {
	switch (w) {
	case 1: return *(const int8_t *)p;
	case 2: { int16_t v; memcpy(&v, p, 2); return v; }
	case 4: { int32_t v; memcpy(&v, p, 4); return v; }
	case 8: { int64_t v; memcpy(&v, p, 8); return v; }
	default: { __int128 v; memcpy(&v, p, 16); return v; } // 16 and the low half of 32
	}
}

static inline uint64_t read_uint(const uint8_t *p, int w) {
	switch (w) {
	case 1: return *p;
	case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
	case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
	default: { uint64_t v; memcpy(&v, p, 8); return v; }
	}
}

// scale converts v by unit: v * unit when unit > 0, else v / -unit rounded
// down (floor division, so instants before the epoch round down like DuckDB
// does).
static inline int64_t scale(int64_t v, int64_t unit) {
	if (unit > 0) {
		return v * unit;
	}
	int64_t d = -unit, q = v / d;
	return (v % d != 0 && v < 0) ? q - 1 : q;
}

// valid reports whether physical row i of col is not NULL.
static inline bool valid(const rs_col *col, int64_t i) { return !col->validity || bit_at(col->validity, i); }

// The kernels of leaf values (copy_values.c).
void rs_copy_fixed(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_bool(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_utf8(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_const_str(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_view(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_fixed_binary(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_scale_i64(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_i32_to_i64(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_date64(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_date32(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_decimal(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_duration(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_interval_ym(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_interval_dt(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_interval_mdn(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);
void rs_copy_float16(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);

#endif
