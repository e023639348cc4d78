// duckdb_v2_types.h: the types of DuckDB 2.0.0's V2 C API that its function
// table (build/include-v2/duckdb_ext_api_v2.h, from Debian's libduckdb-dev
// 2.0.0) names but the package does not define: its duckdb_v2.h is missing.
// Written for this project from the table's signatures and checked against
// libduckdb 2.0.0 itself, in make test:
// - by test/v2check, through the library's own functions: the sizes of str,
//   bytes and opaque; the identifier layout; SETTING_SCOPE GLOBAL and
//   SESSION; LOGICAL_TYPE_ID_ANY; PARAMETER_KIND STANDARD and NAMED_ONLY;
//   error codes and the error slot;
// - by the SQL suite on the 2.0 CLI (host cli-v2, every file), which fails
//   when one is wrong: the extension input struct and get_api (the load),
//   the callback signatures (bind's four arguments were read from the
//   library's call site; each callback runs), the bytes layout of long
//   strings (types.test), EXPRESSION_TYPE (pruning in v2_edition.test) and
//   TABLE_PARTITION_INFO (its EXPLAIN).
//
// Only the 2.0 edition (build tag duckdb_v2) includes this header.
#ifndef RS_DUCKDB_V2_TYPES_H
#define RS_DUCKDB_V2_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef DUCKDB_API_VERSION // duckdb.h defines idx_t; stand alone otherwise
typedef uint64_t idx_t;
#endif

// ---- plain structs (layouts checked in test/v2check) ----------------------

// A borrowed, length-delimited string; not NUL-terminated.
typedef struct duckdb_v2_str {
	const char *ptr;
	idx_t len;
} duckdb_v2_str;

// A SQL identifier: the layout of duckdb_v2_str.
typedef duckdb_v2_str duckdb_v2_identifier_t;

// 16-byte storage of a VARCHAR/BLOB value in a vector: DuckDB's string_t.
typedef struct duckdb_v2_bytes {
	union {
		struct {
			uint32_t length;
			char prefix[4];
			char *ptr;
		} pointer;
		struct {
			uint32_t length;
			char inlined[12];
		} inlined;
	} value;
} duckdb_v2_bytes;

typedef void (*duckdb_v2_opaque_destroy_fn)(void *data);
typedef bool (*duckdb_v2_opaque_equals_fn)(void *a, void *b);

// A caller-owned resource handed to DuckDB, which calls destroy when done.
typedef struct duckdb_v2_opaque {
	void *ptr;
	duckdb_v2_opaque_destroy_fn destroy;
	duckdb_v2_opaque_equals_fn equals;
} duckdb_v2_opaque;

typedef struct duckdb_v2_hugeint_t {
	uint64_t lower;
	int64_t upper;
} duckdb_v2_hugeint_t;

typedef struct duckdb_v2_uhugeint_t {
	uint64_t lower;
	uint64_t upper;
} duckdb_v2_uhugeint_t;

typedef struct duckdb_v2_interval_t {
	int32_t months;
	int32_t days;
	int64_t micros;
} duckdb_v2_interval_t;

// Only named through pointers by the table; never used here.
typedef struct duckdb_v2_vector_view duckdb_v2_vector_view;
struct ArrowSchema;
struct ArrowArray;
struct ArrowArrayStream;

// ---- enums: C enums of int size (their MAX_ENUM is 0x7FFFFFFF) ------------

typedef int32_t DUCKDB_V2_ERROR;
#define DUCKDB_V2_ERROR_NONE 0

// Mirrors DuckDB's ExpressionType (the library static_asserts that).
typedef int32_t DUCKDB_V2_EXPRESSION_TYPE;
#define DUCKDB_V2_EXPRESSION_TYPE_OPERATOR_CAST 12
#define DUCKDB_V2_EXPRESSION_TYPE_COMPARE_EQUAL 25
#define DUCKDB_V2_EXPRESSION_TYPE_COMPARE_LESSTHAN 27
#define DUCKDB_V2_EXPRESSION_TYPE_COMPARE_GREATERTHAN 28
#define DUCKDB_V2_EXPRESSION_TYPE_COMPARE_LESSTHANOREQUALTO 29
#define DUCKDB_V2_EXPRESSION_TYPE_COMPARE_GREATERTHANOREQUALTO 30
#define DUCKDB_V2_EXPRESSION_TYPE_COMPARE_IN 35
#define DUCKDB_V2_EXPRESSION_TYPE_COMPARE_BETWEEN 38
#define DUCKDB_V2_EXPRESSION_TYPE_CONJUNCTION_AND 50
#define DUCKDB_V2_EXPRESSION_TYPE_VALUE_CONSTANT 75
#define DUCKDB_V2_EXPRESSION_TYPE_BOUND_REF 227
#define DUCKDB_V2_EXPRESSION_TYPE_BOUND_COLUMN_REF 228

// Mirrors DuckDB's TablePartitionInfo.
typedef int32_t DUCKDB_V2_TABLE_PARTITION_INFO;
#define DUCKDB_V2_TABLE_PARTITION_INFO_NOT_PARTITIONED 0
#define DUCKDB_V2_TABLE_PARTITION_INFO_SINGLE_VALUE_PARTITIONS 1

// Python's parameter kinds, in their order.
typedef int32_t DUCKDB_V2_FUNCTION_PARAMETER_KIND;
#define DUCKDB_V2_FUNCTION_PARAMETER_KIND_POSITIONAL_ONLY 0
#define DUCKDB_V2_FUNCTION_PARAMETER_KIND_STANDARD 1
#define DUCKDB_V2_FUNCTION_PARAMETER_KIND_NAMED_ONLY 3

typedef int32_t DUCKDB_V2_SETTING_SCOPE;
#define DUCKDB_V2_SETTING_SCOPE_DEFAULT 0
#define DUCKDB_V2_SETTING_SCOPE_GLOBAL 1
#define DUCKDB_V2_SETTING_SCOPE_SESSION 2

typedef int32_t DUCKDB_V2_CAST_MODE;
typedef int32_t DUCKDB_V2_FILE_FLAG;
typedef int32_t DUCKDB_V2_FUNCTION_PROPERTY_KEY;
typedef int32_t DUCKDB_V2_FUNCTION_PROPERTY_VALUE;
// Mirrors DuckDB's LogicalTypeId; only ANY is used (it has no SQL text).
typedef int32_t DUCKDB_V2_LOGICAL_TYPE_ID;
#define DUCKDB_V2_LOGICAL_TYPE_ID_ANY 3
typedef int32_t DUCKDB_V2_LOG_LEVEL;
typedef int32_t DUCKDB_V2_MACRO_FUNCTION_TYPE;
typedef int32_t DUCKDB_V2_ORDER_PRESERVATION;
typedef int32_t DUCKDB_V2_RESULT_STEP_STATUS;
typedef int32_t DUCKDB_V2_RESULT_TYPE;
typedef int32_t DUCKDB_V2_STATEMENT_TYPE;
typedef int32_t DUCKDB_V2_TOKEN_TYPE;
typedef int32_t DUCKDB_V2_VECTOR_TYPE;

// ---- opaque handles: pointers to engine objects ---------------------------

typedef struct _duckdb_v2_aggregate_function_bind_info *duckdb_v2_aggregate_function_bind_info_handle;
typedef struct _duckdb_v2_aggregate_function_combine_info *duckdb_v2_aggregate_function_combine_info_handle;
typedef struct _duckdb_v2_aggregate_function_destroy_info *duckdb_v2_aggregate_function_destroy_info_handle;
typedef struct _duckdb_v2_aggregate_function_finalize_info *duckdb_v2_aggregate_function_finalize_info_handle;
typedef struct _duckdb_v2_aggregate_function *duckdb_v2_aggregate_function_handle;
typedef struct _duckdb_v2_aggregate_function_init_info *duckdb_v2_aggregate_function_init_info_handle;
typedef struct _duckdb_v2_aggregate_function_size_info *duckdb_v2_aggregate_function_size_info_handle;
typedef struct _duckdb_v2_aggregate_function_update_info *duckdb_v2_aggregate_function_update_info_handle;
typedef struct _duckdb_v2_arena *duckdb_v2_arena_handle;
typedef struct _duckdb_v2_arrow_exporter *duckdb_v2_arrow_exporter_handle;
typedef struct _duckdb_v2_arrow_importer *duckdb_v2_arrow_importer_handle;
typedef struct _duckdb_v2_arrow_result *duckdb_v2_arrow_result_handle;
typedef struct _duckdb_v2_attach_options *duckdb_v2_attach_options_handle;
typedef struct _duckdb_v2_cast_function_exec_info *duckdb_v2_cast_function_exec_info_handle;
typedef struct _duckdb_v2_cast_function *duckdb_v2_cast_function_handle;
typedef struct _duckdb_v2_column_data_collection_append_state *duckdb_v2_column_data_collection_append_state_handle;
typedef struct _duckdb_v2_column_data_collection *duckdb_v2_column_data_collection_handle;
typedef struct _duckdb_v2_column_data_collection_shared_scan_state *duckdb_v2_column_data_collection_shared_scan_state_handle;
typedef struct _duckdb_v2_column_data_collection_worker_scan_state *duckdb_v2_column_data_collection_worker_scan_state_handle;
typedef struct _duckdb_v2_column_description *duckdb_v2_column_description_handle;
typedef struct _duckdb_v2_config *duckdb_v2_config_handle;
typedef struct _duckdb_v2_connection *duckdb_v2_connection_handle;
typedef struct _duckdb_v2_context *duckdb_v2_context_handle;
typedef struct _duckdb_v2_copy_from_bind_info *duckdb_v2_copy_from_bind_info_handle;
typedef struct _duckdb_v2_copy_from_exec_info *duckdb_v2_copy_from_exec_info_handle;
typedef struct _duckdb_v2_copy_from_init_global_info *duckdb_v2_copy_from_init_global_info_handle;
typedef struct _duckdb_v2_copy_from_init_local_info *duckdb_v2_copy_from_init_local_info_handle;
typedef struct _duckdb_v2_copy_from_progress_info *duckdb_v2_copy_from_progress_info_handle;
typedef struct _duckdb_v2_copy_function *duckdb_v2_copy_function_handle;
typedef struct _duckdb_v2_copy_to_batch_info *duckdb_v2_copy_to_batch_info_handle;
typedef struct _duckdb_v2_copy_to_batch_size_info *duckdb_v2_copy_to_batch_size_info_handle;
typedef struct _duckdb_v2_copy_to_bind_info *duckdb_v2_copy_to_bind_info_handle;
typedef struct _duckdb_v2_copy_to_finalize_info *duckdb_v2_copy_to_finalize_info_handle;
typedef struct _duckdb_v2_copy_to_flush_info *duckdb_v2_copy_to_flush_info_handle;
typedef struct _duckdb_v2_copy_to_init_info *duckdb_v2_copy_to_init_info_handle;
typedef struct _duckdb_v2_copy_to_statistics_info *duckdb_v2_copy_to_statistics_info_handle;
typedef struct _duckdb_v2_custom_option *duckdb_v2_custom_option_handle;
typedef struct _duckdb_v2_custom_option_update_info *duckdb_v2_custom_option_update_info_handle;
typedef struct _duckdb_v2_custom_type *duckdb_v2_custom_type_handle;
typedef struct _duckdb_v2_data_chunk *duckdb_v2_data_chunk_handle;
typedef struct _duckdb_v2_environment *duckdb_v2_environment_handle;
typedef struct _duckdb_v2_error_info *duckdb_v2_error_info_handle;
typedef struct _duckdb_v2_expression *duckdb_v2_expression_handle;
typedef struct _duckdb_v2_extension *duckdb_v2_extension_handle;
typedef struct _duckdb_v2_factory *duckdb_v2_factory_handle;
typedef struct _duckdb_v2_file *duckdb_v2_file_handle;
typedef struct _duckdb_v2_file_open_options *duckdb_v2_file_open_options_handle;
typedef struct _duckdb_v2_file_system *duckdb_v2_file_system_handle;
typedef struct _duckdb_v2_function_bind_info *duckdb_v2_function_bind_info_handle;
typedef struct _duckdb_v2_function_docs *duckdb_v2_function_docs_handle;
typedef struct _duckdb_v2_function_signature *duckdb_v2_function_signature_handle;
typedef struct _duckdb_v2_instance *duckdb_v2_instance_handle;
typedef struct _duckdb_v2_log_sink *duckdb_v2_log_sink_handle;
typedef struct _duckdb_v2_log_sink_write_info *duckdb_v2_log_sink_write_info_handle;
typedef struct _duckdb_v2_logical_type *duckdb_v2_logical_type_handle;
typedef struct _duckdb_v2_macro_function *duckdb_v2_macro_function_handle;
typedef struct _duckdb_v2_multi_file_function *duckdb_v2_multi_file_function_handle;
typedef struct _duckdb_v2_option *duckdb_v2_option_handle;
typedef struct _duckdb_v2_pragma_function *duckdb_v2_pragma_function_handle;
typedef struct _duckdb_v2_pragma_function_query_info *duckdb_v2_pragma_function_query_info_handle;
typedef struct _duckdb_v2_prepared_statement *duckdb_v2_prepared_statement_handle;
typedef struct _duckdb_v2_qname *duckdb_v2_qname_handle;
typedef struct _duckdb_v2_query_metrics *duckdb_v2_query_metrics_handle;
typedef struct _duckdb_v2_query_metrics_node *duckdb_v2_query_metrics_node_handle;
typedef struct _duckdb_v2_replacement_scan *duckdb_v2_replacement_scan_handle;
typedef struct _duckdb_v2_replacement_scan_info *duckdb_v2_replacement_scan_info_handle;
typedef struct _duckdb_v2_result *duckdb_v2_result_handle;
typedef struct _duckdb_v2_scalar_function_bind_info *duckdb_v2_scalar_function_bind_info_handle;
typedef struct _duckdb_v2_scalar_function_exec_info *duckdb_v2_scalar_function_exec_info_handle;
typedef struct _duckdb_v2_scalar_function *duckdb_v2_scalar_function_handle;
typedef struct _duckdb_v2_scalar_function_init_info *duckdb_v2_scalar_function_init_info_handle;
typedef struct _duckdb_v2_scalar_function_resolve_types_info *duckdb_v2_scalar_function_resolve_types_info_handle;
typedef struct _duckdb_v2_schema *duckdb_v2_schema_handle;
typedef struct _duckdb_v2_sql_statement *duckdb_v2_sql_statement_handle;
typedef struct _duckdb_v2_statement_iterator *duckdb_v2_statement_iterator_handle;
typedef struct _duckdb_v2_table_description *duckdb_v2_table_description_handle;
typedef struct _duckdb_v2_table_function_bind_info *duckdb_v2_table_function_bind_info_handle;
typedef struct _duckdb_v2_table_function_claim_batch_info *duckdb_v2_table_function_claim_batch_info_handle;
typedef struct _duckdb_v2_table_function_exec_info *duckdb_v2_table_function_exec_info_handle;
typedef struct _duckdb_v2_table_function_filter_pushdown_info *duckdb_v2_table_function_filter_pushdown_info_handle;
typedef struct _duckdb_v2_table_function_get_bind_info_info *duckdb_v2_table_function_get_bind_info_info_handle;
typedef struct _duckdb_v2_table_function *duckdb_v2_table_function_handle;
typedef struct _duckdb_v2_table_function_init_global_info *duckdb_v2_table_function_init_global_info_handle;
typedef struct _duckdb_v2_table_function_init_local_info *duckdb_v2_table_function_init_local_info_handle;
typedef struct _duckdb_v2_table_function_partition_data_info *duckdb_v2_table_function_partition_data_info_handle;
typedef struct _duckdb_v2_table_function_partitioning_info *duckdb_v2_table_function_partitioning_info_handle;
typedef struct _duckdb_v2_table_function_progress_info *duckdb_v2_table_function_progress_info_handle;
typedef struct _duckdb_v2_token_iterator *duckdb_v2_token_iterator_handle;
typedef struct _duckdb_v2_value *duckdb_v2_value_handle;
typedef struct _duckdb_v2_vector *duckdb_v2_vector_handle;

// ---- callbacks ------------------------------------------------------------
// The table-function callbacks get (info, context, err); bind gets the
// argument view and the table's bind info first (read from the library's
// call sites; test/v2check and the SQL suite exercise each one installed).
typedef void (*duckdb_v2_aggregate_function_bind_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_aggregate_function_combine_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_aggregate_function_destroy_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_aggregate_function_finalize_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_aggregate_function_init_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_aggregate_function_size_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_aggregate_function_update_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_cast_function_exec_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_from_bind_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_from_exec_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_from_init_global_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_from_init_local_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_from_progress_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_to_batch_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_to_batch_size_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_to_bind_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_to_finalize_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_to_flush_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_to_init_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_copy_to_statistics_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_custom_option_update_callback_fn)(duckdb_v2_custom_option_update_info_handle info, duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err);
typedef void (*duckdb_v2_file_system_path_glob_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_log_sink_flush_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_log_sink_write_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_pragma_function_exec_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_pragma_function_query_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_replacement_scan_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_scalar_function_bind_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_scalar_function_exec_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_scalar_function_init_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_scalar_function_resolve_types_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_table_function_bind_callback_fn)(duckdb_v2_function_bind_info_handle args, duckdb_v2_table_function_bind_info_handle info, duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err);
typedef void (*duckdb_v2_table_function_claim_batch_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_table_function_exec_callback_fn)(duckdb_v2_table_function_exec_info_handle info, duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err);
typedef void (*duckdb_v2_table_function_filter_pushdown_callback_fn)(duckdb_v2_table_function_filter_pushdown_info_handle info, duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err);
typedef void (*duckdb_v2_table_function_get_bind_info_callback_fn)(void); // not called by this extension: only its size matters
typedef void (*duckdb_v2_table_function_init_global_callback_fn)(duckdb_v2_table_function_init_global_info_handle info, duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err);
typedef void (*duckdb_v2_table_function_init_local_callback_fn)(duckdb_v2_table_function_init_local_info_handle info, duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err);
typedef void (*duckdb_v2_table_function_partition_data_callback_fn)(duckdb_v2_table_function_partition_data_info_handle info, duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err);
typedef void (*duckdb_v2_table_function_partitioning_callback_fn)(duckdb_v2_table_function_partitioning_info_handle info, duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err);
typedef void (*duckdb_v2_table_function_progress_callback_fn)(duckdb_v2_table_function_progress_info_handle info, duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err);
typedef void (*duckdb_v2_text_sink_fn)(void); // not called by this extension: only its size matters

// ---- the extension entry point ---------------------------------------------

// What DuckDB hands <name>_init_c_api_v2. get_api returns the function table
// for a version string ("v2.0.0"); err is a live error slot.
struct duckdb_v2_extension_input {
	const void *(*get_api)(duckdb_v2_extension_handle extension, const char *version);
	duckdb_v2_extension_handle extension;
	duckdb_v2_context_handle context;
	duckdb_v2_error_info_handle *err;
};

#endif
