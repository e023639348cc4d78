// Package policy holds the rules a host applies to a remote_segments query
// before any byte is read: the sandbox (REMOTE_SEGMENTS_ALLOWED_PREFIXES and
// DuckDB's own access rule), the named-parameter table with its parsing and
// precedence, and the shard spec.
//
// It is pure Go so that `go vet` and `go test` reach these rules without
// DuckDB's headers: it must not import "C", cabi, or anything that does; a
// host (cabi) reads the query and the engine's settings and hands them here.
package policy
