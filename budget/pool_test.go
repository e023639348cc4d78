package budget

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"unsafe"
)

func TestPoolClass(t *testing.T) {
	for _, n := range []int{PoolMin + 1, 6498, 64 << 10, 64<<10 + 1, 100 << 10, 1<<20 - 1, 1 << 20, 1<<20 + 1, 31_000_123, 1 << 30} {
		c := poolClass(n)
		if c < n || float64(c) > float64(n)*1.0625 || (n > 64<<10 && c%4096 != 0) || poolClass(c) != c {
			t.Errorf("poolClass(%d) = %d: want n <= c <= 1.0625 n, above 64 KiB a multiple of 4 KiB, and a fixed point", n, c)
		}
	}
}

// TestPoolReuse: a buffer goes back to the pool when its lease closes and
// serves the next lease of the same class; an abandoned one does not.
func TestPoolReuse(t *testing.T) {
	b := newUnit(64 << 20)
	ctx := context.Background()
	l1, _ := b.Reserve(ctx, 1<<20)
	buf1 := l1.Buffer(1 << 20)
	if st := b.PoolStats(); st.Taken != 1<<20 || st.Fresh != 1 {
		t.Fatalf("after one Buffer: %+v", st)
	}
	l1.Close()
	l2, _ := b.Reserve(ctx, 1<<20)
	buf2 := l2.Buffer(1<<20 - 100) // same class
	if unsafe.SliceData(buf1) != unsafe.SliceData(buf2) || len(buf2) != 1<<20-100 {
		t.Fatal("the second lease did not reuse the first one's buffer")
	}
	if st := b.PoolStats(); st.Reused != 1 || st.Fresh != 1 || st.Free != 0 {
		t.Fatalf("after reuse: %+v", st)
	}
	l2.Abandon()
	if st := b.PoolStats(); st.Taken != 0 || st.Free != 0 {
		t.Fatalf("after Abandon: %+v, want nothing taken or kept", st)
	}
	l3, _ := b.Reserve(ctx, 1<<20)
	if buf3 := l3.Buffer(1 << 20); unsafe.SliceData(buf3) == unsafe.SliceData(buf1) {
		t.Fatal("an abandoned buffer was reused")
	}
	l3.Close()
	if small := l3.b.PoolStats(); small.Taken != 0 {
		t.Fatalf("taken %d after Close", small.Taken)
	}
}

// TestAdopt: a buffer of a pooled capacity filled before its lease is
// taken in, goes to the pool at Close and serves the next lease of its
// class with its bytes where they were; one of another capacity, a small
// one, or one offered to a closed lease stays the caller's.
func TestAdopt(t *testing.T) {
	b := newUnit(64 << 20)
	ctx := context.Background()
	const n = 100<<10 + 123 // its class is larger
	l1, _ := b.Reserve(ctx, n)
	for _, buf := range [][]byte{make([]byte, n), make([]byte, n, PooledSize(n)+4096), make([]byte, PoolMin, PoolMin)} {
		if l1.Adopt(buf) {
			t.Errorf("adopted a buffer of length %d, capacity %d; PooledSize is %d", len(buf), cap(buf), PooledSize(len(buf)))
		}
	}
	if (*Lease)(nil).Adopt(make([]byte, n, PooledSize(n))) {
		t.Error("a nil lease adopted a buffer")
	}
	if st := b.PoolStats(); st.Taken != 0 || st.Adopted != 0 {
		t.Fatalf("after refused adoptions: %+v, want nothing taken", st)
	}
	buf := make([]byte, n, PooledSize(n))
	buf[0] = 7
	if !l1.Adopt(buf) {
		t.Fatalf("did not adopt a buffer of length %d, capacity %d", n, cap(buf))
	}
	if st := b.PoolStats(); st.Taken != int64(PooledSize(n)) || st.Adopted != 1 || st.Fresh != 0 {
		t.Fatalf("after Adopt: %+v, want %d taken, 1 adopted, none fresh", st, PooledSize(n))
	}
	l1.Close()
	if st := b.PoolStats(); st.Taken != 0 || st.Free != int64(PooledSize(n)) {
		t.Fatalf("after Close: %+v, want the adopted buffer free", st)
	}
	l2, _ := b.Reserve(ctx, n)
	if again := l2.Buffer(n - 10); unsafe.SliceData(again) != unsafe.SliceData(buf) || again[0] != 7 {
		t.Fatal("the next lease did not reuse the adopted buffer")
	}
	if st := b.PoolStats(); st.Reused != 1 || st.Fresh != 0 {
		t.Fatalf("after reuse: %+v", st)
	}
	l2.Close()
	if l2.Adopt(make([]byte, n, PooledSize(n))) {
		t.Error("a closed lease adopted a buffer")
	}
	if st := b.PoolStats(); st.Taken != 0 || st.Adopted != 1 {
		t.Fatalf("after Adopt on a closed lease: %+v, want nothing taken and 1 adopted", st)
	}
}

// TestPoolLimit: buffers handed out and kept never exceed the cap together
// while any are free: a new class evicts free buffers of others.
func TestPoolLimit(t *testing.T) {
	b := newUnit(3 << 20)
	ctx := context.Background()
	var ls []*Lease
	for range 3 {
		l, _ := b.Reserve(ctx, 1<<20)
		l.Buffer(1 << 20)
		ls = append(ls, l)
	}
	for _, l := range ls {
		l.Close()
	}
	if st := b.PoolStats(); st.Free != 3<<20 {
		t.Fatalf("free %d, want 3 MiB kept", st.Free)
	}
	l, _ := b.Reserve(ctx, 2<<20)
	l.Buffer(2 << 20) // a new class: 2 MiB must go
	if st := b.PoolStats(); st.Taken+st.Free > 3<<20 {
		t.Fatalf("taken %d + free %d above the 3 MiB cap", st.Taken, st.Free)
	}
	l.Close()
	b.SetCap(1 << 20)
	l, _ = b.Reserve(ctx, 1<<20)
	l.Buffer(1 << 20)
	l.Close()
	if st := b.PoolStats(); st.Free > 2<<20 {
		t.Fatalf("free %d after the cap shrank to 1 MiB; want at most one buffer kept", st.Free)
	}
}

// TestBufferOnClosedLease: a closed lease hands out no buffer.
func TestBufferOnClosedLease(t *testing.T) {
	b := newUnit(64 << 20)
	l, _ := b.Reserve(context.Background(), 1<<20)
	l.Buffer(1 << 20)
	l.Close()
	if st := b.PoolStats(); st.Taken != 0 || st.Free != 1<<20 {
		t.Fatalf("after Close: %+v", st)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Buffer on a closed lease did not panic")
		}
	}()
	l.Buffer(1 << 20)
}

// countingSmall is the allocator for buffers below PoolMin in these tests.
type countingSmall struct{ live int }

func (a *countingSmall) Allocate(n int) []byte { a.live += n; return make([]byte, n) }
func (a *countingSmall) Reallocate(n int, b []byte) []byte {
	a.live += n - len(b)
	return append(b[:len(b):len(b)], make([]byte, max(0, n-len(b)))...)[:n]
}
func (a *countingSmall) Free(b []byte) { a.live -= len(b) }

func TestPoolAllocator(t *testing.T) {
	b := newUnit(64 << 20)
	small := &countingSmall{}
	a := b.Allocator(small)
	s := a.Allocate(100)
	big := a.Allocate(1 << 20)
	if small.live != 100 || b.PoolStats().Taken != 1<<20 {
		t.Fatalf("small live %d, pool %+v", small.live, b.PoolStats())
	}
	big[0] = 7
	a.Free(big)
	again := a.Allocate(1 << 20)
	if unsafe.SliceData(again) != unsafe.SliceData(big) || again[0] != 0 {
		t.Fatal("a freed buffer was not reused, or not cleared")
	}
	grown := a.Reallocate(2<<20, append(again[:0], 1, 2, 3)[:1<<20])
	if grown[2] != 3 || len(grown) != 2<<20 {
		t.Fatal("Reallocate lost the contents")
	}
	s = a.Reallocate(200, s)
	a.Free(s)
	a.Free(grown)
	if st := b.PoolStats(); small.live != 0 || st.Taken != 0 {
		t.Fatalf("after freeing everything: small %d, pool %+v", small.live, st)
	}
	// A slice cut short of its class is forgotten, not a panic.
	cut := a.Allocate(1 << 20)
	a.Free(cut[: 1<<20-100 : 1<<20-100])
	if st := b.PoolStats(); st.Taken != 0 {
		t.Fatalf("after freeing a cut slice: %+v", st)
	}
}

// TestCloseFreesBuffersBeforeAdmitting: a Close that admits a waiting
// Reserve has already given its buffers back to the pool when the waiter is
// granted, so that the waiter's Buffer reuses them instead of faulting in a
// fresh one beside them.
func TestCloseFreesBuffersBeforeAdmitting(t *testing.T) {
	const size = 8 << 20
	var b *Budget
	var freeAtGrant []int64
	b = New(size+size/2, withGrantHook(func(l *Budget, n int64, oversize bool) {
		freeAtGrant = append(freeAtGrant, l.PoolStats().Free) // under the budget's lock, never the pool's
	}))
	first, err := b.Reserve(context.Background(), size)
	if err != nil {
		t.Fatal(err)
	}
	first.Buffer(size)
	granted := queuedReserve(t, b, size) // waits: the cap holds one
	first.Close()
	second := <-granted
	second.Buffer(size)
	second.Close()
	if len(freeAtGrant) != 2 || freeAtGrant[1] < size {
		t.Errorf("pool's free bytes at each grant: %v; want the first lease's %d-byte buffer free when the second is granted", freeAtGrant, size)
	}
	if st := b.PoolStats(); st.Fresh != 1 || st.Reused != 1 {
		t.Errorf("pool: %d fresh, %d reused buffers; want 1 and 1", st.Fresh, st.Reused)
	}
}

// queuedReserve reserves n bytes of b on another goroutine, returns once
// that reservation waits in b's queue, and sends its lease when granted.
func queuedReserve(t *testing.T, b *Budget, n int64) <-chan *Lease {
	granted := make(chan *Lease)
	go func() {
		l, err := b.Reserve(context.Background(), n)
		if err != nil {
			t.Error(err)
		}
		granted <- l
	}()
	for b.Stats().Queued == 0 {
		runtime.Gosched()
	}
	return granted
}

// AtClose's functions run once, when the lease closes (or is abandoned),
// before its bytes admit a waiter; on a closed or nil lease, at once.
func TestAtClose(t *testing.T) {
	const size = 8 << 20
	var ran []string
	b := New(size, withGrantHook(func(l *Budget, n int64, oversize bool) {
		ran = append(ran, "grant") // under the budget's lock
	}))
	first, err := b.Reserve(context.Background(), size)
	if err != nil {
		t.Fatal(err)
	}
	first.AtClose(func() { ran = append(ran, "unmap 1") })
	first.AtClose(func() { ran = append(ran, "unmap 2") })
	granted := queuedReserve(t, b, size) // waits for first's bytes
	first.Close()
	second := <-granted
	first.Close() // idempotent: nothing runs twice
	second.AtClose(func() { ran = append(ran, "abandoned") })
	second.Abandon()
	second.AtClose(func() { ran = append(ran, "after close") })
	var nilLease *Lease
	nilLease.AtClose(func() { ran = append(ran, "nil lease") })
	want := []string{"grant", "unmap 1", "unmap 2", "grant", "abandoned", "after close", "nil lease"}
	if !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}
}

// TestPoolSmallChunk: the buffer of a chunk of a few pages (a small file
// read whole) comes from the pool and serves the next lease, as a large
// one does; a scan of many small chunks otherwise made one for the
// collector per chunk. Below a page, buffers are the allocator's.
func TestPoolSmallChunk(t *testing.T) {
	b := newUnit(64 << 20)
	ctx := context.Background()
	l1, _ := b.Reserve(ctx, 8<<10)
	buf1 := l1.Buffer(6498)
	l1.Close()
	l2, _ := b.Reserve(ctx, 8<<10)
	buf2 := l2.Buffer(6600) // same class
	if unsafe.SliceData(buf1) != unsafe.SliceData(buf2) || len(buf2) != 6600 {
		t.Fatal("the second lease did not reuse the first one's buffer")
	}
	if st := b.PoolStats(); st.Reused != 1 || st.Fresh != 1 {
		t.Fatalf("after reuse: %+v", st)
	}
	tiny := l2.Buffer(PoolMin)
	l2.Close()
	if st := b.PoolStats(); st.Fresh != 1 || st.Taken != 0 || len(tiny) != PoolMin {
		t.Fatalf("a buffer of a page came from the pool: %+v", st)
	}
}
