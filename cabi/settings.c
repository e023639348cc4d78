// settings.c: see settings.h.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"

static pthread_mutex_t settings_mu = PTHREAD_MUTEX_INITIALIZER;
static rs_settings_api settings; // written once, under settings_mu, before it is read
static bool settings_set;

// Slots in the C extension API v1.5.6 function table (duckdb_ext_api_v1 of a
// duckdb_extension.h that has the v1.5.6 band: DuckDB 1.5.6's and 2.0's
// headers; 548 entries, the first 357 those of v1.2.0). A stable slot never
// moves.
enum {
	SLOT_LIBRARY_VERSION = 7,
	SLOT_CLIENT_CONTEXT_GET_CONFIG_OPTION = 431,
	SLOT_DESTROY_CLIENT_CONTEXT = 501,
	SLOT_TABLE_FUNCTION_GET_CLIENT_CONTEXT = 531,
};

// parse_num reads decimal digits at *s, advancing it; -1 when there are none.
static long parse_num(const char **s) {
	if (**s < '0' || **s > '9') {
		return -1;
	}
	long n = 0;
	while (**s >= '0' && **s <= '9' && n < 100000) {
		n = n * 10 + (**s - '0');
		(*s)++;
	}
	return n;
}

bool rs_engine_has_settings(const char *version) {
	if (!version) {
		return false;
	}
	const char *s = version;
	if (*s == 'v') {
		s++;
	}
	long major = parse_num(&s);
	if (major < 0 || *s++ != '.') {
		return false;
	}
	long minor = parse_num(&s);
	if (minor < 0 || *s++ != '.') {
		return false;
	}
	long patch = parse_num(&s);
	if (patch < 0) {
		return false;
	}
	if (major != 1) {
		return major > 1;
	}
	return minor > 5 || (minor == 5 && patch >= 6);
}

void rs_settings_use(const rs_settings_api *api) {
	if (!api || !api->table_function_get_client_context || !api->client_context_get_config_option ||
	    !api->destroy_client_context) {
		return;
	}
	pthread_mutex_lock(&settings_mu);
	if (!settings_set) {
		settings = *api;
		settings_set = true;
	}
	pthread_mutex_unlock(&settings_mu);
}

bool rs_settings_from_v156(const void *table) {
	if (!table) {
		return false;
	}
	// Function pointers are read as bytes: the table is an array of them.
	typedef void (*fn)(void);
	const fn *slots = (const fn *)table;
	fn version = (fn)duckdb_library_version; // the table entry (a macro of duckdb_extension.h)
	if (slots[SLOT_LIBRARY_VERSION] != version) {
		return false;
	}
	rs_settings_api api;
	memcpy(&api.table_function_get_client_context, &slots[SLOT_TABLE_FUNCTION_GET_CLIENT_CONTEXT], sizeof(fn));
	memcpy(&api.client_context_get_config_option, &slots[SLOT_CLIENT_CONTEXT_GET_CONFIG_OPTION], sizeof(fn));
	memcpy(&api.destroy_client_context, &slots[SLOT_DESTROY_CLIENT_CONTEXT], sizeof(fn));
	rs_settings_use(&api);
	return rs_settings_ready();
}

bool rs_settings_ready(void) {
	pthread_mutex_lock(&settings_mu);
	bool ok = settings_set;
	pthread_mutex_unlock(&settings_mu);
	return ok;
}

duckdb_value rs_bind_config_option(duckdb_bind_info info, const char *name) {
	if (!rs_settings_ready()) {
		return NULL;
	}
	duckdb_client_context ctx = NULL;
	settings.table_function_get_client_context(info, &ctx);
	if (!ctx) {
		return NULL;
	}
	duckdb_value v = settings.client_context_get_config_option(ctx, name, NULL);
	settings.destroy_client_context(&ctx);
	return v;
}

bool rs_settings_value_bool(duckdb_value v) {
	return duckdb_get_bool(v);
}
