// Command extension is the remote_segments loadable DuckDB extension: built
// with -buildmode=c-shared, it exports only remote_segments_init_c_api (see
// exports.map), which lives in package cabi. It must never import the DuckDB
// Go driver: that would link a second DuckDB into the extension.
package main

import _ "github.com/remote-segments/remote_segments/cabi"

func main() {}
