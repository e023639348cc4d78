package sqllogictest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// realHosts returns the real hosts of the repository, built by `make duckdb`,
// `make host` and `make build/host/gohost`; the test does not build them.
func realHosts(t *testing.T) []Host {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}
	return []Host{
		CLIHost(filepath.Join(root, ".tools/bin/duckdb")),
		EngineHost(filepath.Join(root, "build/host/duckdb_host")),
		Engine14Host(filepath.Join(root, "build/host/duckdb_host_1.4.4")),
		GoHost(filepath.Join(root, "build/host/gohost")),
	}
}

const integrationTest = `# name: integration.test
# description: the runner against a real DuckDB process
# group: [sqllogictest]

query I
SELECT 42
----
42

statement error
SELECT * FROM no_such_table
----
Table with name no_such_table does not exist

# A query after an error in the same process still works.
query IT
SELECT * FROM (VALUES (1, 'one'), (2, NULL), (3, '')) t(i, s) ORDER BY i
----
1	one
2	NULL
3	(empty)

statement ok
CREATE TABLE t AS SELECT range AS i FROM range(5000)

query IIR
SELECT count(*), sum(i), avg(i) FROM t
----
5000	12497500	2499.5

# An aborted transaction and the way out of it.
statement ok
BEGIN

statement error
SELECT error('boom')
----
boom

statement error
SELECT 1
----
aborted

statement ok
ROLLBACK

# An unterminated string is a parser error, not a hang.
statement error
SELECT 'unterminated
----
unterminated

# Every host prints values as DuckDB casts them to VARCHAR.
query TTTTTTTTTT
SELECT [1, 2], ['a', NULL], {'k': 'v', 'n': 1}, MAP {'a': 1}, 'x'::ENUM('x', 'y'),
       union_value(n := 1), 3.14::DECIMAL(5, 2), 1e20::DOUBLE, DATE '2024-01-02', '\xAA'::BLOB
----
[1, 2]	[a, NULL]	{'k': v, 'n': 1}	{a=1}	x	1	3.14	1e+20	2024-01-02	\xAA

query T
SELECT 'line 1' || chr(10) || 'line 2' || chr(9) || 'tab'
----
line 1
line 2	tab

query I
SELECT 7 -- a trailing comment
----
7
`

func TestRealHosts(t *testing.T) {
	defer goleak.VerifyNone(t)
	file := writeTest(t, t.TempDir(), "integration.test", integrationTest)
	for _, h := range realHosts(t) {
		t.Run(h.Name, func(t *testing.T) {
			if _, err := os.Stat(h.Path); err != nil {
				t.Skipf("host %s not built (%v): run `make duckdb` / `make host` / `make build/host/gohost`", h.Name, err)
			}
			var out bytes.Buffer
			r := Runner{Out: &out}
			rep, err := r.Run([]string{file}, []Host{h}, nil)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !rep.OK() || rep.Hosts[0].Passed != 13 {
				t.Errorf("want 13 passed, none failed:\n%s", out.String())
			}
		})
	}
}
