package cache

import (
	"slices"
	"sync"
	"syscall"
	"testing"
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
func (f *countingFiles) rename(a, b string) error { f.note("rename"); return f.systemFiles.rename(a, b) }
func (f *countingFiles) symlink(t, p string) error {
	f.note("symlink")
	return f.systemFiles.symlink(t, p)
}
func (f *countingFiles) readlink(p string, b []byte) (int, error) {
	f.note("readlink")
	return f.systemFiles.readlink(p, b)
}
func (f *countingFiles) remove(p string) error { f.note("remove"); return f.systemFiles.remove(p) }

// countCalls makes c's file calls counted.
func countCalls(c *Cache) *countingFiles {
	f := &countingFiles{}
	c.files = f
	return f
}

// TestFillCalls: a fill is one file created, written in one call, closed
// and renamed into place (no stat of the target, no sync), and noting an
// object's version for the first time is one call.
func TestFillCalls(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	f := countCalls(c)
	k := Key{Object: "o", Version: "v", Length: 1000}
	// The first fill of an entry folder makes it; count the second.
	if ok, err := c.Put(k, payload(1, 1000)); !ok || err != nil {
		t.Fatalf("Put = %v, %v", ok, err)
	}
	f.take()
	g := c.NewFillGroup()
	g.Fill(k, payload(1, 1000), true)
	g.Wait()
	if got, want := f.take(), []string{"open", "write", "close", "rename", "symlink"}; !slices.Equal(got, want) {
		t.Errorf("a fill made the calls %v, want %v", got, want)
	}
	if v, ok := c.Known("o"); !ok || v != "v" {
		t.Fatalf("Known = %q, %v", v, ok)
	}
	// A new version replaces the note; the same one leaves it.
	c.SetKnown("o", "v")
	c.SetKnown("o", "w")
	if v, ok := c.Known("o"); !ok || v != "w" {
		t.Fatalf("Known = %q, %v after a new version", v, ok)
	}
	c.Close()
}
