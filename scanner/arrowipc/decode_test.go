package arrowipc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/test/datagen"
)

func TestDecodeBadInput(t *testing.T) {
	dir := t.TempDir()
	if _, err := datagen.Write(dir, datagen.Spec{Segments: 1, ChunksPerSegment: 1, RowsPerChunk: 700, BatchesPerChunk: 2, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, "chunks/segment=s0/chunk-0.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{
		"empty":           nil,
		"garbage":         []byte("this is not arrow at all, not even close"),
		"truncated file":  good[:len(good)/2],
		"magic only":      []byte("ARROW1\x00\x00"),
		"truncated start": good[8 : len(good)/3],
	}
	for name, data := range inputs {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			_, batches, err := Decode(data, mem)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if batches != nil {
				t.Fatalf("got batches with an error")
			}
		})
	}
}

// TestDecodeStreamZeroCopy: a stream's batches slice their buffers out of
// the bytes decoded, as a file's do, and hold the right values; a stream
// with a dictionary column decodes too.
func TestDecodeStreamZeroCopy(t *testing.T) {
	mem := memory.NewGoAllocator()
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "d", Type: dictType},
	}, nil)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	var want int64
	for batch := range 3 {
		b := array.NewRecordBuilder(mem, schema)
		for i := range 1000 {
			v := int64(batch*1000 + i)
			want += v
			b.Field(0).(*array.Int64Builder).Append(v)
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint(v))
			if err := b.Field(2).(*array.BinaryDictionaryBuilder).AppendString([]string{"a", "b", "c"}[i%3]); err != nil {
				t.Fatal(err)
			}
		}
		rec := b.NewRecordBatch()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		b.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	schemaOut, batches, err := Decode(data, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer ReleaseAll(batches)
	if !schemaOut.Equal(schema) || len(batches) != 3 {
		t.Fatalf("schema %v, %d batches", schemaOut, len(batches))
	}
	lo, hi := uintptr(unsafe.Pointer(&data[0])), uintptr(unsafe.Pointer(&data[len(data)-1]))
	var got int64
	for _, b := range batches {
		x := b.Column(0).(*array.Int64)
		for _, v := range x.Int64Values() {
			got += v
		}
		for c := range 2 {
			vals := b.Column(c).Data().Buffers()[1].Bytes()
			if p := uintptr(unsafe.Pointer(&vals[0])); p < lo || p > hi {
				t.Errorf("column %d's values are not in the decoded bytes: a copy", c)
			}
		}
		if d := b.Column(2).(*array.Dictionary); d.Dictionary().(*array.String).Value(int(d.GetValueIndex(4))) != "b" {
			t.Errorf("dictionary value %q, want b", d.Dictionary().(*array.String).Value(int(d.GetValueIndex(4))))
		}
	}
	if got != want {
		t.Errorf("sum(x) %d, want %d", got, want)
	}
}

// A runtime panic arrow-go recovers while decoding (buffers that do not fit
// what the metadata says) is a chunk error in a user's words, with the
// runtime's own only in the chain.
func TestLibraryPanicWording(t *testing.T) {
	var rt error
	func() {
		defer func() { rt = recover().(error) }()
		var b []byte
		i := 3
		_ = b[i]
	}()
	for _, err := range []error{
		libraryError("arrow IPC stream", fmt.Errorf("arrow/ipc: unknown error while reading: %v", rt)), // flattened, as arrow-go does
		recoveredError("arrow IPC decode", rt),
	} {
		if !errors.Is(err, ErrMalformed) || !errors.Is(err, ErrInconsistent) || strings.Contains(err.Error(), "runtime error") {
			t.Errorf("%v: want ErrMalformed and ErrInconsistent, without the runtime's words", err)
		}
	}
	if err := libraryError("arrow IPC file", errors.New("arrow/ipc: not a file")); errors.Is(err, ErrInconsistent) || !errors.Is(err, ErrMalformed) {
		t.Errorf("an ordinary arrow-go error: %v", err)
	}
}

// A decode checks each string column's offsets once per batch: a file (the
// assembler's path, whose columns are checked as they are built) and a
// stream (arrow-go's, checked after), the bytes of both the same batches.
// The offsets are read in full by a check, the largest part of its cost.
func TestDecodeChecksOffsetsOnce(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "l", Type: arrow.BinaryTypes.LargeString},
	}, nil)
	const batches = 3
	var recs []arrow.RecordBatch
	for k := range batches {
		b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
		for r := range 100 {
			b.Field(0).(*array.Int64Builder).Append(int64(k*100 + r))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row %d", r))
			b.Field(2).(*array.LargeStringBuilder).Append(fmt.Sprintf("a longer string, row %d", r))
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	var file, stream bytes.Buffer
	fw, err := ipc.NewFileWriter(&file, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	sw := ipc.NewWriter(&stream, ipc.WithSchema(schema))
	for _, r := range recs {
		if err := fw.Write(r); err != nil {
			t.Fatal(err)
		}
		if err := sw.Write(r); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"file": file.Bytes(), "stream": stream.Bytes()} {
		before := offsetsChecked.Load()
		_, got, err := Decode(data, memory.NewGoAllocator())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checks := offsetsChecked.Load() - before
		if len(got) != batches {
			t.Fatalf("%s: %d batches, want %d", name, len(got), batches)
		}
		s := got[batches-1].Column(2).(*array.LargeString)
		if v := s.Value(99); v != "a longer string, row 99" {
			t.Errorf("%s: the last row's string %q", name, v)
		}
		ReleaseAll(got)
		if want := int64(2 * batches); checks != want {
			t.Errorf("%s: %d checks of offsets for %d string columns in %d batches, want %d (each once)", name, checks, 2, batches, want)
		}
	}
}
