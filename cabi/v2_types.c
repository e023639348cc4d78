//go:build duckdb_v2

// v2_types.c: V1 type ids <-> SQL type names, for the 2.0 edition's shims
// (types are built from their SQL text, so no V2 type-id enum is needed).
#include <string.h>

#include "v2.h"

static const struct {
	duckdb_type id;
	const char *name;
} names[] = {
    {DUCKDB_TYPE_BOOLEAN, "BOOLEAN"},       {DUCKDB_TYPE_TINYINT, "TINYINT"},
    {DUCKDB_TYPE_SMALLINT, "SMALLINT"},     {DUCKDB_TYPE_INTEGER, "INTEGER"},
    {DUCKDB_TYPE_BIGINT, "BIGINT"},         {DUCKDB_TYPE_UTINYINT, "UTINYINT"},
    {DUCKDB_TYPE_USMALLINT, "USMALLINT"},   {DUCKDB_TYPE_UINTEGER, "UINTEGER"},
    {DUCKDB_TYPE_UBIGINT, "UBIGINT"},       {DUCKDB_TYPE_FLOAT, "FLOAT"},
    {DUCKDB_TYPE_DOUBLE, "DOUBLE"},         {DUCKDB_TYPE_TIMESTAMP, "TIMESTAMP"},
    {DUCKDB_TYPE_DATE, "DATE"},             {DUCKDB_TYPE_TIME, "TIME"},
    {DUCKDB_TYPE_INTERVAL, "INTERVAL"},     {DUCKDB_TYPE_HUGEINT, "HUGEINT"},
    {DUCKDB_TYPE_UHUGEINT, "UHUGEINT"},     {DUCKDB_TYPE_VARCHAR, "VARCHAR"},
    {DUCKDB_TYPE_BLOB, "BLOB"},             {DUCKDB_TYPE_TIMESTAMP_S, "TIMESTAMP_S"},
    {DUCKDB_TYPE_TIMESTAMP_MS, "TIMESTAMP_MS"}, {DUCKDB_TYPE_TIMESTAMP_NS, "TIMESTAMP_NS"},
    {DUCKDB_TYPE_UUID, "UUID"},             {DUCKDB_TYPE_TIME_TZ, "TIME WITH TIME ZONE"},
    {DUCKDB_TYPE_TIMESTAMP_TZ, "TIMESTAMP WITH TIME ZONE"}, {DUCKDB_TYPE_ANY, "ANY"},
    {DUCKDB_TYPE_SQLNULL, "\"NULL\""},
};

const char *rs_v2_type_name(duckdb_type t) {
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (names[i].id == t) {
			return names[i].name;
		}
	}
	return NULL;
}

duckdb_type rs_v2_type_from_text(const char *text) {
	// An argument written as a literal keeps its literal type at bind.
	if (strcmp(text, "STRING_LITERAL") == 0) {
		return DUCKDB_TYPE_VARCHAR;
	}
	if (strcmp(text, "INTEGER_LITERAL") == 0) {
		return DUCKDB_TYPE_BIGINT;
	}
	size_t n = strlen(text);
	if (n >= 2 && strcmp(text + n - 2, "[]") == 0) {
		return DUCKDB_TYPE_LIST;
	}
	if (n >= 1 && text[n - 1] == ']') {
		return DUCKDB_TYPE_ARRAY;
	}
	if (strncmp(text, "STRUCT(", 7) == 0) {
		return DUCKDB_TYPE_STRUCT;
	}
	if (strncmp(text, "MAP(", 4) == 0) {
		return DUCKDB_TYPE_MAP;
	}
	if (strncmp(text, "DECIMAL(", 8) == 0) {
		return DUCKDB_TYPE_DECIMAL;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(names[i].name, text) == 0) {
			return names[i].id;
		}
	}
	return DUCKDB_TYPE_INVALID;
}
