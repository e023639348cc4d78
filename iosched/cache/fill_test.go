package cache

import (
	"bytes"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// within fails the test if f has not returned within a generous time: f
// must not block (on a paused writer, here).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

// hasEntry reports whether c holds k with bytes want.
func hasEntry(t *testing.T, c *Cache, k Key, want []byte) bool {
	t.Helper()
	e, ok := c.Lookup(k)
	if !ok {
		return false
	}
	got, err := readEntry(c, e)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("entry of %v holds other bytes (%v)", k, err)
	}
	return true
}

// TestFillQueueFullDrops: with the writers held back, fills queue up to
// the bound; the next is dropped and counted at once, never waited for; a
// range larger than the bound is taken alone.
func TestFillQueueFullDrops(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, err := Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	c.fills.bound = 1000
	g := c.NewFillGroup()
	resume := c.PauseFills()
	k1 := Key{Object: "o", Version: "v", Offset: 0, Length: 600}
	k2 := Key{Object: "o", Version: "v", Offset: 600, Length: 600}
	var ok1, ok2 bool
	within(t, "a fill", func() { ok1 = g.Fill(k1, payload(1, 600), false) })
	within(t, "a fill beyond the bound", func() { ok2 = g.Fill(k2, payload(2, 600), false) })
	if !ok1 || ok2 {
		t.Fatalf("Fill = %v, %v; want the first queued and the second dropped", ok1, ok2)
	}
	if d := c.Stats().Dropped; d != 1 {
		t.Fatalf("Dropped = %d, want 1", d)
	}
	resume()
	g.Wait()
	if !hasEntry(t, c, k1, payload(1, 600)) || hasEntry(t, c, k2, nil) {
		t.Fatal("want the queued fill stored and the dropped one not")
	}
	big := Key{Object: "o", Version: "v", Offset: 1200, Length: 3000}
	if !g.Fill(big, payload(3, 3000), true) {
		t.Fatal("a range larger than the bound is dropped with nothing pending")
	}
	g.Wait()
	if !hasEntry(t, c, big, payload(3, 3000)) {
		t.Fatal("the large range was not stored")
	}
	if !c.Known("o") {
		t.Fatal("the object is not known after a fill that notes it")
	}
	c.Close()
}

// TestFillOwnsItsBytes: the caller's buffer is reused (overwritten) as soon
// as Fill returns, before the write: the entry holds the bytes given.
func TestFillOwnsItsBytes(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, err := Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	g := c.NewFillGroup()
	resume := c.PauseFills()
	k := Key{Object: "o", Version: "v", Offset: 0, Length: 5000}
	buf := payload(7, 5000)
	if !g.Fill(k, buf, false) {
		t.Fatal("fill dropped")
	}
	clear(buf) // the pool hands the buffer to the next chunk
	resume()
	g.Wait()
	if !hasEntry(t, c, k, payload(7, 5000)) {
		t.Fatal("no entry")
	}
	c.Close()
}

// TestCloseWaitsForFills: Close returns once every pending fill is on
// disk, with no writer left; fills after it are dropped.
func TestCloseWaitsForFills(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, err := Open(t.TempDir(), 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	g := c.NewFillGroup()
	resume := c.PauseFills()
	var keys []Key
	for i := range 40 {
		k := Key{Object: "o", Version: "v", Offset: int64(i) << 17, Length: 1 << 17}
		keys = append(keys, k)
		if !g.Fill(k, payload(i, 1<<17), false) {
			t.Fatal("fill dropped below the bound")
		}
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		c.Close()
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		c.fills.mu.Lock()
		done := c.fills.closed
		c.fills.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Close never began")
		}
	}
	select {
	case <-closed:
		t.Fatal("Close returned while its fills were held back")
	default:
	}
	resume()
	<-closed
	for i, k := range keys {
		if !hasEntry(t, c, k, payload(i, 1<<17)) {
			t.Fatalf("range %d not on disk after Close", i)
		}
	}
	if g.Fill(Key{Object: "late", Version: "v", Length: 10}, payload(1, 10), false) {
		t.Fatal("a fill after Close was queued")
	}
	if st := c.Stats(); st.Dropped != 1 || st.Fills != int64(len(keys)) {
		t.Fatalf("stats %+v: want every fill stored and the late one dropped", st)
	}
	if tmp, _ := os.ReadDir(filepath.Join(c.dir, "tmp")); len(tmp) != 0 {
		t.Fatalf("temporary files left after Close: %v", tmp)
	}
}

// TestTouchOffThePath: a hit's recency is written by the cache's writers,
// not by Lookup: with the writers held back the entry keeps its old time,
// and has a new one once they ran.
func TestTouchOffThePath(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, err := Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Object: "o", Version: "v", Length: 100}
	if ok, err := c.Put(k, payload(1, 100)); !ok || err != nil {
		t.Fatalf("Put = %v, %v", ok, err)
	}
	e, ok := c.Lookup(k)
	if !ok {
		t.Fatal("no entry after Put")
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(e.Path, old, old); err != nil {
		t.Fatal(err)
	}
	resume := c.PauseFills()
	if _, ok := c.Lookup(k); !ok {
		t.Fatal("no hit")
	}
	mtime := func() time.Time {
		fi, err := os.Stat(e.Path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	if !mtime().Equal(old) {
		t.Fatal("Lookup wrote the entry's time itself")
	}
	resume()
	c.Close()
	if !mtime().After(old.Add(time.Hour)) {
		t.Fatalf("the hit's touch was not written: %v", mtime())
	}
}

// TestDirectoryRemoved: a cache directory removed while the process has
// it open (a user clearing the cache) takes fills again, not errors.
func TestDirectoryRemoved(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	k := Key{Object: "o", Version: "v", Length: 100}
	if ok, err := c.Put(k, payload(1, 100)); !ok || err != nil {
		t.Fatalf("Put after the directory was removed = %v, %v", ok, err)
	}
	if !hasEntry(t, c, k, payload(1, 100)) {
		t.Fatal("no entry")
	}
}

// TestFillBuffersReused: a new fill buffer goes back to the pool that a
// fill of the same size takes from, whatever the size (a buffer of
// exactly 124 KiB would go to the pool of 64 KiB and up, and every fill
// of 124 KiB would make a new one).
func TestFillBuffersReused(t *testing.T) {
	for n := fillMinPooled; n <= 4<<20; n += 4093 {
		if c := fillCap(n); c < n || giveTo(c) != takeFrom(n) {
			t.Fatalf("a buffer for %d bytes has capacity %d: back to pool %d, taken from %d", n, c, giveTo(c), takeFrom(n))
		}
	}
	if fillCap(fillMinPooled-1) != fillMinPooled-1 {
		t.Fatal("a buffer too small to pool is made larger")
	}
}

// panickyFiles are the system's file calls, but the write that brings
// writes to 0 panics.
type panickyFiles struct {
	systemFiles
	writes atomic.Int32
}

func (f *panickyFiles) write(fd int, b []byte) (int, error) {
	if f.writes.Add(-1) == 0 {
		panic("a write panics")
	}
	return f.systemFiles.write(fd, b)
}

// TestWriterPanicFailsItsFills: a panic in a writer (a goroutine no
// caller recovers) is the failure of the fills it held, not the end of
// the process: their group's Wait returns, they count as errors and are
// no entries, no temporary file stays, and the fills queued behind them
// are written by another writer. The panic comes at a pack's first write,
// then at a later one (the pack holding fills written before).
func TestWriterPanicFailsItsFills(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, err := Open(t.TempDir(), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	f := &panickyFiles{}
	c.files = f
	var before Stats
	for round, at := range []int32{1, 3} {
		f.writes.Store(at)
		g := c.NewFillGroup()
		resume := c.PauseFills()
		var keys []Key
		for i := range 6 {
			k := Key{Object: "o", Version: "v", Offset: int64(round*100+i) << 12, Length: 1 << 12}
			keys = append(keys, k)
			if !g.Fill(k, payload(i, 1<<12), false) {
				t.Fatal("fill dropped below the bound")
			}
		}
		resume()
		within(t, "Wait after a writer's panic", g.Wait)
		st := c.Stats()
		var held int64
		for i, k := range keys {
			if hasEntry(t, c, k, payload(i, 1<<12)) {
				held++
			}
		}
		failed := int64(len(keys)) - held
		if failed == 0 || st.Fills-before.Fills != held || st.Errors-before.Errors != failed {
			t.Fatalf("round %d: %d of %d ranges are entries; stats %+v: want the panic to fail some, counted as errors, and the rest stored", round, held, len(keys), st)
		}
		before = st
	}
	within(t, "Close", c.Close)
	if c.fills.held != 0 || c.fills.writers != 0 {
		t.Fatalf("after Close: %d bytes held, %d writers", c.fills.held, c.fills.writers)
	}
	if tmp, _ := os.ReadDir(filepath.Join(c.dir, "tmp")); len(tmp) != 0 {
		t.Fatalf("temporary files left after a panic: %v", tmp)
	}
}
