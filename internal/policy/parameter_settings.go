package policy

import "github.com/remote-segments/remote_segments/scanner"

// In the DuckDB 2.0 edition every named parameter is also a DuckDB setting,
// remote_segments_<name> (SET GLOBAL or SESSION). A scan takes each value
// from, in order: the query's named parameter, the setting, the environment
// variable REMOTE_SEGMENTS_<NAME>, the default. The setting's text goes
// through the parameter's own parser, so both spell values alike.

// SettingName is the DuckDB setting of named parameter name.
func SettingName(name string) string { return "remote_segments_" + name }

// CheckSetting parses v as parameter name's value would be, for the update
// callback of a SET: it returns the error text, or "" when v is valid.
func CheckSetting(name, v string) string {
	for _, p := range namedParameters {
		if p.name != name {
			continue
		}
		var cfg scanner.Config
		if err := p.set(&cfg, v); err != nil {
			return "remote_segments: " + SettingName(name) + ": " + p.name + " " + err.Error()
		}
		return ""
	}
	return "remote_segments: no parameter " + name
}

// ParameterDoc describes named parameter name for duckdb_settings().
func ParameterDoc(name string) string {
	if d, ok := parameterDocs[name]; ok {
		return d
	}
	return "remote_segments named parameter " + name + " (the query's " + name + " := ... wins)"
}

// parameterDocs are the settings' descriptions (README: Named parameters).
var parameterDocs = map[string]string{
	"max_parallel_io":      "IO requests a remote_segments scan keeps in flight (1-4096; default 64 remote, 32 local)",
	"memory_budget":        "byte ceiling of a remote_segments scan's pipeline, such as '512MiB' (default adaptive)",
	"budget_fraction":      "fraction of a scan's total bytes its adaptive budget takes (0-1, default 0.25)",
	"ordered":              "deliver remote_segments batches in catalog order (default false)",
	"request_size":         "largest ranged GET of a remote_segments scan, such as '8MiB'",
	"coalesce_gap":         "merge byte ranges this close into one request, such as '64KiB' ('0': adjacent only)",
	"retries":              "retries of a failed remote_segments request (0-100, default 3)",
	"request_timeout":      "timeout of one remote_segments request, such as '30s'",
	"hedge":                "re-issue a remote_segments request slower than its peers' p95 (default true)",
	"union_by_name":        "remote_segments: chunks may differ in columns; unify them by name (default false)",
	"local_mmap":           "remote_segments: map local files instead of reading them into buffers (default false)",
	"s3_endpoint":          "S3 endpoint URL for remote_segments, such as 'http://127.0.0.1:7070'",
	"s3_region":            "S3 region for remote_segments",
	"s3_url_style":         "S3 URL style for remote_segments: 'vhost' or 'path'",
	"s3_access_key_id":     "S3 access key id for remote_segments (default: the AWS chain)",
	"s3_secret_access_key": "S3 secret access key for remote_segments",
	"s3_session_token":     "S3 session token for remote_segments",
	"trace":                "path of a Chrome-trace JSON of every remote_segments request",
	"cache_dir":            "directory of a local cache of remote_segments chunks, shared by processes (default: off)",
	"cache_size":           "bytes the remote_segments cache keeps, such as '20GiB' (default a tenth of the free space)",
	"shard":                "scan only shard k of n of the source's chunks, as 'k/n' (one worker of many)",
	"debug_panic":          "test only: make a remote_segments scan panic at 'bind' or 'next'",
}
