//go:build duckdb_v2

// v2_extras.c: what only the V2 C API offers: settings, filter pushdown
// (segment pruning), progress and partitions. Each callback hands the
// engine's handles to the Go core (v2.go) and reports its answer back.
#include <stdlib.h>
#include <string.h>

#include "v2.h"
#include "settings.h"
#include "duckdb_ext_api_v2.h"
#include "_cgo_export.h"

extern duckdb_ext_api_v2 rs_v2;

// text_of returns a value's text in malloc'd memory, NULL for a NULL value.
static char *text_of(duckdb_v2_value_handle v) {
	bool null = true;
	if (!v || rs_v2.duckdb_v2_value_is_null(v, &null, NULL) != DUCKDB_V2_ERROR_NONE || null) {
		return NULL;
	}
	return rs_v2_value_text(v);
}

// ---- DuckDB's own settings, for the sandbox rule (settings.h) -------------------

// The core reads DuckDB's sandbox settings (enable_external_access,
// allowed_directories, allowed_paths) through three functions of the C API
// v1.5.6 (rs_settings_api); here they are the V2 context's config. The
// context is the bind callback's, borrowed for the callback: nothing to
// destroy.
static void settings_get_client_context(duckdb_bind_info info, duckdb_client_context *out) {
	*out = (duckdb_client_context)((rs_v2_bind *)info)->ctx;
}
static duckdb_value settings_get_config_option(duckdb_client_context ctx, const char *name, void *out_scope) {
	(void)out_scope;
	duckdb_v2_config_handle cfg = NULL;
	duckdb_v2_value_handle v = NULL;
	DUCKDB_V2_SETTING_SCOPE scope = 0;
	duckdb_v2_identifier_t id = v2str(name);
	if (rs_v2.duckdb_v2_context_get_config((duckdb_v2_context_handle)ctx, &cfg, NULL) != DUCKDB_V2_ERROR_NONE ||
	    rs_v2.duckdb_v2_config_get_option_value(cfg, &id, &v, &scope, NULL) != DUCKDB_V2_ERROR_NONE) {
		return NULL;
	}
	return (duckdb_value)v;
}
static void settings_destroy_client_context(duckdb_client_context *ctx) { *ctx = NULL; }

void rs_v2_use_duckdb_settings(void) {
	rs_settings_api api = {settings_get_client_context, settings_get_config_option, settings_destroy_client_context};
	rs_settings_use(&api);
}

// ---- settings -------------------------------------------------------------------

// rs_v2_setting returns the text of setting name as the bind's context sees
// it (SESSION over GLOBAL), malloc'd, or NULL when it is unset or NULL.
char *rs_v2_setting(duckdb_bind_info info, const char *name) {
	duckdb_v2_value_handle v = (duckdb_v2_value_handle)settings_get_config_option(
	    (duckdb_client_context)((rs_v2_bind *)info)->ctx, name, NULL);
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
	rsV2AddSettings(ext, ctx, err);
}

// ---- filter pushdown: segment pruning, pruning by the catalog's min_/max_ ----------------

// column_of returns the declared column a bare column reference names.
static bool column_of(duckdb_v2_table_function_filter_pushdown_info_handle info, duckdb_v2_expression_handle e,
                      idx_t *column) {
	DUCKDB_V2_EXPRESSION_TYPE t = 0;
	idx_t ref = 0, count = 0;
	if (rs_v2.duckdb_v2_expression_get_type(e, &t, NULL) != DUCKDB_V2_ERROR_NONE ||
	    (t != DUCKDB_V2_EXPRESSION_TYPE_BOUND_COLUMN_REF && t != DUCKDB_V2_EXPRESSION_TYPE_BOUND_REF) ||
	    rs_v2.duckdb_v2_expression_column_ref_get_index(e, &ref, NULL) != DUCKDB_V2_ERROR_NONE ||
	    rs_v2.duckdb_v2_table_function_filter_pushdown_get_column_count(info, &count, NULL) != DUCKDB_V2_ERROR_NONE ||
	    ref >= count) {
		return false;
	}
	// The reference indexes the scan's column list at optimization time.
	return rs_v2.duckdb_v2_table_function_filter_pushdown_get_column_index(info, ref, column, NULL) == DUCKDB_V2_ERROR_NONE;
}

// constant_text returns a non-NULL VARCHAR constant's text (malloc'd), or NULL.
static char *constant_text(duckdb_v2_expression_handle e) {
	DUCKDB_V2_EXPRESSION_TYPE t = 0;
	duckdb_v2_value_handle v = NULL;
	if (rs_v2.duckdb_v2_expression_get_type(e, &t, NULL) != DUCKDB_V2_ERROR_NONE || t != DUCKDB_V2_EXPRESSION_TYPE_VALUE_CONSTANT ||
	    rs_v2.duckdb_v2_expression_constant_get_value(e, &v, NULL) != DUCKDB_V2_ERROR_NONE || !v) {
		return NULL;
	}
	char *out = NULL;
	duckdb_v2_logical_type_handle type = NULL;
	char tname[16] = {0};
	idx_t n = 0;
	if (rs_v2.duckdb_v2_value_get_logical_type(v, &type, NULL) == DUCKDB_V2_ERROR_NONE && type &&
	    rs_v2.duckdb_v2_logical_type_to_text(type, tname, sizeof(tname) - 1, &n, NULL) == DUCKDB_V2_ERROR_NONE &&
	    n == 7 && memcmp(tname, "VARCHAR", 7) == 0) {
		out = text_of(v);
	}
	if (type) {
		rs_v2.duckdb_v2_logical_type_destroy(&type);
	}
	rs_v2.duckdb_v2_value_destroy(&v);
	return out;
}

// operands finds the bare column a comparison e of type t (nchild
// children) compares: its first child or, in a comparison of two that is
// not an IN, its second (flipped: `c op column`). The constants are the
// children [*from, *from + *n).
static bool operands(duckdb_v2_table_function_filter_pushdown_info_handle info, duckdb_v2_expression_handle e,
                     DUCKDB_V2_EXPRESSION_TYPE t, idx_t nchild, idx_t *column, idx_t *from, idx_t *n, bool *flipped) {
	duckdb_v2_expression_handle first = NULL, second = NULL;
	rs_v2.duckdb_v2_expression_get_child(e, 0, &first, NULL);
	rs_v2.duckdb_v2_expression_get_child(e, 1, &second, NULL);
	*flipped = false;
	*from = 1;
	*n = nchild - 1;
	if (first && column_of(info, first, column)) {
		return true;
	}
	if (nchild != 2 || t == DUCKDB_V2_EXPRESSION_TYPE_COMPARE_IN || !second || !column_of(info, second, column)) {
		return false;
	}
	*flipped = true;
	*from = 0;
	return true;
}

// prune_filter hands the scan a filter `column = 'v'`, `'v' = column` or
// `column IN ('v', ...)`; it returns whether the scan applied it fully.
static bool prune_filter(duckdb_v2_table_function_filter_pushdown_info_handle info, void *bind,
                         duckdb_v2_expression_handle e) {
	DUCKDB_V2_EXPRESSION_TYPE t = 0;
	idx_t nchild = 0;
	if (rs_v2.duckdb_v2_expression_get_type(e, &t, NULL) != DUCKDB_V2_ERROR_NONE ||
	    (t != DUCKDB_V2_EXPRESSION_TYPE_COMPARE_EQUAL && t != DUCKDB_V2_EXPRESSION_TYPE_COMPARE_IN) ||
	    rs_v2.duckdb_v2_expression_get_child_count(e, &nchild, NULL) != DUCKDB_V2_ERROR_NONE || nchild < 2) {
		return false;
	}
	idx_t column = 0, from = 0, n = 0;
	bool flipped = false;
	if (!operands(info, e, t, nchild, &column, &from, &n, &flipped)) {
		return false;
	}
	char **values = calloc(n, sizeof(char *));
	bool ok = true;
	for (idx_t i = 0; i < n && ok; i++) {
		duckdb_v2_expression_handle c = NULL;
		ok = rs_v2.duckdb_v2_expression_get_child(e, from + i, &c, NULL) == DUCKDB_V2_ERROR_NONE && c &&
		     (values[i] = constant_text(c)) != NULL;
	}
	ok = ok && rsV2PushFilter((uintptr_t)bind, column, values, n);
	for (idx_t i = 0; i < n; i++) {
		free(values[i]);
	}
	free(values);
	return ok;
}

// constant_of returns a non-NULL constant's text and its type's name, both
// malloc'd (the caller frees them), or false.
static bool constant_of(duckdb_v2_expression_handle e, char **text, char **type_name) {
	DUCKDB_V2_EXPRESSION_TYPE t = 0;
	duckdb_v2_value_handle v = NULL;
	*text = *type_name = NULL;
	if (rs_v2.duckdb_v2_expression_get_type(e, &t, NULL) != DUCKDB_V2_ERROR_NONE || t != DUCKDB_V2_EXPRESSION_TYPE_VALUE_CONSTANT ||
	    rs_v2.duckdb_v2_expression_constant_get_value(e, &v, NULL) != DUCKDB_V2_ERROR_NONE || !v) {
		return false;
	}
	duckdb_v2_logical_type_handle type = NULL;
	char tname[64] = {0};
	idx_t n = 0;
	if (rs_v2.duckdb_v2_value_get_logical_type(v, &type, NULL) == DUCKDB_V2_ERROR_NONE && type &&
	    rs_v2.duckdb_v2_logical_type_to_text(type, tname, sizeof(tname) - 1, &n, NULL) == DUCKDB_V2_ERROR_NONE &&
	    n < sizeof(tname)) {
		tname[n] = 0;
		*text = text_of(v);
		*type_name = *text ? strdup(tname) : NULL;
	}
	if (type) {
		rs_v2.duckdb_v2_logical_type_destroy(&type);
	}
	rs_v2.duckdb_v2_value_destroy(&v);
	if (!*type_name) {
		free(*text);
		*text = NULL;
		return false;
	}
	return true;
}

// bounds_filter hands the scan a comparison of a column with constants
// (`column op c`, `c op column`, `column IN (c, ...)`, `column BETWEEN a
// AND b`), by which it drops the chunks whose catalog min_/max_ rule every
// row out. The filter stays DuckDB's: the rows of the chunks kept are
// filtered as ever.
static void bounds_filter(duckdb_v2_table_function_filter_pushdown_info_handle info, void *bind,
                          duckdb_v2_expression_handle e) {
	DUCKDB_V2_EXPRESSION_TYPE t = 0;
	idx_t nchild = 0;
	if (rs_v2.duckdb_v2_expression_get_type(e, &t, NULL) != DUCKDB_V2_ERROR_NONE ||
	    rs_v2.duckdb_v2_expression_get_child_count(e, &nchild, NULL) != DUCKDB_V2_ERROR_NONE || nchild < 2) {
		return;
	}
	switch (t) {
	case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_EQUAL:
	case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_LESSTHAN:
	case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_GREATERTHAN:
	case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_LESSTHANOREQUALTO:
	case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_GREATERTHANOREQUALTO:
		if (nchild != 2) {
			return;
		}
		break;
	case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_IN:
		break;
	case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_BETWEEN:
		if (nchild != 3) {
			return;
		}
		break;
	default:
		return;
	}
	idx_t column = 0, from = 0, n = 0;
	bool flipped = false;
	if (!operands(info, e, t, nchild, &column, &from, &n, &flipped)) {
		return;
	}
	char **texts = calloc(n, sizeof(char *));
	char **types = calloc(n, sizeof(char *));
	bool ok = texts && types;
	for (idx_t i = 0; i < n && ok; i++) {
		duckdb_v2_expression_handle c = NULL;
		ok = rs_v2.duckdb_v2_expression_get_child(e, from + i, &c, NULL) == DUCKDB_V2_ERROR_NONE && c &&
		     constant_of(c, &texts[i], &types[i]);
	}
	if (ok) {
		rsV2PruneBounds((uintptr_t)bind, column, t, flipped, texts, types, n);
	}
	for (idx_t i = 0; texts && types && i < n; i++) {
		free(texts[i]);
		free(types[i]);
	}
	free(texts);
	free(types);
}

static void filter_pushdown(duckdb_v2_table_function_filter_pushdown_info_handle info, duckdb_v2_context_handle ctx,
                            duckdb_v2_error_info_handle *err) {
	(void)ctx;
	(void)err;
	void *bind = NULL;
	idx_t n = 0;
	if (rs_v2.duckdb_v2_table_function_filter_pushdown_get_bind_data(info, &bind, NULL) != DUCKDB_V2_ERROR_NONE || !bind ||
	    rs_v2.duckdb_v2_table_function_filter_pushdown_get_filter_count(info, &n, NULL) != DUCKDB_V2_ERROR_NONE) {
		return;
	}
	for (idx_t i = 0; i < n; i++) {
		duckdb_v2_expression_handle e = NULL;
		if (rs_v2.duckdb_v2_table_function_filter_pushdown_get_filter(info, i, &e, NULL) != DUCKDB_V2_ERROR_NONE || !e) {
			continue;
		}
		if (prune_filter(info, bind, e)) {
			rs_v2.duckdb_v2_table_function_filter_pushdown_accept(info, i, NULL);
		} else {
			bounds_filter(info, bind, e);
		}
	}
}

// ---- progress ------------------------------------------------------------------------

static void progress(duckdb_v2_table_function_progress_info_handle info, duckdb_v2_context_handle ctx,
                     duckdb_v2_error_info_handle *err) {
	(void)ctx;
	void *global = NULL;
	if (rs_v2.duckdb_v2_table_function_progress_get_global_state(info, &global, NULL) != DUCKDB_V2_ERROR_NONE || !global) {
		return;
	}
	rs_v2.duckdb_v2_table_function_progress_set_progress(info, rsV2Progress((uintptr_t)global), err);
}

// ---- partitions ------------------------------------------------------------------------

static void partitioning(duckdb_v2_table_function_partitioning_info_handle info, duckdb_v2_context_handle ctx,
                         duckdb_v2_error_info_handle *err) {
	(void)ctx;
	void *bind = NULL;
	idx_t n = 0, column = 0;
	if (rs_v2.duckdb_v2_table_function_partitioning_get_bind_data(info, &bind, NULL) != DUCKDB_V2_ERROR_NONE || !bind ||
	    rs_v2.duckdb_v2_table_function_partitioning_get_partition_column_count(info, &n, NULL) != DUCKDB_V2_ERROR_NONE || n != 1 ||
	    rs_v2.duckdb_v2_table_function_partitioning_get_partition_column_index(info, 0, &column, NULL) != DUCKDB_V2_ERROR_NONE) {
		return;
	}
	if (rsV2IsSegmentColumn((uintptr_t)bind, column)) {
		rs_v2.duckdb_v2_table_function_partitioning_set_partition_info(info, DUCKDB_V2_TABLE_PARTITION_INFO_SINGLE_VALUE_PARTITIONS, err);
	}
}

static void partition_data(duckdb_v2_table_function_partition_data_info_handle info, duckdb_v2_context_handle ctx,
                           duckdb_v2_error_info_handle *err) {
	void *global = NULL, *local = NULL;
	bool want_index = false, want_columns = false;
	rs_v2.duckdb_v2_table_function_partition_data_get_global_state(info, &global, NULL);
	rs_v2.duckdb_v2_table_function_partition_data_get_local_state(info, &local, NULL);
	rs_v2.duckdb_v2_table_function_partition_data_requires_batch_index(info, &want_index, NULL);
	rs_v2.duckdb_v2_table_function_partition_data_requires_partition_columns(info, &want_columns, NULL);
	idx_t index = 0;
	char *segment = global && local ? rsV2Partition((uintptr_t)global, (uintptr_t)local, &index) : NULL;
	// The engine wants a batch index on every chunk, whatever
	// requires_batch_index says.
	(void)want_index;
	rs_v2.duckdb_v2_table_function_partition_data_set_batch_index(info, index, err);
	idx_t n = 0;
	if (want_columns && segment &&
	    rs_v2.duckdb_v2_table_function_partition_data_get_partition_column_count(info, &n, NULL) == DUCKDB_V2_ERROR_NONE) {
		duckdb_v2_factory_handle factory = NULL;
		duckdb_v2_value_handle v = NULL;
		duckdb_v2_str s = v2str(segment);
		if (rs_v2.duckdb_v2_context_get_factory(ctx, &factory, err) == DUCKDB_V2_ERROR_NONE &&
		    rs_v2.duckdb_v2_value_create_varchar(factory, &s, &v, err) == DUCKDB_V2_ERROR_NONE) {
			for (idx_t i = 0; i < n; i++) {
				rs_v2.duckdb_v2_table_function_partition_data_set_partition_value(info, i, v, err);
			}
			rs_v2.duckdb_v2_value_destroy(&v);
		}
	}
	free(segment);
}

// ---- scan extras -----------------------------------------------------------------------

bool rs_v2_register_scan_extras(duckdb_v2_table_function_handle f, duckdb_v2_error_info_handle *err) {
	return rs_v2.duckdb_v2_table_function_set_filter_pushdown_callback(f, filter_pushdown, err) == DUCKDB_V2_ERROR_NONE &&
	       rs_v2.duckdb_v2_table_function_set_progress_callback(f, progress, err) == DUCKDB_V2_ERROR_NONE &&
	       rs_v2.duckdb_v2_table_function_set_partitioning_callback(f, partitioning, err) == DUCKDB_V2_ERROR_NONE &&
	       rs_v2.duckdb_v2_table_function_set_partition_data_callback(f, partition_data, err) == DUCKDB_V2_ERROR_NONE;
}
