package scanner

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched"
)

// MemoryLimitEnv names the environment variable that sets the process
// memory limit (a byte size such as '4GiB'); see DefaultMemoryLimit.
const MemoryLimitEnv = "REMOTE_SEGMENTS_MEMORY_LIMIT"

// Process is what the scans of one process share, in one value: the store
// domains (one scheduler and store per endpoint and credentials), the
// registry of scans behind remote_segments_stats(), the multiplexer that
// hands each GET to the trace of its scan, the scan ids, and the memory
// limit. The host creates it when it loads (NewProcess, ProcessFromEnv) and
// passes it to every scan in Config.Process; the scanner keeps no
// package-level state. It is safe for concurrent use.
type Process struct {
	// Memory is the process memory limit: the parent of every scan's
	// budget, so that concurrent scans together never hold more than it.
	// It grants bytes first come, first served across the scans, except
	// that a scan holding none of it passes (budget.WithIdlePass). Nil: no
	// process-wide limit, each scan has only its own budget.
	Memory *budget.Budget

	*shared
}

// shared is what a Process and those derived from it (WithMemoryLimit)
// have in common.
type shared struct {
	// domains holds the schedulers and stores, one per store domain,
	// shared by every scan.
	domains *iosched.Domains
	// traces is the Tracer of every scheduler of domains.
	traces *traceRouter
	// scans lists the running and recently finished scans.
	scans registry
	// nextScanID numbers the scans; the id is also the scan's query in
	// the schedulers' priorities, so it is unique across domains.
	nextScanID atomic.Uint64
	// nextOwner numbers the owners of scans (NewOwner).
	nextOwner atomic.Uint64
	// caches are the cache directories scans opened (Config.CacheDir).
	caches caches
}

// NewOwner returns an owner (Config.Owner) no other caller of p or of a
// Process derived from it gets: a host asks one for each database.
func (p *Process) NewOwner() uint64 { return p.nextOwner.Add(1) }

// NewProcess returns a Process whose scans together hold at most
// memoryLimit bytes; 0 means no process-wide limit. It panics if
// memoryLimit is negative.
func NewProcess(memoryLimit int64) *Process {
	if memoryLimit < 0 {
		panic("scanner: the process memory limit must not be negative")
	}
	traces := newTraceRouter()
	sh := &shared{domains: iosched.NewDomains(iosched.Options{Tracer: traces}), traces: traces}
	return (&Process{shared: sh}).WithMemoryLimit(memoryLimit)
}

// WithMemoryLimit returns a Process that shares p's domains, registry and
// scan ids but has its own memory limit (0: none): a Go program's database
// with a limit of its own still shares the program's connections and
// stats. It panics if memoryLimit is negative.
func (p *Process) WithMemoryLimit(memoryLimit int64) *Process {
	if memoryLimit < 0 {
		panic("scanner: the process memory limit must not be negative")
	}
	q := &Process{shared: p.shared}
	if memoryLimit > 0 {
		// A scan holding nothing of the limit is let through, so that
		// scans whose consumers depend on each other (a join of two
		// scans) never deadlock.
		q.Memory = budget.New(memoryLimit, budget.WithMultiplier(1), budget.WithIdlePass())
	}
	return q
}

// Close waits for the fills its caches have pending (bounded by
// cache.FillBytes each; later ones are dropped) and closes every store
// domain of the process (their schedulers and connections). Hosts never call it: their Process lives as long as the
// process. Tests and programs that make a Process per run do; scans still
// running fail.
func (p *Process) Close() error {
	p.caches.close()
	return p.domains.Close()
}

// ProcessFromEnv returns a Process whose memory limit is
// DefaultMemoryLimit: what a host calls once when it loads. On failure (a
// malformed REMOTE_SEGMENTS_MEMORY_LIMIT) it returns the error naming the
// variable.
func ProcessFromEnv() (*Process, error) {
	limit, err := DefaultMemoryLimit()
	if err != nil {
		return nil, err
	}
	return NewProcess(limit), nil
}

// DefaultMemoryLimit is the process memory limit the environment asks for:
// REMOTE_SEGMENTS_MEMORY_LIMIT if set, else a quarter of the machine's
// physical memory (4 GiB where that is unknown). A malformed variable is an
// error naming it.
func DefaultMemoryLimit() (int64, error) {
	if v, ok := os.LookupEnv(MemoryLimitEnv); ok && strings.TrimSpace(v) != "" {
		n, err := ParseBytes(v)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("remote_segments: %s: %q is not a positive byte size such as '4GiB'", MemoryLimitEnv, v)
		}
		return n, nil
	}
	if total := physicalMemory(); total > 0 {
		return total / 4, nil
	}
	return 4 << 30, nil
}

// physicalMemory reads MemTotal from /proc/meminfo; 0 if it cannot.
func physicalMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kib << 10
		}
	}
	return 0
}
