package catalog

import "testing"

// TestVersionColumn: the version column is kept as text (a string or an
// integer), absent means "".
func TestVersionColumn(t *testing.T) {
	chunks, err := FromRows([]Row{
		{"url": "s3://b/a.arrow", "version": "etag-1"},
		{"url": "s3://b/b.arrow", "version": int64(42)},
		{"url": "s3://b/c.arrow"},
	}, "", "inline")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"etag-1", "42", ""} {
		if chunks.At(i).Version != want {
			t.Errorf("row %d: version %q, want %q", i, chunks.At(i).Version, want)
		}
	}
	if _, err := FromRows([]Row{{"url": "s3://b/a.arrow", "version": 1.5}}, "", "inline"); err == nil {
		t.Error("a version of 1.5 is accepted")
	}
	parsed, err := Parse([]byte("url,version\ns3://b/a.arrow,v9\n"), CSV, "s3://b/cat.csv")
	if err != nil || parsed[0].Version != "v9" {
		t.Fatalf("CSV catalog: %v %+v", err, parsed)
	}
}

// A row that Keep drops while the catalog is read takes its version and
// bounds with it: the rows kept keep their own, and Select keeps them too.
func TestExtrasFollowTheirRows(t *testing.T) {
	rows := []Row{
		{"url": "s3://b/a.arrow", "version": "va", "min_x": int64(1)},
		{"url": "s3://b/b.arrow", "version": "vb", "max_x": int64(2)},
		{"url": "s3://b/c.arrow"},
		{"url": "s3://b/d.arrow", "version": "vd"},
	}
	keep := func(c *Chunk) bool { return c.Row != 1 }
	l, err := fromRows(rows, "", "inline", keep, DefaultMaxChunks)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, l *List, want []string, wantMin []any) {
		t.Helper()
		if l.Len() != len(want) {
			t.Fatalf("%s: %d chunks, want %d", what, l.Len(), len(want))
		}
		for i := range want {
			c := l.At(i)
			lo, _ := c.Bounds.Of("x")
			if c.Version != want[i] || lo != wantMin[i] {
				t.Errorf("%s: chunk %d (row %d): version %q, min_x %v; want %q, %v", what, i, c.Row, c.Version, lo, want[i], wantMin[i])
			}
		}
	}
	check("kept while read", l, []string{"va", "", "vd"}, []any{int64(1), nil, nil})
	sel := l.Select(func(c *Chunk) bool { return c.Row != 0 })
	check("selected", sel, []string{"", "vd"}, []any{nil, nil})
}
