package cache

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// filesIn counts the files (all but folders) under the cache's directory.
func filesIn(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNoFilePerNote: filling ranges of many objects makes one file per
// entry and nothing per object beside it, and a full cache refusing
// ranges makes no file at all: a file made per object is an inode
// allocated per fill, the largest cost of a cold scan's fills on some
// file systems.
func TestNoFilePerNote(t *testing.T) {
	dir := t.TempDir()
	const n = 50
	c, err := Open(dir, n*1000)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g := c.NewFillGroup()
	for i := range n {
		g.Fill(Key{Object: fmt.Sprint("o", i), Version: "v", Length: 1000}, payload(i, 1000), true)
	}
	g.Wait()
	if st := c.Stats(); st.Entries != n {
		t.Fatalf("%d entries, want %d", st.Entries, n)
	}
	const tables = 2 // the note tables, made once
	if got := filesIn(t, dir); got > n+tables {
		t.Fatalf("%d files for %d entries: more than the entries and the note tables", got, n)
	}
	// The cache is full: the ranges below are refused once each (the
	// first makes the table of such notes).
	refuse := func(i int) {
		if ok, err := c.Put(Key{Object: fmt.Sprint("p", i), Version: "v", Length: 1000}, payload(i, 1000)); ok || err != nil {
			t.Fatalf("Put of a range seen once in a full cache = %v, %v", ok, err)
		}
	}
	refuse(0)
	if got := filesIn(t, dir); got > n+tables {
		t.Fatalf("%d files for %d entries after a refusal", got, n)
	}
	before := filesIn(t, dir)
	for i := 1; i < n; i++ {
		refuse(i)
	}
	if got := filesIn(t, dir); got != before {
		t.Fatalf("refusing %d ranges made %d files", n-1, got-before)
	}
	// Each is admitted on its second miss.
	if ok, err := c.Put(Key{Object: "p0", Version: "v", Length: 1000}, payload(0, 1000)); !ok || err != nil {
		t.Fatalf("Put of a range seen before = %v, %v", ok, err)
	}
}

// mustOpen opens a cache of 1 MiB in dir.
func mustOpen(t *testing.T, dir string) *Cache {
	t.Helper()
	c, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNotesShared: a note written through one Cache of a directory is
// read through another (as by another process).
func TestNotesShared(t *testing.T) {
	dir := t.TempDir()
	a, b := mustOpen(t, dir), mustOpen(t, dir)
	if b.Known("o") {
		t.Fatal("known before any note")
	}
	a.SetKnown("o")
	if !b.Known("o") || b.Known("p") {
		t.Fatalf("Known(o) = %v, Known(p) = %v through another Cache, want true, false", b.Known("o"), b.Known("p"))
	}
}

// TestNoteTableHostile: what is found under a note table's name is used
// only if it is a regular file, cut to the table's size: a link is not
// followed (its target is not written), a FIFO does not block the open,
// a huge file is cut; each is replaced by a table that keeps notes. A
// folder there (which cannot be replaced) leaves notes unkept, without
// an error. The same holds for the index of entries.
func TestNoteTableHostile(t *testing.T) {
	tables := []struct {
		name string
		size int64
		keep func(c *Cache) bool // writes and reads one note back
	}{
		{"objects.notes", noteTableSize, func(c *Cache) bool { c.SetKnown("o"); return c.Known("o") }},
		{"index", indexTableSize, func(c *Cache) bool {
			k := Key{Object: "o", Version: "v", Length: 100}
			c.Put(k, payload(1, 100))
			_, ok := c.Lookup(k)
			return ok
		}},
	}
	for _, table := range tables {
		t.Run(table.name, func(t *testing.T) { testTableHostile(t, table.name, table.size, table.keep) })
	}
}

func testTableHostile(t *testing.T, table string, size int64, keep func(c *Cache) bool) {
	outside := filepath.Join(t.TempDir(), "outside")
	outsideBytes := bytes.Repeat([]byte{7}, noteTableSize)
	if err := os.WriteFile(outside, outsideBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(p string) error{
		"link":   func(p string) error { return os.Symlink(outside, p) },
		"fifo":   func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"huge":   func(p string) error { return os.WriteFile(p, nil, 0o600) },
		"folder": func(p string) error { return os.Mkdir(p, 0o755) },
	}
	for name, put := range plant {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, layout, table)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := put(p); err != nil {
				t.Fatal(err)
			}
			if name == "huge" {
				if err := os.Truncate(p, 1<<40); err != nil {
					t.Skip("no sparse file of 1 TiB here:", err)
				}
			}
			c, err := Open(dir, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan bool)
			go func() { done <- keep(c) }()
			var known bool
			select {
			case known = <-done:
			case <-time.After(10 * time.Second):
				if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				t.Fatal("a note's write or read blocked")
			}
			if got, err := os.ReadFile(outside); err != nil || !bytes.Equal(got, outsideBytes) {
				t.Fatalf("the file a planted link names was changed (%v)", err)
			}
			if name == "folder" {
				if known {
					t.Fatal("a note kept with a folder in place of the table")
				}
				return
			}
			if !known {
				t.Fatal("the note was not kept")
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size != size {
				t.Fatalf("the table is not a regular file of %d bytes: mode %o, %d bytes (%v)", size, st.Mode, st.Size, err)
			}
		})
	}
}

// TestNoteTableGarbage: a table whose bytes are garbage (written over by
// another user, torn) answers without error; notes written after are
// read back.
func TestNoteTableGarbage(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, layout, "objects.notes")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bytes.Repeat([]byte{0xA5, 0x5A, 3}, noteTableSize/3+1)[:noteTableSize-5], 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		c.SetKnown(fmt.Sprint("o", i))
	}
	for i := range 100 {
		if !c.Known(fmt.Sprint("o", i)) {
			t.Fatalf("o%d: its note was not read back", i)
		}
	}
}

// TestFillsSharePacks: fills queued together are written into a file per
// writer (a pack), not a file each, and each is found and read whole.
func TestFillsSharePacks(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 100
	resume := c.PauseFills()
	g := c.NewFillGroup()
	for i := range n {
		if !g.Fill(Key{Object: fmt.Sprint("o", i), Version: "v", Length: int64(1000 + i)}, payload(i, 1000+i), true) {
			t.Fatal("a fill was dropped")
		}
	}
	resume()
	g.Wait()
	if got := filesIn(t, filepath.Join(dir, layout, "entries")); got > fillWriters {
		t.Fatalf("%d fills queued together made %d files, more than one per writer", n, got)
	}
	for i := range n {
		if !hasEntry(t, c, Key{Object: fmt.Sprint("o", i), Version: "v", Length: int64(1000 + i)}, payload(i, 1000+i)) {
			t.Fatalf("o%d: no entry", i)
		}
	}
	if st := c.Stats(); st.Entries != n || st.Fills != n {
		t.Fatalf("%d entries, %d fills; want %d", st.Entries, st.Fills, n)
	}
}

// TestFillsOneByOneSharePacks: fills that arrive one at a time, each
// taken by a writer before the next comes (as a scan's reads end one by
// one), go into the writer's pack too, which is put in place when the
// group's fills are waited for.
func TestFillsOneByOneSharePacks(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.fills.mu.Lock()
	c.fills.linger = time.Hour // only the Wait puts the pack in place
	c.fills.mu.Unlock()
	queued := func() int {
		c.fills.mu.Lock()
		defer c.fills.mu.Unlock()
		return len(c.fills.q)
	}
	const n = 20
	g := c.NewFillGroup()
	for i := range n {
		if !g.Fill(Key{Object: fmt.Sprint("o", i), Version: "v", Length: 1000}, payload(i, 1000), true) {
			t.Fatal("a fill was dropped")
		}
		deadline := time.Now().Add(10 * time.Second)
		for queued() > 0 {
			if time.Now().After(deadline) {
				t.Fatal("no writer took the fill")
			}
			time.Sleep(time.Millisecond) // polling for the writer to take it, not waiting for an effect
		}
	}
	within(t, "the group's Wait", g.Wait)
	if got := filesIn(t, filepath.Join(dir, layout, "entries")); got > fillWriters {
		t.Fatalf("%d fills taken one by one made %d files, more than one per writer", n, got)
	}
	for i := range n {
		if !hasEntry(t, c, Key{Object: fmt.Sprint("o", i), Version: "v", Length: 1000}, payload(i, 1000)) {
			t.Fatalf("o%d: no entry after the Wait", i)
		}
	}
}
