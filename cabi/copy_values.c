// copy_values.c: the copy kernels of leaf values: fixed-width, booleans,
// strings and binaries, scaled integers, dates, decimals, intervals and
// half floats (the nested kernels and the dispatch are in copy.c).
#include <string.h>

#include "copy.h"

#if defined(__SSE2__)
#include <emmintrin.h>

// inline_masks[len] keeps, of 16 bytes loaded from 4 bytes before a string
// of len <= 12 bytes, the string's own bytes (write_inline).
#define B(n, k) ((n) > (k) ? 0xff : 0)
#define MASK(n) {0, 0, 0, 0, B(n, 0), B(n, 1), B(n, 2), B(n, 3), B(n, 4), B(n, 5), B(n, 6), B(n, 7), B(n, 8), B(n, 9), B(n, 10), B(n, 11)}
static const uint8_t inline_masks[13][16] __attribute__((aligned(16))) = {
	MASK(0), MASK(1), MASK(2), MASK(3), MASK(4), MASK(5), MASK(6), MASK(7), MASK(8), MASK(9), MASK(10), MASK(11), MASK(12),
};
#undef MASK
#undef B
#endif

// convert is scale(v, col->unit) checked against the DuckDB type: a product
// that overflows, or a result outside [col->lo, col->hi], ends the copy
// (rs_out_of_range) unless row i is NULL, whose value is arbitrary.
static inline int64_t convert(const rs_col *col, int64_t v, int64_t i) {
	int64_t r;
	bool over = col->unit > 0 ? __builtin_mul_overflow(v, col->unit, &r) : (r = scale(v, col->unit), false);
	if (__builtin_expect(over || r < col->lo || r > col->hi, 0) && valid(col, i)) {
		rs_out_of_range(v, true);
	}
	return r;
}

static float half_to_float(uint16_t h) {
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	if (exp == 0) {
		if (man == 0) {
			bits = sign;
		} else { // subnormal: normalize
			exp = 127 - 15 + 1;
			while (!(man & 0x400)) {
				man <<= 1;
				exp--;
			}
			bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
		}
	} else if (exp == 31) {
		bits = sign | 0x7f800000 | (man << 13);
	} else {
		bits = sign | ((exp - 15 + 127) << 23) | (man << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

typedef struct {
	int32_t months;
	int32_t days;
	int64_t micros;
} rs_interval;

void rs_copy_fixed(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	memcpy(out + dst * col->width, col->data + p * col->width, n * (idx_t)col->width);
}

void rs_copy_bool(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	for (idx_t r = 0; r < n; r++) {
		out[dst + r] = bit_at(col->data, p + (int64_t)r);
	}
}

// write_inline writes the string of at most 12 bytes at chars[s, s+len)
// into its slot: its length, its bytes and zeros after them (DuckDB
// compares all 16). This is a copy's hot loop (the strings of a typical
// column are short; see BENCHMARKS.md, "Figures behind the code"), so it
// loads whole words where they are inside the buffer (length bytes) and
// masks off what is not the string's, where write_string's memset and
// memcpy of a variable length are calls. With SSE2: the 16 bytes from 4
// before the string, masked, then the length in front (one load, two
// operations, one store); else 12 bytes from the string (two loads, three
// stores).
static inline void write_inline(duckdb_string_t *slot, const char *chars, int64_t s, uint32_t len, int64_t length) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#if defined(__SSE2__)
	if (s >= 4 && length - s >= 12) {
		__m128i v = _mm_loadu_si128((const __m128i *)(chars + s - 4));
		v = _mm_and_si128(v, _mm_load_si128((const __m128i *)inline_masks[len]));
		_mm_storeu_si128((__m128i *)slot, _mm_or_si128(v, _mm_cvtsi32_si128((int)len)));
		return;
	}
#else
	if (length - s >= 12) {
		uint64_t lo;
		uint32_t hi;
		memcpy(&lo, chars + s, 8);
		memcpy(&hi, chars + s + 8, 4);
		if (len < 8) {
			lo = len ? lo & (~(uint64_t)0 >> (64 - 8 * len)) : 0;
			hi = 0;
		} else {
			hi = len > 8 ? hi & (~(uint32_t)0 >> (32 - 8 * (len - 8))) : 0;
		}
		uint8_t *d = (uint8_t *)slot;
		memcpy(d, &len, 4);
		memcpy(d + 4, &lo, 8);
		memcpy(d + 12, &hi, 4);
		return;
	}
#endif
#endif
	memset(slot, 0, sizeof(*slot));
	slot->value.inlined.length = len;
	if (len) {
		memcpy(slot->value.inlined.inlined, chars + s, len);
	}
}

// assign_mapped assigns a long string read from a mapping: copied here
// first, so that a SIGBUS on the mapping happens in this code, under the
// guard, and never inside DuckDB's copy, which the guard's jump would leave
// half done.
static void assign_mapped(duckdb_vector vec, idx_t row, const char *s, uint32_t len) {
	char small[256];
	char *tmp = len <= sizeof small ? small : rs_scratch(len);
	if (tmp == NULL) {
		rs_no_memory(len); // never hand DuckDB the mapping itself
		return;
	}
	memcpy(tmp, s, len);
	duckdb_vector_assign_string_element_len(vec, row, tmp, len);
}

// copy_utf8_w is copy_utf8 for offsets of W bytes (a constant, so that each
// width gets its own loop). col->length is the character buffer's length.
// Each offset is read once: a row's end is the next row's start. The
// column's fields are read into locals first, since a store into a slot may
// alias them as far as the compiler knows.
static inline __attribute__((always_inline)) void copy_utf8_w(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n, int w) {
	duckdb_string_t *slots = (duckdb_string_t *)out;
	const char *chars = (const char *)col->data;
	const void *offsets = col->offsets;
	const uint8_t *validity = col->validity;
	const int64_t length = col->length;
	const bool mapped = col->mapped;
	int64_t o1 = offset_at(offsets, w, p);
	for (idx_t r = 0; r < n; r++) {
		int64_t i = p + (int64_t)r, o0 = o1;
		o1 = offset_at(offsets, w, i + 1);
		if (validity && !bit_at(validity, i)) {
			continue;
		}
		int64_t s = o0, e = o1;
		// 0 <= s <= e <= length in two unsigned compares: a negative s or e
		// is larger than any length.
		if (__builtin_expect((uint64_t)s > (uint64_t)e || (uint64_t)e > (uint64_t)length, 0)) {
			// A corrupt chunk, or a mapped file another process wrote
			// since the chunk was decoded.
			rs_bad_bytes();
			s = e = 0;
		}
		if (w == 8 && __builtin_expect(e - s > (int64_t)UINT32_MAX, 0)) {
			// A DuckDB string holds at most 4 GiB: a longer one (of a
			// large_utf8 column) is an error, never its length cut.
			rs_out_of_range(0, false);
			s = e = 0;
		}
		uint32_t len = (uint32_t)(e - s);
		if (len <= 12) {
			write_inline(&slots[dst + r], chars, s, len, length);
		} else if (mapped) {
			assign_mapped(vec, dst + r, chars + s, len);
		} else {
			duckdb_vector_assign_string_element_len(vec, dst + r, chars + s, len);
		}
	}
}

void rs_copy_utf8(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	if (col->width == 8) {
		copy_utf8_w(vec, col, out, dst, p, n, 8);
	} else {
		copy_utf8_w(vec, col, out, dst, p, n, 4);
	}
}

// copy_view: an Arrow view of at most 12 bytes has DuckDB's inline layout,
// but the format leaves the bytes after the string unspecified while DuckDB
// compares all 16: copy the string alone (write_string zeroes the rest).
void rs_copy_view(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	const uint8_t *views = col->data;
	duckdb_string_t *slots = (duckdb_string_t *)out;
	for (idx_t r = 0; r < n; r++) {
		int64_t i = p + (int64_t)r;
		if (col->validity && !bit_at(col->validity, i)) {
			continue;
		}
		const uint8_t *v = views + i * 16;
		int32_t len, buf, off;
		memcpy(&len, v, 4);
		if (len <= 12) {
			write_string(vec, &slots[dst + r], dst + r, (const char *)v + 4, (uint32_t)len);
			continue;
		}
		memcpy(&buf, v + 8, 4);
		memcpy(&off, v + 12, 4);
		duckdb_vector_assign_string_element_len(vec, dst + r, (const char *)col->buffers[buf] + off, (idx_t)len);
	}
}

void rs_copy_fixed_binary(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	duckdb_string_t *slots = (duckdb_string_t *)out;
	for (idx_t r = 0; r < n; r++) {
		int64_t i = p + (int64_t)r;
		if (col->validity && !bit_at(col->validity, i)) {
			continue;
		}
		const char *v = (const char *)col->data + i * col->width;
		if (col->mapped && col->width > 12) {
			assign_mapped(vec, dst + r, v, (uint32_t)col->width);
		} else {
			write_string(vec, &slots[dst + r], dst + r, v, (uint32_t)col->width);
		}
	}
}

// copy_const_str assigns once, then copies the 16-byte string_t: a long
// string's pointer refers to this vector's own heap, valid for every row of
// it. The column has no validity: never NULL.
void rs_copy_const_str(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	duckdb_string_t *slots = (duckdb_string_t *)out;
	write_string(vec, &slots[dst], dst, (const char *)col->data, (uint32_t)col->length);
	for (idx_t r = 1; r < n; r++) {
		slots[dst + r] = slots[dst];
	}
}

void rs_copy_scale_i64(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	int64_t *o = (int64_t *)out + dst;
	const int64_t *in = (const int64_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = convert(col, in[r], p + (int64_t)r);
	}
}

void rs_copy_i32_to_i64(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	int64_t *o = (int64_t *)out + dst;
	const int32_t *in = (const int32_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = convert(col, in[r], p + (int64_t)r);
	}
}

void rs_copy_date64(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	int32_t *o = (int32_t *)out + dst;
	const int64_t *in = (const int64_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		// lo and hi are within int32_t: DATE's range.
		o[r] = (int32_t)convert(col, in[r], p + (int64_t)r);
	}
}

void rs_copy_date32(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	int32_t *o = (int32_t *)out + dst;
	const int32_t *in = (const int32_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = (int32_t)convert(col, in[r], p + (int64_t)r);
	}
}

// pow10_128 returns 10^d for d in [0, 38].
static __int128 pow10_128(int d) {
	__int128 v = 1;
	while (d-- > 0) {
		v *= 10;
	}
	return v;
}

// copy_decimal narrows each value to DuckDB's width after checking that it
// has at most col->hi digits (the declared precision) and, for 32-byte
// input, that the high half only extends the low half's sign: a value the
// DECIMAL cannot hold ends the copy instead of being cut.
void rs_copy_decimal(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	__int128 limit = pow10_128((int)col->hi);
	for (idx_t r = 0; r < n; r++) {
		const uint8_t *in = col->data + (p + (int64_t)r) * col->in_width;
		__int128 v = read_int(in, col->in_width);
		bool fits = v < limit && v > -limit;
		if (col->in_width == 32) {
			__int128 high;
			memcpy(&high, in + 16, 16);
			fits = fits && high == (v < 0 ? -1 : 0);
		}
		if (__builtin_expect(!fits, 0) && valid(col, p + (int64_t)r)) {
			rs_out_of_range(0, false);
		}
		memcpy(out + (dst + r) * col->width, &v, col->width); // little-endian: the low bytes
	}
}

void rs_copy_duration(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	rs_interval *o = (rs_interval *)out + dst;
	const int64_t *in = (const int64_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = (rs_interval){0, 0, convert(col, in[r], p + (int64_t)r)};
	}
}

void rs_copy_interval_ym(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	rs_interval *o = (rs_interval *)out + dst;
	const int32_t *in = (const int32_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = (rs_interval){in[r], 0, 0};
	}
}

void rs_copy_interval_dt(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	rs_interval *o = (rs_interval *)out + dst;
	const int32_t *in = (const int32_t *)col->data + 2 * p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = (rs_interval){0, in[2 * r], (int64_t)in[2 * r + 1] * 1000};
	}
}

void rs_copy_interval_mdn(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	rs_interval *o = (rs_interval *)out + dst;
	for (idx_t r = 0; r < n; r++) {
		const uint8_t *v = col->data + (p + (int64_t)r) * 16;
		int32_t months, days;
		int64_t ns;
		memcpy(&months, v, 4);
		memcpy(&days, v + 4, 4);
		memcpy(&ns, v + 8, 8);
		o[r] = (rs_interval){months, days, scale(ns, -1000)};
	}
}

void rs_copy_float16(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	float *o = (float *)out + dst;
	const uint16_t *in = (const uint16_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = half_to_float(in[r]);
	}
}
