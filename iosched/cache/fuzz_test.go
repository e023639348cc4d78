package cache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostileEntries are the ranges FuzzHostileCacheDir stores before it
// damages the directory: sizes on both sides of the 64-byte padding and
// one over readWholeMax, which a scan reads through the store of local
// files and then Check (the other path of a hit).
var hostileEntries = []struct {
	key  Key
	data []byte
}{
	{Key{Object: "s3://b/a.arrow", Version: "etag:1", Offset: 0, Length: 1}, payload(1, 1)},
	{Key{Object: "s3://b/a.arrow", Version: "etag:1", Offset: 1, Length: 100}, payload(2, 100)},
	{Key{Object: "s3://b/b.arrow", Version: "etag:7", Offset: 8, Length: 4096}, payload(3, 4096)},
	// The same range of the object overwritten: the same length, so only
	// the header's key tells the two entries apart.
	{Key{Object: "s3://b/b.arrow", Version: "etag:8", Offset: 8, Length: 4096}, payload(6, 4096)},
	{Key{Object: "http://h/c", Version: "lm:x", Offset: 0, Length: 70001}, payload(4, 70001)},
	{Key{Object: "s3://b/d.arrow", Version: "etag:2", Offset: 64, Length: readWholeMax + 1000}, payload(5, readWholeMax+1000)},
}

// FuzzHostileCacheDir: whatever is done to the files of a cache directory
// (by another process, a torn write, a full disk or a hostile user with
// write access to it: any file written over, cut short or grown), a hit
// gives exactly the bytes stored under its key, and anything else is a
// miss or an error: never another range's bytes, never a panic. Both the
// process that filled the cache (which remembers where its entries are
// and keeps their packs open, memo.go) and a fresh one (which has only
// the index on disk) are asked, twice each; then each stores a new range
// into the damaged directory, which must not give wrong bytes either.
//
// The ranges are stored with Put, a pack each, so that the files and what
// each holds are the same in every run (the packs' names are random; they
// are told apart by their sizes). ops is read 4 bytes at a time, at most
// 24 times: a file of the directory (the index, the notes, then the
// packs by size), what to do to it (0: write the next 8 bytes of ops over
// it, 1: cut it short, 2: grow it with zeros, 3: flip one byte, 4: copy
// another file over it, as a pack renamed onto another's name), and where,
// as a fraction of its size in 1/65536ths (for 4: which file, modulo the
// count).
func FuzzHostileCacheDir(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0x00, 0x80})                   // a file cut in half
	f.Add([]byte{1, 3, 0x10, 0x00, 3, 3, 0x00, 0x80}) // a byte flipped in the notes, one in an entry
	f.Add([]byte{0, 0, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Add([]byte{7, 3, 0x00, 0x80})                                          // a byte of the largest entry, read through Check
	f.Add([]byte{4, 4, 5, 0, 5, 4, 4, 0})                                    // the two entries of one length copied over each other
	f.Add([]byte{2, 2, 0xff, 0xff, 3, 1, 0x00, 0x00})                        // one grown, one emptied
	f.Add(bytes.Repeat([]byte{0, 0, 0x40, 0x00, 0, 0, 0, 1, 0, 0, 0, 0}, 6)) // the index's slots
	f.Fuzz(func(t *testing.T, ops []byte) {
		dir := t.TempDir()
		c, err := Open(dir, 16<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, e := range hostileEntries {
			if ok, err := c.Put(e.key, e.data); !ok || err != nil {
				t.Fatalf("Put(%+v) = %v, %v", e.key, ok, err)
			}
			c.SetKnown(e.key.Object) // the notes are damaged too: a hint, never a key
		}
		for _, e := range hostileEntries { // a hit in the filling process, remembered from now on
			checkHit(t, c, e.key, e.data, true)
		}
		damage(t, dir, ops)
		fresh, err := Open(dir, 16<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		for _, cc := range []*Cache{c, fresh, c, fresh} {
			for _, e := range hostileEntries {
				checkHit(t, cc, e.key, e.data, false)
			}
		}
		for i, cc := range []*Cache{c, fresh} {
			k := Key{Object: "s3://b/new", Version: "etag:9", Offset: int64(i), Length: 5000}
			data := payload(9+i, 5000)
			if ok, err := cc.Put(k, data); ok && err == nil {
				checkHit(t, cc, k, data, false)
			}
			for _, e := range hostileEntries {
				checkHit(t, cc, e.key, e.data, false)
			}
		}
	})
}

// checkHit looks k up in c and reads the entry as a scan does: a hit must
// read as want, or fail. With must, the lookup must hit and the read
// succeed.
func checkHit(t *testing.T, c *Cache, k Key, want []byte, must bool) {
	t.Helper()
	e, ok := c.Lookup(k)
	if !ok {
		if must {
			t.Fatalf("%+v: a miss in an undamaged cache", k)
		}
		return
	}
	got, err := readEntry(c, e)
	switch {
	case err != nil && must:
		t.Fatalf("%+v: read of an undamaged entry: %v", k, err)
	case err == nil && !bytes.Equal(got, want):
		t.Fatalf("%+v: a hit read %d bytes that are not the ones stored (%d bytes)", k, len(got), len(want))
	}
}

// damage does ops (see FuzzHostileCacheDir) to the files under dir.
func damage(t *testing.T, dir string, ops []byte) {
	t.Helper()
	type file struct {
		path string
		pack bool
		size int64
		head []byte // a pack's header: the key's hash tells packs of one size apart
	}
	var files []file
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		_, pack := packOf(p)
		var head []byte
		if pack {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			head = b[:min(len(b), HeaderSize)]
		}
		files = append(files, file{p, pack, st.Size(), head})
		return nil
	})
	slices.SortFunc(files, func(a, b file) int {
		switch {
		case a.pack != b.pack:
			return cmp.Compare(boolInt(a.pack), boolInt(b.pack))
		case a.pack && a.size != b.size:
			return cmp.Compare(a.size, b.size)
		case a.pack:
			return bytes.Compare(a.head, b.head)
		}
		return strings.Compare(a.path, b.path)
	})
	if len(files) == 0 {
		t.Fatal("the filled cache has no files")
	}
	for n := 0; len(ops) >= 4 && n < 24; n++ {
		p := files[int(ops[0])%len(files)].path
		op := ops[1] % 5
		frac := int64(binary.LittleEndian.Uint16(ops[2:4]))
		ops = ops[4:]
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		at := st.Size() * frac / 65536
		switch op {
		case 0:
			b := ops[:min(8, len(ops))]
			ops = ops[len(b):]
			writeAt(t, p, b, at)
		case 1:
			if err := os.Truncate(p, at); err != nil {
				t.Fatal(err)
			}
		case 2:
			if err := os.Truncate(p, st.Size()+1+frac*16); err != nil {
				t.Fatal(err)
			}
		case 3:
			if st.Size() == 0 {
				continue
			}
			b := make([]byte, 1)
			f, err := os.Open(p)
			if err == nil {
				_, err = f.ReadAt(b, at)
				f.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			writeAt(t, p, []byte{^b[0]}, at)
		case 4:
			src := files[int(frac)%len(files)]
			if !src.pack || src.path == p {
				continue
			}
			b, err := os.ReadFile(src.path)
			if err == nil {
				err = os.WriteFile(p, b, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func writeAt(t *testing.T, p string, b []byte, at int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}
