//go:build duckdb_v2

// v2_entry.c: the DuckDB 2.0 edition's entry point, remote_segments_init_c_api_v2,
// its callbacks (trampolines into the core) and the registration of its
// functions. The V1 shims the core calls are in v2_shims.c and v2_values.c.
//
// The core (rs.c's registration helpers, copy.c's kernels, and the Go bind,
// init and fill) calls DuckDB through the C extension API v1.2.0 function
// table. This edition fills that table with shims over the V2 C API (the
// names and the handles differ: duckdb_v2_*, an error slot per call), so the
// core runs unchanged: no second copy of any kernel. A V1 "info" handle seen
// by the core is here a pointer to one of the small structs of v2.h, which
// carry the V2 callback's handles; a V1 vector or data chunk is the V2 handle
// itself.
//
// Each V2 callback runs the core on the calling thread, so the trampolines
// keep the callback's context and error slot in thread-locals for the shims
// that have no info argument (type constructors): they are set on entry and
// cleared on return.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs.h"
#include "duckdb_v2_types.h"
#include "duckdb_ext_api_v2.h"
#include "v2.h"
#include "_cgo_export.h"

// The V2 function table, copied from DuckDB's get_api at load.
duckdb_ext_api_v2 rs_v2;

static __thread duckdb_v2_context_handle cur_ctx;
static __thread duckdb_v2_error_info_handle *cur_err;


// set_error reports msg through a V2 error slot.
void rs_v2_set_error(duckdb_v2_error_info_handle *err, const char *msg) {
	if (!err || !*err) {
		return;
	}
	duckdb_v2_str s = v2str(msg);
	rs_v2.duckdb_v2_error_info_set_code(*err, 1 /* DUCKDB_V2_ERROR_API */);
	rs_v2.duckdb_v2_error_info_set_text(*err, &s);
}

duckdb_v2_factory_handle rs_v2_factory(void) {
	duckdb_v2_factory_handle f = NULL;
	if (cur_ctx) {
		rs_v2.duckdb_v2_context_get_factory(cur_ctx, &f, NULL);
	}
	return f;
}

duckdb_v2_error_info_handle *rs_v2_cur_err(void) { return cur_err; }

static void delete_handle(void *p) { rsDeleteHandle((uintptr_t)p); }

// ---- callbacks: V2 trampolines into the core ------------------------------------

#define ENTER(ctx, err)                                                                                                \
	duckdb_v2_context_handle saved_ctx = cur_ctx;                                                                  \
	duckdb_v2_error_info_handle *saved_err = cur_err;                                                              \
	cur_ctx = (ctx);                                                                                               \
	cur_err = (err)
#define LEAVE()                                                                                                        \
	cur_ctx = saved_ctx;                                                                                           \
	cur_err = saved_err

static void scan_bind(duckdb_v2_function_bind_info_handle args, duckdb_v2_table_function_bind_info_handle info,
                      duckdb_v2_context_handle ctx, duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	rs_v2_bind b = {args, info, ctx, err};
	rsV2Bind((duckdb_bind_info)&b);
	LEAVE();
}
static void stats_bind(duckdb_v2_function_bind_info_handle args, duckdb_v2_table_function_bind_info_handle info,
                       duckdb_v2_context_handle ctx, duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	rs_v2_bind b = {args, info, ctx, err};
	rsStatsBind((duckdb_bind_info)&b);
	LEAVE();
}
static void chunks_bind(duckdb_v2_function_bind_info_handle args, duckdb_v2_table_function_bind_info_handle info,
                        duckdb_v2_context_handle ctx, duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	rs_v2_bind b = {args, info, ctx, err};
	rsChunksBind((duckdb_bind_info)&b);
	LEAVE();
}
static void cache_bind(duckdb_v2_function_bind_info_handle args, duckdb_v2_table_function_bind_info_handle info,
                       duckdb_v2_context_handle ctx, duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	rs_v2_bind b = {args, info, ctx, err};
	rsCacheBind((duckdb_bind_info)&b);
	LEAVE();
}
static void init_global(duckdb_v2_table_function_init_global_info_handle info, duckdb_v2_context_handle ctx,
                        duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	rs_v2_init i = {info, NULL, err};
	rsInit((duckdb_init_info)&i);
	LEAVE();
}
static void init_local(duckdb_v2_table_function_init_local_info_handle info, duckdb_v2_context_handle ctx,
                       duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	rs_v2_init i = {NULL, info, err};
	rsLocalInit((duckdb_init_info)&i);
	LEAVE();
}
static void exec(duckdb_v2_table_function_exec_info_handle info, duckdb_v2_context_handle ctx,
                 duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	duckdb_v2_data_chunk_handle chunk = NULL;
	idx_t capacity = 0;
	if (rs_v2.duckdb_v2_table_function_exec_get_output_chunk(info, &chunk, err) == DUCKDB_V2_ERROR_NONE) {
		rs_v2.duckdb_v2_data_chunk_get_capacity(chunk, &capacity, NULL);
		if (capacity < RS_V2_VECTOR_SIZE) {
			char msg[160];
			snprintf(msg, sizeof msg, "remote_segments: the output chunk holds %llu rows, this build assumes %d",
			         (unsigned long long)capacity, RS_V2_VECTOR_SIZE);
			rs_v2_set_error(err, msg);
		} else {
			rs_v2_exec e = {info, err};
			rsFunction((duckdb_function_info)&e, (duckdb_data_chunk)chunk);
		}
	}
	LEAVE();
}

// ---- registration -----------------------------------------------------------------

// register_scan registers one table function on the extension; host (a
// cgo.Handle, 0: none) becomes its user data, deleted with the function. A
// scan takes the source and the named parameters; extras adds the 2.0-only
// callbacks (pruning, progress, partitions).
static bool register_scan(duckdb_v2_extension_handle ext, duckdb_v2_context_handle ctx, const char *name,
                          duckdb_v2_table_function_bind_callback_fn bind, bool scan, bool extras, uintptr_t host,
                          duckdb_v2_error_info_handle *err) {
	ENTER(ctx, err);
	duckdb_v2_table_function_handle f = NULL;
	bool ok = rs_v2.duckdb_v2_table_function_create(rs_v2_factory(), &f, err) == DUCKDB_V2_ERROR_NONE;
	duckdb_v2_identifier_t id = v2str(name);
	ok = ok && rs_v2.duckdb_v2_table_function_set_name(f, &id, err) == DUCKDB_V2_ERROR_NONE;
	if (ok && host) {
		duckdb_v2_opaque o = {(void *)host, delete_handle, NULL};
		ok = rs_v2.duckdb_v2_table_function_set_user_data(f, &o, err) == DUCKDB_V2_ERROR_NONE;
	}
	if (ok && scan) {
		duckdb_v2_function_signature_handle sig = NULL;
		// ANY has no SQL text: it is built from its type id.
		duckdb_v2_logical_type_handle any2 = NULL;
		rs_v2.duckdb_v2_factory_create_type_from_id(rs_v2_factory(), DUCKDB_V2_LOGICAL_TYPE_ID_ANY, NULL, NULL, 0, &any2, err);
		duckdb_logical_type any = (duckdb_logical_type)any2;
		duckdb_v2_identifier_t src = v2str("source");
		ok = any && rs_v2.duckdb_v2_table_function_get_signature(f, &sig, err) == DUCKDB_V2_ERROR_NONE &&
		     rs_v2.duckdb_v2_function_signature_add_parameter(sig, &src, (duckdb_v2_logical_type_handle)any, NULL,
		                                                       DUCKDB_V2_FUNCTION_PARAMETER_KIND_POSITIONAL_ONLY,
		                                                       err) == DUCKDB_V2_ERROR_NONE;
		rs_v2_destroy_logical_type(&any);
		if (ok) {
			rsAddNamedParameters((uintptr_t)f);
			if (bind == chunks_bind) {
				// the n of remote_segments_chunks' shard column
				duckdb_logical_type bigint = rs_v2_create_logical_type(DUCKDB_TYPE_BIGINT);
				rs_v2_add_named_parameter((duckdb_table_function)f, "shards", bigint);
				rs_v2_destroy_logical_type(&bigint);
			}
		}
	}
	ok = ok && rs_v2.duckdb_v2_table_function_set_bind_callback(f, bind, err) == DUCKDB_V2_ERROR_NONE;
	ok = ok && rs_v2.duckdb_v2_table_function_set_init_global_callback(f, init_global, err) == DUCKDB_V2_ERROR_NONE;
	ok = ok && rs_v2.duckdb_v2_table_function_set_init_local_callback(f, init_local, err) == DUCKDB_V2_ERROR_NONE;
	ok = ok && rs_v2.duckdb_v2_table_function_set_exec_callback(f, exec, err) == DUCKDB_V2_ERROR_NONE;
	ok = ok && rs_v2.duckdb_v2_table_function_set_projection_pushdown(f, true, err) == DUCKDB_V2_ERROR_NONE;
	if (ok && extras) {
		ok = rs_v2_register_scan_extras(f, err);
	}
	ok = ok && rs_v2.duckdb_v2_extension_register_table_function(ext, f, err) == DUCKDB_V2_ERROR_NONE;
	if (f) {
		rs_v2.duckdb_v2_table_function_destroy(&f);
	}
	LEAVE();
	return ok;
}

DUCKDB_EXTENSION_EXTERN_C_GUARD_OPEN
DUCKDB_CAPI_ENTRY_VISIBILITY void remote_segments_init_c_api_v2(struct duckdb_v2_extension_input *in) {
	// A refusal of get_api is already recorded by DuckDB: return.
	const duckdb_ext_api_v2 *api = in->get_api ? in->get_api(in->extension, "v2.0.0") : NULL;
	if (!api) {
		return;
	}
	rs_v2 = *api;
	duckdb_ext_api_v1 shims;
	rs_v2_fill_v1_shims(&shims);
	if (!rs_use_api(&shims, sizeof(shims))) {
		rs_v2_set_error(in->err, "remote_segments: the V1 shim table has the wrong size");
		return;
	}
	rs_v2_use_duckdb_settings();
	uintptr_t host = rsV2HostForDatabase();
	// Each function owns a handle of its own to the one Go Host.
	uintptr_t stats_host = rsShareHandle(host);
	uintptr_t chunks_host = rsShareHandle(host);
	uintptr_t cache_host = rsShareHandle(host);
	if (!register_scan(in->extension, in->context, "remote_segments", scan_bind, true, true, host, in->err)) {
		rsDeleteHandle(stats_host);
		rsDeleteHandle(chunks_host);
		rsDeleteHandle(cache_host);
		if (in->err && *in->err) {
			DUCKDB_V2_ERROR code = 0;
			rs_v2.duckdb_v2_error_info_get_code(*in->err, &code);
			if (code == DUCKDB_V2_ERROR_NONE) {
				rs_v2_set_error(in->err, "remote_segments: could not register table function remote_segments");
			}
		}
		return;
	}
	if (!register_scan(in->extension, in->context, "remote_segments_chunks", chunks_bind, true, false, chunks_host, in->err)) {
		rsDeleteHandle(stats_host);
		rsDeleteHandle(cache_host);
		return;
	}
	if (!register_scan(in->extension, in->context, "remote_segments_stats", stats_bind, false, false, stats_host, in->err)) {
		rsDeleteHandle(cache_host);
		return;
	}
	if (!register_scan(in->extension, in->context, "remote_segments_cache", cache_bind, false, false, cache_host, in->err)) {
		return;
	}
	rs_v2_register_settings(in->extension, in->context, in->err);
}
DUCKDB_EXTENSION_EXTERN_C_GUARD_CLOSE
