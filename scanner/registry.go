package scanner

import (
	"slices"
	"sync"
)

// keepFinished is how many finished scans the registry remembers.
const keepFinished = 64

// registry is the process-wide list of scans behind remote_segments_stats():
// every running scan and the newest finished ones. Finished scans stay live
// objects, so a budget's in-use figure shows bytes that batches still held
// by a DuckDB thread give back after the scan ended.
var registry struct {
	mu       sync.Mutex
	running  map[uint64]*Scan
	finished []*Scan // oldest first, at most keepFinished
}

// ScanInfo is one row of remote_segments_stats().
type ScanInfo struct {
	ID     uint64
	Source string
	State  string // "running", "done", "cancelled" (ended early: a LIMIT or an interrupt) or "error"
	Error  string
	Stats
}

func register(s *Scan) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.running == nil {
		registry.running = make(map[uint64]*Scan)
	}
	registry.running[s.id] = s
}

func finish(s *Scan) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, ok := registry.running[s.id]; !ok {
		return
	}
	delete(registry.running, s.id)
	registry.finished = append(registry.finished, s)
	if len(registry.finished) > keepFinished {
		registry.finished = slices.Delete(registry.finished, 0, len(registry.finished)-keepFinished)
	}
}

// Scans describes the finished scans the process remembers and the running
// ones, ordered by ID.
func Scans() []ScanInfo {
	registry.mu.Lock()
	all := append([]*Scan(nil), registry.finished...)
	for _, s := range registry.running {
		all = append(all, s)
	}
	registry.mu.Unlock()
	slices.SortFunc(all, func(a, b *Scan) int { return int(a.id) - int(b.id) })
	out := make([]ScanInfo, len(all))
	for i, s := range all {
		out[i] = s.info()
	}
	return out
}

func (s *Scan) info() ScanInfo {
	state, err := s.state()
	i := ScanInfo{ID: s.id, Source: s.plan.describeSource(), State: state, Stats: s.Stats()}
	if err != nil {
		i.Error = err.Error()
	}
	return i
}

// describeSource names the scan's source for the stats.
func (p *Plan) describeSource() string {
	switch {
	case p.cfg.Rows != nil:
		return "(LIST of catalog rows)"
	case p.cfg.URLs != nil:
		return "(LIST of URLs)"
	}
	return shownURL(p.cfg.Source)
}
