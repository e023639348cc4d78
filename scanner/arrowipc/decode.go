// Package arrowipc reads Arrow IPC files and streams held in memory or
// reached through byte-range fetches: it checks their framing, reads their
// flatbuffer metadata with its own bounds-checked reader, reads only some
// columns of a file (the projected reader), validates every decoded array,
// and decodes whole chunks: files with the projected reader's assembler,
// streams and dictionaries with arrow-go.
//
// It owns the Arrow IPC format and nothing else: it knows no catalog, no
// store, no scheduler and no budget. It must not import scanner, its
// catalog, iosched or budget; the bytes come in as slices or through a
// FetchFunc. A malformed input is an error wrapping ErrMalformed, never a
// panic.
package arrowipc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ErrMalformed is wrapped by every error that comes from a chunk's content
// (truncated or garbage IPC). Its text, "bad chunk", is what users see.
var ErrMalformed = errors.New("bad chunk")

// repanicFault panics again with r when it is a fault on memory: data in
// a mapping that failed under the decode (a file truncated while mapped;
// the caller ran it under debug.SetPanicOnFault). That is not the chunk's
// content, and the caller, who knows it mapped, reports it.
func repanicFault(r any) {
	if _, ok := r.(interface{ Addr() uintptr }); ok {
		panic(r)
	}
}

// ErrInconsistent is wrapped (beside ErrMalformed) by the error of a chunk
// whose decode ran into a runtime panic, recovered by arrow-go or by
// Decode: its metadata passed the framing checks, but its buffers do not
// fit what the metadata says (a truncated or corrupt chunk, or one written
// while it was read). The runtime's own words ("slice bounds out of range")
// say nothing to a user, so they are kept only in the chain (Unwrap).
var ErrInconsistent = errors.New("its buffers do not fit its metadata")

// libraryError is err, returned by arrow-go while reading what (a file, a
// batch of it, a stream), as a chunk error: ErrMalformed, and
// ErrInconsistent instead of the runtime's words when err is a panic that
// arrow-go recovered (it flattens it into its message with %v).
func libraryError(what string, err error) error {
	var rt runtime.Error
	if errors.As(err, &rt) || strings.Contains(err.Error(), "runtime error: ") {
		return &inconsistentError{what: what, err: err}
	}
	return fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
}

// recoveredError is the chunk error for r, a panic recovered while reading
// what (not a fault on a mapping: repanicFault first).
func recoveredError(what string, r any) error {
	if e, ok := r.(error); ok {
		return libraryError(what, e)
	}
	return fmt.Errorf("%w: %s: %v", ErrMalformed, what, r)
}

type inconsistentError struct {
	what string
	err  error
}

func (e *inconsistentError) Error() string {
	return fmt.Sprintf("%v: %s: %v", ErrMalformed, e.what, ErrInconsistent)
}

func (e *inconsistentError) Unwrap() []error { return []error{ErrMalformed, ErrInconsistent, e.err} }

// fileMagic starts (and ends) an Arrow IPC file; a stream has no magic.
var fileMagic = []byte("ARROW1")

// Decode decodes a whole Arrow IPC file or stream held in data. The returned
// batches belong to the caller (Release each); on error none are returned.
// A malformed input is an error wrapping ErrMalformed, never a panic.
func Decode(data []byte, mem memory.Allocator) (schema *arrow.Schema, batches []arrow.RecordBatch, err error) {
	return decode(data, mem, true /* assemble files */)
}

// decode is Decode; assemble false leaves a file of the native byte order
// to arrow-go's reader too, the oracle the tests hold the assembler to.
func decode(data []byte, mem memory.Allocator, assemble bool) (schema *arrow.Schema, batches []arrow.RecordBatch, err error) {
	guard := newAllocGuard(mem)
	mem = guard
	defer func() {
		if r := recover(); r != nil {
			repanicFault(r)
			for _, b := range batches {
				b.Release()
			}
			schema, batches, err = nil, nil, recoveredError("arrow IPC decode", r)
		}
		if err != nil {
			guard.freeLeft() // what arrow-go dropped on its way to the error
		} else {
			guard.keep()
		}
	}()
	fr, err := checkIPCFraming(data)
	if err != nil {
		return nil, nil, err
	}
	if fr.Foreign || assemble && bytes.HasPrefix(data, fileMagic) {
		// The projected reader's assembler reads a file, whose schema
		// it takes from the footer once for many files alike
		// (footerSchemas), and a chunk of the other byte order, into
		// native-order copies (decodeAssembled); only dictionaries,
		// which it does not read, are left to arrow-go.
		// No validateBatches: assembleColumn checked each column of
		// each batch before wrapping it, and assembleBatch its length.
		schema, batches, err = decodeAssembled(data, mem, fr.Foreign)
		if !errors.Is(err, ErrDictionaries) {
			if err != nil {
				ReleaseAll(batches)
				return nil, nil, err
			}
			return schema, batches, nil
		}
	}
	if fr.Foreign {
		// arrow-go swaps the buffers of the other byte order in place,
		// and it must (it checks offsets as it builds each array, before
		// a caller could swap them): it gets bytes of its own, never the
		// caller's (a mapping, a pooled buffer, bytes decoded again).
		// They are the Go heap's, alive as long as a batch slices them.
		data = bytes.Clone(data)
	}
	// arrow-go's swap fails on the absent buffers of some types' arrays
	// of no rows (decimals, month-day-nano intervals): a foreign-order
	// chunk's batches of no rows, which hold nothing, are skipped. (Such
	// an array inside a batch of rows, an empty list's child, still fails
	// as a bad chunk: only in a chunk with dictionaries.)
	if bytes.HasPrefix(data, fileMagic) {
		schema, batches, err = decodeIPCFile(data, mem, fr.Foreign, fr.rows)
	} else {
		schema, batches, err = decodeIPCStream(data, mem, fr.Foreign)
	}
	if err == nil && fr.Foreign {
		swapViewsInPlace(batches)
	}
	if err == nil {
		err = validateBatches(batches)
	}
	if err != nil {
		ReleaseAll(batches)
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

func ReleaseAll(batches []arrow.RecordBatch) {
	for _, b := range batches {
		b.Release()
	}
}

// openIPCFile opens an IPC file whose batches reference data without a copy.
// arrow-go v18.8.0's NewMappedFileReader leaves its dictionary memo nil and
// panics on a schema with a dictionary-encoded field: such a file (or any
// input that makes it panic) takes the copying reader instead.
// swap: arrow-go swaps a foreign-order file's buffers (in data).
func openIPCFile(data []byte, mem memory.Allocator, swap bool) (*ipc.FileReader, error) {
	r, err, panicked := func() (r *ipc.FileReader, err error, panicked bool) {
		defer func() {
			if r := recover(); r != nil {
				repanicFault(r)
				panicked = true
			}
		}()
		r, err = ipc.NewMappedFileReader(data, ipc.WithAllocator(mem), ipc.WithEnsureNativeEndian(swap))
		return r, err, false
	}()
	if panicked {
		return ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(mem), ipc.WithEnsureNativeEndian(swap))
	}
	return r, err
}

// rows are the batches' row counts (Framing.rows).
func decodeIPCFile(data []byte, mem memory.Allocator, swap bool, rows []int64) (*arrow.Schema, []arrow.RecordBatch, error) {
	r, err := openIPCFile(data, mem, swap)
	if err != nil {
		return nil, nil, libraryError("arrow IPC file", err)
	}
	defer r.Close()
	if err := CheckSupported(r.Schema()); err != nil {
		return nil, nil, err
	}
	out := make([]arrow.RecordBatch, 0, r.NumRecords())
	for i := 0; i < r.NumRecords(); i++ {
		if swap && i < len(rows) && rows[i] == 0 {
			continue
		}
		b, err := r.RecordBatchAt(i)
		if err != nil {
			for _, b := range out {
				b.Release()
			}
			return nil, nil, libraryError(fmt.Sprintf("arrow IPC file, batch %d", i), err)
		}
		out = append(out, b)
	}
	return r.Schema(), out, nil
}

func decodeIPCStream(data []byte, mem memory.Allocator, swap bool) (*arrow.Schema, []arrow.RecordBatch, error) {
	r, err := ipc.NewReaderFromMessageReader(&memMessages{data: data, skipEmpty: swap}, ipc.WithAllocator(mem), ipc.WithEnsureNativeEndian(swap))
	if err != nil {
		return nil, nil, libraryError("not an Arrow IPC file or stream", err)
	}
	defer r.Release()
	if err := CheckSupported(r.Schema()); err != nil {
		return nil, nil, err
	}
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
		return nil, nil, libraryError("arrow IPC stream", err)
	}
	return r.Schema(), out, nil
}

// memMessages hands the messages of a stream held in data to arrow-go's
// reader as slices of data: like a file's (NewMappedFileReader), the
// stream's uncompressed buffers then reference data instead of a copy
// (arrow-go's own message reader reads every body into fresh memory).
// checkIPCStream has checked the framing; both walk it with messageAt.
type memMessages struct {
	data []byte
	pos  int64
	msg  *ipc.Message // the current message, released at the next
	refs atomic.Int64
	// skipEmpty: record batches of no rows are skipped (see Decode).
	skipEmpty bool
}

func (m *memMessages) Message() (*ipc.Message, error) {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
	var meta fb
	var body []byte
	for {
		var next int64
		var end bool
		var err error
		meta, next, end, err = messageAt(m.data, m.pos)
		m.pos = next
		if err != nil {
			return nil, err
		}
		if end {
			return nil, io.EOF
		}
		parsed, err := parseMessage(meta)
		if err != nil {
			return nil, err
		}
		if parsed.bodyLen < 0 || parsed.bodyLen > int64(len(m.data))-m.pos {
			return nil, fmt.Errorf("message at %d: body length %d beyond the data", m.pos-int64(len(meta)), parsed.bodyLen)
		}
		body = m.data[m.pos : m.pos+parsed.bodyLen]
		m.pos += parsed.bodyLen
		if !m.skipEmpty || parsed.kind != headerRecordBatch {
			break
		}
		if rb, err := parseRecordBatch(meta, parsed.header); err != nil || rb.Length > 0 {
			break
		}
	}
	m.msg = ipc.NewMessage(memory.NewBufferBytes(meta), memory.NewBufferBytes(body))
	return m.msg, nil
}

func (m *memMessages) Retain() { m.refs.Add(1) }

func (m *memMessages) Release() {
	if m.refs.Add(-1) <= 0 && m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}
