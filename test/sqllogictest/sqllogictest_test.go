package sqllogictest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func parse(t *testing.T, text string) *File {
	t.Helper()
	f, err := Parse("t.test", strings.NewReader(text))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func TestParseHeaderAndRecords(t *testing.T) {
	f := parse(t, `# name: test/sql/x.test
# description: a description
# group: [remote_segments]

# a comment between records
statement ok
CREATE TABLE t AS
SELECT 1 AS i

statement error
SELECT * FROM nope
----
Table with name nope
does not exist

statement error
SELECT 1/0 AS x

statement maybe
SELECT 1
----
<REGEX>:.*

query IT rowsort label1
SELECT i, 'a'
FROM t
----
1	a
2	(empty)

query I
SELECT 1 WHERE false
----

require json

require-env HOME

load db.duckdb

restart

sleep 10 milliseconds

halt

host-env A ${B}/c
`)
	if f.Name != "test/sql/x.test" || f.Description != "a description" || f.Group != "[remote_segments]" {
		t.Errorf("header = %q %q %q", f.Name, f.Description, f.Group)
	}
	want := []Record{
		{Kind: Statement, Line: 6, SQL: "CREATE TABLE t AS\nSELECT 1 AS i", Expect: ExpectOK},
		{Kind: Statement, Line: 10, SQL: "SELECT * FROM nope", Expect: ExpectError, ErrorMessage: "Table with name nope\ndoes not exist"},
		{Kind: Statement, Line: 16, SQL: "SELECT 1/0 AS x", Expect: ExpectError},
		{Kind: Statement, Line: 19, SQL: "SELECT 1", Expect: ExpectMaybe, ErrorMessage: "<REGEX>:.*"},
		{Kind: Query, Line: 24, SQL: "SELECT i, 'a'\nFROM t", Types: "IT", Sort: RowSort, Label: "label1",
			Expected: []string{"1\ta", "2\t(empty)"}, HasRows: true},
		{Kind: Query, Line: 31, SQL: "SELECT 1 WHERE false", Types: "I", HasRows: true},
		{Kind: Require, Line: 35, Args: []string{"json"}},
		{Kind: RequireEnv, Line: 37, Args: []string{"HOME"}},
		{Kind: Load, Line: 39, Args: []string{"db.duckdb"}},
		{Kind: Restart, Line: 41},
		{Kind: Sleep, Line: 43, Args: []string{"10", "milliseconds"}},
		{Kind: Halt, Line: 45},
		{Kind: HostEnv, Line: 47, Args: []string{"A", "${B}/c"}},
	}
	if len(f.Records) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(f.Records), len(want), f.Records)
	}
	for i := range want {
		if !reflect.DeepEqual(f.Records[i], want[i]) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, f.Records[i], want[i])
		}
	}
}

func TestParseConditionsAndModeSkip(t *testing.T) {
	f := parse(t, `skipif cli
onlyif engine
statement ok
SELECT 1

mode skip

statement ok
SELECT 2

mode unskip

statement ok
SELECT 3
`)
	if len(f.Records) != 3 {
		t.Fatalf("got %d records", len(f.Records))
	}
	r0 := f.Records[0]
	if !reflect.DeepEqual(r0.SkipIf, []string{"cli"}) || !reflect.DeepEqual(r0.OnlyIf, []string{"engine"}) || r0.Skip {
		t.Errorf("record 0 conditions: %+v", r0)
	}
	if !f.Records[1].Skip || f.Records[2].Skip || f.Records[2].SkipIf != nil {
		t.Errorf("mode skip: %+v", f.Records)
	}
	if appliesTo(&r0, "cli") || !appliesTo(&r0, "engine") || appliesTo(&r0, "other") {
		t.Error("appliesTo ignores skipif/onlyif")
	}
	if appliesTo(&f.Records[1], "engine") || !appliesTo(&f.Records[2], "cli") {
		t.Error("appliesTo ignores mode skip")
	}
	duck := Record{OnlyIf: []string{"duckdb"}}
	if !appliesTo(&duck, "cli") || !appliesTo(&duck, "engine") {
		t.Error(`onlyif duckdb must hold on every host`)
	}
}

func TestParseLoops(t *testing.T) {
	f := parse(t, `loop i 0 2

foreach name a b

query I
SELECT ${i}, '${name}'
----
${i}	${name}

endloop

endloop

statement ok
SELECT '${i}'
`)
	var got []string
	for _, r := range f.Records {
		got = append(got, r.SQL+" => "+strings.Join(r.Expected, "|"))
	}
	want := []string{
		"SELECT 0, 'a' => 0\ta", "SELECT 0, 'b' => 0\tb",
		"SELECT 1, 'a' => 1\ta", "SELECT 1, 'b' => 1\tb",
		"SELECT '${i}' => ", // outside the loop: left for run time
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("loop expansion:\n got %q\nwant %q", got, want)
	}
	if f.Records[0].Line != 5 {
		t.Errorf("expanded record line = %d, want 5", f.Records[0].Line)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line       int
		msg        string
	}{
		{"unknown record", "statement ok\nSELECT 1\n\nfrobnicate\n", 4, `unknown record type "frobnicate"`},
		{"bad expectation", "statement okay\nSELECT 1\n", 1, "unknown statement expectation"},
		{"statement without SQL", "statement ok\n\n", 1, "statement without SQL"},
		{"ok with result", "statement ok\nSELECT 1\n----\n1\n", 1, "statement ok cannot have an expected result"},
		{"query without types", "query\nSELECT 1\n", 1, "query needs column types"},
		{"endloop alone", "endloop\n", 1, "endloop without loop"},
		{"open loop", "loop i 0 2\nstatement ok\nSELECT 1\n", 3, "loop without endloop"},
		{"bad loop bounds", "loop i a b\nendloop\n", 1, "loop bounds must be integers"},
		{"bad sleep", "sleep 3 fortnights\n", 1, "unknown sleep unit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.test", strings.NewReader(tc.text))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if pe.Line != tc.line || !strings.Contains(pe.Msg, tc.msg) || !strings.HasPrefix(err.Error(), "sqllogictest: t.test:") {
				t.Errorf("err = %v (line %d), want line %d and %q", err, pe.Line, tc.line, tc.msg)
			}
		})
	}
}

func TestCheckQuery(t *testing.T) {
	v := func(s string) Value { return Value{Text: s} }
	null := Value{Text: nullText, Null: true}
	rows := func(r ...[]Value) [][]Value { return r }
	for _, tc := range []struct {
		name     string
		rec      Record
		rows     [][]Value
		mismatch string // "" = must match; otherwise a substring of the message
	}{
		{"plain", Record{Types: "IT", Expected: []string{"1\ta", "2\tb"}},
			rows([]Value{v("1"), v("a")}, []Value{v("2"), v("b")}), ""},
		{"NULL and empty", Record{Types: "TT", Expected: []string{"NULL\t(empty)"}},
			rows([]Value{null, v("")}), ""},
		{"order matters without sort", Record{Types: "I", Expected: []string{"2", "1"}},
			rows([]Value{v("1")}, []Value{v("2")}), "result differs"},
		{"rowsort", Record{Types: "I", Sort: RowSort, Expected: []string{"2", "1"}},
			rows([]Value{v("1")}, []Value{v("2")}), ""},
		{"valuesort", Record{Types: "II", Sort: ValueSort, Expected: []string{"4\t3", "2\t1"}},
			rows([]Value{v("1"), v("2")}, []Value{v("3"), v("4")}), ""},
		{"one value per line", Record{Types: "II", Expected: []string{"1", "2", "3", "4"}},
			rows([]Value{v("1"), v("2")}, []Value{v("3"), v("4")}), ""},
		{"R within tolerance", Record{Types: "R", Expected: []string{"0.3333333333"}},
			rows([]Value{v("0.3333333333333333")}), ""},
		{"R out of tolerance", Record{Types: "R", Expected: []string{"0.3334"}},
			rows([]Value{v("0.3333333333333333")}), "result differs"},
		{"I is exact", Record{Types: "I", Expected: []string{"1.0"}},
			rows([]Value{v("1")}), "result differs"},
		{"row count", Record{Types: "I", Expected: []string{"1"}},
			rows([]Value{v("1")}, []Value{v("2")}), "wrong row count: expected 1, got 2"},
		{"no rows expected", Record{Types: "I"}, nil, ""},
		{"column count", Record{Types: "I", Expected: []string{"1\t2"}},
			rows([]Value{v("1"), v("2")}), "wrong column count"},
		{"value with a newline", Record{Types: "T", Expected: []string{"a", "b"}},
			rows([]Value{v("a\nb")}), ""},
		{"regex matches the whole text", Record{Types: "TT", Expected: []string{"<REGEX>:PARTITIONED.*scan"}},
			rows([]Value{v("physical_plan"), v("x\nPARTITIONED AGGREGATE\n table scan")}), ""},
		{"regex does not match", Record{Types: "TT", Expected: []string{"<REGEX>:PARTITIONED"}},
			rows([]Value{v("physical_plan"), v("HASH_GROUP_BY")}), "result does not match"},
		{"negated regex", Record{Types: "TT", Expected: []string{"<!REGEX>:PARTITIONED"}},
			rows([]Value{v("physical_plan"), v("PARTITIONED AGGREGATE")}), "result matches"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := checkQuery(&tc.rec, tc.rows)
			if tc.mismatch == "" && msg != "" {
				t.Errorf("unexpected mismatch: %s", msg)
			}
			if tc.mismatch != "" && !strings.Contains(msg, tc.mismatch) {
				t.Errorf("mismatch = %q, want it to contain %q", msg, tc.mismatch)
			}
		})
	}
}

func TestCheckError(t *testing.T) {
	got := "Catalog Error: Table with name nope does not exist!\nDid you mean \"t\"?"
	for _, tc := range []struct {
		want string
		ok   bool
	}{
		{"", true},
		{"Table with name nope", true},
		{"does not exist!\nDid you mean", true},
		{"Binder Error", false},
		{"<REGEX>:Table with name [a-z]+ does", true},
		{"<REGEX>:^Binder", false},
		{"<!REGEX>:Binder", true},
		{"<!REGEX>:Catalog", false},
	} {
		if msg := checkError(tc.want, got); (msg == "") != tc.ok {
			t.Errorf("checkError(%q) = %q, want ok=%v", tc.want, msg, tc.ok)
		}
	}
}

func TestSubstitute(t *testing.T) {
	vars := map[string]string{"EXT": "/x/rs.duckdb_extension", "DATA": "/d"}
	got, err := substitute("LOAD '${EXT}'; SELECT '${DATA}/a', '__TEST_DIR__/f'", vars, "/tmp/t")
	if err != nil || got != "LOAD '/x/rs.duckdb_extension'; SELECT '/d/a', '/tmp/t/f'" {
		t.Errorf("substitute = %q, %v", got, err)
	}
	if _, err := substitute("SELECT '${NOPE}'", vars, ""); err == nil || !strings.Contains(err.Error(), "${NOPE}") {
		t.Errorf("missing variable: err = %v", err)
	}
}

func TestParseOutput(t *testing.T) {
	res := parseOutput("1"+colSep+"a\tb"+rowSep+"NULL"+colSep+"x\ny"+rowSep, "remote_segments: a log line\nCatalog Error: no table\n\nLINE 1: ...\n")
	want := [][]Value{{{Text: "1"}, {Text: "a\tb"}}, {{Text: "NULL", Null: true}, {Text: "x\ny"}}}
	if !reflect.DeepEqual(res.rows, want) {
		t.Errorf("rows = %+v, want %+v", res.rows, want)
	}
	if res.err != "Catalog Error: no table\n\nLINE 1: ..." || res.stderr != "remote_segments: a log line" {
		t.Errorf("err = %q, stderr = %q", res.err, res.stderr)
	}
	empty := parseOutput(rowSep, "")
	if len(empty.rows) != 1 || len(empty.rows[0]) != 1 || empty.rows[0][0].Text != "" || empty.err != "" {
		t.Errorf("one empty value: %+v", empty)
	}
	none := parseOutput("", "a warning without the error form\n")
	if none.rows != nil || none.err != "" || none.stderr == "" {
		t.Errorf("no rows, no error: %+v", none)
	}
}
