package scanner

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Chunk is one row of the catalog: a byte range of one object holding an
// Arrow IPC file or stream.
type Chunk struct {
	URL       string // absolute URL or local path of the object
	SegmentID string
	ChunkID   string
	Offset    int64 // first byte of the chunk in the object
	Length    int64 // bytes on the wire; -1 means to the end of the object
	Size      int64 // the object's size when a listing told it, else -1
	NumRows   int64 // -1 when the catalog does not say
	// DecodedBytes is the chunk's size once decoded, -1 when unknown.
	DecodedBytes int64
	Row          int // position in the catalog, for errors and ordering
}

// wireLength is the chunk's length in bytes: Length, or what follows Offset
// in an object of known Size; -1 when unknown (read to the end).
func (c *Chunk) wireLength() int64 {
	if c.Length < 0 && c.Size >= 0 {
		return c.Size - c.Offset
	}
	return c.Length
}

// ErrBadChunk is wrapped by every error that comes from a chunk's content
// (truncated or garbage IPC, a schema that does not match the scan).
var ErrBadChunk = errors.New("bad chunk")

// ChunkError names the chunk (catalog row and URL) an error came from.
type ChunkError struct {
	Chunk *Chunk
	Err   error
}

func (e *ChunkError) Error() string {
	return fmt.Sprintf("remote_segments: chunk %s (catalog row %d): %v", shownURL(e.Chunk.URL), e.Chunk.Row, e.Err)
}

// shownURL is u for messages: a query string may carry a signature, so it
// is replaced, as the stores do.
func shownURL(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i] + "?REDACTED"
	}
	return u
}

func (e *ChunkError) Unwrap() error { return e.Err }

// ipcFileMagic starts (and ends) an Arrow IPC file; a stream has no magic.
var ipcFileMagic = []byte("ARROW1")

// decodeIPC decodes a whole Arrow IPC file or stream held in data. The returned
// batches belong to the caller (Release each); on error none are returned.
// A malformed input is an error wrapping ErrBadChunk, never a panic.
func decodeIPC(data []byte, mem memory.Allocator) (schema *arrow.Schema, batches []arrow.RecordBatch, err error) {
	defer func() {
		if r := recover(); r != nil {
			for _, b := range batches {
				b.Release()
			}
			schema, batches, err = nil, nil, fmt.Errorf("%w: arrow IPC decode: %v", ErrBadChunk, r)
		}
	}()
	if err := checkIPCFraming(data); err != nil {
		return nil, nil, err
	}
	if bytes.HasPrefix(data, ipcFileMagic) {
		schema, batches, err = decodeIPCFile(data, mem)
	} else {
		schema, batches, err = decodeIPCStream(data, mem)
	}
	if err == nil {
		err = validateBatches(batches)
	}
	if err != nil {
		releaseAll(batches)
		return nil, nil, err
	}
	return schema, batches, nil
}

// validateBatches checks every batch (validateRecord); on error the caller
// still owns the batches.
func validateBatches(batches []arrow.RecordBatch) error {
	for i, b := range batches {
		if err := validateRecord(b); err != nil {
			return fmt.Errorf("record batch %d: %w", i, err)
		}
	}
	return nil
}

func releaseAll(batches []arrow.RecordBatch) {
	for _, b := range batches {
		b.Release()
	}
}

// openIPCFile opens an IPC file whose batches reference data without a copy.
// arrow-go v18.8.0's NewMappedFileReader leaves its dictionary memo nil and
// panics on a schema with a dictionary-encoded field: such a file (or any
// input that makes it panic) takes the copying reader instead.
func openIPCFile(data []byte, mem memory.Allocator) (*ipc.FileReader, error) {
	r, err, panicked := func() (r *ipc.FileReader, err error, panicked bool) {
		defer func() {
			if recover() != nil {
				panicked = true
			}
		}()
		r, err = ipc.NewMappedFileReader(data, ipc.WithAllocator(mem))
		return r, err, false
	}()
	if panicked {
		return ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(mem))
	}
	return r, err
}

func decodeIPCFile(data []byte, mem memory.Allocator) (*arrow.Schema, []arrow.RecordBatch, error) {
	r, err := openIPCFile(data, mem)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: arrow IPC file: %v", ErrBadChunk, err)
	}
	defer r.Close()
	out := make([]arrow.RecordBatch, 0, r.NumRecords())
	for i := 0; i < r.NumRecords(); i++ {
		b, err := r.RecordBatchAt(i)
		if err != nil {
			for _, b := range out {
				b.Release()
			}
			return nil, nil, fmt.Errorf("%w: arrow IPC file, batch %d: %v", ErrBadChunk, i, err)
		}
		out = append(out, b)
	}
	return r.Schema(), out, nil
}

func decodeIPCStream(data []byte, mem memory.Allocator) (*arrow.Schema, []arrow.RecordBatch, error) {
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(mem))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: not an Arrow IPC file or stream: %v", ErrBadChunk, err)
	}
	defer r.Release()
	var out []arrow.RecordBatch
	for r.Next() {
		b := r.RecordBatch()
		b.Retain()
		out = append(out, b)
	}
	if err := r.Err(); err != nil {
		for _, b := range out {
			b.Release()
		}
		return nil, nil, fmt.Errorf("%w: arrow IPC stream: %v", ErrBadChunk, err)
	}
	return r.Schema(), out, nil
}
