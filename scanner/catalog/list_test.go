package catalog

// The compact List: a large catalog is read a row group at a time into
// fixed-size refs, without an allocation a row; a shard's rows are
// dropped as they are read; errors name the row however far in it is.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet/parquettest"
)

// bigCatalog is a Parquet catalog of groups row groups of rows rows each:
// chunk i is url "seg<i/1000>/chunk-<i>.arrow" with segment_id, length
// and num_rows; bad, if ≥ 0, is a row whose length is 0.
func bigCatalog(t testing.TB, groups, rows, bad int) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "url", Type: arrow.BinaryTypes.String},
		{Name: "segment_id", Type: arrow.BinaryTypes.String},
		{Name: "length", Type: arrow.PrimitiveTypes.Int64},
		{Name: "num_rows", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	var recs []arrow.RecordBatch
	for g := range groups {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for k := range rows {
			i := g*rows + k
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("seg%d/chunk-%d.arrow", i/1000, i))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("s%d", i/1000))
			length := int64(1000 + i%7)
			if i == bad {
				length = 0
			}
			b.Field(2).(*array.Int64Builder).Append(length)
			b.Field(3).(*array.Int64Builder).Append(int64(i % 100))
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	return parquettest.WriteArrowBatches(t, recs, parquet.WithDictionaryDefault(false))
}

// heldBytes is what l holds beyond its fixed part: its slices' capacity.
func heldBytes(l *List) int {
	n := cap(l.refs)*int(unsafe.Sizeof(ref{})) + cap(l.rows)*4 + cap(l.text)
	for _, c := range []*intColumn{&l.offset, &l.length, &l.numRows, &l.decoded} {
		n += cap(c.vals) * 8
	}
	for _, s := range l.prefixes {
		n += len(s) + 16
	}
	for _, s := range l.segments {
		n += len(s) + 16
	}
	return n
}

// TestListLargeCatalog: 120 000 rows in three row groups are read without
// an allocation a row, into at most 64 bytes a chunk (a 20-byte ref, two
// number columns, the object name), and every chunk comes back as the
// catalog wrote it.
func TestListLargeCatalog(t *testing.T) {
	const groups, rows = 3, 40_000
	data := bigCatalog(t, groups, rows, -1)
	var l *List
	allocs := testing.AllocsPerRun(1, func() {
		var err error
		if l, err = parse(data, Parquet, "s3://b/ds/cat.parquet", DefaultMaxChunks, nil); err != nil {
			t.Fatal(err)
		}
	})
	if n := groups * rows; l.Len() != n {
		t.Fatalf("%d chunks, want %d", l.Len(), n)
	}
	if max := float64(groups*rows) / 100; allocs > max {
		t.Errorf("%.0f allocations for %d rows: more than %.0f (the catalog is not read into a compact form)", allocs, groups*rows, max)
	}
	if per := heldBytes(l) / l.Len(); per > 64 {
		t.Errorf("%d bytes held a chunk, more than 64", per)
	}
	for _, i := range []int{0, 1, rows - 1, rows, 2*rows + 17, groups*rows - 1} {
		c := l.At(i)
		want := Chunk{URL: fmt.Sprintf("s3://b/ds/seg%d/chunk-%d.arrow", i/1000, i), SegmentID: fmt.Sprintf("s%d", i/1000),
			ChunkID: fmt.Sprintf("chunk-%d", i), Length: int64(1000 + i%7), Size: -1, NumRows: int64(i % 100), DecodedBytes: -1, Row: i}
		if c != want {
			t.Errorf("chunk %d: %+v, want %+v", i, c, want)
		}
		if l.WireLength(i) != c.WireLength() || l.NumRows(i) != c.NumRows || l.Row(i) != i {
			t.Errorf("chunk %d: WireLength %d, NumRows %d, Row %d disagree with %+v", i, l.WireLength(i), l.NumRows(i), l.Row(i), c)
		}
	}
}

// TestListKeepWhileReading: a shard's Keep is asked once a row as the
// catalog is read; the list holds (and has room for) only the rows it
// keeps, numbered as in the catalog, and the first row aside.
func TestListKeepWhileReading(t *testing.T) {
	const groups, rows = 2, 10_000
	data := bigCatalog(t, groups, rows, -1)
	asked := map[int]int{}
	keep := func(c *Chunk) bool {
		asked[c.Row]++
		return c.Row%4 == 3
	}
	l, err := parse(data, Parquet, "/ds/cat.parquet", DefaultMaxChunks, keep)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != groups*rows {
		t.Fatalf("Keep asked of %d rows, want %d", len(asked), groups*rows)
	}
	for row, n := range asked {
		if n != 1 {
			t.Fatalf("Keep asked of row %d %d times", row, n)
		}
	}
	if want := groups * rows / 4; l.Len() != want || l.Dropped() != groups*rows-want {
		t.Fatalf("%d chunks, %d dropped; want %d and %d", l.Len(), l.Dropped(), want, groups*rows-want)
	}
	if cap(l.refs) > l.Len()+l.Len()/4 {
		t.Errorf("room for %d refs for %d chunks kept", cap(l.refs), l.Len())
	}
	if f := l.First(); f.Row != 0 || f.URL != "/ds/seg0/chunk-0.arrow" {
		t.Errorf("First: %+v, want row 0", f)
	}
	for i, c := range l.All() {
		if c.Row != 4*i+3 || c.URL != fmt.Sprintf("/ds/seg%d/chunk-%d.arrow", c.Row/1000, c.Row) || c.NumRows != int64(c.Row%100) {
			t.Fatalf("chunk %d: %+v", i, c)
		}
		if k, ok := l.IndexOfRow(c.Row); !ok || k != i {
			t.Fatalf("IndexOfRow(%d) = %d, %v; want %d", c.Row, k, ok, i)
		}
	}
	if l.HasRow(0) || l.HasRow(4) {
		t.Error("HasRow of a dropped row")
	}
}

// TestListErrorNamesRow: a bad row in the last row group is named by its
// row in the catalog, not in its group.
func TestListErrorNamesRow(t *testing.T) {
	data := bigCatalog(t, 3, 1000, 2345)
	_, err := parse(data, Parquet, "/ds/cat.parquet", DefaultMaxChunks, nil)
	var ce *Error
	if !errors.As(err, &ce) || ce.Row != 2345 || !errors.Is(err, ErrMalformed) ||
		!strings.Contains(err.Error(), "catalog /ds/cat.parquet row 2345: ") || !strings.Contains(err.Error(), `"length" is 0`) {
		t.Fatalf("error %v, want one naming row 2345's length", err)
	}
}

// TestListResolvesAsURLs: a URL resolved through its folder (the
// builder's shortcut) is the URL resolveURL makes of the whole, for
// every kind of base and reference.
func TestListResolvesAsURLs(t *testing.T) {
	bases := []string{"", "/ds/cat.parquet", "/cat.csv", "file:///ds/cat.parquet", "s3://b/ds/sub/cat.parquet",
		"https://h:8443/a/b/cat.json?sig=x", "s3://b/cat.parquet"}
	refs := []string{"c.arrow", "x/c.arrow", "./x/c.arrow", "../c.arrow", "../../../../c.arrow", "x//c.arrow", "/abs/c.arrow",
		"s3://o/k/c.arrow", "s3://o/k/../c.arrow", "https://h/p/c.arrow?X-Amz-Signature=a/b", "seg=1/c d.arrow",
		"x/c%20d.arrow", "x/..", "x/.", "segment=s7/part-0.arrow", "http://h/a:b/c.arrow", "a?q=1/c.arrow", "x#f/c.arrow"}
	for _, base := range bases {
		var rows []Row
		var want []string
		for _, ref := range refs {
			u, err := resolveURL(base, ref)
			if err != nil {
				continue
			}
			rows = append(rows, Row{"url": ref})
			want = append(want, u)
		}
		if len(rows) == 0 {
			continue
		}
		l, err := fromRows(rows, base, "test", nil, DefaultMaxChunks)
		if err != nil {
			t.Fatalf("base %q: %v", base, err)
		}
		for i, c := range l.All() {
			if c.URL != want[i] || c.SegmentID != segmentOf(want[i]) || c.ChunkID != chunkIDOf(want[i]) {
				t.Errorf("base %q, url %q: %q (segment %q, id %q), want %q (%q, %q)", base, rows[i]["url"], c.URL, c.SegmentID, c.ChunkID,
					want[i], segmentOf(want[i]), chunkIDOf(want[i]))
			}
		}
	}
}

// TestListRangesOfOneObject: rows that are ranges of one object share its
// name's bytes; a chunk id equal to the object's name is not stored again.
func TestListRangesOfOneObject(t *testing.T) {
	var rows []Row
	for i := range 1000 {
		rows = append(rows, Row{"url": "s3://b/ds/big-object.arrow", "offset": int64(i * 100), "length": int64(100),
			"chunk_id": "big-object"})
	}
	l, err := fromRows(rows, "", "test", nil, DefaultMaxChunks)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.text) != len("big-object.arrow") {
		t.Errorf("%d bytes of text for 1000 ranges of one object, want %d", len(l.text), len("big-object.arrow"))
	}
	if c := l.At(999); c.URL != "s3://b/ds/big-object.arrow" || c.Offset != 99900 || c.ChunkID != "big-object" || c.SegmentID != "ds" {
		t.Errorf("chunk 999: %+v", c)
	}
}

// TestListKeepDropsSharedURL: a row Keep drops takes its URL's bytes with
// it, so a later row naming the same object stores them again.
func TestListKeepDropsSharedURL(t *testing.T) {
	rows := []Row{{"url": "s3://b/x/a.arrow"}, {"url": "s3://b/x/b.arrow"}, {"url": "s3://b/x/b.arrow"}, {"url": "s3://b/x/a.arrow"}}
	l, err := fromRows(rows, "", "test", func(c *Chunk) bool { return c.Row != 1 }, DefaultMaxChunks)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range l.All() {
		got = append(got, fmt.Sprintf("%d:%s", c.Row, c.URL))
	}
	if want := "0:s3://b/x/a.arrow 2:s3://b/x/b.arrow 3:s3://b/x/a.arrow"; strings.Join(got, " ") != want {
		t.Errorf("chunks %q, want %q", strings.Join(got, " "), want)
	}
}
