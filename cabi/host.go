package cabi

/*
#include "rs.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/cgo"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/remote-segments/remote_segments/internal/heapfloor"
	"github.com/remote-segments/remote_segments/scanner"
)

// Host is what a DuckDB host hands down to the functions it registers: the
// memory limit their scans share, whether the scans may tune the process's Go
// runtime, and where a scan finds the context of the statement that runs it.
// A zero Host is valid: Register gives it a Process of its own without a
// memory limit (each scan is bounded by its own budget only), the runtime's
// settings are left alone, and every scan runs under context.Background(),
// ended only by DuckDB (a LIMIT, an error, an interrupt).
type Host struct {
	// Process is shared by every scan of the functions registered with
	// this Host (and of any other Host given the same Process): their
	// store domains, the scans remote_segments_stats() lists, and the
	// memory limit that is the parent of every scan's budget, so
	// concurrent queries together stay under one ceiling. Nil: Register
	// makes one without a memory limit for this registration.
	Process *scanner.Process
	// TuneMemoryLimit lets the scans keep the Go runtime's soft memory limit
	// (debug.SetMemoryLimit) at the running scans' budgets plus headroom.
	// Only a host whose Go runtime serves nothing but the scans (the loadable
	// extension) sets it: a Go program's GC settings are the program's.
	TuneMemoryLimit bool
	// Statements, when set, gives each scan the context of its statement, so
	// that cancelling the statement stops the scan's requests at once.
	Statements Statements
	// settings, when set, reads the host's remote_segments_<name> settings
	// (the DuckDB 2.0 edition; parameter_settings.go, internal/policy).
	settings settingReader
	// prunesAfterBind: the host's filter pushdown may drop chunks after
	// bind (the 2.0 edition), so bind fetches none ahead
	// (scanner.Config.PruneAfterBind).
	prunesAfterBind bool
	// owner is this registration's Config.Owner (a database's): its
	// remote_segments_stats() lists its own scans only.
	owner uint64
	// loadErr, when set, fails every bind: the host could not be set up
	// (a malformed REMOTE_SEGMENTS_MEMORY_LIMIT), and the extension's entry
	// point has no better place to say so than the first query.
	loadErr error
}

// Statements finds the context of the statement a scan runs in.
type Statements interface {
	// BindConnection returns the id of the connection a bind runs on; bind
	// is the callback's duckdb_bind_info.
	BindConnection(bind unsafe.Pointer) uint64
	// Context returns the context of the statement running now on the
	// connection with that id, or context.Background() when there is none.
	Context(conn uint64) context.Context
}

// ErrAPISize means a host's C API function table does not have the layout
// cabi was compiled against (duckdb_ext_api_v1, C extension API v1.2.0).
var ErrAPISize = errors.New("cabi: the C API function table does not match duckdb_ext_api_v1 (v1.2.0)")

// UseAPI makes cabi call DuckDB through table: n function addresses in the
// order of the members of duckdb_ext_api_v1, the C extension API v1.2.0 (a
// host that links DuckDB itself builds it from the real duckdb_* functions).
// The first call copies the table; later calls only check n, since the
// table is read without a lock. table must stay valid for the process's
// life. On a size mismatch it returns ErrAPISize and copies nothing.
func UseAPI(table unsafe.Pointer, n int) error {
	size := uintptr(n) * unsafe.Sizeof(uintptr(0))
	if n <= 0 || !bool(C.rs_use_api(table, C.size_t(size))) {
		return fmt.Errorf("%w: %d functions, want %d", ErrAPISize, n, C.sizeof_duckdb_ext_api_v1/C.size_t(unsafe.Sizeof(uintptr(0))))
	}
	return nil
}

// Register adds remote_segments and remote_segments_stats to the database of
// con, a duckdb_connection, for host h (DuckDB keeps h until the database
// closes). The function table must be set first: by UseAPI, or by the
// loadable extension's entry point. DuckDB accepts a second registration on
// the same database, and which Host the functions then use is its choice:
// register once per database.
func Register(con unsafe.Pointer, h Host) error {
	if con == nil {
		return errors.New("cabi: Register: nil duckdb_connection")
	}
	if !bool(C.rs_api_ready()) {
		return errors.New("cabi: Register: the C API function table is not set (UseAPI)")
	}
	if h.Process == nil {
		h.Process = scanner.NewProcess(0)
	}
	h.owner = h.Process.NewOwner()
	var msg *C.char
	if !bool(C.rs_register(C.duckdb_connection(con), C.uintptr_t(cgo.NewHandle(&h)), &msg)) {
		return errors.New(C.GoString(msg))
	}
	return nil
}

// rsHostForDatabase is the Host of one database that loads the v1.2.0 file
// (loadableHost), as a cgo.Handle the entry point owns until it hands it
// to a registered function.
//
//export rsHostForDatabase
func rsHostForDatabase() C.uintptr_t {
	return C.uintptr_t(cgo.NewHandle(loadableHost()))
}

// loadableHost is the Host of one database that loads the extension. A
// panic making it becomes the Host's load error, which every bind reports.
func loadableHost() (h *Host) {
	// The loadable extension's Go runtime serves only the scans. DuckDB
	// calls the entry point once per database that loads the extension, but
	// the shared library (and its Go runtime) once per process: every
	// database shares the one Process.
	h = &Host{TuneMemoryLimit: true}
	defer func() {
		if r := recover(); r != nil {
			h.loadErr = errors.New(reportPanic("loading remote_segments", r))
		}
	}()
	h.Process, h.loadErr = loadableProcess()
	if h.Process != nil {
		h.owner = h.Process.NewOwner()
	}
	loadableProcs()
	return h
}

// loadableProcs gives the loadable extension's Go runtime twice its default
// GOMAXPROCS (the CPUs it may use), unless the GOMAXPROCS environment
// variable sets it: a P for each of DuckDB's threads (as many as the CPUs
// by default) beside one for each CPU for the scans' own goroutines.
//
// DuckDB's threads call into Go for every vector they fill (rsFunction).
// A thread that calls into Go takes a P, and when the call returns to
// DuckDB's code the runtime leaves that P with it, in the syscall state,
// until its monitor thread takes the P back (after 20 µs, or up to 10 ms
// when the monitor has found nothing to do for a while). With one P per
// CPU, DuckDB's threads hold them all, and the IO workers and decoders
// they just woke wait for the monitor, while DuckDB's threads find nothing
// ready. Twice the CPUs leaves a P free for them; more buys nothing (see
// BENCHMARKS.md, "Figures behind the code").
//
// A Go program that hosts DuckDB (the database/sql host) keeps its own
// GOMAXPROCS: its runtime is the program's.
//
// It also keeps that runtime's collector from running every few MiB of
// allocation while little is live (heapfloor, heapFloor), unless the GOGC
// environment variable sets the collector's percent: 20 000 chunks of 6 KiB
// from local files ran 134 cycles in three scans, and 19 with the floor,
// for 0.85× the wall time and 0.84× the CPU of the whole CLI (BENCHMARKS.md,
// "Figures behind the code").
var loadableProcs = sync.OnceFunc(func() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0))
	}
	if os.Getenv("GOGC") == "" {
		heapfloor.Start(heapFloor)
	}
})

// heapFloor is the growth the loadable extension's heap is allowed between
// two collections however little is live (heapfloor): a quarter of the headroom
// its memory limit keeps over the scans' budgets.
const heapFloor = memoryHeadroom / 4

// loadableProcess is the loadable extension's Process, made at the first
// load: its memory limit (REMOTE_SEGMENTS_MEMORY_LIMIT, or a quarter of
// physical memory) is the ceiling of every scan in the host process.
var loadableProcess = sync.OnceValues(scanner.ProcessFromEnv)

// hostOf returns the Host a bind's function was registered with.
func hostOf(info C.duckdb_bind_info) *Host {
	if h := C.rs_bind_get_host(info); h != 0 {
		return cgo.Handle(h).Value().(*Host)
	}
	return &Host{}
}

// statement returns how a bind's scan finds its statement's context: a
// function to call at bind and again when the scan starts (a prepared
// statement binds once and may run many times, each time with its own
// context).
func (h *Host) statement(info C.duckdb_bind_info) func() context.Context {
	if h.Statements == nil {
		return context.Background
	}
	conn := h.Statements.BindConnection(unsafe.Pointer(info))
	return func() context.Context { return h.Statements.Context(conn) }
}

// memoryHeadroom is what the Go runtime may hold beyond the running scans'
// budgets before its garbage collector works harder (runtime, goroutines,
// buffers not yet collected). Released buffers are []byte, which the collector
// need not scan, so collecting often near the limit is cheap.
const memoryHeadroom = 64 << 20

// budgetsChanged keeps the Go runtime's soft memory limit at the running
// scans' budgets plus headroom, when the host allows it, so buffers the scans
// released are collected before the heap doubles (GOGC's default) and the
// host's RSS follows the budgets. Call it after a scan starts or ends.
func (h *Host) budgetsChanged() {
	if !h.TuneMemoryLimit {
		return
	}
	var total int64
	for _, s := range h.Process.Scans() {
		if s.State == "running" {
			total += s.Budget.Cap
		}
	}
	if total == 0 {
		debug.SetMemoryLimit(math.MaxInt64)
		return
	}
	debug.SetMemoryLimit(total + memoryHeadroom)
}
