package scanner

import (
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// Local files are mapped, not read: the scheduler's worker maps a chunk's
// range and faults its pages in (iosched.Request.Map), and the batches
// reference the page cache's own pages until the chunk's lease closes,
// which unmaps them. DuckDB's copy is then the only one: a read copies each
// byte from the page cache into a buffer and DuckDB's copy reads it back
// (1.02 GiB, sums of 4 columns, 2 cores, alternating runs: 0.76-0.78 CPU s
// per GiB read, 0.71-0.72 mapped; 0.49-0.55x a native table, 0.57-0.59x).
//
// A mapping is not private: another process may write or truncate the file
// under the scan. So
//   - only chunks whose columns' values never steer a read elsewhere are
//     mapped (fixed-width values, bits, and strings, whose offsets the copy
//     checks against the characters' length: see mappable);
//   - decode runs with debug.SetPanicOnFault, and a fault (SIGBUS: the file
//     was truncated) fails the chunk (faultFails);
//   - the copy into DuckDB's vectors runs under cabi's SIGBUS guard.

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
		m.lease.AtClose(func() { store.Unmap(b) })
	}
}

// mapped reports whether any of the chunk's bytes are a mapping.
func (m *mapping) mapped() bool { return m != nil && m.used.Load() }

// faultFails, deferred by a function that reads mappings with
// debug.SetPanicOnFault(true), turns a fault (SIGBUS: the file was
// truncated under the scan) into *err instead of a crash. Other panics go
// on.
func faultFails(err *error) {
	if r := recover(); r != nil {
		if _, ok := r.(interface{ Addr() uintptr }); !ok {
			panic(r)
		}
		*err = fmt.Errorf("%w: a fault reading the file's mapping (was it truncated during the scan?): %v", ErrBadChunk, r)
	}
}
