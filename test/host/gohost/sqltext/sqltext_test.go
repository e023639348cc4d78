package sqltext_test

import (
	"reflect"
	"testing"

	"github.com/remote-segments/remote_segments/test/host/gohost/sqltext"
)

func TestStatements(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"SELECT 1;", []string{"SELECT 1"}},
		{"SELECT ';'; SELECT 2", []string{"SELECT ';'", " SELECT 2"}},
		{"-- a; b\nSELECT 1; -- end", []string{"-- a; b\nSELECT 1"}},
		{"SELECT \"a;b\" /* ; */ FROM t;\n\n", []string{"SELECT \"a;b\" /* ; */ FROM t"}},
		{"-- only a comment\n", nil},
	} {
		if got := sqltext.Statements(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("sqltext.Statements(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestComplete(t *testing.T) {
	for text, want := range map[string]bool{
		"SELECT 1;":            true,
		"SELECT 1; -- note":    true,
		"SELECT 1":             false,
		"SELECT ';'":           false,
		"SELECT 'a;\n":         false,
		"SELECT 1 /* ; */":     false,
		"SELECT 1; /* open ; ": false,
		"SELECT 1 -- ;":        false,
	} {
		if got := sqltext.Complete(text); got != want {
			t.Errorf("sqltext.Complete(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	got := sqltext.SplitArgs(`separator "\037" "\036\n"`)
	want := []string{"separator", "\x1f", "\x1e\n"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splitArgs: %q, want %q", got, want)
	}
	if got := sqltext.SplitArgs(`read '/tmp/a b/statement.sql'`); !reflect.DeepEqual(got, []string{"read", "/tmp/a b/statement.sql"}) {
		t.Errorf("splitArgs of a quoted path: %q", got)
	}
}

func TestFirstWord(t *testing.T) {
	for s, want := range map[string]string{"select 1": "select", "(FROM t)": "FROM", "  WITH x AS (...)": "WITH", "LOAD": "LOAD"} {
		if got := sqltext.FirstWord(s); got != want {
			t.Errorf("sqltext.FirstWord(%q) = %q, want %q", s, got, want)
		}
	}
}
