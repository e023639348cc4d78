package scanner

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/scanner/arrowipc"
)

// With Config.MapLocal, local files are mapped, not read: the scheduler's
// worker maps a chunk's range and faults its pages in
// (iosched.Request.Map), and the batches reference the page cache's own
// pages until the chunk's lease closes, which unmaps them. DuckDB's copy is
// then the only one, where a read copies each byte from the page cache
// into a buffer and DuckDB's copy reads it back. It is not the default:
// whether one copy out of a mapping costs less than two out of the kernel's
// and the pool's memory depends on the machine, and on a virtual machine
// the mapping's copy alone can cost more than both (see BENCHMARKS.md,
// "Figures behind the code").
//
// A mapping is not private: another process may write or truncate the file
// under the scan. So
//   - only chunks whose columns' values never steer a read elsewhere are
//     mapped (fixed-width values, bits, and strings, whose offsets the copy
//     checks against the characters' length: see mappable);
//   - decode runs with debug.SetPanicOnFault, and a fault (SIGBUS: the file
//     was truncated) fails the chunk (faultFails);
//   - the copy into DuckDB's vectors runs under cabi's SIGBUS guard.
//
// The rule: no byte of a mapping is read by code that is not under cabi's
// guard or under SetPanicOnFault on its own goroutine. A library that reads
// its input on goroutines of its own is never handed a mapping: arrow-go
// gives its ZSTD decoder a reader over the input, and the decoder reads it
// on goroutines of its own, where a fault kills the process. So a mapped
// chunk whose batches are compressed is copied out of its mapping first
// (copyOut; its compressed bytes are all decompressed anyway, the copy
// costs little beside that) and the mapping released. Whether a chunk is
// compressed is known only from its own metadata, after it was mapped:
// each chunk's batches choose their compression, so the schema bind saw
// cannot decide it beforehand.

// mapMin is the smallest range mapped: each mapping costs an mmap, a munmap
// and a TLB flush, which a small range's copy may not repay. (A guess: the
// benchmarks' ranges are all far above it, nothing was measured near it.)
const mapMin = 1 << 20

// mappable reports whether chunks of schema may be read from a mapping:
// every column a fixed-width type, a boolean or a string or binary.
func mappable(schema *arrow.Schema) bool {
	if schema == nil {
		return false
	}
	for _, f := range schema.Fields() {
		switch f.Type.ID() {
		case arrow.NULL, arrow.BOOL,
			arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
			arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
			arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
			arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION,
			arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTH_DAY_NANO,
			arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256,
			arrow.FIXED_SIZE_BINARY,
			arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		default:
			return false
		}
	}
	return true
}

// mapping collects the mappings of one chunk's requests for its lease.
type mapping struct {
	lease *budget.Lease
	used  atomic.Bool
	mu    sync.Mutex
	live  [][]byte // mapped and not yet released
}

// request sets r to ask for a mapping when the range is worth one and the
// store maps; the lease unmaps it when it closes.
func (m *mapping) request(r *iosched.Request) {
	if m == nil || m.lease == nil || (r.Length >= 0 && r.Length < mapMin) { // unknown: mapped, whatever its size
		return
	}
	if _, ok := r.Store.(store.Mapper); !ok {
		return
	}
	r.Map = func(b []byte) {
		m.used.Store(true)
		m.mu.Lock()
		m.live = append(m.live, b)
		m.mu.Unlock()
		m.lease.AtClose(m.release)
	}
}

// release unmaps the chunk's mappings now (and the lease's close finds
// nothing left): nothing may read them afterwards.
func (m *mapping) release() {
	m.mu.Lock()
	live := m.live
	m.live = nil
	m.mu.Unlock()
	for _, b := range live {
		store.Unmap(b)
	}
}

// copyOut returns data, a mapping of the whole chunk, copied into a buffer
// of the lease (set in *into), and releases the mapping: the chunk's
// batches reference the copy and are not mapped. Run it under
// SetPanicOnFault: the copy reads the mapping.
func (m *mapping) copyOut(data []byte, into *[]byte) []byte {
	buf := m.lease.Buffer(len(data))
	*into = buf
	out := buf[:copy(buf, data)]
	m.release()
	m.used.Store(false)
	return out
}

// truncated reports whether a page of the chunk's mappings is gone (the
// file was truncated under the scan): it reads one byte of each page, and
// a fault is the answer. The caller runs it under SetPanicOnFault.
func (m *mapping) truncated() (gone bool) {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			if !isFault(r) {
				panic(r)
			}
			gone = true
		}
	}()
	page := os.Getpagesize()
	var sink byte
	for _, b := range m.live {
		for i := 0; i < len(b); i += page {
			sink |= b[i]
		}
		if len(b) > 0 {
			sink |= b[len(b)-1]
		}
	}
	probeSink.Store(uint32(sink)) // a store the compiler must keep, and so the loads
	return false
}

var probeSink atomic.Uint32

// isFault reports whether v, a recovered panic or an error, is a fault on
// memory (what SetPanicOnFault turns SIGBUS into).
func isFault(v any) bool {
	_, ok := v.(interface{ Addr() uintptr })
	return ok
}

// errMappingChanged is what a fault reading a chunk's mapping means to
// the user; ChunkError names the chunk.
var errMappingChanged = fmt.Errorf("%w: the file changed or was truncated during the scan (reading its mapping faulted)", ErrBadChunk)

// errMappingWritten is what a recovered runtime panic decoding a mapped
// chunk means: its framing was checked before the decode, so its bytes
// were written under it (or the chunk is corrupt past what the framing
// checks).
var errMappingWritten = fmt.Errorf("%w: the file changed or was truncated during the scan (its mapped bytes no longer decode)", ErrBadChunk)

// mappedError is err, from reading a chunk some of whose bytes were
// mapped (maps), in the words a user understands: a fault reading the
// mapping, whether it reached us as a panic or as an error a library made
// of one (arrow-go recovers its own panics), or a page that is gone now,
// is errMappingChanged, never the runtime's "nil pointer dereference"; a
// runtime panic a library recovered (offsets written over, out of range)
// is errMappingWritten.
func mappedError(err error, maps *mapping) error {
	if err == nil || maps == nil || !maps.mapped() {
		return err
	}
	var fault interface{ Addr() uintptr }
	if errors.As(err, &fault) || maps.truncated() {
		return errMappingChanged
	}
	var rt runtime.Error
	// arrowipc names a panic arrow-go recovered ErrInconsistent; any other
	// path's runtime panic counts the same.
	if errors.Is(err, arrowipc.ErrInconsistent) || errors.As(err, &rt) || strings.Contains(err.Error(), "runtime error: ") {
		return errMappingWritten
	}
	return err
}

// resizedError is err, a chunk error of c, in the words of a file that
// changed: when c is a local file whose size is no longer the one the scan
// was told (a listing's size, or a catalog range now past the end), a read
// of it may have met the new end anywhere, and the decode's complaint about
// the bytes it got is a consequence, not the chunk's content. Only local
// files are asked (a stat); an error that is not ErrBadChunk is left alone.
func resizedError(err error, c *Chunk) error {
	if err == nil || !errors.Is(err, ErrBadChunk) || (c.Size < 0 && c.Length < 0) {
		return err
	}
	if i := strings.Index(c.URL, "://"); i >= 0 && !strings.HasPrefix(c.URL, "file://") {
		return err
	}
	name, nerr := store.Name(c.URL)
	if nerr != nil {
		return err
	}
	info, serr := os.Stat(name)
	if serr != nil {
		return fmt.Errorf("%w: the file changed during the scan: %v", ErrBadChunk, serr)
	}
	now := info.Size()
	switch {
	case c.Size >= 0 && now != c.Size:
		return fmt.Errorf("%w: the file changed or was truncated during the scan (%d bytes, %d when the scan began)", ErrBadChunk, now, c.Size)
	case c.Size < 0 && now < c.Offset+c.Length:
		return fmt.Errorf("%w: the file changed or was truncated during the scan (%d bytes, shorter than the chunk's range)", ErrBadChunk, now)
	}
	return err
}

// mapped reports whether any of the chunk's bytes are a mapping.
func (m *mapping) mapped() bool { return m != nil && m.used.Load() }

// faultFails, deferred by a function that reads mappings with
// debug.SetPanicOnFault(true), turns a fault (SIGBUS: the file was
// truncated under the scan) into *err instead of a crash. Other panics go
// on.
func faultFails(err *error) {
	if r := recover(); r != nil {
		if !isFault(r) {
			panic(r)
		}
		*err = errMappingChanged
	}
}
