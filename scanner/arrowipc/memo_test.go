package arrowipc

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// smallFile is an IPC file of one batch of rows rows: an int64 column
// named name and a string column.
func smallFile(t *testing.T, name string, rows int) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("v")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema))
	if err == nil {
		err = w.Write(rec)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decodeOne decodes data and returns its schema and its first column's
// values, checking that the memory is given back.
func decodeOne(t *testing.T, data []byte) (*arrow.Schema, []int64) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema, batches, err := Decode(data, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer ReleaseAll(batches)
	var xs []int64
	for _, b := range batches {
		xs = append(xs, b.Column(0).(*array.Int64).Int64Values()...)
	}
	return schema, xs
}

// TestDecodeSchemaOfEachFooter: a file whose footer equals one decoded
// before, to the byte, gets that schema without decoding it again; a file
// whose footer differs, in one byte of a field's name or in its batches,
// gets its own schema, and every file its own rows.
func TestDecodeSchemaOfEachFooter(t *testing.T) {
	a := smallFile(t, "x", 3)
	b := smallFile(t, "y", 3) // the footer differs in one byte
	c := smallFile(t, "x", 5) // the same schema, other blocks
	if len(a) != len(b) {
		t.Fatalf("files of %d and %d bytes, want them alike but for a name", len(a), len(b))
	}
	sa, xa := decodeOne(t, a)
	sb, xb := decodeOne(t, b)
	sa2, _ := decodeOne(t, bytes.Clone(a))
	sc, xc := decodeOne(t, c)
	if sa.Field(0).Name != "x" || sb.Field(0).Name != "y" || sc.Field(0).Name != "x" {
		t.Fatalf("field names %q, %q, %q, want x, y, x", sa.Field(0).Name, sb.Field(0).Name, sc.Field(0).Name)
	}
	if sa2 != sa {
		t.Error("a footer equal to one decoded before had its schema decoded again")
	}
	if sb == sa || sc == sa {
		t.Error("a file whose footer differs got another file's schema")
	}
	if len(xa) != 3 || len(xb) != 3 || len(xc) != 5 || xc[4] != 4 {
		t.Errorf("rows %v, %v, %v", xa, xb, xc)
	}
}

// TestDecodeAllocs: decoding a small file whose footer was seen allocates
// less than decoding it with its footer unseen, and less than arrow-go's
// reader does (its schema and the file reader, built anew for every file,
// are much of a small chunk's allocations).
func TestDecodeAllocs(t *testing.T) {
	data := smallFile(t, "x", 100)
	run := func(assemble, forget bool) func() {
		return func() {
			if forget {
				footerSchemas.forget()
			}
			_, batches, err := decode(data, memory.DefaultAllocator, assemble)
			if err != nil {
				t.Fatal(err)
			}
			ReleaseAll(batches)
		}
	}
	seen := testing.AllocsPerRun(50, run(true, false))
	unseen := testing.AllocsPerRun(50, run(true, true))
	arrowGo := testing.AllocsPerRun(50, run(false, false))
	t.Logf("allocations a decode: %.0f, %.0f of a footer unseen, %.0f by arrow-go", seen, unseen, arrowGo)
	if seen >= unseen || seen >= arrowGo {
		t.Errorf("a decode of a footer seen allocates %.0f times, of one unseen %.0f, by arrow-go %.0f: want fewer than both", seen, unseen, arrowGo)
	}
}

// forget empties the memo.
func (m *schemaMemo) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = [memoEntries]memoEntry{}
}
