package scanner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/remote-segments/remote_segments/scanner/catalog"
)

// boundsPlan is a plan of schema whose chunks are the catalog rows given
// (url added), as Bind would hold them: nothing is read.
func boundsPlan(t *testing.T, schema *arrow.Schema, rows []Row) *Plan {
	t.Helper()
	for i := range rows {
		rows[i]["url"] = fmt.Sprintf("/data/c%d.arrow", i)
	}
	chunks, err := catalog.FromRows(rows, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	return &Plan{Schema: schema, Chunks: chunks}
}

func keptRows(p *Plan) []int {
	var out []int
	for _, c := range p.Chunks.All() {
		out = append(out, c.Row)
	}
	return out
}

// Each type prunes by its own order, from bounds given as text (CSV, a
// LIST of STRUCT) or as numbers (Parquet, JSON); a chunk without bounds,
// or with one that does not read as the type, is kept.
func TestPruneByBoundsTypes(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32},
		{Name: "day64", Type: arrow.FixedWidthTypes.Date64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	rows := func() []Row {
		return []Row{
			{"min_x": int64(-10), "max_x": int64(0), "min_u": "1", "max_u": "5", "min_f": 0.1, "max_f": "0.5",
				"min_s": "apple", "max_s": "banana", "min_day": "2024-01-01", "max_day": "2024-01-31", "min_day64": "2024-01-01", "max_day64": int64(1706659200000), // 2024-01-31
				"min_ts": "2024-01-01 00:00:00", "max_ts": "2024-01-01 11:59:59.999999"},
			{"min_x": "1", "max_x": "100", "min_u": uint64(6), "max_u": uint64(9), "min_f": 0.6, "max_f": 0.9,
				"min_s": "cherry", "max_s": "date", "min_day": int64(19754), "max_day": int64(19783), // 2024-02-01 .. 2024-03-01
				"min_ts": "2024-01-01T12:00:00Z", "max_ts": int64(1704153599000000)}, // .. 2024-01-01 23:59:59 UTC
			{},                                   // no bounds: always kept
			{"min_x": "garbage", "max_x": "-20"}, // an unreadable minimum: unbounded below
		}
	}
	for _, tc := range []struct {
		col    string
		op     Op
		values []string
		kept   []int
	}{
		{"x", OpEqual, []string{"0"}, []int{0, 2}},
		{"x", OpEqual, []string{"50"}, []int{1, 2}},
		{"x", OpLess, []string{"1"}, []int{0, 2, 3}},
		{"x", OpLessEqual, []string{"1"}, []int{0, 1, 2, 3}},
		{"x", OpGreater, []string{"0"}, []int{1, 2}},
		{"x", OpGreaterEqual, []string{"0"}, []int{0, 1, 2}},
		{"x", OpIn, []string{"-25", "500"}, []int{2, 3}},
		{"x", OpBetween, []string{"-30", "-15"}, []int{2, 3}},
		{"x", OpBetween, []string{"101", "200"}, []int{2}},
		{"u", OpGreater, []string{"5"}, []int{1, 2, 3}},
		{"f", OpGreaterEqual, []string{"0.5"}, []int{0, 1, 2, 3}}, // 0.5 is the first chunk's maximum
		{"f", OpGreater, []string{"0.5"}, []int{1, 2, 3}},
		{"s", OpEqual, []string{"blueberry"}, []int{2, 3}},
		{"s", OpLess, []string{"b"}, []int{0, 2, 3}},
		{"s", OpIn, []string{"banana", "cranberry"}, []int{0, 1, 2, 3}},
		{"day", OpGreaterEqual, []string{"2024-02-15"}, []int{1, 2, 3}},
		{"day", OpLess, []string{"2024-02-01"}, []int{0, 2, 3}},
		{"day64", OpGreater, []string{"2024-01-31"}, []int{1, 2, 3}},
		{"day64", OpLessEqual, []string{"2024-01-01"}, []int{0, 1, 2, 3}},
		{"day64", OpLess, []string{"2024-01-01"}, []int{1, 2, 3}},
		{"ts", OpGreaterEqual, []string{"2024-01-01 13:00:00+01"}, []int{1, 2, 3}}, // noon UTC
		{"ts", OpLess, []string{"2024-01-01 12:00:00+00"}, []int{0, 2, 3}},
		{"ts", OpBetween, []string{"2024-01-02 00:00:00", "2024-01-03 00:00:00"}, []int{2, 3}},
	} {
		t.Run(fmt.Sprintf("%s %d %v", tc.col, tc.op, tc.values), func(t *testing.T) {
			p := boundsPlan(t, schema, rows())
			dropped, err := p.PruneByBounds(tc.col, tc.op, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			if got := keptRows(p); !slices.Equal(got, tc.kept) || dropped != 4-len(tc.kept) || p.pruned != int64(dropped) {
				t.Errorf("kept %v (dropped %d, pruned %d), want %v", got, dropped, p.pruned, tc.kept)
			}
		})
	}
	for _, tc := range []struct {
		col    string
		op     Op
		values []string
	}{
		{"b", OpEqual, []string{"true"}}, // no order here
		{"nope", OpEqual, []string{"1"}}, // no such column
		{"x", OpEqual, []string{"1.5"}},  // not an integer
		{"x", OpBetween, []string{"1"}},  // one constant of two
		{"day", OpEqual, []string{"infinity"}},
	} {
		p := boundsPlan(t, schema, rows())
		if n, err := p.PruneByBounds(tc.col, tc.op, tc.values); err == nil || n != 0 || p.Chunks.Len() != 4 {
			t.Errorf("%s %d %v: dropped %d, %v; want an error and nothing dropped", tc.col, tc.op, tc.values, n, err)
		}
	}
}

// Bounds as a Parquet catalog's DATE and TIMESTAMP columns give them (the
// catalog's text): a date bounds a timestamp column's whole day (in any
// time zone, for a column with one), a timestamp without an offset bounds
// a date column's day, nanoseconds are kept.
func TestPruneByBoundsDatesAndTimestamps(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "tstz", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32},
	}, nil)
	rows := func() []Row {
		return []Row{{
			"min_ts": "2024-01-31", "max_ts": "2024-01-31", "min_tstz": "2024-01-31", "max_tstz": "2024-01-31",
			"min_ns": "2024-01-31 12:00:00.123456789", "max_ns": "2024-01-31 12:00:00.123456789",
			"min_day": "2024-01-31 06:00:00", "max_day": "2024-01-31 18:00:00.5",
		}, {
			"min_day": "2024-01-31 06:00:00+00", "max_day": "2024-01-31 18:00:00+00", // a day that depends on the zone: no bound
		}}
	}
	for _, tc := range []struct {
		col    string
		op     Op
		values []string
		kept   []int
	}{
		{"ts", OpGreater, []string{"2024-01-31 23:59:59.999999"}, []int{0, 1}},
		{"ts", OpGreaterEqual, []string{"2024-02-01 00:00:00"}, []int{1}},
		{"ts", OpLess, []string{"2024-01-31 00:00:00"}, []int{1}},
		{"tstz", OpLess, []string{"2024-01-30 20:00:00+00"}, []int{0, 1}}, // 2024-01-31 in +14:00
		{"tstz", OpLess, []string{"2024-01-30 09:59:59+00"}, []int{1}},
		{"tstz", OpGreater, []string{"2024-02-01 13:00:00+00"}, []int{0, 1}}, // 2024-01-31 in -14:00
		{"tstz", OpGreaterEqual, []string{"2024-02-01 14:00:00+00"}, []int{1}},
		{"ns", OpEqual, []string{"2024-01-31 12:00:00.123456789"}, []int{0, 1}},
		{"ns", OpGreater, []string{"2024-01-31 12:00:00.123456788"}, []int{0, 1}},
		{"ns", OpGreater, []string{"2024-01-31 12:00:00.123456789"}, []int{1}},
		{"day", OpEqual, []string{"2024-01-31"}, []int{0, 1}},
		{"day", OpGreater, []string{"2024-01-31"}, []int{1}},
		{"day", OpLess, []string{"2024-01-31"}, []int{1}},
	} {
		t.Run(fmt.Sprintf("%s %d %v", tc.col, tc.op, tc.values), func(t *testing.T) {
			p := boundsPlan(t, schema, rows())
			if _, err := p.PruneByBounds(tc.col, tc.op, tc.values); err != nil {
				t.Fatal(err)
			}
			if got := keptRows(p); !slices.Equal(got, tc.kept) {
				t.Errorf("kept %v, want %v", got, tc.kept)
			}
		})
	}
}

// parseTimestamp reads what time.Parse with timestampLayouts reads, to the
// nanosecond, or leaves the text to it; the texts a catalog's reader and
// DuckDB write take no trial of layouts (no allocation beyond the bound's
// own box).
func TestParseTimestamp(t *testing.T) {
	for _, s := range []string{
		"2024-01-31", "2024-02-29", "2023-02-29", "2024-13-01", "2024-00-10", "2024-04-31", "0001-01-01", "9999-12-31",
		"2024-01-31 12:00:00", "2024-01-31T12:00:00", "2024-01-31 23:59:59.999999999", "2024-01-31 12:00:00.5+00",
		"2024-01-31 12:00:00+05:30", "2024-01-31 12:00:00-08", "2024-01-31T12:00:00Z", "2024-01-31T12:00:00.123-03:00",
		"2024-01-31 24:00:00", "2024-01-31 12:60:00", "2024-01-31 12:00:60", "2024-01-31 12:00:00.", "2024-01-31 12:00:00.1234567891",
		"2024-01-31 12:00:00+1", "2024-01-31 12:00:00+0100", "2024-01-31 12:00", "2024-1-31", "infinity", "", "2024-01-31x",
		"2024-01-31 12:00:00 UTC", "+2024-01-31",
	} {
		var want time.Time
		wantOK := false
		for _, layout := range timestampLayouts {
			if tm, err := time.Parse(layout, s); err == nil {
				want, wantOK = tm, true
				break
			}
		}
		got, dateOnly, ok := parseTimestamp(s)
		if ok && (!wantOK || !got.Equal(want) || dateOnly != (len(s) == 10)) {
			t.Errorf("%q: %v (date alone %v), time.Parse %v %v", s, got, dateOnly, want, wantOK)
		}
		if v, ok := readTimestamp(s, arrow.Microsecond); ok != wantOK || ok && !v.(time.Time).Equal(want) {
			t.Errorf("readTimestamp(%q) = %v %v, want %v %v", s, v, ok, want, wantOK)
		}
	}
	for _, s := range []string{"2024-01-31", "2024-01-31 12:00:00", "2024-01-31 12:00:00.123456789", "2024-01-31 12:00:00.5+00"} {
		if n := testing.AllocsPerRun(100, func() { readTimestamp(s, arrow.Nanosecond) }); n > 1 {
			t.Errorf("readTimestamp(%q): %.0f allocations, want at most the box of its value", s, n)
		}
	}
}

// No chunk that holds a matching row is ever dropped, and every chunk
// whose range holds a matching value is kept (the bounds are all that is
// known): random integer chunks, random comparisons, both sides of them.
func TestPruneByBoundsOracle(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil)
	rng := rand.New(rand.NewPCG(27, 1))
	ops := []Op{OpEqual, OpLess, OpLessEqual, OpGreater, OpGreaterEqual, OpIn, OpBetween}
	holds := func(op Op, x int64, c []int64) bool {
		switch op {
		case OpEqual:
			return x == c[0]
		case OpLess:
			return x < c[0]
		case OpLessEqual:
			return x <= c[0]
		case OpGreater:
			return x > c[0]
		case OpGreaterEqual:
			return x >= c[0]
		case OpIn:
			return slices.Contains(c, x)
		}
		return x >= c[0] && x <= c[1]
	}
	for round := range 300 {
		var rows []Row
		var values [][]int64
		for range 8 {
			v := make([]int64, 1+rng.IntN(5))
			for k := range v {
				v[k] = rng.Int64N(40) - 20
			}
			values = append(values, v)
			rows = append(rows, Row{"min_x": slices.Min(v), "max_x": slices.Max(v)})
		}
		op := ops[rng.IntN(len(ops))]
		c := []int64{rng.Int64N(50) - 25}
		switch op {
		case OpIn:
			c = append(c, rng.Int64N(50)-25)
		case OpBetween:
			c = append(c, c[0]+rng.Int64N(10))
		}
		texts := make([]string, len(c))
		for k, v := range c {
			texts[k] = fmt.Sprint(v)
		}
		p := boundsPlan(t, schema, rows)
		if _, err := p.PruneByBounds("x", op, texts); err != nil {
			t.Fatal(err)
		}
		kept := keptRows(p)
		for i, v := range values {
			rangeMatches := false
			for x := slices.Min(v); x <= slices.Max(v); x++ {
				rangeMatches = rangeMatches || holds(op, x, c)
			}
			if rangeMatches != slices.Contains(kept, i) {
				t.Fatalf("round %d: chunk %v (x in [%d, %d]), x op %d %v: kept %v, want %v",
					round, v, slices.Min(v), slices.Max(v), op, c, slices.Contains(kept, i), rangeMatches)
			}
		}
	}
}
