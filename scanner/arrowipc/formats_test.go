package arrowipc

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/endian"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/test/datagen"
)

// sameRows fails unless got (batches of rows, empty ones anywhere) holds
// the rows of want, column cols[j] of want against column j of got.
func sameRows(t *testing.T, what string, want, got []arrow.RecordBatch, cols []int) {
	t.Helper()
	for j, c := range cols {
		gi, gb := 0, 0 // row gi of got[gb]
		rows := 0
		for _, w := range want {
			for wi := 0; wi < int(w.NumRows()); {
				for gb < len(got) && gi == int(got[gb].NumRows()) {
					gb, gi = gb+1, 0
				}
				if gb == len(got) {
					t.Fatalf("%s: column %q: %d rows, want more", what, w.ColumnName(c), rows)
				}
				n := min(int(w.NumRows())-wi, int(got[gb].NumRows())-gi)
				if !array.SliceEqual(w.Column(c), int64(wi), int64(wi+n), got[gb].Column(j), int64(gi), int64(gi+n)) {
					t.Fatalf("%s: column %q differs in rows %d to %d:\nwant %v\n got %v", what, w.ColumnName(c), rows, rows+n,
						array.NewSlice(w.Column(c), int64(wi), int64(wi+n)), array.NewSlice(got[gb].Column(j), int64(gi), int64(gi+n)))
				}
				wi, gi, rows = wi+n, gi+n, rows+n
			}
		}
		for ; gb < len(got); gb, gi = gb+1, 0 {
			if int(got[gb].NumRows()) > gi {
				t.Fatalf("%s: column %d: more rows than written", what, j)
			}
		}
	}
}

// Every format of the arrow_types dataset (both byte orders, every codec,
// file and stream) decodes to the values written, whole and (files)
// column by column; the bytes decoded are never written, so decoding them
// twice gives the same values (bind decodes the first chunk, and the scan
// decodes its bytes again); and the schema is marked native, so chunks of
// both orders make one scan.
func TestDecodeEveryFormat(t *testing.T) {
	want := datagen.ArrowTypesBatches()
	defer datagen.ReleaseAll(want)
	schema := datagen.ArrowTypesSchema()
	all := make([]int, len(schema.Fields()))
	for i := range all {
		all[i] = i
	}
	for _, f := range datagen.IPCFormats() {
		t.Run(f.Name(), func(t *testing.T) {
			data, err := datagen.EncodeIPC(schema, want, f)
			if err != nil {
				t.Fatal(err)
			}
			orig := bytes.Clone(data)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			for round := range 2 {
				got, batches, err := Decode(data, mem)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if got.Endianness() != endian.NativeEndian || !got.Equal(schema) {
					t.Errorf("round %d: schema %s, want %s (native order)", round, got, schema)
				}
				sameRows(t, "Decode", want, batches, all)
				ReleaseAll(batches)
				if !bytes.Equal(data, orig) {
					t.Fatalf("round %d: Decode changed the bytes it decoded", round)
				}
			}
			if !f.File {
				return
			}
			var served int64
			if _, _, _, err := readIPCColumns(int64(len(data)), []int{0}, fetchFrom(data, &served), mem); !errors.Is(err, ErrDictionaries) {
				t.Fatalf("projected read of a file with dictionaries: %v, want ErrDictionaries", err)
			}
		})
	}
}

// The projected reader reads every column of every format of the
// arrow_types/nodict files (arrow_types/all without its dictionaries,
// which it leaves to Decode), in any order, and never writes their bytes.
func TestProjectedEveryFormat(t *testing.T) {
	schema, want := datagen.ArrowTypesNoDict()
	defer datagen.ReleaseAll(want)
	all := make([]int, len(schema.Fields()))
	for i := range all {
		all[i] = len(all) - 1 - i
	}
	for _, f := range datagen.IPCFormats() {
		if !f.File {
			continue
		}
		t.Run(f.Name(), func(t *testing.T) {
			data, err := datagen.EncodeIPC(schema, want, f)
			if err != nil {
				t.Fatal(err)
			}
			orig := bytes.Clone(data)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			for _, cols := range [][]int{all, {0, 4, 11, 34, len(all) - 1}} {
				var served int64
				got, batches, _, err := readIPCColumns(int64(len(data)), cols, fetchFrom(data, &served), mem)
				if err != nil {
					t.Fatal(err)
				}
				if !got.Equal(schema) {
					t.Errorf("projected: schema %s", got)
				}
				sameRows(t, "projected", want, batches, cols)
				ReleaseAll(batches)
			}
			if !bytes.Equal(data, orig) {
				t.Fatal("the projected read changed the bytes it read")
			}
		})
	}
}

// A chunk of the other byte order whose batch of rows holds arrays of no
// rows (the children of empty lists and maps) of the types arrow-go's own
// swap cannot take empty (decimals, month-day-nano intervals) decodes to
// the values written, in every format: arrow-go left such an array's
// buffer absent and then dereferenced it ("runtime error: invalid memory
// address or nil pointer dereference", as a bad chunk).
func TestDecodeForeignEmptyChildren(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d128", Type: arrow.ListOf(&arrow.Decimal128Type{Precision: 20, Scale: 2}), Nullable: true},
		{Name: "d256", Type: arrow.ListOf(&arrow.Decimal256Type{Precision: 40, Scale: 2}), Nullable: true},
		{Name: "mdn", Type: arrow.LargeListOf(arrow.FixedWidthTypes.MonthDayNanoInterval), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, &arrow.Decimal128Type{Precision: 9, Scale: 1}), Nullable: true},
		{Name: "fsl", Type: arrow.FixedSizeListOf(2, arrow.FixedWidthTypes.MonthDayNanoInterval), Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	// Batch 0: empty lists and NULLs only; batch 1: values.
	var recs []arrow.RecordBatch
	for batch := range 2 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for r := range 5 {
			for c := range 4 {
				fb := b.Field(c)
				switch {
				case r%2 == 1:
					fb.AppendNull()
				case c == 3:
					fb.(*array.MapBuilder).Append(true)
				default:
					fb.(array.ListLikeBuilder).Append(true)
				}
			}
			b.Field(4).AppendNull()
			b.Field(5).(*array.Int32Builder).Append(int32(r))
			if batch == 0 {
				continue
			}
			v := int64(r*1000 + 7)
			b.Field(0).(*array.ListBuilder).ValueBuilder().(*array.Decimal128Builder).Append(decimal128.FromI64(-v))
			b.Field(1).(*array.ListBuilder).ValueBuilder().(*array.Decimal256Builder).Append(decimal256.FromI64(v))
			b.Field(2).(*array.LargeListBuilder).ValueBuilder().(*array.MonthDayNanoIntervalBuilder).Append(arrow.MonthDayNanoInterval{Months: int32(r), Days: -3, Nanoseconds: v << 20})
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	defer datagen.ReleaseAll(recs)
	all := []int{0, 1, 2, 3, 4, 5}
	for _, f := range datagen.IPCFormats() {
		if !f.BigEndian {
			continue
		}
		data, err := datagen.EncodeIPC(schema, recs, f)
		if err != nil {
			t.Fatal(err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		_, got, err := Decode(data, mem)
		if err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		sameRows(t, f.Name(), recs, got, all)
		ReleaseAll(got)
		mem.AssertSize(t, 0)
	}
}

// The projected reader swaps a foreign-order file's columns too (the
// arrow_types files have dictionaries, which it leaves to Decode).
func TestProjectedForeignOrder(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "v", Type: arrow.BinaryTypes.StringView, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for r := range 50 {
		b.Field(0).(*array.Int32Builder).Append(int32(r*1000 - 7))
		b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", r%20))
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		for i := range r % 4 {
			lb.ValueBuilder().(*array.Int64Builder).Append(int64(r*i) << 33)
		}
		b.Field(3).(*array.StringViewBuilder).Append(strings.Repeat("view", r%6))
		b.Field(4).AppendNull()
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	for _, codec := range []datagen.Codec{datagen.CodecNone, datagen.CodecLZ4, datagen.CodecZSTD} {
		data, err := datagen.EncodeIPC(schema, []arrow.RecordBatch{rec}, datagen.IPCFormat{File: true, Codec: codec, BigEndian: true})
		if err != nil {
			t.Fatal(err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var served int64
		_, batches, _, err := readIPCColumns(int64(len(data)), []int{4, 0, 1, 2, 3}, fetchFrom(data, &served), mem)
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		sameRows(t, codec.String(), []arrow.RecordBatch{rec}, batches, []int{4, 0, 1, 2, 3})
		ReleaseAll(batches)
		mem.AssertSize(t, 0)
	}
}

// A file or stream of no batches, or of empty batches only, decodes to
// no rows (a foreign-order one's empty batches are skipped).
func TestDecodeEmpty(t *testing.T) {
	schema := datagen.ArrowTypesSchema()
	all := datagen.ArrowTypesBatches()
	defer datagen.ReleaseAll(all)
	for _, f := range datagen.IPCFormats() {
		for _, recs := range [][]arrow.RecordBatch{nil, {all[0], all[len(all)-1]}} {
			data, err := datagen.EncodeIPC(schema, recs, f)
			if err != nil {
				t.Fatal(err)
			}
			_, batches, err := Decode(data, memory.DefaultAllocator)
			if err != nil {
				t.Fatalf("%s, %d empty batches: %v", f.Name(), len(recs), err)
			}
			for _, b := range batches {
				if b.NumRows() != 0 {
					t.Errorf("%s: a batch of %d rows", f.Name(), b.NumRows())
				}
			}
			ReleaseAll(batches)
		}
	}
}

// Types the reader does not know are refused naming the column and the
// type, as not supported (not as a corrupt chunk), whole and projected.
func TestUnsupportedTypes(t *testing.T) {
	for _, f := range datagen.UnsupportedColumns() {
		schema := arrow.NewSchema([]arrow.Field{{Name: "rid", Type: arrow.PrimitiveTypes.Int64}, f}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		b.Field(0).(*array.Int64Builder).Append(1)
		b.Field(1).AppendNull()
		rec := b.NewRecordBatch()
		b.Release()
		for _, file := range []bool{true, false} {
			data, err := datagen.EncodeIPC(schema, []arrow.RecordBatch{rec}, datagen.IPCFormat{File: file})
			if err != nil {
				t.Fatal(err)
			}
			check := func(how string, err error) {
				if !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrMalformed) ||
					!strings.Contains(err.Error(), `column "`+f.Name+`"`) || !strings.Contains(err.Error(), "not supported") {
					t.Errorf("%s %s (file %v): %v; want the column, not supported", how, f.Name, file, err)
				}
			}
			_, _, err = Decode(data, memory.DefaultAllocator)
			check("Decode", err)
			if file {
				_, _, err = ReadFileMeta(int64(len(data)), fetchFrom(data, new(int64)))
				check("ReadFileMeta", err)
			}
		}
		rec.Release()
	}
}
