// rs.h: the C side of remote_segments. Every DuckDB call in this package goes
// through the C extension API function table (duckdb_ext_api), never through a
// real duckdb_* symbol, so the same code serves the loadable extension (table
// filled by DuckDB's get_api) and the Go-driver host, which fills the table
// from the DuckDB it links (rs_use_api; sql/internal/staticapi).
#ifndef RS_H
#define RS_H

// Target the stable C extension API v1.2.0 explicitly: newer headers default to
// their own version, which older engines refuse to load.
#define DUCKDB_EXTENSION_API_VERSION_MAJOR 1
#define DUCKDB_EXTENSION_API_VERSION_MINOR 2
#define DUCKDB_EXTENSION_API_VERSION_PATCH 0

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "duckdb_extension.h"

DUCKDB_EXTENSION_EXTERN

// Column kinds understood by rs_fill. Keep in sync with cabi/types.go.
enum rs_kind {
	RS_FIXED = 1,        // memcpy of width-byte values
	RS_BOOL = 2,         // Arrow bit-packed booleans -> one byte each
	RS_UTF8 = 3,         // utf8/binary; width = offset width (4 or 8)
	RS_CONST_STR = 4,    // one string repeated on every row (segment_id, chunk_id)
	RS_VIEW = 5,         // utf8_view/binary_view; buffers = variadic data buffers
	RS_FIXED_BINARY = 6, // fixed_size_binary; width = bytes per value
	RS_SCALE_I64 = 7,    // int64 * unit (unit > 0) or / -unit (unit < 0)
	RS_I32_TO_I64 = 8,   // int32 * unit -> int64 (time32 -> TIME)
	RS_DATE64 = 9,       // int64 milliseconds -> int32 days
	RS_DECIMAL = 10,     // signed integer of in_width bytes -> width bytes
	RS_DURATION = 11,    // int64 * unit (or / -unit) microseconds -> INTERVAL
	RS_INTERVAL_YM = 12, // int32 months -> INTERVAL
	RS_INTERVAL_DT = 13, // {int32 days, int32 ms} -> INTERVAL
	RS_INTERVAL_MDN = 14,// {int32 months, int32 days, int64 ns} -> INTERVAL
	RS_FLOAT16 = 15,     // IEEE half -> float
	RS_DICT = 16,        // indices of in_width bytes (signed if signed_index) into children[0]
	RS_LIST = 17,        // width = offset width (4 or 8); children[0] = values (LIST and MAP)
	RS_ARRAY = 18,       // fixed_size_list; width = list size; children[0] = values
	RS_STRUCT = 19,      // children = fields
	RS_DATE32 = 20,      // int32 days, checked against [lo, hi]
};

// rs_col describes the source of one output vector for one rs_fill call.
// Pointers are borrowed for the duration of the call only (the Go side pins
// them). Rows are logical: the physical index is base + row.
typedef struct rs_col {
	int32_t kind;
	int32_t width;
	int32_t in_width;          // RS_DECIMAL, RS_DICT: input integer width
	int32_t nchildren;
	int32_t signed_index;      // RS_DICT: the indices are signed
	int32_t mapped;            // the buffers are a file's mapping: rs_fill_guarded only
	int64_t unit;              // RS_SCALE_I64, RS_I32_TO_I64, RS_DURATION: see scale()
	// RS_SCALE_I64, RS_I32_TO_I64, RS_DATE64, RS_DATE32, RS_DURATION: a converted value
	// must not overflow and must lie in [lo, hi] (the DuckDB type's range);
	// RS_DECIMAL: hi is the precision, |value| < 10^hi. Else the copy
	// fails with RS_GUARD_RANGE (rs_out_of_range). Values under a NULL are
	// not checked.
	int64_t lo, hi;
	int64_t base;              // Arrow offset of the array
	int64_t length;            // RS_CONST_STR: string length; RS_UTF8: the character buffer's length
	const uint8_t *data;       // values / chars / the constant string / indices
	const void *offsets;       // RS_UTF8, RS_LIST offsets
	const uint8_t *validity;   // Arrow validity bitmap, or NULL when there are no nulls
	const uint8_t **buffers;   // RS_VIEW variadic buffers
	struct rs_col *children;
} rs_col;

// rs_fill copies rows [start, start+nrows) of ncols columns into out and sets
// its size; nrows is at most rs_vector_size().
void rs_fill(duckdb_data_chunk out, const rs_col *cols, idx_t ncols, int64_t start, idx_t nrows);

// rs_range is one buffer of a file's mapping that a guarded copy reads.
typedef struct rs_range {
	const uint8_t *p;
	size_t n;
} rs_range;

// rs_fault is why a guarded copy stopped: why is 0 (it did not),
// RS_GUARD_FAULT (a read of a mapped buffer raised SIGBUS: the file was
// truncated), RS_GUARD_BAD_BYTES (a string offset did not fit its buffer:
// the file changed), RS_GUARD_RANGE (a value does not fit its DuckDB type;
// value holds it when has_value) or RS_GUARD_NO_MEMORY (no scratch memory
// for a string of value bytes read from a mapping); column is the index of
// the output column being copied.
enum { RS_GUARD_FAULT = 1, RS_GUARD_BAD_BYTES = 2, RS_GUARD_RANGE = 3, RS_GUARD_NO_MEMORY = 4 };
typedef struct rs_fault {
	int32_t why;
	int32_t has_value;
	idx_t column;
	int64_t value;
} rs_fault;

// rs_fill_guarded is rs_fill under a guard (guard.c). A SIGBUS is the
// guard's only when it is a read past the end of a file (BUS_ADRERR) at an
// address inside one of the nmapped ranges of mapped: any other SIGBUS goes
// to the handler installed before the guard's, as if there were no guard.
// On a fault the chunk is partly filled: fail the query. Call
// rs_guard_install first, once any buffer may be a mapping.
void rs_fill_guarded(duckdb_data_chunk out, const rs_col *cols, idx_t ncols, int64_t start, idx_t nrows,
                     const rs_range *mapped, size_t nmapped, rs_fault *fault);
void rs_guard_install(void);
// rs_bad_bytes, rs_out_of_range and rs_no_memory end the guarded copy with
// RS_GUARD_BAD_BYTES, RS_GUARD_RANGE and RS_GUARD_NO_MEMORY; they return
// (and the kernel goes on with a wrong value) outside a guard, which only
// tests run.
void rs_bad_bytes(void);
void rs_out_of_range(int64_t value, bool has_value);
void rs_no_memory(size_t n);
// rs_guard_column notes which output column the guarded copy is at.
void rs_guard_column(idx_t column);
// rs_scratch returns n bytes that last until the guarded copy ends (NULL
// outside a guard or if memory is short).
char *rs_scratch(size_t n);
// rs_guarded_sum adds every 512th byte of [p, p+n) under a guard whose
// mapped range is [p, p+n) (none when own is false), setting *why as
// rs_fill_guarded's fault: the guard's test.
uint64_t rs_guarded_sum(const uint8_t *p, size_t n, bool own, int *why);
// rs_guarded_copy_utf8 copies rows [p, p+n) of a string column of short
// strings (none longer than 12 bytes: no DuckDB call) into slots under a
// guard, the way rs_fill_guarded does, setting *why as its fault: the string
// kernel's test. width is the offsets' (4 or 8); validity may be NULL.
void rs_guarded_copy_utf8(duckdb_string_t *slots, const void *offsets, int32_t width, const uint8_t *chars,
                          int64_t length, const uint8_t *validity, int64_t p, idx_t n, int *why);

// rs_fill_vector copies logical rows [src, src+n) of col into vec at rows
// [dst, dst+n): the one entry to the per-type copy kernels (a dispatch by
// kind, then the validity), for rs_fill and for any other edition's adapter
// that fills DuckDB vectors from the same rs_col descriptions.
void rs_fill_vector(duckdb_vector vec, const rs_col *col, idx_t dst, int64_t src, idx_t n);

// Logical types for bind. Each constructor returns a new type the caller
// destroys with rs_type_destroy; the composite ones do not take ownership of
// their children.
duckdb_logical_type rs_type_primitive(duckdb_type t);
duckdb_logical_type rs_type_decimal(uint8_t width, uint8_t scale);
duckdb_logical_type rs_type_list(duckdb_logical_type child);
duckdb_logical_type rs_type_array(duckdb_logical_type child, idx_t size);
duckdb_logical_type rs_type_map(duckdb_logical_type key, duckdb_logical_type value);
duckdb_logical_type rs_type_struct(duckdb_logical_type *children, const char **names, idx_t n);
void rs_type_destroy(duckdb_logical_type t);
void rs_bind_add_column_type(duckdb_bind_info info, const char *name, duckdb_logical_type t);

// Registration (called from the entry point or from a Go-driver host). It
// takes ownership of host, a cgo.Handle of the host's *Host (or 0); every
// function it registers holds a handle of its own to that Host (Go's
// rsShareHandle), which DuckDB deletes with the function.
bool rs_register(duckdb_connection con, uintptr_t host, char **error);

// rs_use_api copies a host's own function table (size bytes, the layout of
// duckdb_ext_api_v1) into the one cabi calls through; only the first call
// copies. It returns false when size is not the size of that struct.
bool rs_use_api(const void *table, size_t size);

// rs_api_ready reports whether the function table has been filled.
bool rs_api_ready(void);

// Small wrappers so Go never names an API-table entry itself.
char *rs_bind_get_named_varchar(duckdb_bind_info info, const char *name, bool *present);
void rs_bind_set_error(duckdb_bind_info info, const char *error);
uintptr_t rs_bind_get_host(duckdb_bind_info info);
void rs_bind_set_data(duckdb_bind_info info, uintptr_t handle);
void rs_bind_set_cardinality(duckdb_bind_info info, idx_t rows, bool exact);
uintptr_t rs_init_get_bind_data(duckdb_init_info info);
idx_t rs_init_column_count(duckdb_init_info info);
idx_t rs_init_column_index(duckdb_init_info info, idx_t i);
void rs_init_set_data(duckdb_init_info info, uintptr_t handle);
void rs_init_set_max_threads(duckdb_init_info info, idx_t n);
void rs_init_set_error(duckdb_init_info info, const char *error);
uintptr_t rs_function_get_init_data(duckdb_function_info info);
uintptr_t rs_function_get_local_data(duckdb_function_info info);
void rs_function_set_error(duckdb_function_info info, const char *error);
void rs_local_init_set_data(duckdb_init_info info, uintptr_t handle);
void rs_data_chunk_set_size(duckdb_data_chunk out, idx_t n);
void rs_free(void *p);
idx_t rs_vector_size(void); // rows per output chunk (STANDARD_VECTOR_SIZE)

// duckdb_value access for the source argument (any type). Values returned
// by rs_bind_get_value and rs_value_*_child are new: destroy them with
// rs_value_destroy. Strings are freed with rs_free.
duckdb_value rs_bind_get_value(duckdb_bind_info info, idx_t index);
void rs_value_destroy(duckdb_value v);
duckdb_type rs_value_type(duckdb_value v);
bool rs_value_is_null(duckdb_value v);
char *rs_value_varchar(duckdb_value v);
int64_t rs_value_int64(duckdb_value v);
uint64_t rs_value_uint64(duckdb_value v);
idx_t rs_value_list_size(duckdb_value v);
duckdb_value rs_value_list_child(duckdb_value v, idx_t i);
idx_t rs_value_struct_size(duckdb_value v);
char *rs_value_struct_name(duckdb_value v, idx_t i);
duckdb_value rs_value_struct_child(duckdb_value v, idx_t i);

#endif
