// Package faults runs the fault matrix: misbehaving HTTP and S3 servers in front of a DuckDB CLI that loads the extension, with the outcome of every case written to test/RELIABILITY.md.
//
// Everything is in the tests: `go test ./test/faults` runs the matrix, and
// `go test ./test/faults -update` also rewrites test/RELIABILITY.md.
package faults
