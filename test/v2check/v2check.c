// v2check: checks cabi/duckdb_v2_types.h (the V2 C API types written for this
// project, Debian's libduckdb-dev 2.0.0 lacking duckdb_v2.h) against the
// DuckDB 2.0.0 library itself. It opens libduckdb.so.2.0 (argv[1]), takes
// each function it uses by its real symbol (typed through the pinned function
// table), and checks what the engine answers: the string and identifier
// layout, the setting-scope values, the types built from text, the opaque
// struct and the parameter kinds through a registered function's signature.
// Prints one line per check and "N passed, N failed".
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "duckdb_v2_types.h"
#include "duckdb_ext_api_v2.h"

static int passed, failed;
static void check(int ok, const char *what) {
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	ok ? passed++ : failed++;
}

static void *lib;
#define FN(name) ((__typeof__(((duckdb_ext_api_v2 *)0)->name))dlsym(lib, #name))

static duckdb_v2_str str(const char *s) { return (duckdb_v2_str){s, strlen(s)}; }

int main(int argc, char **argv) {
	if (argc < 2 || !(lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "v2check: cannot open %s: %s\n", argc < 2 ? "(no path)" : argv[1], dlerror());
		return 2;
	}
	check(sizeof(duckdb_v2_bytes) == 16 && sizeof(duckdb_v2_str) == 16 && sizeof(duckdb_v2_opaque) == 24,
	      "struct sizes: bytes 16, str 16, opaque 24");
	duckdb_v2_environment_handle env = NULL;
	duckdb_v2_instance_handle inst = NULL;
	duckdb_v2_connection_handle con = NULL;
	check(FN(duckdb_v2_environment_create)(&env, NULL) == DUCKDB_V2_ERROR_NONE && env, "environment_create");
	check(FN(duckdb_v2_instance_create)(env, &inst, NULL) == DUCKDB_V2_ERROR_NONE && inst, "instance_create");
	check(FN(duckdb_v2_connection_create)(inst, &con, NULL) == DUCKDB_V2_ERROR_NONE && con, "connection_create");

	// Errors: a failing call returns non-zero and fills the slot with text.
	duckdb_v2_error_info_handle err = NULL;
	duckdb_v2_config_handle cfg = NULL;
	check(FN(duckdb_v2_connection_get_config)(con, &cfg, NULL) == DUCKDB_V2_ERROR_NONE && cfg, "connection_get_config");
	duckdb_v2_option_handle opt = NULL;
	duckdb_v2_identifier_t bogus = str("no_such_option_here");
	DUCKDB_V2_ERROR rc = FN(duckdb_v2_config_get_option_by_name)(cfg, &bogus, &opt, &err);
	duckdb_v2_str text = {0};
	if (err) {
		FN(duckdb_v2_error_info_get_text)(err, &text);
	}
	check(rc != DUCKDB_V2_ERROR_NONE && err && text.len > 0 && text.ptr, "an unknown option fails with error text");
	if (err) {
		FN(duckdb_v2_error_info_destroy)(&err);
	}

	// Scopes: allow_community_extensions is GLOBAL only; a bare SET writes the
	// session for max_execution_time, so its default scope is SESSION or GLOBAL:
	// read both and test the values this header names.
	duckdb_v2_identifier_t ace = str("allow_community_extensions");
	DUCKDB_V2_SETTING_SCOPE scope = -1;
	bool global = false, session = true;
	if (FN(duckdb_v2_config_get_option_by_name)(cfg, &ace, &opt, NULL) == DUCKDB_V2_ERROR_NONE) {
		FN(duckdb_v2_option_get_default_scope)(opt, &scope, NULL);
		FN(duckdb_v2_option_supports_scope)(opt, DUCKDB_V2_SETTING_SCOPE_GLOBAL, &global, NULL);
		FN(duckdb_v2_option_supports_scope)(opt, DUCKDB_V2_SETTING_SCOPE_SESSION, &session, NULL);
		duckdb_v2_identifier_t name = {0};
		FN(duckdb_v2_option_get_name)(opt, &name, NULL);
		check(name.len == ace.len && name.ptr && memcmp(name.ptr, ace.ptr, ace.len) == 0, "identifier layout (option_get_name)");
		FN(duckdb_v2_option_destroy)(&opt);
	}
	check(scope == DUCKDB_V2_SETTING_SCOPE_GLOBAL, "SETTING_SCOPE_GLOBAL is the default scope of a global-only option");
	check(global && !session, "SETTING_SCOPE_GLOBAL supported, SETTING_SCOPE_SESSION not, for a global-only option");

	// Types from text, and back.
	duckdb_v2_factory_handle factory = NULL;
	FN(duckdb_v2_connection_get_factory)(con, &factory, NULL);
	const char *types[] = {"BIGINT", "VARCHAR", "DECIMAL(18,3)", "INTEGER[]", "MAP(VARCHAR, DOUBLE)",
	                       "STRUCT(a INTEGER, \"b c\" VARCHAR)", "FLOAT[3]", "TIMESTAMP_NS"};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		duckdb_v2_logical_type_handle t = NULL;
		duckdb_v2_str s = str(types[i]);
		char buf[128] = {0};
		idx_t n = 0;
		int ok = FN(duckdb_v2_factory_create_type_from_text)(factory, &s, &t, NULL) == DUCKDB_V2_ERROR_NONE && t &&
		         FN(duckdb_v2_logical_type_to_text)(t, buf, sizeof(buf) - 1, &n, NULL) == DUCKDB_V2_ERROR_NONE;
		char what[256];
		snprintf(what, sizeof what, "type from text %s -> %.*s", types[i], (int)n, buf);
		check(ok && n > 0, what);
		if (t) {
			FN(duckdb_v2_logical_type_destroy)(&t);
		}
	}

	// ANY, the one type built from its id.
	{
		duckdb_v2_logical_type_handle t = NULL;
		char buf[32] = {0};
		idx_t n = 0;
		int ok = FN(duckdb_v2_factory_create_type_from_id)(factory, DUCKDB_V2_LOGICAL_TYPE_ID_ANY, NULL, NULL, 0, &t, NULL) == DUCKDB_V2_ERROR_NONE &&
		         FN(duckdb_v2_logical_type_to_text)(t, buf, sizeof(buf) - 1, &n, NULL) == DUCKDB_V2_ERROR_NONE;
		check(ok && n == 3 && memcmp(buf, "ANY", 3) == 0, "LOGICAL_TYPE_ID_ANY builds ANY");
		if (t) {
			FN(duckdb_v2_logical_type_destroy)(&t);
		}
	}

	// Values: a VARCHAR value reads back through duckdb_v2_str.
	duckdb_v2_value_handle v = NULL;
	duckdb_v2_str hello = str("hello, segments");
	duckdb_v2_str back = {0};
	bool isnull = true;
	int ok = FN(duckdb_v2_value_create_varchar)(factory, &hello, &v, NULL) == DUCKDB_V2_ERROR_NONE &&
	         FN(duckdb_v2_value_get_varchar)(v, &back, NULL) == DUCKDB_V2_ERROR_NONE &&
	         FN(duckdb_v2_value_is_null)(v, &isnull, NULL) == DUCKDB_V2_ERROR_NONE;
	check(ok && !isnull && back.len == hello.len && memcmp(back.ptr, hello.ptr, hello.len) == 0, "value_create_varchar / get_varchar round trip");

	// Parameter kinds: a table function accepts a STANDARD and a NAMED_ONLY
	// parameter, and refuses a kind past the five the API declares.
	duckdb_v2_table_function_handle f = NULL;
	duckdb_v2_function_signature_handle sig = NULL;
	FN(duckdb_v2_table_function_create)(factory, &f, NULL);
	FN(duckdb_v2_table_function_get_signature)(f, &sig, NULL);
	duckdb_v2_logical_type_handle bigint = NULL;
	duckdb_v2_str bt = str("BIGINT");
	FN(duckdb_v2_factory_create_type_from_text)(factory, &bt, &bigint, NULL);
	duckdb_v2_identifier_t pa = str("a"), pb = str("b"), pc = str("c");
	check(FN(duckdb_v2_function_signature_add_parameter)(sig, &pa, bigint, NULL, DUCKDB_V2_FUNCTION_PARAMETER_KIND_STANDARD, NULL) == DUCKDB_V2_ERROR_NONE,
	      "PARAMETER_KIND_STANDARD accepted");
	check(FN(duckdb_v2_function_signature_add_parameter)(sig, &pb, bigint, NULL, DUCKDB_V2_FUNCTION_PARAMETER_KIND_NAMED_ONLY, NULL) == DUCKDB_V2_ERROR_NONE,
	      "PARAMETER_KIND_NAMED_ONLY accepted after STANDARD");
	check(FN(duckdb_v2_function_signature_add_parameter)(sig, &pc, bigint, NULL, 5, NULL) != DUCKDB_V2_ERROR_NONE,
	      "a parameter kind past NAMED_VARIADIC (4) refused");
	FN(duckdb_v2_table_function_destroy)(&f);
	FN(duckdb_v2_logical_type_destroy)(&bigint);

	FN(duckdb_v2_connection_destroy)(&con);
	FN(duckdb_v2_instance_destroy)(&inst);
	FN(duckdb_v2_environment_destroy)(&env);
	printf("v2check: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
