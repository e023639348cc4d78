package cache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestRememberedPackRemoved: a process remembers where an entry is and
// keeps its pack open; another process removes the pack (as its eviction
// does) and fills the key anew, into another pack. The first process's
// next Lookup finds the new entry (the stat of its open pack shows it
// removed: the index is read again) and reads the right bytes; once that
// pack is removed too, the key is a miss, although the process could
// still read the removed pack through its descriptor.
func TestRememberedPackRemoved(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	k := Key{Object: "o", Version: "v", Length: 3000}
	a.Put(k, payload(1, 3000))
	first, ok := a.Lookup(k)
	if !ok {
		t.Fatal("no hit after Put")
	}
	read(t, a, first)
	if err := os.Remove(first.Path); err != nil {
		t.Fatal(err)
	}
	b.Put(k, payload(1, 3000))
	second, ok := a.Lookup(k)
	if !ok {
		t.Fatal("the entry filled anew by another process is not found")
	}
	if second.Path == first.Path {
		t.Fatalf("found in the removed pack %s", first.Path)
	}
	if got := read(t, a, second); !bytes.Equal(got, payload(1, 3000)) {
		t.Fatal("wrong bytes")
	}
	if err := os.Remove(second.Path); err != nil {
		t.Fatal(err)
	}
	if e, ok := a.Lookup(k); ok {
		t.Fatalf("an entry of a removed pack is found: %+v", e)
	}
}

// TestRememberedPackReplaced: the name of a pack a process keeps open is
// given to another file (another user renames a pack of another key over
// it): the process reads what is now under the name, whose header names
// another key, and drops the entry (a refetch), never reading another
// key's bytes as this one's.
func TestRememberedPackReplaced(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ka := Key{Object: "a", Version: "v", Length: 3000}
	kb := Key{Object: "b", Version: "v", Length: 3000}
	c.Put(ka, payload(1, 3000))
	c.Put(kb, payload(2, 3000))
	ea, ok := c.Lookup(ka)
	if !ok {
		t.Fatal("no hit")
	}
	read(t, c, ea)
	eb, ok := c.Lookup(kb)
	if !ok {
		t.Fatal("no hit")
	}
	b, err := os.ReadFile(eb.Path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := ea.Path + ".planted"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, ea.Path); err != nil {
		t.Fatal(err)
	}
	if e, ok := c.Lookup(ka); ok {
		if got, err := readEntry(c, e); err == nil {
			t.Fatalf("a read of a after its pack was replaced succeeded (bytes of %d): through a pack no longer in place, or of b", got[0])
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("read = %v, want ErrCorrupt", err)
		}
	}
	if _, ok := c.Lookup(ka); ok {
		t.Fatal("still found after its read failed")
	}
}

// TestOpenPacksBounded: a process keeps at most maxOpenPacks packs open,
// closes each once unused for its idle time, and closes none while it is
// being read (its descriptor could otherwise be another file's by then).
func TestOpenPacksBounded(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.packs.idle = 20 * time.Millisecond
	const n = maxOpenPacks + 16
	key := func(i int) Key { return Key{Object: string(rune('a' + i)), Version: "v", Length: 100} }
	for i := range n {
		c.Put(key(i), payload(i, 100)) // a pack each
	}
	f := countCalls(c)
	// One entry held open by a read that has not ended.
	e, ok := c.Lookup(key(0))
	if !ok {
		t.Fatal("no hit")
	}
	body, err := c.StoreFor(e, nil).GetRange(context.Background(), e.Name(), e.Offset, e.Length)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		e, ok := c.Lookup(key(i))
		if !ok {
			t.Fatalf("no hit of %d", i)
		}
		read(t, c, e)
		c.packs.mu.Lock()
		open := len(c.packs.m)
		c.packs.mu.Unlock()
		if open > maxOpenPacks {
			t.Fatalf("%d packs open", open)
		}
	}
	// All closed but the one being read, which is closed once unused
	// after its read.
	waitOpen(t, c, 1)
	got, err := io.ReadAll(body)
	if err != nil || !bytes.Equal(got, payload(0, 100)) {
		t.Fatalf("the read of a pack kept open = %v", err)
	}
	calls := f.take()
	if opens, closes := count(calls, "open"), count(calls, "close"); opens != n || closes != n-1 {
		t.Errorf("%d packs opened, %d closed; want %d and %d (the one being read open)", opens, closes, n, n-1)
	}
	body.Close()
	waitOpen(t, c, 0)
	if calls := f.take(); !slices.Equal(calls, []string{"close"}) {
		t.Errorf("after the read the calls %v were made, want a close", calls)
	}
}

// waitOpen waits until c keeps n packs open (failing the test if that
// takes far longer than its idle time).
func waitOpen(t *testing.T, c *Cache, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.packs.mu.Lock()
		open := len(c.packs.m)
		c.packs.mu.Unlock()
		if open == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d packs open long after their idle time, want %d", open, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

// TestPlacesBounded: a process remembers at most maxPlaces slots, and the
// newest of them.
func TestPlacesBounded(t *testing.T) {
	var ps places
	var h [32]byte
	for i := range maxPlaces + 10 {
		h = Key{Object: strconv.Itoa(i), Version: "v"}.hash()
		ps.put(h, place{pack: uint64(i)})
	}
	if len(ps.m) != maxPlaces {
		t.Fatalf("%d slots remembered, want %d", len(ps.m), maxPlaces)
	}
	if p, ok := ps.get(h); !ok || p.pack != maxPlaces+9 {
		t.Fatalf("the newest slot is %+v, %v", p, ok)
	}
}

// TestIndexPastItsPack: an index slot (a file of the shared directory,
// which another process may have written wrong) naming an entry at an
// offset whose sum with the entry's length passes the largest int64 is
// no entry: a miss, not a hit whose bytes lie past the end of its pack.
func TestIndexPastItsPack(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k := Key{Object: "a", Version: "v", Length: 3000}
	c.Put(k, payload(1, 3000))
	e, ok := c.Lookup(k)
	if !ok {
		t.Fatal("no hit")
	}
	c.indexAt(k.hash(), place{pack: e.at.pack, off: math.MaxInt64 &^ 63, length: k.Length})
	if e, ok := c.Lookup(k); ok {
		t.Fatalf("an index slot past the end of its pack is a hit: %+v", e)
	}
}
