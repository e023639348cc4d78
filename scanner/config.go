package scanner

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// Config holds the parameters of one scan. A zero field means its default
// (said at each field); the settings whose explicit value would otherwise
// be that zero have a named constant (NeverRetry, AdjacentOnly).
type Config struct {
	// The source: Rows (inline catalog rows) if set, else URLs if set, else
	// Source (a catalog file, glob, prefix or object URL).
	Source string
	Rows   []Row
	URLs   []string

	Store store.Options // S3 endpoint, region, style, credentials

	// MaxParallelIO sets max_parallel_io of the store domain's scheduler
	// (shared by the scans of that domain); 0 keeps it (64 remote, 32 local).
	MaxParallelIO int
	// MemoryBudget caps the bytes of the scan's pipeline; 0 sizes it from
	// the query: clamp(total bytes × BudgetFraction, 64 MiB, 1 GiB).
	MemoryBudget   int64
	BudgetFraction float64
	// Ordered delivers batches in catalog order (on one DuckDB thread).
	Ordered bool
	// Scheduler tuning; see iosched.Options.
	RequestSize    int64 // 0: iosched.DefaultRequestSize (8 MiB)
	CoalesceGap    int64 // 0: the default gap (64 KiB); AdjacentOnly merges only touching ranges
	Retries        int   // 0: the default (3); NeverRetry: a failed GET fails the scan
	RequestTimeout time.Duration
	NoHedge        bool
	// UnionByName lets chunks differ in their columns: they are matched by
	// name and a chunk without a column gives NULLs.
	UnionByName bool
	// MapLocal maps local files instead of reading them into the budget's
	// buffers (mmap.go says which chunks and how a truncation is caught).
	MapLocal bool
	// Keep, when set, is applied by Bind as Select would be (a host's
	// shard): the chunks it drops are never requested, not even by bind's
	// prefetches (prefetch.go).
	Keep func(c *Chunk) bool
	// PruneAfterBind says the host may drop chunks after Bind (Select, by a
	// filter it learns later): bind then fetches no chunk ahead of the
	// scan (prefetch.go) and reads the first chunk's schema only.
	PruneAfterBind bool
	// Trace, when set, is a path for a Chrome-trace JSON of the scan.
	Trace string
	// CacheDir, when set, is a directory where the byte ranges the scan
	// reads from remote stores are kept, and read again by later scans
	// (cache.go); processes may share it. CacheSize bounds its bytes; 0
	// means cache.DefaultFraction of the free space of its file system.
	CacheDir  string
	CacheSize int64

	// Process is shared by the process's scans: their store domains,
	// registry and trace multiplexer, and its memory limit (if any) is the
	// parent of this scan's budget. Required: Bind and Resolve fail
	// without it.
	Process *Process
	// Owner tells whose scan this is, for Process.ScansOf: a host gives
	// each database its own, so that one database's
	// remote_segments_stats() lists its own scans and not another's
	// sources and errors. 0 is a valid owner.
	Owner uint64

	// Admit, if set, is asked before any object is opened (a catalog file,
	// a listing, every chunk) with the URL or path as the scan names it; an
	// error refuses it and fails the scan. Hosts enforce their sandbox here.
	Admit func(rawURL string) error

	Allocator memory.Allocator // for decoded buffers; nil means memory.DefaultAllocator
	// DebugPanic makes the scan panic at a stage ("bind", "next",
	// "chunk": in a chunk's pipeline, after its decode, "prefetch": in
	// each of bind's prefetches, before its request, or "check": in each
	// batch of the version checks bind begins for a cache, before its
	// requests). Tests use it to
	// prove that a panic becomes a DuckDB error instead of a crash, and
	// gives its memory back.
	DebugPanic string

	// firstListed, if set, gets the chunks of a glob's or prefix's first
	// listing page while the rest is listed (catalog.Source.First; set by
	// Bind, see early.go).
	firstListed func(*Chunks)

	// startingCapFloor replaces budget.DefaultMin as the starting cap's minimum (tests
	// watch the cap grow from a small starting cap); 0 means budget.DefaultMin.
	startingCapFloor int64
	// readyWakeAfter replaces wakeAfter, how long a queued batch waits
	// for a wake at most (tests take the timer away to see that the scan
	// needs none); 0 means wakeAfter.
	readyWakeAfter time.Duration
	// groupMax, when positive, replaces the chunks planChunks submits in
	// one batch (Scan.groupLimit), whatever the store's round trip (tests:
	// one under the race detector may take longer than minLatencyToHide).
	groupMax int
	// projectModel, if not 0, replaces the cost model's verdict on a
	// projected read wherever the scan may project: 1 it pays, -1 it does
	// not (tests fill a cache one way and scan it with a model that says
	// the other, whatever the store's answers look like).
	projectModel int
}

// The explicit values of Config fields whose zero means "the default".
const (
	// NeverRetry as Config.Retries: a failed GET is not retried.
	NeverRetry = -1
	// AdjacentOnly as Config.CoalesceGap: only ranges that touch are
	// merged into one GET.
	AdjacentOnly = -1
)

// schedulerOptions are the iosched options the scan asks of its domain.
func (c *Config) schedulerOptions() iosched.Options {
	o := iosched.Options{
		RequestSize:      c.RequestSize,
		CoalesceGap:      c.CoalesceGap,
		NoHedge:          c.NoHedge,
		FirstByteTimeout: c.RequestTimeout,
		IdleTimeout:      c.RequestTimeout,
		Retries:          c.Retries,
	}
	return o
}

// ParseBytes reads a byte count: a plain integer, or a number with a unit
// B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024),
// in any case, spaces allowed.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a non-negative number with an optional unit", s)
	}
	mult := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q has unknown unit %q (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, unit)
	}
	n := v * mult
	if n > 1<<62 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(n), nil
}
