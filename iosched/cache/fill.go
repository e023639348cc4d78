package cache

// Fills in the background: a scan hands the bytes it fetched to Fill and
// decodes them at once; the entry is written by writer goroutines of the
// cache, which hold no IO slot and never make the scan's reads or decode
// wait (its end may wait for them: FillGroup.Wait). A writer appends the
// fills it takes to one pack (pack.go) and puts it in place when it is
// full, when fills are waited for, or when none came for a while (see
// nextFill): a fill is done, for its group's Wait, once its pack is.
//
// Fill copies the bytes: the caller's buffer goes back to its pool (or
// its mapping is unmapped) as soon as the caller's consumer is done with
// it, which may come before the write does. The copies are the cache's,
// outside any scan's memory budget: counting them in a budget would make
// a fill wait for room behind the scan's own chunks (or jump their
// first-come order). They are bounded instead, per cache and process, by
// FillBytes: a fill that would take the queue past it is dropped, not
// waited for, and counted (Stats.Dropped). The range is then fetched
// again by a later scan, which stores it if the queue has room by then.

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// FillBytes is the most bytes of fills a Cache holds at once, queued or
// being written: the memory background fills take beside the scans'
// budgets. A single range larger than it is taken alone (when no other
// fill is pending), so that a dataset of large chunks is cached too; the
// bound is then that range's size.
const FillBytes = 64 << 20

// fillWriters is how many goroutines of a cache write fills at once: two
// keep the disk busy while one computes a checksum, and leave the other
// cores to the scans' decode.
const fillWriters = 2

// fill is one queued write: k's bytes, a copy owned by the queue after
// HeaderSize bytes of room for the entry's header; or, if touch is not "",
// the recency of that entry file (of no group).
type fill struct {
	k     Key
	n     int64  // the range's length
	data  []byte // HeaderSize bytes, then the range's, then room to pad it
	known bool   // note k.Object as known (SetKnown) once written
	group *FillGroup
	touch string
}

// fillQueue is a cache's pending fills and the state of its writers.
type fillQueue struct {
	mu      sync.Mutex
	q       []*fill
	held    int64 // bytes of fills queued or being written
	writers int   // writer goroutines running
	paused  chan struct{}
	idle    *sync.Cond // signalled when a fill ends and when a writer does
	closed  bool
	waiting int           // FillGroup.Waits waiting
	bound   int64         // FillBytes; smaller in tests
	linger  time.Duration // packLinger; longer in tests
	// touched is when this process last queued each entry's touch.
	touched map[string]time.Time

	dropped atomic.Int64
}

// FillGroup is the fills of one user of the cache (a scan), so that it can
// wait for them (Wait) when it ends. Its methods are safe for concurrent use, and a fill may join the
// group after a Wait returned (a late prefetch of the scan's): a later
// Wait waits for it.
type FillGroup struct {
	c       *Cache
	pending int // fills queued or being written; the cache's fills.mu
}

// NewFillGroup returns an empty group of fills of c.
func (c *Cache) NewFillGroup() *FillGroup { return &FillGroup{c: c} }

// Fill queues data (a copy of it: the caller may reuse data as soon as Fill
// returns) to be stored as the bytes of k, as Put stores them, by a writer
// of the cache, and returns at once. If known, k.Object is noted as one
// the cache holds ranges of (SetKnown) once the entry is written. It
// reports whether the fill was queued: it is dropped, and counted (Stats.Dropped), when the
// fills pending hold FillBytes already, or when the cache is closed.
func (g *FillGroup) Fill(k Key, data []byte, known bool) bool {
	c := g.c
	n := int64(len(data))
	if n > c.size {
		c.refused.Add(1)
		return false
	}
	fq := &c.fills
	fq.mu.Lock()
	if fq.closed || (fq.held > 0 && fq.held+n > fq.bound) {
		fq.mu.Unlock()
		fq.dropped.Add(1)
		return false
	}
	fq.held += n
	fq.mu.Unlock()
	// The copy is made outside the lock: fills of other scans need not
	// wait for it. Its room is taken above, and corrected to the
	// buffer's capacity below.
	buf := fillBuffer(int(padded(n)))
	if buf != nil {
		copy(buf[HeaderSize:], data)
	} else {
		// append clears none of the bytes it copies, as make would.
		buf = append(make([]byte, HeaderSize, fillCap(int(padded(n)))), data...)[:padded(n)]
	}
	f := &fill{k: k, n: n, data: buf, known: known, group: g}
	fq.mu.Lock()
	if fq.closed { // closed while the copy was made
		fq.held -= n
		fq.mu.Unlock()
		fq.dropped.Add(1)
		freeFillBuffer(buf)
		return false
	}
	fq.held += int64(cap(buf)) - n
	g.pending++
	c.queueLocked(f)
	return true
}

// queueLocked queues f and starts a writer if fewer than fillWriters run;
// it unlocks fq.mu.
func (c *Cache) queueLocked(f *fill) {
	fq := &c.fills
	fq.q = append(fq.q, f)
	start := fq.writers < fillWriters
	if start {
		fq.writers++
	} else {
		fq.cond().Broadcast() // a writer may be waiting with its pack (nextFill)
	}
	fq.mu.Unlock()
	if start {
		go c.writeFills()
	}
}

// maxTouched bounds the entries whose last touch the process remembers;
// beyond it the memory starts afresh (a few touches again, no harm).
const maxTouched = 1 << 16

// touch marks entry file p, last modified at mtime, recently used: its
// modification time is set by a writer, off the path of the hit, at most
// once per touchEvery per entry: not if the file's own time is that
// recent (a fill or a touch by any process), nor if this process queued
// one that recently. Recency only orders eviction, so a touch that comes
// late, or not at all (the cache closed), costs nothing but precision.
func (c *Cache) touch(p string, mtime time.Time) {
	now := time.Now()
	if d := now.Sub(mtime); d >= 0 && d < touchEvery {
		return
	}
	fq := &c.fills
	fq.mu.Lock()
	if t, ok := fq.touched[p]; fq.closed || (ok && now.Sub(t) < touchEvery) {
		fq.mu.Unlock()
		return
	}
	if fq.touched == nil || len(fq.touched) >= maxTouched {
		fq.touched = map[string]time.Time{}
	}
	fq.touched[p] = now
	c.queueLocked(&fill{touch: p})
}

// writeFills is one writer: it writes queued fills into a pack, puts the
// pack in place when it is full or its fills are waited for (see
// nextFill), and ends when nothing is pending (no goroutine stays while
// nothing is).
func (c *Cache) writeFills() {
	w := fillWriter{c: c, p: pack{c: c}, max: min(packMax, max(c.size/8, 1))}
	defer w.recover()
	for {
		f := c.nextFill(&w)
		if f == nil {
			return
		}
		if f.touch != "" {
			c.files.utimes(f.touch, time.Now()) // a failure only ages the entry
			continue
		}
		w.cur = f
		w.add(f)
		w.cur = nil
		if w.p.size >= w.max {
			w.finish()
		}
	}
}

// recover makes a panic of a writer (its goroutine has no caller to
// recover it: it would end the host) the failure of the fills it held: the
// one being added and those of its pack end, counted as errors, for their
// groups' Wait; the pack is dropped, and another writer takes the fills
// still queued.
func (w *fillWriter) recover() {
	r := recover()
	if r == nil {
		return
	}
	c := w.c
	fs := w.in
	if f := w.cur; f != nil {
		fs = append(fs, f)
		if f.data != nil { // its room not yet given back (add)
			c.fills.mu.Lock()
			c.fills.held -= int64(cap(f.data))
			c.fills.mu.Unlock()
		}
	}
	if w.p.tmp != "" { // a pack begun: dropped
		if w.p.fd >= 0 {
			c.files.close(w.p.fd)
		}
		c.files.remove(w.p.tmp)
	}
	c.errs.Add(int64(len(fs)))
	w.done(fs)
	fq := &c.fills
	fq.mu.Lock()
	fq.writers--
	if len(fq.q) > 0 { // Close waits for them too
		fq.writers++
		go c.writeFills()
	}
	fq.cond().Broadcast()
	fq.mu.Unlock()
}

// packLinger is how long a writer holding a pack waits for more fills
// when none is queued before it puts the pack in place: fills arrive one
// by one as a scan's reads end, and a pack put in place at each pause
// between them would be a file per fill again.
const packLinger = 20 * time.Millisecond

// nextFill returns the next fill for w to write, or nil when w is to end
// (nothing queued and nothing in its pack). Meanwhile it puts w's pack in
// place when its fills are waited for (FillGroup.Wait, Close), when the
// writers are paused, or when no fill came for packLinger.
func (c *Cache) nextFill(w *fillWriter) *fill {
	fq := &c.fills
	fq.mu.Lock()
	for {
		switch {
		case fq.paused != nil:
			p := fq.paused
			fq.mu.Unlock()
			w.finish()
			<-p
			fq.mu.Lock()
		case len(fq.q) > 0:
			f := fq.q[0]
			fq.q[0] = nil
			fq.q = fq.q[1:]
			fq.mu.Unlock()
			return f
		case len(w.in) == 0:
			fq.writers--
			fq.cond().Broadcast()
			fq.mu.Unlock()
			return nil
		case fq.waiting > 0 || fq.closed || w.lingered:
			w.lingered = false
			fq.mu.Unlock()
			w.finish()
			fq.mu.Lock()
		default:
			t := time.AfterFunc(fq.linger, func() {
				fq.mu.Lock()
				w.lingered = true
				fq.cond().Broadcast()
				fq.mu.Unlock()
			})
			fq.cond().Wait()
			t.Stop()
		}
	}
}

// fillWriter is a writer's pack and the fills in it.
type fillWriter struct {
	c      *Cache
	p      pack
	max    int64 // the size past which the pack is put in place
	in     []*fill
	failed bool  // a write into the pack failed: it is dropped
	cur    *fill // the fill being added (for recover)
	// lingered is set (under the queue's lock) when the writer waited
	// packLinger for a fill.
	lingered bool
	evict    bool // an entry in the pack passed the size
}

// add writes f into the pack, if the admission rule takes it; its buffer
// is free after (the bytes are in the file), its group's wait ends with
// the pack's.
func (w *fillWriter) add(f *fill) {
	c := w.c
	h := f.k.hash()
	ok, evict := c.admit(h, f.n)
	if ok && !w.failed {
		w.failed = w.p.add(h, f.data, f.n) != nil
	}
	w.evict = w.evict || evict
	fq := &c.fills
	freeFillBuffer(f.data)
	fq.mu.Lock()
	fq.held -= int64(cap(f.data))
	fq.mu.Unlock()
	f.data = nil
	if !ok {
		w.done([]*fill{f})
		return
	}
	w.in = append(w.in, f)
}

// finish puts the pack in place (or drops it: a write failed) and ends
// its fills.
func (w *fillWriter) finish() {
	if len(w.in) == 0 {
		return // no pack begun
	}
	c := w.c
	if err := w.p.finish(w.failed); err != nil || w.failed {
		for _, f := range w.in {
			c.used.Add(-f.n)
			c.errs.Add(1)
		}
	} else {
		for _, f := range w.in {
			c.stored.Add(1)
			if f.known {
				c.SetKnown(f.k.Object)
			}
		}
	}
	if w.evict {
		c.evict()
	}
	w.done(w.in)
	w.in, w.failed, w.evict = w.in[:0], false, false
}

// done ends fills fs for their groups' Wait.
func (w *fillWriter) done(fs []*fill) {
	fq := &w.c.fills
	fq.mu.Lock()
	for _, f := range fs {
		f.group.pending--
	}
	fq.cond().Broadcast()
	fq.mu.Unlock()
}

// cond returns the queue's idle condition, made on first use; fq.mu is
// held.
func (fq *fillQueue) cond() *sync.Cond {
	if fq.idle == nil {
		fq.idle = sync.NewCond(&fq.mu)
	}
	return fq.idle
}

// Wait returns once every fill of the group is written (or failed to be).
// The wait is bounded: the fills pending hold at most FillBytes.
func (g *FillGroup) Wait() {
	fq := &g.c.fills
	fq.mu.Lock()
	defer fq.mu.Unlock()
	if g.pending == 0 {
		return
	}
	// Writers holding packs put them in place now (nextFill).
	fq.waiting++
	fq.cond().Broadcast()
	for g.pending > 0 {
		fq.cond().Wait()
	}
	fq.waiting--
}

// Close stops taking fills (later ones are dropped) and waits for those
// pending to be written: after it returns, no goroutine of the cache
// writes into its directory. It closes the packs open for reading (those
// being read once they are). Lookups and Put still work.
func (c *Cache) Close() {
	fq := &c.fills
	fq.mu.Lock()
	fq.closed = true
	fq.cond().Broadcast() // writers holding packs put them in place
	for fq.writers > 0 {
		fq.cond().Wait()
	}
	fq.mu.Unlock()
	c.closePacks()
}

// PauseFills holds the cache's writers back until the returned function is
// called: fills queue meanwhile, and are dropped once FillBytes are
// pending. It shows what does not wait for the cache's writes (a scan's
// reads, decode); the resume function is safe to call more than once.
func (c *Cache) PauseFills() (resume func()) {
	fq := &c.fills
	p := make(chan struct{})
	fq.mu.Lock()
	if fq.paused != nil {
		fq.mu.Unlock()
		panic("cache: fills paused twice")
	}
	fq.paused = p
	fq.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			fq.mu.Lock()
			fq.paused = nil
			fq.mu.Unlock()
			close(p)
		})
	}
}

// Fill buffers are reused: a copy into fresh memory pays a page fault
// every 4 KiB, more than the copy itself. They are kept in pools by
// power of two (pool i holds capacities from 1<<i up), which the garbage
// collector empties when they are not used: an idle process keeps no fill
// memory. A pending fill's buffer counts its whole capacity in the bound.

// fillMinPooled is the smallest capacity pooled (smaller copies are
// cheap to allocate).
const fillMinPooled = 16 << 10

// fillPools holds buffers of capacity at least 1<<i in fillPools[i].
var fillPools [64]sync.Pool

// fillBuffer returns a pooled buffer of length n, or nil if none is free.
func fillBuffer(n int) []byte {
	if n < fillMinPooled {
		return nil
	}
	if b, ok := fillPools[takeFrom(n)].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return nil
}

// fillCap is the capacity of a new buffer of n bytes: a pooled one is
// made a power of two, so that it goes back to the pool that a fill of
// the same size takes from (one of n bytes would go to the pool below,
// and every fill of a size that is not a power of two would make a new
// buffer).
func fillCap(n int) int {
	if n < fillMinPooled {
		return n
	}
	return 1 << bits.Len(uint(n-1))
}

// freeFillBuffer gives b back to a pool; nothing may use it afterwards.
func freeFillBuffer(b []byte) {
	if c := cap(b); c >= fillMinPooled {
		fillPools[giveTo(c)].Put(&b)
	}
}

// takeFrom is the pool a buffer of n bytes is taken from: the first whose
// buffers all hold n (1<<i >= n).
func takeFrom(n int) int { return bits.Len(uint(n - 1)) }

// giveTo is the pool a buffer of capacity c goes back to: the last whose
// buffers it can stand for (1<<i <= c).
func giveTo(c int) int { return bits.Len(uint(c)) - 1 }
