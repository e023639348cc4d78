package arrowipc

import (
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// allocGuard is the allocator Decode hands arrow-go: it remembers the
// allocations that are live, so that what arrow-go drops when it fails
// halfway through a batch (it decompresses a column's buffers, then a later
// buffer fails and it returns an error, or recovers its own panic, without
// freeing them) can be freed afterwards. Found by FuzzProjectedMatchesArrow:
// a corrupt compressed chunk leaked its decompressed buffers, C memory in
// the extension (mallocator).
type allocGuard struct {
	mem  memory.Allocator
	mu   sync.Mutex
	live map[*byte][]byte // nil once the decode succeeded: the batches own what is left
}

func newAllocGuard(mem memory.Allocator) *allocGuard {
	return &allocGuard{mem: mem, live: map[*byte][]byte{}}
}

func key(b []byte) *byte { return unsafe.SliceData(b[:cap(b)]) }

func (g *allocGuard) remember(b []byte) {
	if cap(b) == 0 {
		return
	}
	g.mu.Lock()
	if g.live != nil {
		g.live[key(b)] = b
	}
	g.mu.Unlock()
}

func (g *allocGuard) forget(b []byte) {
	if cap(b) == 0 {
		return
	}
	g.mu.Lock()
	if g.live != nil {
		delete(g.live, key(b))
	}
	g.mu.Unlock()
}

func (g *allocGuard) Allocate(n int) []byte {
	b := g.mem.Allocate(n)
	g.remember(b)
	return b
}

func (g *allocGuard) Reallocate(n int, b []byte) []byte {
	g.forget(b)
	b = g.mem.Reallocate(n, b)
	g.remember(b)
	return b
}

func (g *allocGuard) Free(b []byte) {
	g.forget(b)
	g.mem.Free(b)
}

// keep ends the tracking: the decode succeeded and its batches own every
// allocation left.
func (g *allocGuard) keep() {
	g.mu.Lock()
	g.live = nil
	g.mu.Unlock()
}

// freeLeft frees every allocation still live: call it after a failed
// decode has released all it returned and closed its readers, when nothing
// can reference them any more.
func (g *allocGuard) freeLeft() {
	g.mu.Lock()
	left := g.live
	g.live = nil
	g.mu.Unlock()
	for _, b := range left {
		g.mem.Free(b)
	}
}
