// entry.c: the loadable extension's entry point, remote_segments_init_c_api.
// It is the only symbol the extension exports (extension/exports.map).
#include "rs.h"
#include "_cgo_export.h"

#define DUCKDB_EXTENSION_NAME remote_segments

DUCKDB_EXTENSION_EXTERN_C_GUARD_OPEN
DUCKDB_CAPI_ENTRY_VISIBILITY DUCKDB_EXTENSION_API bool remote_segments_init_c_api(duckdb_extension_info info,
                                                                                 struct duckdb_extension_access *access) {
	DUCKDB_EXTENSION_API_INIT(info, access, DUCKDB_EXTENSION_API_VERSION_STRING);
	uintptr_t host = rsLoadableHost();
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
