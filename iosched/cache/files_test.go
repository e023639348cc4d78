package cache

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// countingFiles are the system's file calls, noted by name.
type countingFiles struct {
	systemFiles
	mu    sync.Mutex
	calls []string
}

func (f *countingFiles) note(name string) {
	f.mu.Lock()
	f.calls = append(f.calls, name)
	f.mu.Unlock()
}

// take returns the calls noted since the last take.
func (f *countingFiles) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *countingFiles) open(p string, flags int, perm uint32) (int, error) {
	f.note("open")
	return f.systemFiles.open(p, flags, perm)
}
func (f *countingFiles) preadv(fd int, b [][]byte, off int64) (int, error) {
	f.note("preadv")
	return f.systemFiles.preadv(fd, b, off)
}
func (f *countingFiles) write(fd int, b []byte) (int, error) {
	f.note("write")
	return f.systemFiles.write(fd, b)
}
func (f *countingFiles) close(fd int) error { f.note("close"); return f.systemFiles.close(fd) }
func (f *countingFiles) stat(p string, st *syscall.Stat_t) error {
	f.note("stat")
	return f.systemFiles.stat(p, st)
}
func (f *countingFiles) rename(a, b string) error {
	f.note("rename")
	return f.systemFiles.rename(a, b)
}
func (f *countingFiles) pwrite(fd int, b []byte, off int64) (int, error) {
	f.note("pwrite")
	return f.systemFiles.pwrite(fd, b, off)
}
func (f *countingFiles) fstat(fd int, st *syscall.Stat_t) error {
	f.note("fstat")
	return f.systemFiles.fstat(fd, st)
}
func (f *countingFiles) ftruncate(fd int, size int64) error {
	f.note("ftruncate")
	return f.systemFiles.ftruncate(fd, size)
}
func (f *countingFiles) remove(p string) error { f.note("remove"); return f.systemFiles.remove(p) }
func (f *countingFiles) utimes(p string, t time.Time) error {
	f.note("utimes")
	return f.systemFiles.utimes(p, t)
}

// countCalls makes c's file calls counted.
func countCalls(c *Cache) *countingFiles {
	f := &countingFiles{}
	c.files = f
	return f
}

// TestFillCalls: a fill alone is one file (a pack) created, written in
// one call, closed and renamed into place (no stat of the target, no
// sync, no folder made for it, also the first in a new cache); indexing
// it and noting its object are one read and one write of a table each,
// opened once.
func TestFillCalls(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	f := countCalls(c)
	if c.Known("o") {
		t.Fatal("an object of an empty cache is known")
	}
	if got, want := f.take(), []string{"open", "fstat", "ftruncate", "preadv"}; !slices.Equal(got, want) {
		t.Errorf("the first note read made the calls %v, want %v", got, want)
	}
	c.Lookup(Key{Object: "p", Version: "v", Length: 1000}) // opens the index
	f.take()
	k := Key{Object: "o", Version: "v", Length: 1000}
	g := c.NewFillGroup()
	g.Fill(k, payload(1, 1000), true)
	g.Wait()
	if got, want := f.take(), []string{"open", "write", "close", "rename", "preadv", "pwrite", "preadv", "pwrite"}; !slices.Equal(got, want) {
		t.Errorf("a fill made the calls %v, want %v", got, want)
	}
	if !c.Known("o") {
		t.Fatal("the filled object is not known")
	}
	// Noting it again writes nothing.
	f.take()
	c.SetKnown("o")
	if got, want := f.take(), []string{"preadv"}; !slices.Equal(got, want) {
		t.Errorf("noting a known object made the calls %v, want %v", got, want)
	}
	c.Close()
}

// TestHitCalls: a hit on an entry this process knows of (memo.go) is a
// stat of its pack's open descriptor (Lookup) and one read of the header
// and the bytes together; the read checks them. The first hit of a pack
// opens it; the first of an entry another process filled reads the
// index. Close closes the packs.
func TestHitCalls(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k := Key{Object: "o", Version: "v", Length: 5000}
	if ok, err := c.Put(k, payload(3, 5000)); !ok || err != nil {
		t.Fatalf("Put = %v, %v", ok, err)
	}
	hit := func(c *Cache, f *countingFiles, what string, want ...string) {
		t.Helper()
		e, ok := c.Lookup(k)
		if !ok {
			t.Fatalf("%s: no hit", what)
		}
		got, err := readEntry(c, e)
		if err != nil || !bytes.Equal(got, payload(3, 5000)) {
			t.Fatalf("%s: read = %v", what, err)
		}
		if calls := f.take(); !slices.Equal(calls, want) {
			t.Errorf("%s made the calls %v, want %v", what, calls, want)
		}
	}
	f := countCalls(c)
	hit(c, f, "the first hit", "open", "fstat", "preadv")
	hit(c, f, "a hit", "fstat", "preadv")
	hit(c, f, "another hit", "fstat", "preadv")
	c.Close()
	if calls, want := f.take(), []string{"close"}; !slices.Equal(calls, want) {
		t.Errorf("Close made the calls %v, want %v", calls, want)
	}
	other, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	f = countCalls(other)
	hit(other, f, "the first hit in another process", "open", "fstat", "preadv", "open", "fstat", "preadv")
	hit(other, f, "its second hit", "fstat", "preadv")
}

// TestCorruptReadIsPermanent: an entry whose bytes fail their checksum
// fails its read as not found (a scheduler does not retry it: the entry
// is dropped), wrapping ErrCorrupt; an entry whose place holds another
// key's header fails the same way.
func TestCorruptReadIsPermanent(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := Key{Object: "a", Version: "v", Length: 300}
	b := Key{Object: "b", Version: "v", Length: 300}
	c.Put(a, payload(1, 300))
	c.Put(b, payload(2, 300))
	ea, _ := c.Lookup(a)
	eb, _ := c.Lookup(b)
	hdr := make([]byte, HeaderSize)
	fb, err := os.Open(eb.Path)
	if err != nil {
		t.Fatal(err)
	}
	fb.ReadAt(hdr, 0)
	fb.Close()
	if err := os.WriteFile(ea.Path, append(hdr, payload(2, 300)...), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = readEntry(c, ea)
	if !errors.Is(err, ErrCorrupt) || !store.Permanent(err) {
		t.Fatalf("read of an entry holding another key = %v, want ErrCorrupt, permanent", err)
	}
	if _, ok := c.Lookup(a); ok {
		t.Fatal("the entry is still found")
	}
	if st := c.Stats(); st.Corrupt != 1 {
		t.Fatalf("Corrupt = %d, want 1", st.Corrupt)
	}
}

// TestTouchSkippedWhenRecent: a hit on an entry whose file time is
// recent (filled or touched by any process within touchEvery) writes no
// time: a process that starts afresh (a CLI per query) does not write
// one per hit.
func TestTouchSkippedWhenRecent(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Object: "o", Version: "v", Length: 100}
	big := Key{Object: "o", Version: "v", Length: readWholeMax + 1} // its header is read by Lookup
	a.Put(k, payload(1, 100))
	a.Put(big, payload(2, readWholeMax+1))
	a.Close()
	b, err := Open(dir, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	f := countCalls(b)
	for _, k := range []Key{k, big} {
		if _, ok := b.Lookup(k); !ok {
			t.Fatalf("no hit of %v", k)
		}
	}
	b.Close() // the writers' touches, if any, are made
	if calls := f.take(); slices.Contains(calls, "utimes") {
		t.Errorf("hits on entries just filled wrote their times: %v", calls)
	}
}

// TestReadWholeUnsplit: the cache's store reads an entry only whole (a
// part could not be checked), so the local scheduler that reads entries,
// with its default tuning, must never split one it is given.
func TestReadWholeUnsplit(t *testing.T) {
	if iosched.DefaultRequestSize < readWholeMax {
		t.Fatalf("entries of up to %d bytes are read whole, but a scheduler splits requests beyond %d", readWholeMax, iosched.DefaultRequestSize)
	}
}
