package arrowipc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/test/datagen"
)

// TestReadIPCColumns reads column subsets of IPC files (plain, LZ4, every
// type) and compares them with arrow-go's decode of the whole file.
func TestReadIPCColumns(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 1, RowsPerChunk: 60000, BatchesPerChunk: 3, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if err := datagen.WriteTypes(dir); err != nil {
		t.Fatal(err)
	}
	noDict := filepath.Join(dir, "types-nodict.arrow")
	writeWithoutDictionaries(t, filepath.Join(dir, "types/part-0.arrow"), noDict, 1<<30)
	files := []string{filepath.Join(dir, "chunks/segment=s0/chunk-0.arrow"), filepath.Join(dir, "types/part-0.arrow"), noDict}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		schema, want, err := Decode(data, mem)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range schema.Fields() {
			if _, ok := f.Type.(*arrow.DictionaryType); ok {
				// Dictionary files take the whole-chunk path.
				var served int64
				if _, _, _, err := readIPCColumns(int64(len(data)), []int{0}, fetchFrom(data, &served), mem); err != ErrDictionaries {
					t.Fatalf("%s: err = %v, want ErrDictionaries", path, err)
				}
				break
			}
		}
		if hasDictionary(schema) {
			for _, w := range want {
				w.Release()
			}
			mem.AssertSize(t, 0)
			continue
		}
		for _, cols := range [][]int{{0}, {len(schema.Fields()) - 1, 0}, allFields(schema)} {
			var served int64
			gotSchema, got, wire, err := readIPCColumns(int64(len(data)), cols, fetchFrom(data, &served), mem)
			if err != nil {
				t.Fatalf("%s cols %v: %v", path, cols, err)
			}
			if !gotSchema.Equal(schema) || wire != served {
				t.Fatalf("schema %v, wire %d served %d", gotSchema, wire, served)
			}
			if len(got) != len(want) {
				t.Fatalf("%d batches, want %d", len(got), len(want))
			}
			for i := range got {
				for j, c := range cols {
					if !array.Equal(got[i].Column(j), want[i].Column(c)) {
						t.Errorf("%s batch %d column %q differs", path, i, schema.Field(c).Name)
					}
				}
				got[i].Release()
			}
			if len(cols) == 1 && served >= int64(len(data))/2 {
				t.Errorf("%s: one column of %d fetched %d of %d bytes", path, len(schema.Fields()), served, len(data))
			}
		}
		for _, w := range want {
			w.Release()
		}
		mem.AssertSize(t, 0)
	}
}

// writeWithoutDictionaries copies at most maxRows rows of each batch of the
// IPC file src to dst, LZ4-compressed, without its dictionary-encoded columns.
func writeWithoutDictionaries(t testing.TB, src, dst string, maxRows int64) {
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	schema, batches, err := Decode(data, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	var keep []int
	var fields []arrow.Field
	for i, f := range schema.Fields() {
		if _, ok := f.Type.(*arrow.DictionaryType); !ok {
			keep = append(keep, i)
			fields = append(fields, f)
		}
	}
	out := arrow.NewSchema(fields, nil)
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(out), ipc.WithLZ4())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		cols := make([]arrow.Array, len(keep))
		for j, i := range keep {
			cols[j] = b.Column(i)
		}
		rec := array.NewRecordBatch(out, cols, b.NumRows())
		part := rec.NewSlice(0, min(maxRows, rec.NumRows()))
		if err := w.Write(part); err != nil {
			t.Fatal(err)
		}
		part.Release()
		rec.Release()
		b.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func hasDictionary(s *arrow.Schema) bool {
	for _, f := range s.Fields() {
		if _, ok := f.Type.(*arrow.DictionaryType); ok {
			return true
		}
	}
	return false
}

func allFields(s *arrow.Schema) []int {
	out := make([]int, len(s.Fields()))
	for i := range out {
		out[i] = i
	}
	return out
}

// TestReadIPCColumnsPlan: with a plan learned from one chunk, a projected
// read of another (different row counts) takes two rounds: the tail, then
// the metadata with the predicted column ranges; it fetches fewer bytes
// than the file and decodes the same values. A plan that predicts wrong
// costs a third round, never a wrong answer.
func TestReadIPCColumnsPlan(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 2, ChunksPerSegment: 3, RowsPerChunk: 40000, BatchesPerChunk: 3, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	// IPC files: (segment + chunk) even.
	first, err := os.ReadFile(filepath.Join(dir, "chunks/segment=s0/chunk-0.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	plan := LearnReadPlan(first)
	if plan.Tail <= TrailerLen || len(plan.spans) != 5 {
		t.Fatalf("learned plan %+v", plan)
	}
	data, err := os.ReadFile(filepath.Join(dir, "chunks/segment=s0/chunk-2.arrow")) // 1,034 more rows
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	_, want, err := Decode(data, mem)
	if err != nil {
		t.Fatal(err)
	}
	wrong := ReadPlan{Tail: 16, spans: []colSpan{{0.99, 1}, {0.99, 1}, {0.99, 1}, {0.99, 1}, {0.99, 1}}}
	for _, c := range []struct {
		name   string
		plan   ReadPlan
		cols   []int
		rounds int
	}{
		{"learned, x", plan, []int{0}, 2},
		{"learned, s and d", plan, []int{4, 2}, 2},
		{"none, x", ReadPlan{}, []int{0}, 3},
		{"wrong, x", wrong, []int{0}, 4}, // a short tail: the footer takes a round of its own
	} {
		var served int64
		rounds := 0
		fetch := func(rs []Range) ([][]byte, error) {
			rounds++
			return fetchFrom(data, &served)(rs)
		}
		_, got, wire, footerLen, err := ReadColumns(int64(len(data)), c.plan, c.cols, fetch, mem)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if rounds != c.rounds || wire != served || wire >= int64(len(data)) || footerLen <= 0 {
			t.Errorf("%s: %d rounds (want %d), %d bytes of %d (served %d), footer %d", c.name, rounds, c.rounds, wire, len(data), served, footerLen)
		}
		for i := range got {
			for j, col := range c.cols {
				if !array.Equal(got[i].Column(j), want[i].Column(col)) {
					t.Errorf("%s: batch %d column %d differs", c.name, i, col)
				}
			}
			got[i].Release()
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d batches, want %d", c.name, len(got), len(want))
		}
	}
	for _, w := range want {
		w.Release()
	}
	mem.AssertSize(t, 0)
}

// TestProjectionMemo: the memo of projected schemas answers by the
// schema and the columns asked, never with another projection's.
func TestProjectionMemo(t *testing.T) {
	var m projectionMemo
	a := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.BinaryTypes.String}}, nil)
	b := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}, {Name: "b", Type: arrow.BinaryTypes.String}}, nil)
	cols := []int{1, 0}
	first := m.of(a, cols)
	cols[0] = 0 // the caller's slice, written after: the memo kept a copy
	for _, c := range []struct {
		schema *arrow.Schema
		cols   []int
		want   string
	}{
		{a, []int{1, 0}, "b:utf8 a:int64"},
		{a, []int{0}, "a:int64"},
		{b, []int{0}, "a:int32"},
		{a, []int{0}, "a:int64"},
		{a, nil, ""},
	} {
		s := m.of(c.schema, c.cols)
		var got []string
		for _, f := range s.Fields() {
			got = append(got, f.Name+":"+f.Type.String())
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("columns %v of %s: %v, want %s", c.cols, c.schema, got, c.want)
		}
	}
	if m.of(a, []int{1, 0}) != m.of(a, []int{1, 0}) || first.NumFields() != 2 {
		t.Error("the same projection twice is not the one schema")
	}
}
