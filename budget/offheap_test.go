package budget

import (
	"context"
	"runtime"
	"testing"
	"unsafe"
)

// mappedOn reports whether this system maps buffers for the pool (Linux).
func mappedOn(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("buffers are mapped on Linux only, not on %s", runtime.GOOS)
	}
}

// TestMappedBuffers: a buffer of a huge page or more is mapped for itself,
// aligned to a huge page and zeroed; the pool keeps and reuses it like any
// other, and unmaps it once it drops it (ClosePool). A smaller one comes
// from the Go heap.
func TestMappedBuffers(t *testing.T) {
	mappedOn(t)
	b := newUnit(64 << 20)
	ctx := context.Background()
	before := Mapped()
	n := 3<<20 + 5
	l1, _ := b.Reserve(ctx, int64(n))
	buf := l1.Buffer(n)
	after := Mapped()
	if after.Maps != before.Maps+1 || after.Live != before.Live+int64(cap(buf)) {
		t.Fatalf("a %d-byte buffer: mapped %+v, before %+v; want one mapping of %d bytes", n, after, before, cap(buf))
	}
	if p := uintptr(unsafe.Pointer(unsafe.SliceData(buf))); p%HugePage != 0 {
		t.Errorf("mapped at %#x, not aligned to a huge page", p)
	}
	for i, c := range buf {
		if c != 0 {
			t.Fatalf("byte %d of a fresh buffer is %d", i, c)
		}
	}
	for i := range buf[:cap(buf)] {
		buf[:cap(buf)][i] = byte(i)
	}
	small := l1.Buffer(HugePage / 2) // a class under a huge page
	if Mapped().Maps != after.Maps {
		t.Errorf("a %d-byte buffer was mapped", len(small))
	}
	l1.Close()
	l2, _ := b.Reserve(ctx, int64(n))
	if again := l2.Buffer(n); unsafe.SliceData(again) != unsafe.SliceData(buf) || again[n-1] != byte(n-1) {
		t.Error("the pool did not reuse its mapped buffer")
	}
	l2.Close()
	if Mapped() != after {
		t.Errorf("reuse changed the mappings: %+v, want %+v", Mapped(), after)
	}
	b.ClosePool()
	if end := Mapped(); end.Live != before.Live || end.Unmaps != before.Unmaps+1 {
		t.Errorf("after ClosePool: %+v, want %+v with one more unmap", end, before)
	}
}

// TestMappedDroppedOverLimit: a mapped buffer the pool does not keep (it
// would hold more than its cap) is unmapped when given back, as are those
// given back after ClosePool.
func TestMappedDroppedOverLimit(t *testing.T) {
	mappedOn(t)
	b := newUnit(6 << 20)
	ctx := context.Background()
	before := Mapped()
	l1, _ := b.Reserve(ctx, 4<<20)
	l1.Buffer(4 << 20)
	l1.Close() // kept: nothing else is free
	l2, _ := b.Reserve(ctx, 2<<20)
	l2.Buffer(5 << 20) // another class, over the cap beside the free 4 MiB: that one goes
	if got := Mapped(); got.Unmaps != before.Unmaps+1 || got.Maps != before.Maps+2 {
		t.Errorf("a new class over the cap: %+v, want the free buffer unmapped (before %+v)", got, before)
	}
	b.ClosePool()
	l2.Close() // given back after ClosePool: unmapped
	if got := Mapped(); got.Live != before.Live || got.Unmaps != before.Unmaps+2 {
		t.Errorf("after ClosePool and Close: %+v, want every mapping gone (before %+v)", got, before)
	}
}

// TestMappedAbandoned: an abandoned mapped buffer gives its pages back but
// stays mapped, never handed out again: a late write still lands (in a
// fresh zero page) instead of crashing its writer.
func TestMappedAbandoned(t *testing.T) {
	mappedOn(t)
	b := newUnit(64 << 20)
	ctx := context.Background()
	before := Mapped()
	l, _ := b.Reserve(ctx, 4<<20)
	buf := l.Buffer(4 << 20)
	buf[0], buf[len(buf)-1] = 7, 7
	l.Abandon()
	got := Mapped()
	if got.Abandoned != before.Abandoned+int64(cap(buf)) || got.Live != before.Live || got.Unmaps != before.Unmaps {
		t.Fatalf("after Abandon: %+v, want %d bytes abandoned and not unmapped (before %+v)", got, cap(buf), before)
	}
	if buf[0] != 0 || buf[len(buf)-1] != 0 {
		t.Errorf("an abandoned buffer still holds its bytes: %d %d", buf[0], buf[len(buf)-1])
	}
	buf[1] = 1 // the late writer
	l2, _ := b.Reserve(ctx, 4<<20)
	if again := l2.Buffer(4 << 20); unsafe.SliceData(again) == unsafe.SliceData(buf) {
		t.Error("an abandoned buffer was handed out again")
	}
	l2.Close()
	b.ClosePool()
}

// TestMappedAllocator: Arrow's buffers of a huge page or more come mapped
// and cleared, also when reused, and go back through Free.
func TestMappedAllocator(t *testing.T) {
	mappedOn(t)
	b := newUnit(64 << 20)
	a := b.Allocator(nil)
	before := Mapped()
	buf := a.Allocate(3 << 20)
	if Mapped().Maps != before.Maps+1 {
		t.Fatal("a 3 MiB Arrow buffer was not mapped")
	}
	buf[100] = 9
	a.Free(buf)
	again := a.Allocate(3 << 20)
	if unsafe.SliceData(again) != unsafe.SliceData(buf) || again[100] != 0 {
		t.Error("a reused mapped buffer was not the same one, cleared")
	}
	a.Free(again)
	b.ClosePool()
	if Mapped().Live != before.Live {
		t.Errorf("after ClosePool: %+v, want no more mappings live than before (%+v)", Mapped(), before)
	}
}
