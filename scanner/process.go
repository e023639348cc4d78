package scanner

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/remote-segments/remote_segments/budget"
)

// MemoryLimitEnv names the environment variable that sets the process
// memory limit (a byte size such as '4GiB'); see DefaultMemoryLimit.
const MemoryLimitEnv = "REMOTE_SEGMENTS_MEMORY_LIMIT"

// Process is what the scans of one process share. The host creates one when
// it loads and passes it to every scan in Config.Process; there is no
// package-level instance. It is safe for concurrent use.
type Process struct {
	// Memory is the process memory limit: the parent of every scan's
	// budget, so that concurrent scans together never hold more than it.
	// It grants bytes first come, first served across the scans, except
	// that a scan holding none of it passes (budget.WithIdlePass).
	Memory *budget.Budget
}

// NewProcess returns a Process whose scans together hold at most
// memoryLimit bytes. It panics if memoryLimit is not positive.
func NewProcess(memoryLimit int64) *Process {
	if memoryLimit <= 0 {
		panic("scanner: the process memory limit must be positive")
	}
	// A scan holding nothing of the limit is let through, so that scans
	// whose consumers depend on each other (a join of two scans) never
	// deadlock.
	return &Process{Memory: budget.New(memoryLimit, budget.WithMultiplier(1), budget.WithIdlePass())}
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
