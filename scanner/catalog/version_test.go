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
		if chunks[i].Version != want {
			t.Errorf("row %d: version %q, want %q", i, chunks[i].Version, want)
		}
	}
	if _, err := FromRows([]Row{{"url": "s3://b/a.arrow", "version": 1.5}}, "", "inline"); err == nil {
		t.Error("a version of 1.5 is accepted")
	}
	chunks, err = Parse([]byte("url,version\ns3://b/a.arrow,v9\n"), CSV, "s3://b/cat.csv")
	if err != nil || chunks[0].Version != "v9" {
		t.Fatalf("CSV catalog: %v %+v", err, chunks)
	}
}
