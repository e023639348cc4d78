// rs.c: table-function registration, DuckDB callbacks and the vector copy
// kernels. Go state lives behind cgo.Handle values stored as bind/init data.
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
	if (!register_scan(con, "remote_segments", rs_bind_cb, true, host)) {
		rsDeleteHandle(stats_host);
		rsDeleteHandle(chunks_host);
		*error = "remote_segments: could not register table function remote_segments";
		return false;
	}
	// remote_segments_chunks resolves sources as the scan does, with the same host.
	if (!register_scan(con, "remote_segments_chunks", rs_chunks_bind_cb, true, chunks_host)) {
		rsDeleteHandle(stats_host);
		*error = "remote_segments: could not register table function remote_segments_chunks";
		return false;
	}
	if (!register_scan(con, "remote_segments_stats", rs_stats_bind_cb, false, stats_host)) {
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

// ---- copy kernels -------------------------------------------------------

static inline bool bit_at(const uint8_t *bits, int64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }

// copy_validity turns Arrow validity bits [src, src+n) into DuckDB's mask at
// rows [dst, dst+n). Both are LSB-first bit arrays, so byte-aligned positions
// are a plain memcpy; otherwise each bit is moved.
static void copy_validity(duckdb_vector vec, const uint8_t *bits, int64_t src, idx_t dst, idx_t n) {
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

static void set_invalid(duckdb_vector vec, idx_t row) {
	duckdb_vector_ensure_validity_writable(vec);
	uint64_t *mask = duckdb_vector_get_validity(vec);
	mask[row >> 6] &= ~((uint64_t)1 << (row & 63));
}

static void write_string(duckdb_vector vec, duckdb_string_t *slot, idx_t row, const char *s, uint32_t len) {
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

// The per-type copies. Each copies physical rows [p, p+n) of col into vec at
// rows [dst, dst+n); out is vec's data. rs_fill_vector dispatches to them by
// kind and then copies the validity, so a copy only writes values (and marks
// NULLs a dictionary or a STRUCT adds).
typedef void (*copy_fn)(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n);

static void copy_fixed(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	memcpy(out + dst * col->width, col->data + p * col->width, n * (idx_t)col->width);
}

static void copy_bool(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	for (idx_t r = 0; r < n; r++) {
		out[dst + r] = bit_at(col->data, p + (int64_t)r);
	}
}

// write_inline writes a string of at most 12 bytes into its slot: its
// length, its bytes and zeros after them (DuckDB compares all 16). When 12
// bytes from s are inside its buffer (avail of them), it loads them whole
// and masks off what follows the string: two loads and three stores, where
// write_string's memset and memcpy of a variable length are calls (the
// strings of a typical column are short: 12 % of a 1 GiB scan's CPU was
// write_string and its memcpy).
static inline void write_inline(duckdb_string_t *slot, const char *s, uint32_t len, int64_t avail) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (avail >= 12) {
		uint64_t lo;
		uint32_t hi;
		memcpy(&lo, s, 8);
		memcpy(&hi, s + 8, 4);
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
	memset(slot, 0, sizeof(*slot));
	slot->value.inlined.length = len;
	if (len) {
		memcpy(slot->value.inlined.inlined, s, len);
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
static inline void copy_utf8_w(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n, int w) {
	duckdb_string_t *slots = (duckdb_string_t *)out;
	const char *chars = (const char *)col->data;
	for (idx_t r = 0; r < n; r++) {
		int64_t i = p + (int64_t)r;
		if (col->validity && !bit_at(col->validity, i)) {
			continue;
		}
		int64_t o0 = offset_at(col->offsets, w, i), o1 = offset_at(col->offsets, w, i + 1);
		if (__builtin_expect(o0 < 0 || o1 < o0 || o1 > col->length, 0)) {
			// A corrupt chunk, or a mapped file another process wrote
			// since the chunk was decoded.
			rs_bad_bytes();
			o0 = o1 = 0;
		}
		uint32_t len = (uint32_t)(o1 - o0);
		if (len <= 12) {
			write_inline(&slots[dst + r], chars + o0, len, col->length - o0);
		} else if (col->mapped) {
			assign_mapped(vec, dst + r, chars + o0, len);
		} else {
			duckdb_vector_assign_string_element_len(vec, dst + r, chars + o0, len);
		}
	}
}

static void copy_utf8(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	if (col->width == 8) {
		copy_utf8_w(vec, col, out, dst, p, n, 8);
	} else {
		copy_utf8_w(vec, col, out, dst, p, n, 4);
	}
}

// copy_view: an Arrow view of at most 12 bytes has DuckDB's inline layout,
// but the format leaves the bytes after the string unspecified while DuckDB
// compares all 16: copy the string alone (write_string zeroes the rest).
static void copy_view(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
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

static void copy_fixed_binary(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
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
static void copy_const_str(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	duckdb_string_t *slots = (duckdb_string_t *)out;
	write_string(vec, &slots[dst], dst, (const char *)col->data, (uint32_t)col->length);
	for (idx_t r = 1; r < n; r++) {
		slots[dst + r] = slots[dst];
	}
}

static void copy_scale_i64(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	int64_t *o = (int64_t *)out + dst;
	const int64_t *in = (const int64_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = convert(col, in[r], p + (int64_t)r);
	}
}

static void copy_i32_to_i64(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	int64_t *o = (int64_t *)out + dst;
	const int32_t *in = (const int32_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = convert(col, in[r], p + (int64_t)r);
	}
}

static void copy_date64(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	int32_t *o = (int32_t *)out + dst;
	const int64_t *in = (const int64_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		// lo and hi are within int32_t: DATE's range.
		o[r] = (int32_t)convert(col, in[r], p + (int64_t)r);
	}
}

static void copy_date32(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
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
static void copy_decimal(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
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

static void copy_duration(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	rs_interval *o = (rs_interval *)out + dst;
	const int64_t *in = (const int64_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = (rs_interval){0, 0, convert(col, in[r], p + (int64_t)r)};
	}
}

static void copy_interval_ym(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	rs_interval *o = (rs_interval *)out + dst;
	const int32_t *in = (const int32_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = (rs_interval){in[r], 0, 0};
	}
}

static void copy_interval_dt(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	rs_interval *o = (rs_interval *)out + dst;
	const int32_t *in = (const int32_t *)col->data + 2 * p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = (rs_interval){0, in[2 * r], (int64_t)in[2 * r + 1] * 1000};
	}
}

static void copy_interval_mdn(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
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

static void copy_float16(duckdb_vector vec, const rs_col *col, uint8_t *out, idx_t dst, int64_t p, idx_t n) {
	float *o = (float *)out + dst;
	const uint16_t *in = (const uint16_t *)col->data + p;
	for (idx_t r = 0; r < n; r++) {
		o[r] = half_to_float(in[r]);
	}
}

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
static const copy_fn copies[] = {
	[RS_FIXED] = copy_fixed,
	[RS_BOOL] = copy_bool,
	[RS_UTF8] = copy_utf8,
	[RS_CONST_STR] = copy_const_str,
	[RS_VIEW] = copy_view,
	[RS_FIXED_BINARY] = copy_fixed_binary,
	[RS_SCALE_I64] = copy_scale_i64,
	[RS_I32_TO_I64] = copy_i32_to_i64,
	[RS_DATE64] = copy_date64,
	[RS_DATE32] = copy_date32,
	[RS_DECIMAL] = copy_decimal,
	[RS_DURATION] = copy_duration,
	[RS_INTERVAL_YM] = copy_interval_ym,
	[RS_INTERVAL_DT] = copy_interval_dt,
	[RS_INTERVAL_MDN] = copy_interval_mdn,
	[RS_FLOAT16] = copy_float16,
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
