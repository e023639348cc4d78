package scanner

import (
	"sync"
	"sync/atomic"
)

// keepFinished is how many finished scans the registry remembers.
const keepFinished = 64

// registry is the process-wide list of scans behind remote_segments_stats():
// every running scan and the newest finished ones.
var registry struct {
	mu       sync.Mutex
	nextID   atomic.Int64
	running  map[int64]*Scan
	finished []ScanInfo // oldest first, at most keepFinished
}

// ScanInfo is one row of remote_segments_stats().
type ScanInfo struct {
	ID     int64
	Source string
	State  string // "running", "done", "cancelled" or "error"
	Error  string
	Stats
}

func register(s *Scan) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	s.id = registry.nextID.Add(1)
	if registry.running == nil {
		registry.running = make(map[int64]*Scan)
	}
	registry.running[s.id] = s
}

func unregister(s *Scan, info ScanInfo) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, ok := registry.running[s.id]; !ok {
		return
	}
	delete(registry.running, s.id)
	registry.finished = append(registry.finished, info)
	if len(registry.finished) > keepFinished {
		registry.finished = registry.finished[len(registry.finished)-keepFinished:]
	}
}

// Scans returns the finished scans the process remembers, then the running
// ones, each ordered by ID.
func Scans() []ScanInfo {
	registry.mu.Lock()
	out := append([]ScanInfo(nil), registry.finished...)
	running := make([]*Scan, 0, len(registry.running))
	for _, s := range registry.running {
		running = append(running, s)
	}
	registry.mu.Unlock()
	for _, s := range running {
		out = append(out, s.info("running"))
	}
	sortByID(out)
	return out
}

func sortByID(v []ScanInfo) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j].ID < v[j-1].ID; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}
