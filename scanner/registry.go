package scanner

import (
	"cmp"
	"slices"
	"sync"

	"github.com/remote-segments/remote_segments/budget"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// keepFinished is how many finished scans the registry remembers.
const keepFinished = 64

// registry lists a process's scans behind remote_segments_stats(): every
// running scan and the newest finished ones. A finished scan is kept as
// its row, taken when it ended, and its budget, which stays live so that
// the in-use figure shows the bytes that batches still held by a DuckDB
// thread give back after the scan ended; nothing else of it (its plan's
// chunk list, the catalog, the queues) is kept: a process that ran
// scans of a million chunks must not hold their lists. A zero registry is
// ready to use.
type registry struct {
	mu       sync.Mutex
	running  map[uint64]*Scan
	finished []finishedScan // oldest first, at most keepFinished
}

// finishedScan is what the registry keeps of a scan that ended.
type finishedScan struct {
	info   ScanInfo
	budget *budget.Budget
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

// finish moves s (closed) from the running scans to the finished ones.
func (r *registry) finish(s *Scan) {
	// The row is taken before the registry's lock, as Scans takes running
	// scans' rows after it: the scan's own locks are never held under it.
	f := finishedScan{info: s.info(), budget: s.budget}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.running[s.id]; !ok {
		return
	}
	delete(r.running, s.id)
	r.finished = append(r.finished, f)
	if len(r.finished) > keepFinished {
		r.finished = slices.Delete(r.finished, 0, len(r.finished)-keepFinished)
	}
}

// Scans describes the finished scans the process remembers and the running
// ones, ordered by ID; nil for a nil Process.
func (p *Process) Scans() []ScanInfo { return p.scansOf(func(uint64) bool { return true }) }

// ScansOf is Scans of one owner's scans only (Config.Owner).
func (p *Process) ScansOf(owner uint64) []ScanInfo {
	return p.scansOf(func(o uint64) bool { return o == owner })
}

func (p *Process) scansOf(keep func(owner uint64) bool) []ScanInfo {
	if p == nil {
		return nil
	}
	r := &p.scans
	r.mu.Lock()
	var out []ScanInfo
	for _, f := range r.finished {
		if keep(f.info.Owner) {
			i := f.info
			i.Budget = f.budget.Stats()
			out = append(out, i)
		}
	}
	var running []*Scan
	for _, s := range r.running {
		if keep(s.plan.cfg.Owner) {
			running = append(running, s)
		}
	}
	r.mu.Unlock()
	for _, s := range running {
		out = append(out, s.info())
	}
	slices.SortFunc(out, func(a, b ScanInfo) int { return cmp.Compare(a.ID, b.ID) })
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
