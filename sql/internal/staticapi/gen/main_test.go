package main

import (
	"bytes"
	"os"
	"testing"
)

// TestTableUpToDate regenerates table.c from the fetched header
// (tools/fetch-duckdb-headers.sh) and compares.
func TestTableUpToDate(t *testing.T) {
	const header = "../../../../build/include/duckdb_extension.h"
	if _, err := os.Stat(header); err != nil {
		t.Fatalf("%v: run tools/fetch-duckdb-headers.sh (make does)", err)
	}
	got, err := generate(header)
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile("../table.c")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, old) {
		t.Fatal("sql/internal/staticapi/table.c is stale: run go generate ./sql/internal/staticapi")
	}
}

func TestMembers(t *testing.T) {
	pre := "typedef struct { int a; } other;\ntypedef struct {\n\tduckdb_state (*duckdb_open)(const char *path, duckdb_database *out);\n\tconst char *(*duckdb_library_version)();\n} duckdb_ext_api_v1;\n"
	names, err := members(pre)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 || names[0] != "duckdb_open" || names[1] != "duckdb_library_version" {
		t.Fatalf("members: %v", names)
	}
	if _, err := members("typedef struct {\n\tint x;\n} duckdb_ext_api_v1;\n"); err == nil {
		t.Fatal("a member that is not a function pointer was accepted")
	}
}
