package arrowipc

// Fuzz targets whose oracles check what a parser returns, not only that it
// does not crash (issue 11, item 4): IPC framing, footer, batch metadata,
// the projected reader against arrow-go's, Decode. `make fuzz` runs each
// for FUZZTIME; `go test` runs their seeds (f.Add and testdata/fuzz/<name>/)
// as tests.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ipcStreamSeed rewrites the IPC file data as an IPC stream.
func ipcStreamSeed(f *testing.F, data []byte) []byte {
	schema, batches, err := Decode(data, memory.DefaultAllocator)
	if err != nil {
		f.Fatal(err)
	}
	defer ReleaseAll(batches)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	for _, b := range batches {
		if err := w.Write(b); err != nil {
			f.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}

// maxExec bounds one input of a fuzz target: the Go fuzzer has no
// per-input timeout, and an input that makes a parser spin must be caught
// (and saved) like a crash.
const maxExec = 10 * time.Second

// watchdog crashes the fuzzing process if the input is not done within
// maxExec; the fuzzer then saves the input as a failure. Stop it with the
// returned function.
func watchdog(what string) func() bool {
	return time.AfterFunc(maxExec, func() { panic(fmt.Sprintf("%s: one input ran longer than %v", what, maxExec)) }).Stop
}

// FuzzProjectedMatchesArrow: the projected reader (our own flatbuffer
// reading, only the asked columns' buffers; DecodeColumns is it over bytes
// in memory) and arrow-go's IPC reader
// (Decode, every column) must agree on the same bytes whenever both
// accept them: same schema, same number of batches, equal columns. What the
// projected reader accepts must pass validateRecord (every buffer as long as
// its arrays need), and it must free what it allocated.
func FuzzProjectedMatchesArrow(f *testing.F) {
	for _, s := range ipcSeeds(f) {
		f.Add(s, uint8(0), uint8(1))
		f.Add(s, uint8(3), uint8(3))
		f.Add(s[:len(s)-20], uint8(1), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, c1, c2 uint8) {
		defer watchdog("FuzzProjectedMatchesArrow")()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		var served int64
		cols := []int{int(c1) % 8}
		if c := int(c2) % 8; c != cols[0] {
			cols = append(cols, c)
		}
		// The projected reader with no plan, with one learned from data,
		// and over the whole file in memory (DecodeColumns).
		read := func(plan *ReadPlan) (*arrow.Schema, []arrow.RecordBatch, error) {
			if plan == nil {
				return DecodeColumns(data, cols, mem)
			}
			schema, got, _, _, err := ReadColumns(int64(len(data)), *plan, cols, fetchFrom(data, &served), mem)
			return schema, got, err
		}
		learned := LearnReadPlan(data)
		for _, plan := range []*ReadPlan{{}, &learned, nil} {
			schema, got, err := read(plan)
			if err != nil {
				continue
			}
			for i, b := range got {
				if err := validateRecord(b); err != nil {
					t.Fatalf("projected batch %d of columns %v fails validation: %v", i, cols, err)
				}
				if int(b.NumCols()) != len(cols) {
					t.Fatalf("projected batch %d has %d columns, want %d", i, b.NumCols(), len(cols))
				}
			}
			all, want, derr := decode(data, mem, false /* arrow-go's reader */)
			if derr == nil {
				if !all.Equal(schema) {
					t.Fatalf("schemas differ:\nprojected %s\narrow-go  %s", schema, all)
				}
				if len(want) != len(got) {
					t.Fatalf("projected reader: %d batches, arrow-go: %d", len(got), len(want))
				}
				for i := range got {
					if got[i].NumRows() != want[i].NumRows() {
						t.Fatalf("batch %d: %d rows projected, %d by arrow-go", i, got[i].NumRows(), want[i].NumRows())
					}
					for j, c := range cols {
						if !array.Equal(got[i].Column(j), want[i].Column(c)) {
							t.Fatalf("batch %d column %d differs:\nprojected %v\narrow-go  %v", i, c, got[i].Column(j), want[i].Column(c))
						}
					}
				}
				ReleaseAll(want)
			}
			ReleaseAll(got)
		}
	})
}

// FuzzDecodeMatchesArrow: Decode (the assembler, a schema from the memo
// of footers) and arrow-go's reader must agree on the same bytes whenever
// both accept them: same schema, equal batches. Each input is decoded
// twice, the second time with its footer's schema from the memo. (They
// may differ on what they refuse: arrow-go refuses a body whose length is
// not a multiple of 8, Decode a schema whose byte order the framing reads
// otherwise.)
func FuzzDecodeMatchesArrow(f *testing.F) {
	for _, s := range ipcSeeds(f) {
		if _, batches, err := Decode(s, memory.DefaultAllocator); err != nil {
			f.Fatalf("a seed: %v", err)
		} else {
			ReleaseAll(batches)
		}
		f.Add(s)
		f.Add(s[:len(s)-20])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer watchdog("FuzzDecodeMatchesArrow")()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		want, wantBatches, werr := decode(data, mem, false /* arrow-go's reader */)
		if werr != nil {
			return
		}
		defer ReleaseAll(wantBatches)
		for range 2 {
			got, batches, err := Decode(data, mem)
			if err != nil {
				return
			}
			if !got.Equal(want) {
				ReleaseAll(batches)
				t.Fatalf("schemas differ:\nDecode   %s\narrow-go %s", got, want)
			}
			if len(batches) != len(wantBatches) {
				ReleaseAll(batches)
				t.Fatalf("Decode: %d batches, arrow-go: %d", len(batches), len(wantBatches))
			}
			for i := range batches {
				if !array.RecordEqual(batches[i], wantBatches[i]) {
					ReleaseAll(batches)
					t.Fatalf("batch %d differs:\nDecode   %v\narrow-go %v", i, batches[i], wantBatches[i])
				}
			}
			ReleaseAll(batches)
		}
	})
}

// FuzzDecodeIPCRoundTrip: what Decode accepts (a file or a stream) has
// passed the framing checks and validation, so arrow-go must be able to
// write it out again as a stream, and decoding that stream must give equal
// batches; what it refuses is an error wrapping ErrMalformed; memory is
// freed either way.
func FuzzDecodeIPCRoundTrip(f *testing.F) {
	for _, s := range ipcSeeds(f) {
		f.Add(s)
		f.Add(ipcStreamSeed(f, s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer watchdog("FuzzDecodeIPCRoundTrip")()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		schema, batches, err := Decode(data, mem)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		defer ReleaseAll(batches)
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
		for i, b := range batches {
			if !b.Schema().Equal(schema) {
				t.Fatalf("batch %d schema %s differs from the file's %s", i, b.Schema(), schema)
			}
			if err := w.Write(b); err != nil {
				t.Fatalf("writing batch %d back: %v", i, err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		schema2, again, err := Decode(buf.Bytes(), mem)
		if err != nil {
			t.Fatalf("decoding what was written back: %v", err)
		}
		defer ReleaseAll(again)
		if !schema2.Equal(schema) || len(again) != len(batches) {
			t.Fatalf("round trip: schema %s, %d batches; was %s, %d", schema2, len(again), schema, len(batches))
		}
		for i := range batches {
			if !array.RecordEqual(batches[i], again[i]) {
				t.Fatalf("round trip: batch %d differs", i)
			}
		}
	})
}

// FuzzIPCFraming: the framing walk must end inside the data it accepted,
// and Decode of bytes it accepts must end in batches or an error wrapping
// ErrMalformed, with nothing left allocated.
func FuzzIPCFraming(f *testing.F) {
	for _, s := range ipcSeeds(f) {
		f.Add(s)
		f.Add(ipcStreamSeed(f, s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer watchdog("FuzzIPCFraming")()
		if _, err := checkIPCFraming(data); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if !bytes.HasPrefix(data, fileMagic) {
			end, err := checkIPCStream(data, new(Framing))
			if err != nil || end < 0 || end > int64(len(data)) {
				t.Fatalf("stream accepted, walk ended at %d of %d bytes (%v)", end, len(data), err)
			}
		}
		// Decode recovers what arrow-go still panics on (the framing checks
		// cover allocations and the schema, not every scalar of every type
		// table): an error wrapping ErrMalformed, and nothing left allocated.
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		_, batches, err := Decode(data, mem)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
		ReleaseAll(batches)
		mem.AssertSize(t, 0)
	})
}

// FuzzIPCFooter: the trailer and footer parsers against arrow-go's file
// reader. An accepted footer lists only blocks with sane numbers, and when
// arrow-go opens the same bytes as a file, both see the same schema and the
// same number of record batches.
func FuzzIPCFooter(f *testing.F) {
	for _, s := range ipcSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer watchdog("FuzzIPCFooter")()
		size := int64(len(data))
		if size < TrailerLen+8 {
			return
		}
		footerLen, err := parseTrailer(data[size-TrailerLen:], size)
		if err != nil {
			return
		}
		if footerLen <= 0 || footerLen+TrailerLen+8 > size {
			t.Fatalf("trailer accepted a footer of %d bytes in a file of %d", footerLen, size)
		}
		footer, err := parseFooter(data[size-TrailerLen-footerLen : size-TrailerLen])
		if err != nil {
			return
		}
		if footer.Schema == nil {
			t.Fatal("footer accepted without a schema")
		}
		if int64(len(footer.Batches))*blockSize > footerLen {
			t.Fatalf("%d blocks from a footer of %d bytes", len(footer.Batches), footerLen)
		}
		for i, b := range footer.Batches {
			if b.Offset < 0 || b.MetaLen <= 0 || b.BodyLen < 0 {
				t.Fatalf("block %d accepted: %+v", i, b)
			}
		}
		r, ok := arrowFileReader(data)
		if !ok {
			return
		}
		defer r.Close()
		if !r.Schema().Equal(footer.Schema) {
			t.Fatalf("schema: ours %s, arrow-go %s", footer.Schema, r.Schema())
		}
		if r.NumRecords() != len(footer.Batches) {
			t.Fatalf("record batches: ours %d, arrow-go %d", len(footer.Batches), r.NumRecords())
		}
	})
}

// arrowFileReader opens data with arrow-go's IPC file reader, or reports
// false if it refuses it or panics.
func arrowFileReader(data []byte) (r *ipc.FileReader, ok bool) {
	defer func() {
		if recover() != nil {
			r, ok = nil, false
		}
	}()
	r, err := ipc.NewFileReader(bytes.NewReader(data))
	return r, err == nil
}

// FuzzBatchMetadata: an accepted record batch message yields only what its
// bytes can hold (16 bytes a field node or buffer, 8 a variadic count),
// sane numbers, and, laid out against the seed files' schemas, column
// ranges that cover only the batch's own buffers.
func FuzzBatchMetadata(f *testing.F) {
	var schemas []*arrow.Schema
	for _, s := range ipcSeeds(f) {
		footerLen, err := parseTrailer(s[len(s)-TrailerLen:], int64(len(s)))
		if err != nil {
			f.Fatal(err)
		}
		footer, err := parseFooter(s[int64(len(s))-TrailerLen-footerLen : len(s)-TrailerLen])
		if err != nil {
			f.Fatal(err)
		}
		schemas = append(schemas, footer.Schema)
		for _, b := range footer.Batches {
			f.Add(s[b.Offset:b.Offset+b.MetaLen], uint8(len(schemas)-1))
		}
	}
	f.Fuzz(func(t *testing.T, meta []byte, which uint8) {
		defer watchdog("FuzzBatchMetadata")()
		rb, err := parseBatchMessage(meta)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if room := int64(len(meta)); int64(len(rb.Nodes))*fieldNodeSize+int64(len(rb.Buffers))*bufferSize+int64(len(rb.Variadic))*8 > room {
			t.Fatalf("%d nodes, %d buffers, %d variadic counts from %d bytes", len(rb.Nodes), len(rb.Buffers), len(rb.Variadic), room)
		}
		if rb.Length < 0 || rb.Codec < -1 || rb.Codec > 1 {
			t.Fatalf("accepted length %d codec %d", rb.Length, rb.Codec)
		}
		var end int64
		for i, b := range rb.Buffers {
			if b.Offset < 0 || b.Length < 0 || b.Offset+b.Length < b.Offset {
				t.Fatalf("accepted buffer %d: %+v", i, b)
			}
			end = max(end, b.Offset+b.Length)
		}
		for i, n := range rb.Nodes {
			if n.Length < 0 || n.Nulls < 0 || n.Nulls > n.Length {
				t.Fatalf("accepted field node %d: %+v", i, n)
			}
		}
		for _, v := range rb.Variadic {
			if v < 0 || v > int64(len(rb.Buffers)) {
				t.Fatalf("accepted variadic count %d of %d buffers", v, len(rb.Buffers))
			}
		}
		layouts, err := layoutColumns(schemas[int(which)%len(schemas)], rb)
		if err != nil {
			return
		}
		for c, l := range layouts {
			if l.buf0 < 0 || l.bufs < 0 || l.buf0+l.bufs > len(rb.Buffers) || l.node0 < 0 || l.node0+l.nodes > len(rb.Nodes) {
				t.Fatalf("column %d laid out at %+v of %d buffers, %d nodes", c, l, len(rb.Buffers), len(rb.Nodes))
			}
			if r := columnRange(rb, l); r.Length > 0 && (r.Offset < 0 || r.Offset+r.Length > end) {
				t.Fatalf("column %d range %+v outside the buffers (end %d)", c, r, end)
			}
		}
	})
}

// TestFramingRefusesFieldTypeOutside: a field whose type tag lies past the
// end of the footer (FuzzIPCFraming's input da4cae75875123db) is refused by
// the framing checks; arrow-go used to read it and panic.
func TestFramingRefusesFieldTypeOutside(t *testing.T) {
	raw, err := os.ReadFile("testdata/fuzz/FuzzIPCFraming/da4cae75875123db")
	if err != nil {
		t.Fatal(err)
	}
	_, line, _ := strings.Cut(string(raw), "\n")
	line, _, _ = strings.Cut(line, "\n")
	data, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(line, "[]byte("), ")"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkIPCFraming([]byte(data)); err == nil || !strings.Contains(err.Error(), "schema: malformed flatbuffer") {
		t.Fatalf("checkIPCFraming = %v, want the schema refused", err)
	}
}
