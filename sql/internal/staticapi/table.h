// table.h: the statically linked C extension API table (table.c, generated)
// and the calls of the Go-driver host beyond API v1.2.0.
#ifndef RSAPI_TABLE_H
#define RSAPI_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "duckdb.h"

typedef void (*rsapi_fn)(void);

// rsapi_table holds rsapi_table_len function addresses in the order of the
// members of duckdb_ext_api_v1 (API v1.2.0).
extern const rsapi_fn rsapi_table[];
extern const size_t rsapi_table_len;

#endif
