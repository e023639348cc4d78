// rs.h: the C side of remote_segments. Every DuckDB call in this package goes
// through the C extension API function table (duckdb_ext_api), never through a
// real duckdb_* symbol, so the same code serves the loadable extension (table
// filled by DuckDB's get_api) and, later, a host that fills the table itself.
#ifndef RS_H
#define RS_H

// Target the stable C extension API v1.2.0 explicitly: newer headers default to
// their own version, which older engines refuse to load.
#define DUCKDB_EXTENSION_API_VERSION_MAJOR 1
#define DUCKDB_EXTENSION_API_VERSION_MINOR 2
#define DUCKDB_EXTENSION_API_VERSION_PATCH 0

#include <stdbool.h>
#include <stdint.h>
#include "duckdb_extension.h"

DUCKDB_EXTENSION_EXTERN

// Column kinds understood by rs_fill. Keep in sync with cabi/types.go.
enum rs_kind {
	RS_FIXED = 1,       // memcpy of width-byte values
	RS_BOOL = 2,        // Arrow bit-packed booleans -> one byte each
	RS_UTF8 = 3,        // Arrow utf8/binary with int32 offsets
	RS_LARGE_UTF8 = 4,  // Arrow large_utf8/large_binary with int64 offsets
	RS_CONST_STR = 5,   // one string repeated on every row (segment_id, chunk_id)
};

// rs_col describes one output column of one rs_fill call. Pointers are borrowed
// for the duration of the call only (the Go side pins them).
typedef struct {
	int32_t kind;
	int32_t width;            // RS_FIXED: bytes per value
	const uint8_t *data;      // values (RS_FIXED, RS_BOOL bits), chars (UTF8), the string (CONST_STR)
	const void *offsets;      // UTF8: int32 offsets; LARGE_UTF8: int64 offsets
	const uint8_t *validity;  // Arrow validity bitmap, or NULL when the slice has no nulls
	int64_t start;            // first row, counted from the start of the buffers (Arrow offset included)
	int64_t length;           // CONST_STR: string length
} rs_col;

// rs_fill copies nrows rows of ncols columns into out and sets its size.
void rs_fill(duckdb_data_chunk out, const rs_col *cols, idx_t ncols, idx_t nrows);

// Registration (called from the entry point or from a Go-driver host).
bool rs_register(duckdb_connection con, char **error);

// Small wrappers so Go never names an API-table entry itself.
char *rs_bind_get_varchar(duckdb_bind_info info, idx_t index);
char *rs_bind_get_named_varchar(duckdb_bind_info info, const char *name, bool *present);
int64_t rs_bind_get_named_int64(duckdb_bind_info info, const char *name, bool *present);
void rs_bind_add_column(duckdb_bind_info info, const char *name, duckdb_type type);
void rs_bind_set_error(duckdb_bind_info info, const char *error);
void rs_bind_set_data(duckdb_bind_info info, uintptr_t handle);
void rs_bind_set_cardinality(duckdb_bind_info info, idx_t rows, bool exact);
uintptr_t rs_init_get_bind_data(duckdb_init_info info);
idx_t rs_init_column_count(duckdb_init_info info);
idx_t rs_init_column_index(duckdb_init_info info, idx_t i);
void rs_init_set_data(duckdb_init_info info, uintptr_t handle);
void rs_init_set_max_threads(duckdb_init_info info, idx_t n);
void rs_init_set_error(duckdb_init_info info, const char *error);
uintptr_t rs_function_get_bind_data(duckdb_function_info info);
uintptr_t rs_function_get_init_data(duckdb_function_info info);
uintptr_t rs_function_get_local_data(duckdb_function_info info);
void rs_function_set_error(duckdb_function_info info, const char *error);
void rs_local_init_set_data(duckdb_init_info info, uintptr_t handle);
void rs_data_chunk_set_size(duckdb_data_chunk out, idx_t n);
void rs_free(void *p);

#endif
