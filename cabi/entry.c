// entry.c: the loadable extension's entry point, remote_segments_init_c_api.
// It is the only symbol the extension exports (extension/exports.map).
#include "rs.h"
#include "settings.h"
#include "_cgo_export.h"

#define DUCKDB_EXTENSION_NAME remote_segments

DUCKDB_EXTENSION_EXTERN_C_GUARD_OPEN
DUCKDB_CAPI_ENTRY_VISIBILITY DUCKDB_EXTENSION_API bool remote_segments_init_c_api(duckdb_extension_info info,
                                                                                 struct duckdb_extension_access *access) {
	DUCKDB_EXTENSION_API_INIT(info, access, DUCKDB_EXTENSION_API_VERSION_STRING);
	// The settings of DuckDB's sandbox (enable_external_access, allowed_...)
	// are read through API v1.5.6. Ask for that table only when the engine
	// has it: asking an older engine (1.4) fails the whole load. Without it
	// the scans cannot see the sandbox (README, "Sandbox").
	if (rs_engine_has_settings(duckdb_library_version())) {
		const void *v156 = access->get_api(info, "v1.5.6");
		if (!v156 || !rs_settings_from_v156(v156)) {
			access->set_error(info, "remote_segments: the engine reports C API v1.5.6 but its function table does not match it");
			return false;
		}
	}
	uintptr_t host = rsHostForDatabase();
	duckdb_database *db = access->get_database(info);
	duckdb_connection con;
	if (duckdb_connect(*db, &con) == DuckDBError) {
		access->set_error(info, "remote_segments: could not open a connection to register the extension");
		rsDeleteHandle(host);
		return false;
	}
	char *error = NULL;
	bool ok = rs_register(con, host, &error);
	duckdb_disconnect(&con);
	if (!ok) {
		access->set_error(info, error);
	}
	return ok;
}
DUCKDB_EXTENSION_EXTERN_C_GUARD_CLOSE
