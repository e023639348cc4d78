package arrowipc

// Reading only some columns of an Arrow IPC file.
//
// An IPC file ends with a footer (a flatbuffer listing the schema and the
// position of every record batch), its length as an int32, and the magic
// "ARROW1". Each record batch is an encapsulated message: a flatbuffer
// (RecordBatch: row count, one FieldNode per array, one Buffer per buffer, in
// depth-first field order) followed by the body those buffers point into.
// Knowing the schema, the buffers of one column are a known run of that list,
// so a scan that needs few columns fetches the footer, the batches' metadata,
// and only those columns' byte ranges.
//
// The flatbuffer reading here is our own and bounds-checked everywhere: a
// malformed file is an error wrapping ErrMalformed, never a panic. The schema
// itself is decoded by arrow-go from the same footer bytes.

import (
	"bytes"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FetchFunc reads byte ranges of one object, all at once.
type FetchFunc func(ranges []Range) ([][]byte, error)

// fetchFrom serves ranges of data held in memory, counting the bytes handed out.
func fetchFrom(data []byte, served *int64) FetchFunc {
	return func(rs []Range) ([][]byte, error) {
		out := make([][]byte, len(rs))
		for i, r := range rs {
			if r.Offset < 0 || r.Length < 0 || r.Offset > int64(len(data)) || r.Length > int64(len(data))-r.Offset {
				return nil, fmt.Errorf("%w: range %d+%d outside %d bytes", ErrMalformed, r.Offset, r.Length, len(data))
			}
			out[i] = data[r.Offset : r.Offset+r.Length]
			*served += r.Length
		}
		return out, nil
	}
}

// TailLen is the length of the first range ReadColumns asks of a file of
// size bytes for a tail of tail bytes: the file's last tailLen bytes.
func TailLen(size, tail int64) int64 { return min(size, max(tail, TrailerLen+8)) }

// TailGuess is how much of a file's end the first request reads: the footer
// of a file with a few hundred batches fits, so one request usually does.
const TailGuess = 64 << 10

// ipcFileLayout is an IPC file's footer and the parsed metadata of every
// record batch, with each batch's column layouts.
type ipcFileLayout struct {
	footerLen int64 // bytes of the footer flatbuffer
	footer    *ipcFooter
	batches   []*ipcBatch
	layouts   [][]columnLayout
}

// readIPCLayout reads the footer and the metadata of every batch of the IPC
// file of size bytes through fetch (two rounds), and returns the layout and
// the bytes fetched. ErrDictionaries means the file needs the whole-chunk
// path.
func readIPCLayout(size int64, fetch FetchFunc) (*ipcFileLayout, int64, error) {
	var wire int64
	get := countingFetch(fetch, &wire)
	footer, footerLen, err := readIPCFooter(size, TailGuess, get)
	if err != nil {
		return nil, wire, err
	}
	metas, err := get(metaRanges(footer))
	if err != nil {
		return nil, wire, err
	}
	l, err := parseLayout(footer, footerLen, metas)
	return l, wire, err
}

// countingFetch is fetch adding the bytes it returns to *wire.
func countingFetch(fetch FetchFunc, wire *int64) FetchFunc {
	return func(rs []Range) ([][]byte, error) {
		out, err := fetch(rs)
		for _, b := range out {
			*wire += int64(len(b))
		}
		return out, err
	}
}

// readIPCFooter reads the footer of the IPC file of size bytes: its last
// tail bytes first, and the rest of a longer footer after. It checks that
// every batch lies in the file and returns the footer's length too.
func readIPCFooter(size, tail int64, get FetchFunc) (*ipcFooter, int64, error) {
	if size < TrailerLen+8 {
		return nil, 0, fmt.Errorf("%w: %d bytes is too small for an Arrow IPC file", ErrMalformed, size)
	}
	tailLen := TailLen(size, tail)
	got, err := get([]Range{{size - tailLen, tailLen}})
	if err != nil {
		return nil, 0, err
	}
	footerLen, err := parseTrailer(got[0][len(got[0])-TrailerLen:], size)
	if err != nil {
		return nil, 0, err
	}
	var footerBytes []byte
	if footerLen+TrailerLen <= tailLen {
		end := int64(len(got[0])) - TrailerLen
		footerBytes = got[0][end-footerLen : end]
	} else {
		more, err := get([]Range{{size - TrailerLen - footerLen, footerLen}})
		if err != nil {
			return nil, 0, err
		}
		footerBytes = more[0]
	}
	footer, err := parseFooter(footerBytes)
	if err != nil {
		return nil, 0, err
	}
	for i, b := range footer.Batches {
		if b.Offset > size || b.MetaLen > size-b.Offset || b.BodyLen > size-b.Offset-b.MetaLen {
			return nil, 0, fmt.Errorf("%w: record batch %d at %d+%d+%d is beyond the file's %d bytes", ErrMalformed, i, b.Offset, b.MetaLen, b.BodyLen, size)
		}
	}
	return footer, footerLen, nil
}

// metaRanges are the metadata ranges of the footer's batches.
func metaRanges(footer *ipcFooter) []Range {
	out := make([]Range, len(footer.Batches))
	for i, b := range footer.Batches {
		out[i] = Range{b.Offset, b.MetaLen}
	}
	return out
}

// parseLayout parses the batches' metadata and lays out their columns.
func parseLayout(footer *ipcFooter, footerLen int64, metas [][]byte) (*ipcFileLayout, error) {
	l := &ipcFileLayout{footerLen: footerLen, footer: footer, batches: make([]*ipcBatch, len(metas)), layouts: make([][]columnLayout, len(metas))}
	for i, m := range metas {
		var err error
		if l.batches[i], err = parseBatchMessage(m); err != nil {
			return nil, fmt.Errorf("record batch %d: %w", i, err)
		}
		if l.layouts[i], err = layoutColumns(footer.Schema, l.batches[i]); err != nil {
			return nil, fmt.Errorf("record batch %d: %w", i, err)
		}
	}
	return l, nil
}

// colSpan is where one column's buffers sit in a record batch's body, as
// shares of the body's length: [lo, hi).
type colSpan struct{ lo, hi float64 }

// ReadPlan is what a projected read knows before it starts, learned
// from a chunk read earlier (the first one): how much of the file's end to
// read first, and where each column (by schema field) sits in a body.
// A zero plan knows nothing: the tail is TailGuess, and the columns'
// ranges wait for the batches' metadata.
type ReadPlan struct {
	Tail  int64 // bytes of the file's end to read first; 0: TailGuess
	spans []colSpan
}

// FileMeta is what an IPC file's footer and its batches' metadata say
// about it without its body: the schema, the body bytes each column takes,
// and the plan a projected read of a similar file starts from.
type FileMeta struct {
	Schema   *arrow.Schema
	ColBytes []int64 // body bytes of each schema field, over every batch
	BodyLen  int64   // body bytes of every batch
	Plan     ReadPlan
	// Plain: the file has batches, and none is compressed (LZ4 or ZSTD):
	// its columns decode into no more bytes than its bodies hold.
	Plain bool
}

// ReadFileMeta reads the FileMeta of the IPC file of size bytes through
// fetch, in two rounds (its tail, then every batch's metadata), and returns
// the bytes fetched. ErrNotFile means it is no IPC file (a stream, say),
// ErrDictionaries that it has dictionaries; both need the whole chunk.
func ReadFileMeta(size int64, fetch FetchFunc) (FileMeta, int64, error) {
	l, wire, err := readIPCLayout(size, fetch)
	if err != nil {
		return FileMeta{}, wire, err
	}
	return l.meta(), wire, nil
}

// FileMetaOf is ReadFileMeta of a file held in memory; false for anything
// that is not an IPC file without dictionaries.
func FileMetaOf(data []byte) (FileMeta, bool) {
	if int64(len(data)) < TrailerLen+8 || !bytes.HasPrefix(data, fileMagic) {
		return FileMeta{}, false
	}
	var served int64
	l, _, err := readIPCLayout(int64(len(data)), fetchFrom(data, &served))
	if err != nil {
		return FileMeta{}, false
	}
	return l.meta(), true
}

// LearnReadPlan measures the IPC file in data; a zero plan for anything
// that is not an IPC file without dictionaries.
func LearnReadPlan(data []byte) ReadPlan {
	m, _ := FileMetaOf(data)
	return m.Plan
}

// meta measures the file l lays out: each column's bytes and where, as
// shares of a body, its buffers sit.
func (l *ipcFileLayout) meta() FileMeta {
	n := len(l.footer.Schema.Fields())
	m := FileMeta{Schema: l.footer.Schema, ColBytes: make([]int64, n), Plain: len(l.batches) > 0}
	spans := make([]colSpan, n)
	for c := range spans {
		spans[c] = colSpan{lo: 1, hi: 0}
	}
	for i, rb := range l.batches {
		bodyLen := l.footer.Batches[i].BodyLen
		m.BodyLen += bodyLen
		m.Plain = m.Plain && rb.Codec < 0
		for c, cl := range l.layouts[i] {
			r := columnRange(rb, cl)
			m.ColBytes[c] += r.Length
			if r.Length == 0 || bodyLen <= 0 {
				continue
			}
			body := float64(bodyLen)
			spans[c].lo = min(spans[c].lo, float64(r.Offset)/body)
			spans[c].hi = max(spans[c].hi, float64(r.Offset+r.Length)/body)
		}
	}
	m.Plan = ReadPlan{Tail: l.footerLen + l.footerLen/4 + 1<<10 + TrailerLen, spans: spans}
	return m
}

// predict returns the byte range (in the file) a batch whose body starts
// at body and is bodyLen long probably holds column c's buffers in, with a
// margin; false when the plan does not know.
func (p ReadPlan) predict(c int, body, bodyLen int64) (Range, bool) {
	if c >= len(p.spans) || p.spans[c].hi <= p.spans[c].lo {
		return Range{}, false
	}
	margin := bodyLen/64 + 512
	lo := max(0, int64(p.spans[c].lo*float64(bodyLen))-margin)
	hi := min(bodyLen, int64(p.spans[c].hi*float64(bodyLen))+margin)
	if hi <= lo {
		return Range{}, false
	}
	return Range{body + lo, hi - lo}, true
}

// readIPCColumns reads columns cols (schema field indexes, in output order)
// of the IPC file of size bytes through fetch, in three rounds: the footer,
// the metadata of every batch, then only those columns' buffers. It returns
// the file's full schema, batches holding just cols, and the bytes fetched.
// ErrDictionaries means the file needs the whole-chunk path.
func readIPCColumns(size int64, cols []int, fetch FetchFunc, mem memory.Allocator) (*arrow.Schema, []arrow.RecordBatch, int64, error) {
	schema, batches, wire, _, err := ReadColumns(size, ReadPlan{}, cols, fetch, mem)
	return schema, batches, wire, err
}

// ReadColumns is readIPCColumns with what plan knows: its tail read
// fetches the footer at once, and the batches' metadata go out in one round
// with the byte ranges plan predicts for the columns (the scheduler merges
// neighbours into one GET). When the metadata show a column's buffers
// inside its predicted range, the file took two rounds; what a prediction
// missed is fetched in a third. It also returns the footer's length (0 on
// failure).
func ReadColumns(size int64, plan ReadPlan, cols []int, fetch FetchFunc, mem memory.Allocator) (*arrow.Schema, []arrow.RecordBatch, int64, int64, error) {
	var wire int64
	get := countingFetch(fetch, &wire)
	tail := plan.Tail
	if tail <= 0 {
		tail = TailGuess
	}
	footer, footerLen, err := readIPCFooter(size, tail, get)
	if err != nil {
		return nil, nil, wire, 0, err
	}
	for _, c := range cols {
		if c < 0 || c >= footer.Schema.NumFields() {
			return nil, nil, wire, 0, fmt.Errorf("%w: the file has %d columns, not column %d: schema %s", ErrMalformed, footer.Schema.NumFields(), c, footer.Schema)
		}
	}
	// One round: every batch's metadata and the predicted column ranges.
	nb := len(footer.Batches)
	round := metaRanges(footer)
	guess := make([]int, nb*len(cols)) // index in round of batch i's column j, -1: none
	for i, b := range footer.Batches {
		for j, c := range cols {
			guess[i*len(cols)+j] = -1
			if r, ok := plan.predict(c, b.Offset+b.MetaLen, b.BodyLen); ok {
				guess[i*len(cols)+j] = len(round)
				round = append(round, r)
			}
		}
	}
	got, err := get(round)
	if err != nil {
		return nil, nil, wire, 0, err
	}
	l, err := parseLayout(footer, footerLen, got[:nb])
	if err != nil {
		return nil, nil, wire, 0, err
	}
	// Each column's exact range, sliced from its prediction or fetched now.
	exact := make([]Range, nb*len(cols)) // body-relative
	data := make([][]byte, nb*len(cols))
	var missing []Range
	var missingAt []int
	for i := range l.batches {
		body := footer.Batches[i].Offset + footer.Batches[i].MetaLen
		for j, c := range cols {
			k := i*len(cols) + j
			r := columnRange(l.batches[i], l.layouts[i][c])
			if r.Offset+r.Length > footer.Batches[i].BodyLen {
				return nil, nil, wire, 0, fmt.Errorf("%w: record batch %d: column %d's buffers end past the body", ErrMalformed, i, c)
			}
			exact[k] = r
			if r.Length == 0 {
				continue // no bytes: nothing to fetch
			}
			abs := Range{body + r.Offset, r.Length}
			if g := guess[k]; g >= 0 && abs.Offset >= round[g].Offset && abs.Offset+abs.Length <= round[g].Offset+round[g].Length {
				at := abs.Offset - round[g].Offset
				data[k] = got[g][at : at+abs.Length]
				continue
			}
			missing = append(missing, abs)
			missingAt = append(missingAt, k)
		}
	}
	if len(missing) > 0 {
		more, err := get(missing)
		if err != nil {
			return nil, nil, wire, 0, err
		}
		for n, k := range missingAt {
			data[k] = more[n]
		}
	}
	projected := projectedSchemas.of(footer.Schema, cols)
	var out []arrow.RecordBatch
	release := func() {
		for _, r := range out {
			r.Release()
		}
	}
	var swap *byteOrderSwap
	if footer.foreign {
		swap = newByteOrderSwap(mem)
		defer swap.release()
	}
	for i, rb := range l.batches {
		arrs := make([]arrow.Array, len(cols))
		for j, c := range cols {
			k := i*len(cols) + j
			arr, err := assembleColumn(footer.Schema.Field(c), rb, l.layouts[i][c], data[k], exact[k].Offset, mem, swap)
			if err != nil {
				for _, a := range arrs[:j] {
					a.Release()
				}
				release()
				return nil, nil, wire, 0, fmt.Errorf("record batch %d: %w", i, err)
			}
			arrs[j] = arr
			if n := int64(arr.Len()); n != rb.Length {
				for _, a := range arrs[:j+1] {
					a.Release()
				}
				release()
				return nil, nil, wire, 0, fmt.Errorf("%w: record batch %d has %d rows, its column %q %d", ErrMalformed, i, rb.Length, projected.Field(j).Name, n)
			}
		}
		out = append(out, array.NewRecordBatch(projected, arrs, rb.Length))
		for _, a := range arrs {
			a.Release()
		}
	}
	return footer.Schema, out, wire, footerLen, nil // every column passed validateData in assembleColumn
}

// DecodeColumns decodes columns cols (schema field indexes, in output
// order) of the IPC file held whole in data, as ReadColumns reads them:
// the footer, then each batch's metadata and only those columns' buffers,
// which the batches reference in data (never written). It returns the
// file's full schema and batches holding just cols. Of a scan that needs a
// few of many columns, the others are neither built nor checked, as a
// projected read never fetches them. ErrNotFile (a stream) and
// ErrDictionaries mean the chunk needs Decode.
func DecodeColumns(data []byte, cols []int, mem memory.Allocator) (*arrow.Schema, []arrow.RecordBatch, error) {
	if !bytes.HasPrefix(data, fileMagic) {
		return nil, nil, ErrNotFile
	}
	var served int64
	plan := ReadPlan{Tail: int64(len(data))} // the footer in the first slice of data
	schema, batches, _, _, err := ReadColumns(int64(len(data)), plan, cols, fetchFrom(data, &served), mem)
	return schema, batches, err
}

// projectedSchemas holds the last schema of a projection: arrow.NewSchema
// builds a map of the fields by name, which for a small chunk of a scan
// that asks the same columns of every chunk, their schema the same
// (footerSchemas), was much of the work.
var projectedSchemas projectionMemo

type projectionMemo struct{ last atomic.Pointer[projection] }

// projection is the schema of the columns cols of schema from.
type projection struct {
	from   *arrow.Schema
	cols   []int
	schema *arrow.Schema
}

// of returns the schema of columns cols of schema (not written after).
func (m *projectionMemo) of(schema *arrow.Schema, cols []int) *arrow.Schema {
	if p := m.last.Load(); p != nil && p.from == schema && slices.Equal(p.cols, cols) {
		return p.schema
	}
	fields := make([]arrow.Field, len(cols))
	for j, c := range cols {
		fields[j] = schema.Field(c)
	}
	p := &projection{from: schema, cols: slices.Clone(cols), schema: arrow.NewSchema(fields, nil)}
	m.last.Store(p)
	return p.schema
}
