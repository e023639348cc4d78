package budget

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"
)

// FuzzBudget decodes a sequence of operations from the fuzz input, runs them
// on a parent budget with two children and, step by step, on model, a
// deliberately naive single-threaded reference, and compares every
// observable after each step: each level's Stats (except wait times), each
// lease's Held, and which blocked Reserve calls have been granted.
//
// Blocking Reserve calls run on their own goroutines. The driver is otherwise
// single-threaded, so the outcome of each step is deterministic: a step that
// should park a request waits until the real queue holds it; a step that
// should grant one waits for its Reserve to return.
func FuzzBudget(f *testing.F) {
	f.Add([]byte{10, 10, 10, 0, 0})
	// Child caps 8 and 6, parent 10: fill, queue, release, commit, cancel.
	f.Add([]byte{10, 8, 6, 1, 2, opReserve, 1, 8, opReserve, 2, 5, opReserve, 2, 4, opReserve, 1, 2,
		opRelease, 0, 5, opCommit, 1, 3, opCancel, 0, opClose, 0, opClose, 1, opSetCap, 0, 30})
	// Oversize at each level and TryReserve behind a queue.
	f.Add([]byte{4, 20, 2, 0, 0, opReserve, 1, 30, opTryReserve, 0, 1, opReserve, 2, 9,
		opTryReserve, 2, 1, opClose, 0, opReserve, 0, 1, opCommit, 1, 40, opClose, 1, opClose, 2})
	// Grow before Commit (above the caps), then after it and after Close.
	f.Add([]byte{10, 8, 6, 0, 1, opReserve, 1, 6, opGrow, 0, 30, opReserve, 2, 5, opCommit, 0, 4,
		opGrow, 0, 1, opClose, 0, opGrow, 0, 1, opClose, 1})
	// A root that lets idle children pass (multiplier byte 0x81: 1.0, idle):
	// child 1 fills it, child 2 passes it, then queues, then passes again
	// once it holds nothing.
	f.Add([]byte{10, 20, 20, 1, 0x81, opReserve, 1, 10, opReserve, 2, 5, opReserve, 1, 3, opReserve, 2, 4,
		opClose, 1, opClose, 3, opClose, 0, opClose, 2})
	// Misuse: release more than held, commit twice, use after close.
	f.Add([]byte{50, 50, 50, 3, 1, opTryReserve, 1, 10, opRelease, 0, 255, opCommit, 0, 9,
		opCommit, 0, 9, opClose, 0, opRelease, 0, 1, opCommit, 0, 1, opClose, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		runFuzzProgram(t, data)
	})
}

// Operation codes of a fuzz program. Each is followed by its argument bytes.
const (
	opReserve    = iota // level, wire
	opTryReserve        // level, wire
	opCommit            // lease, actual
	opRelease           // lease, n (may exceed held: expects a panic)
	opClose             // lease
	opCancel            // pending request
	opSetCap            // level, cap
	opGrow              // lease, n
	numOps
)

// maxFuzzSteps bounds one input's run time.
const maxFuzzSteps = 300

var (
	fuzzAlphas      = []float64{0.2, 0, 0.5, 1}
	fuzzMultipliers = []float64{1.5, 1, 2.25, 3}
)

// fuzzInput hands out the bytes of a fuzz input; past the end it yields 0.
type fuzzInput struct {
	data []byte
	pos  int
}

func (in *fuzzInput) byte() byte {
	if in.pos >= len(in.data) {
		in.pos++
		return 0
	}
	b := in.data[in.pos]
	in.pos++
	return b
}

func (in *fuzzInput) done() bool { return in.pos >= len(in.data) }

// modelLevel is the reference model of one Budget.
type modelLevel struct {
	parent                     int // index into model.levels, or -1
	cap, inUse, peak           int64
	queue                      []int // request ids, front first
	reserved, committed, grown int64
	refunded, released         int64
	releases, oversize, over   int64
	waits, cancels             int64
	mult, alpha                float64
	idlePass                   bool
	bypasses                   int64
}

// modelRequest is one reservation: pending while at >= 0, granted at -1.
type modelRequest struct {
	owner     int
	wire, n   int64
	at        int
	size      int64
	held      int64
	committed bool
	closed    bool
	cancelled bool
}

type model struct {
	levels []modelLevel
	reqs   []modelRequest
}

// chain returns level i and its ancestors, leaf first.
func (m *model) chain(i int) []int {
	var c []int
	for ; i >= 0; i = m.levels[i].parent {
		c = append(c, i)
	}
	return c
}

// heldAt is the bytes owner's requests hold at level i.
func (m *model) heldAt(i, owner int) int64 {
	var n int64
	for k := range m.reqs {
		r := &m.reqs[k]
		if r.owner != owner || r.cancelled {
			continue
		}
		for _, j := range m.chain(owner) {
			if j == r.at {
				break // parked here: not granted at this level or above
			}
			if j == i {
				n += r.held
				break
			}
		}
	}
	return n
}

// passes reports whether a request of owner may pass level i's queue and
// cap: i lets idle budgets pass and owner holds nothing there.
func (m *model) passes(i, owner int) bool {
	return m.levels[i].idlePass && i != owner && m.heldAt(i, owner) == 0
}

func (m *model) fits(i int, n int64) (ok, oversize bool) {
	l := &m.levels[i]
	switch {
	case l.inUse+n <= l.cap:
		return true, false
	case n > l.cap && l.inUse == 0:
		return true, true
	}
	return false, false
}

func (m *model) grant(i int, n int64) {
	_, over := m.fits(i, n)
	l := &m.levels[i]
	l.inUse += n
	l.reserved += n
	l.peak = max(l.peak, l.inUse)
	if over {
		l.oversize++
	}
}

// settle admits queue heads, level by level, until no level can admit
// anything.
func (m *model) settle() {
	for changed := true; changed; {
		changed = false
		for i := range m.levels {
			l := &m.levels[i]
			for len(l.queue) > 0 {
				id := l.queue[0]
				r := &m.reqs[id]
				if ok, _ := m.fits(i, r.n); !ok {
					break
				}
				m.grant(i, r.n)
				l.queue = l.queue[1:]
				m.moveUp(i, id)
				changed = true
			}
			for k := 0; k < len(l.queue); {
				id := l.queue[k]
				if !m.passes(i, m.reqs[id].owner) {
					k++
					continue
				}
				m.grant(i, m.reqs[id].n)
				l.bypasses++
				l.queue = append(l.queue[:k:k], l.queue[k+1:]...)
				m.moveUp(i, id)
				changed = true
			}
		}
	}
}

// moveUp moves request id, just granted at level i, to i's parent's queue,
// or marks it granted.
func (m *model) moveUp(i, id int) {
	r := &m.reqs[id]
	r.at = m.levels[i].parent
	if r.at >= 0 {
		m.levels[r.at].queue = append(m.levels[r.at].queue, id)
	}
}

// reserve adds a request and returns its id; it is granted (at == -1),
// parked, or, for try, refused (ok false, nothing changed).
func (m *model) reserve(owner int, wire int64, try bool) (id int, ok bool) {
	n := int64(math.Ceil(float64(wire) * m.levels[owner].mult))
	stop := -1
	for _, i := range m.chain(owner) {
		if m.passes(i, owner) {
			continue
		}
		if f, _ := m.fits(i, n); len(m.levels[i].queue) > 0 || !f {
			stop = i
			break
		}
	}
	if try && stop >= 0 {
		return -1, false
	}
	for _, i := range m.chain(owner) {
		if i == stop {
			break
		}
		if f, _ := m.fits(i, n); i != owner && (!f || len(m.levels[i].queue) > 0) {
			m.levels[i].bypasses++
		}
		m.grant(i, n)
	}
	m.reqs = append(m.reqs, modelRequest{owner: owner, wire: wire, n: n, at: stop, size: n, held: n})
	id = len(m.reqs) - 1
	if stop >= 0 {
		m.levels[stop].queue = append(m.levels[stop].queue, id)
		m.levels[owner].waits++
	}
	return id, true
}

func (m *model) cancel(id int) {
	r := &m.reqs[id]
	q := m.levels[r.at].queue
	for k, x := range q {
		if x == id {
			m.levels[r.at].queue = append(q[:k:k], q[k+1:]...)
		}
	}
	for _, i := range m.chain(r.owner) {
		if i == r.at {
			break
		}
		m.levels[i].inUse -= r.n
		m.levels[i].released += r.n
	}
	r.cancelled = true
	m.levels[r.owner].cancels++
	m.settle()
}

// commit returns the expected panic message, or "".
func (m *model) commit(id int, actual int64) string {
	r := &m.reqs[id]
	switch {
	case r.closed:
		return "budget: Commit on closed lease"
	case r.committed:
		return "budget: Commit called twice"
	case r.held+actual-r.size < 0:
		return "budget: commit below bytes already released"
	}
	delta := actual - r.size
	r.committed, r.size, r.held = true, actual, r.held+delta
	for _, i := range m.chain(r.owner) {
		l := &m.levels[i]
		l.committed += actual
		l.inUse += delta
		if delta > 0 {
			l.grown += delta
			l.peak = max(l.peak, l.inUse)
			if l.inUse > l.cap {
				l.over++
			}
		} else {
			l.refunded -= delta
		}
	}
	if r.wire > 0 {
		o := &m.levels[r.owner]
		ratio := min(max(float64(actual)/float64(r.wire), DefaultMinMultiplier), DefaultMaxMultiplier)
		o.mult = min(max(o.mult+float64(o.alpha*(ratio-o.mult)), DefaultMinMultiplier), DefaultMaxMultiplier)
	}
	m.settle()
	return ""
}

// grow models Grow; it returns the expected panic message, or "".
func (m *model) grow(id int, n int64) string {
	r := &m.reqs[id]
	if r.closed || r.committed {
		return "budget: Grow after Commit or Close"
	}
	r.size += n
	r.held += n
	for _, i := range m.chain(r.owner) {
		l := &m.levels[i]
		l.inUse += n
		l.grown += n
		l.peak = max(l.peak, l.inUse)
		if l.inUse > l.cap {
			l.over++
		}
	}
	return ""
}

// giveBack models Release (close false) and Close; it returns the expected
// panic message, or "".
func (m *model) giveBack(id int, n int64, close bool) string {
	r := &m.reqs[id]
	if r.closed {
		if close {
			return ""
		}
		return "budget: Release on closed lease"
	}
	if close {
		n = r.held
		r.closed = true
	} else if n > r.held {
		return "budget: released more than held"
	}
	if n > 0 {
		r.held -= n
		for _, i := range m.chain(r.owner) {
			m.levels[i].inUse -= n
			m.levels[i].released += n
			m.levels[i].releases++
		}
	}
	m.settle()
	return ""
}

// fuzzRun is the real side: the budgets, the leases in model request order
// (nil until granted), and the pending Reserve calls.
type fuzzRun struct {
	t       *testing.T
	budgets []*Budget
	leases  []*Lease
	pending map[int]*pending
	m       *model
}

func runFuzzProgram(t *testing.T, data []byte) {
	in := &fuzzInput{data: data}
	caps := [3]int64{int64(in.byte() % 64), int64(in.byte() % 64), int64(in.byte() % 64)}
	alpha := fuzzAlphas[in.byte()%byte(len(fuzzAlphas))]
	mb := in.byte()
	mult := fuzzMultipliers[mb%byte(len(fuzzMultipliers))]
	idle := mb&0x80 != 0 // the root lets idle children pass (WithIdlePass)

	r := &fuzzRun{t: t, pending: map[int]*pending{}, m: &model{}}
	rootOpts := []Option{WithAlpha(alpha), WithMultiplier(mult)}
	if idle {
		rootOpts = append(rootOpts, WithIdlePass())
	}
	root := New(caps[0], rootOpts...)
	r.budgets = []*Budget{root,
		New(caps[1], WithParent(root), WithAlpha(alpha), WithMultiplier(mult)),
		New(caps[2], WithParent(root), WithAlpha(alpha), WithMultiplier(mult)),
	}
	for i, c := range caps {
		parent := 0 // the root
		if i == 0 {
			parent = -1
		}
		r.m.levels = append(r.m.levels, modelLevel{parent: parent, cap: c, alpha: alpha, mult: mult, idlePass: idle && i == 0})
	}
	defer r.cleanup()

	for step := 0; step < maxFuzzSteps && !in.done(); step++ {
		desc := r.step(in)
		r.compare(step, desc)
		if t.Failed() {
			return
		}
	}
}

// step runs one operation on both sides and returns its description.
func (r *fuzzRun) step(in *fuzzInput) string {
	m := r.m
	switch op := in.byte() % numOps; op {
	case opReserve, opTryReserve:
		lv, wire := int(in.byte()%3), int64(in.byte()%40)
		if op == opTryReserve {
			l, ok := r.budgets[lv].TryReserve(wire)
			id, want := m.reserve(lv, wire, true)
			if ok != want {
				r.t.Fatalf("TryReserve(level %d, %d) = %v, model %v", lv, wire, ok, want)
			}
			if ok {
				r.addLease(id, l)
			}
			return fmt.Sprintf("TryReserve(level %d, %d) = %v", lv, wire, ok)
		}
		id, _ := m.reserve(lv, wire, false)
		r.leases = append(r.leases, nil)
		p := startReserve(r.budgets[lv], wire)
		r.pending[id] = p
		if at := m.reqs[id].at; at >= 0 {
			r.waitQueued(p, at, len(m.levels[at].queue))
		}
		return fmt.Sprintf("Reserve(level %d, %d) -> request %d at %d", lv, wire, id, m.reqs[id].at)
	case opCommit, opRelease, opClose, opGrow:
		if len(r.leases) == 0 {
			return "no lease"
		}
		id := int(in.byte()) % len(r.leases)
		l := r.leases[id]
		if l == nil {
			return "lease still pending"
		}
		var arg int64
		var want string
		var call func()
		switch op {
		case opCommit:
			arg = int64(in.byte() % 80)
			want, call = m.commit(id, arg), func() { l.Commit(arg) }
		case opRelease:
			arg = int64(in.byte()) % (m.reqs[id].held + 2)
			want, call = m.giveBack(id, arg, false), func() { l.Release(arg) }
		case opGrow:
			arg = int64(in.byte() % 40)
			want, call = m.grow(id, arg), func() { l.Grow(arg) }
		default:
			want, call = m.giveBack(id, 0, true), l.Close
		}
		if got := catchPanic(call); got != want {
			r.t.Fatalf("op %d on lease %d (%d): panic %q, want %q", op, id, arg, got, want)
		}
		return fmt.Sprintf("op %d on lease %d (%d) panic=%q", op, id, arg, want)
	case opCancel:
		if len(r.pending) == 0 {
			return "nothing pending"
		}
		id := r.nthPending(int(in.byte()) % len(r.pending))
		p := r.pending[id]
		delete(r.pending, id)
		p.cancel()
		if _, err := p.wait(r.t); err != context.Canceled {
			r.t.Fatalf("cancelled request %d: err %v", id, err)
		}
		m.cancel(id)
		return fmt.Sprintf("cancel request %d", id)
	default: // opSetCap
		lv, c := int(in.byte()%3), int64(in.byte()%64)
		r.budgets[lv].SetCap(c)
		m.levels[lv].cap = c
		m.settle()
		return fmt.Sprintf("SetCap(level %d, %d)", lv, c)
	}
}

func (r *fuzzRun) addLease(id int, l *Lease) {
	for len(r.leases) <= id {
		r.leases = append(r.leases, nil)
	}
	r.leases[id] = l
}

// nthPending returns the k-th smallest pending request id.
func (r *fuzzRun) nthPending(k int) int {
	for id := range r.m.reqs {
		if _, ok := r.pending[id]; ok {
			if k == 0 {
				return id
			}
			k--
		}
	}
	panic("no such pending request")
}

// waitQueued waits until the real queue of level lv holds n requests, or
// fails if p returns first.
func (r *fuzzRun) waitQueued(p *pending, lv, n int) {
	deadline := time.Now().Add(waitTimeout)
	for r.budgets[lv].Stats().Queued != n {
		if p.returned() {
			r.t.Fatalf("Reserve returned (%v) but the model parks it at level %d", p.err, lv)
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("level %d queue never reached %d", lv, n)
		}
		// Yield rather than sleep: the Reserve goroutine needs a few
		// microseconds, and timer sleeps would make each input slow.
		runtime.Gosched()
	}
}

// compare collects the requests the model says were granted and compares
// every observable.
func (r *fuzzRun) compare(step int, desc string) {
	t := r.t
	for id, p := range r.pending {
		if r.m.reqs[id].at == -1 {
			delete(r.pending, id)
			r.addLease(id, p.mustGrant(t))
		}
	}
	for id, p := range r.pending {
		if p.returned() {
			t.Fatalf("step %d (%s): request %d returned (%v) but the model still parks it", step, desc, id, p.err)
		}
	}
	for i, b := range r.budgets {
		got, ml := b.Stats(), r.m.levels[i]
		want := Stats{
			Cap: ml.cap, InUse: ml.inUse, Peak: ml.peak,
			Reserved: ml.reserved, Committed: ml.committed, Grown: ml.grown, Refunded: ml.refunded, Released: ml.released,
			Releases: ml.releases, Queued: len(ml.queue), Waits: ml.waits, Cancels: ml.cancels,
			OversizeAdmits: ml.oversize, Overcommits: ml.over, Multiplier: ml.mult,
			TotalWait: got.TotalWait, MaxWait: got.MaxWait, Bypasses: ml.bypasses,
		}
		if got != want {
			t.Fatalf("step %d (%s): level %d\n got %+v\nwant %+v", step, desc, i, got, want)
		}
	}
	for id, l := range r.leases {
		if l != nil && l.Held() != r.m.reqs[id].held {
			t.Fatalf("step %d (%s): lease %d holds %d, model %d", step, desc, id, l.Held(), r.m.reqs[id].held)
		}
	}
}

// cleanup cancels what is pending and closes every lease; all levels must
// then be empty.
func (r *fuzzRun) cleanup() {
	for id, p := range r.pending {
		p.cancel()
		if l, err := p.wait(r.t); err == nil {
			r.addLease(id, l)
		}
	}
	for _, l := range r.leases {
		l.Close()
	}
	for i, b := range r.budgets {
		if s := b.Stats(); s.InUse != 0 || s.Queued != 0 {
			r.t.Errorf("level %d after cleanup: %+v", i, s)
		}
	}
}

// catchPanic runs f and returns its panic message, or "" if it returned.
func catchPanic(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}
