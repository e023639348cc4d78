package scanner

import (
	"slices"
	"sync"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// keepFinished is how many finished scans the registry remembers.
const keepFinished = 64

// registry lists a process's scans behind remote_segments_stats(): every
// running scan and the newest finished ones. Finished scans stay live
// objects, so a budget's in-use figure shows bytes that batches still held
// by a DuckDB thread give back after the scan ended. A zero registry is
// ready to use.
type registry struct {
	mu       sync.Mutex
	running  map[uint64]*Scan
	finished []*Scan // oldest first, at most keepFinished
}

// ScanInfo is one row of remote_segments_stats().
type ScanInfo struct {
	ID     uint64
	Owner  uint64 // Config.Owner
	Source string
	State  string // "running", "done", "cancelled" (ended early: a LIMIT or an interrupt) or "error"
	Error  string
	Stats
}

func (r *registry) register(s *Scan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		r.running = make(map[uint64]*Scan)
	}
	r.running[s.id] = s
}

func (r *registry) finish(s *Scan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.running[s.id]; !ok {
		return
	}
	delete(r.running, s.id)
	r.finished = append(r.finished, s)
	if len(r.finished) > keepFinished {
		r.finished = slices.Delete(r.finished, 0, len(r.finished)-keepFinished)
	}
}

// Scans describes the finished scans the process remembers and the running
// ones, ordered by ID; nil for a nil Process.
func (p *Process) Scans() []ScanInfo { return p.scansOf(func(*Scan) bool { return true }) }

// ScansOf is Scans of one owner's scans only (Config.Owner).
func (p *Process) ScansOf(owner uint64) []ScanInfo {
	return p.scansOf(func(s *Scan) bool { return s.plan.cfg.Owner == owner })
}

func (p *Process) scansOf(keep func(*Scan) bool) []ScanInfo {
	if p == nil {
		return nil
	}
	r := &p.scans
	r.mu.Lock()
	var all []*Scan
	for _, s := range r.finished {
		if keep(s) {
			all = append(all, s)
		}
	}
	for _, s := range r.running {
		if keep(s) {
			all = append(all, s)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(all, func(a, b *Scan) int { return int(a.id) - int(b.id) })
	out := make([]ScanInfo, len(all))
	for i, s := range all {
		out[i] = s.info()
	}
	return out
}

func (s *Scan) info() ScanInfo {
	state, err := s.state()
	i := ScanInfo{ID: s.id, Owner: s.plan.cfg.Owner, Source: s.plan.describeSource(), State: state, Stats: s.Stats()}
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
	return store.RedactURL(p.cfg.Source)
}
