package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("CACHE_TEST_FILLER"); dir != "" {
		fillForever(dir) // a child process of TestKilledDuringFill
		return
	}
	goleak.VerifyTestMain(m)
}

// readEntry returns the bytes of e as a scan reads them: through the
// store StoreFor names (the store of local files: a plain read), then
// Check.
func readEntry(c *Cache, e Entry) ([]byte, error) {
	b := make([]byte, e.Length)
	if st := c.StoreFor(e, nil); st != nil {
		body, err := st.GetRange(context.Background(), e.Name(), e.Offset, e.Length)
		if err != nil {
			return nil, err
		}
		defer body.Close()
		if _, err := io.ReadFull(body, b); err != nil {
			return nil, err
		}
	} else {
		f, err := os.Open(e.Path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if _, err := f.ReadAt(b, e.Offset); err != nil {
			return nil, err
		}
	}
	return b, c.Check(e, b)
}

// read is readEntry, which must succeed.
func read(t *testing.T, c *Cache, e Entry) []byte {
	t.Helper()
	b, err := readEntry(c, e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func payload(i, n int) []byte {
	return bytes.Repeat([]byte{byte(i), byte(i >> 8), 0xA5}, n/3+1)[:n]
}

func TestPutLookup(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Object: "s3://b/a.arrow", Version: "etag:1", Offset: 10, Length: 1000}
	if _, ok := c.Lookup(k); ok {
		t.Fatal("hit in an empty cache")
	}
	data := payload(1, 1000)
	if ok, err := c.Put(k, data); !ok || err != nil {
		t.Fatalf("Put = %v, %v", ok, err)
	}
	e, ok := c.Lookup(k)
	if !ok {
		t.Fatal("miss after Put")
	}
	got := read(t, c, e)
	if !bytes.Equal(got, data) {
		t.Fatal("the entry's bytes are not the stored ones")
	}
	for _, other := range []Key{
		{Object: k.Object, Version: "etag:2", Offset: 10, Length: 1000}, // overwritten object
		{Object: k.Object, Version: k.Version, Offset: 11, Length: 1000},
		{Object: k.Object, Version: k.Version, Offset: 10, Length: 999},
		{Object: "s3://b/b.arrow", Version: k.Version, Offset: 10, Length: 1000},
	} {
		if _, ok := c.Lookup(other); ok {
			t.Errorf("%+v hits the entry of %+v", other, k)
		}
	}
}

// TestHolds: Holds answers as Lookup would, for the key alone, and counts
// neither a hit nor a miss (a scan asks it before it reads, cachedLayout).
func TestHolds(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Object: "s3://b/a.arrow", Version: "etag:1", Offset: 10, Length: 1000}
	if c.Holds(k) {
		t.Fatal("an empty cache holds an entry")
	}
	if ok, err := c.Put(k, payload(1, 1000)); !ok || err != nil {
		t.Fatalf("Put = %v, %v", ok, err)
	}
	if !c.Holds(k) {
		t.Fatal("the entry put is not held")
	}
	for _, other := range []Key{
		{Object: k.Object, Version: "etag:2", Offset: 10, Length: 1000},
		{Object: k.Object, Version: k.Version, Offset: 10, Length: 999},
	} {
		if c.Holds(other) {
			t.Errorf("%+v is held as %+v", other, k)
		}
	}
	if st := c.Stats(); st.Hits != 0 || st.Misses != 0 {
		t.Fatalf("Holds counted %d hits, %d misses", st.Hits, st.Misses)
	}
}

func TestCorruptEntryDropped(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Object: "http://h/x", Version: "etag:a", Length: 4096}
	data := payload(2, 4096)
	c.Put(k, data)
	e, _ := c.Lookup(k)
	f, err := os.OpenFile(e.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{^data[100]}, e.Offset+100) // one byte flipped on disk
	f.Close()
	e, ok := c.Lookup(k)
	if !ok {
		t.Fatal("the header is whole: Lookup finds the entry, its read must catch it")
	}
	if _, err := readEntry(c, e); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of a flipped byte = %v, want ErrCorrupt", err)
	}
	if _, ok := c.Lookup(k); ok {
		t.Fatal("a corrupt entry is still found after Check dropped it")
	}
	// Truncated: the header names more bytes than the file has.
	c.Put(k, data)
	e, _ = c.Lookup(k)
	os.Truncate(e.Path, e.Offset+10)
	if _, ok := c.Lookup(k); ok {
		t.Fatal("a truncated entry is found")
	}
	if st := c.Stats(); st.Corrupt != 2 {
		t.Errorf("Corrupt = %d, want 2", st.Corrupt)
	}
}

// TestHotSetSurvivesScan: once full, a pass over twice the cache's size
// (each range read once) must leave the ranges read repeatedly resident.
func TestHotSetSurvivesScan(t *testing.T) {
	const n, size = 4096, 100 * 4096
	c, err := Open(t.TempDir(), size)
	if err != nil {
		t.Fatal(err)
	}
	key := func(s string, i int) Key { return Key{Object: fmt.Sprintf("%s/%d", s, i), Version: "v", Length: n} }
	hot := 60
	for round := 0; round < 2; round++ {
		for i := 0; i < hot; i++ {
			if _, ok := c.Lookup(key("hot", i)); !ok {
				c.Put(key("hot", i), payload(i, n))
			}
		}
	}
	for i := 0; i < 2*size/n; i++ { // the pass: cold ranges, once each
		if _, ok := c.Lookup(key("cold", i)); !ok {
			c.Put(key("cold", i), payload(i, n))
		}
	}
	resident := 0
	for i := 0; i < hot; i++ {
		if _, ok := c.Lookup(key("hot", i)); ok {
			resident++
		}
	}
	if resident < hot*9/10 {
		t.Fatalf("%d of %d hot ranges resident after the pass", resident, hot)
	}
	if st := c.Stats(); st.Bytes > size {
		t.Fatalf("cache holds %d bytes, more than its size %d", st.Bytes, size)
	}
}

// TestEvictionBound: ranges read again and again are admitted on their
// second touch and the cache stays within its size.
func TestEvictionBound(t *testing.T) {
	const n, size = 4096, 20 * 4096
	c, err := Open(t.TempDir(), size)
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		for i := 0; i < 50; i++ {
			k := Key{Object: strconv.Itoa(i), Version: "v", Length: n}
			if _, ok := c.Lookup(k); !ok {
				c.Put(k, payload(i, n))
			}
		}
	}
	st := c.Stats()
	if st.Bytes > size || st.Evictions == 0 {
		t.Fatalf("%+v: want evictions and at most %d bytes", st, size)
	}
}

// TestShared: two Caches on one directory (as two processes would have)
// filling the same keys at once: every hit is whole and right.
func TestShared(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, c := range []*Cache{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				k := Key{Object: strconv.Itoa(i % 37), Version: "v", Length: 3000}
				if e, ok := c.Lookup(k); ok {
					got, err := readEntry(c, e)
					if errors.Is(err, fs.ErrNotExist) || errors.Is(err, store.ErrNotFound) {
						continue // replaced meanwhile: a reader falls back to the store
					}
					if err != nil || !bytes.Equal(got, payload(i%37, 3000)) {
						t.Errorf("key %d: wrong bytes from a shared entry", i%37)
					}
					continue
				}
				c.Put(k, payload(i%37, 3000))
			}
		}()
	}
	wg.Wait()
}

// fillForever fills entries in dir until killed.
func fillForever(dir string) {
	c, err := Open(dir, 1<<30)
	if err != nil {
		os.Exit(2)
	}
	for i := 0; ; i++ {
		c.Put(Key{Object: strconv.Itoa(i % 50), Version: "v", Length: 1 << 20}, payload(i%50, 1<<20))
		if i == 10 {
			os.WriteFile(filepath.Join(dir, "started"), nil, 0o644)
		}
	}
}

// TestKilledDuringFill: a process killed (SIGKILL) while it fills leaves
// nothing a later reader trusts: every entry found is whole and right.
func TestKilledDuringFill(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CACHE_TEST_FILLER="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the filler never started")
		}
		time.Sleep(5 * time.Millisecond) // polling for the child's file, not waiting for an effect
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	c, err := Open(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i := 0; i < 50; i++ {
		e, ok := c.Lookup(Key{Object: strconv.Itoa(i), Version: "v", Length: 1 << 20})
		if !ok {
			continue
		}
		found++
		got, err := readEntry(c, e)
		if err != nil || !bytes.Equal(got, payload(i, 1<<20)) {
			t.Errorf("entry %d is trusted but wrong after the kill", i)
		}
	}
	if found == 0 {
		t.Error("no entry survived: the filler had renamed at least ten")
	}
}

// TestConcurrentFillsKeepHotSet: fills running at once, near the size,
// must not together pass it (each seeing the same room) and so evict
// entries to make room for ranges seen only once.
func TestConcurrentFillsKeepHotSet(t *testing.T) {
	const n, size = 4096, 100 * 4096
	c, err := Open(t.TempDir(), size)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		c.Put(Key{Object: "hot" + strconv.Itoa(i), Version: "v", Length: n}, payload(i, n))
	}
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				k := Key{Object: fmt.Sprintf("cold%d-%d", g, i), Version: "v", Length: n}
				c.Put(k, payload(i, n))
			}
		}()
	}
	wg.Wait()
	if st := c.Stats(); st.Evictions != 0 || st.Bytes > size {
		t.Fatalf("%+v: once-seen ranges evicted entries or passed the size", st)
	}
	for i := 0; i < 60; i++ {
		if _, ok := c.Lookup(Key{Object: "hot" + strconv.Itoa(i), Version: "v", Length: n}); !ok {
			t.Fatalf("hot entry %d evicted", i)
		}
	}
}

// TestPlantedLinksNotFollowed: an entry's name in the directory that is a
// link (to a file with the right bytes, or to a FIFO) is a miss: the cache
// reads only regular files of its own, never blocks on what it opens.
func TestPlantedLinksNotFollowed(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Object: "http://h/x", Version: "etag:a", Length: 4096}
	data := payload(3, 4096)
	c.Put(k, data)
	e, ok := c.Lookup(k)
	if !ok {
		t.Fatal("no entry after Put")
	}
	elsewhere := filepath.Join(t.TempDir(), "copy")
	b, err := os.ReadFile(e.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(elsewhere, b, 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{elsewhere, fifo} {
		os.Remove(e.Path)
		if err := os.Symlink(target, e.Path); err != nil {
			t.Fatal(err)
		}
		done := make(chan bool)
		go func() {
			e2, ok := c.Lookup(k)
			if ok {
				_, err := readEntry(c, e2)
				ok = err == nil
			}
			done <- ok
		}()
		select {
		case ok := <-done:
			if ok {
				t.Fatalf("a link to %s in place of the entry was read as the entry", target)
			}
		case <-time.After(10 * time.Second):
			// Unblock the open so the goroutine ends.
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Fatalf("the read of a link to %s in place of the entry blocked", target)
		}
	}
}

// bigEntry puts a range larger than readWholeMax (read in place, checked
// by Check) into a new cache whose reads settle at once, and returns it.
func bigEntry(t *testing.T, settle time.Duration) (*Cache, Key, []byte) {
	t.Helper()
	c, err := Open(t.TempDir(), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	c.settle = settle
	k := Key{Object: "s3://b/big.arrow", Version: "etag:1", Length: readWholeMax + 4096}
	data := payload(3, int(k.Length))
	if ok, err := c.Put(k, data); !ok || err != nil {
		t.Fatalf("Put = %v, %v", ok, err)
	}
	return c, k, data
}

// lookupRead is Lookup then readEntry, which must find the entry.
func lookupRead(t *testing.T, c *Cache, k Key) ([]byte, error) {
	t.Helper()
	e, ok := c.Lookup(k)
	if !ok {
		t.Fatal("the entry is not found")
	}
	return readEntry(c, e)
}

// flip flips one byte of the bytes of k's entry on disk.
func flip(t *testing.T, c *Cache, k Key) {
	t.Helper()
	e, ok := c.Lookup(k)
	if !ok {
		t.Fatal("the entry is not found")
	}
	f, err := os.OpenFile(e.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, e.Offset+e.Length/2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{^b[0]}, e.Offset+e.Length/2); err != nil {
		t.Fatal(err)
	}
}

// TestCheckedEntryNotSummedAgain: an entry read in place is summed at its
// first read in the process, not at the next while its pack is unchanged,
// and a byte flipped in the pack since is caught all the same.
func TestCheckedEntryNotSummedAgain(t *testing.T) {
	c, k, data := bigEntry(t, 0)
	for i := range 3 {
		b, err := lookupRead(t, c, k)
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("read %d: %v (bytes equal: %v)", i, err, bytes.Equal(b, data))
		}
	}
	if n := c.sums.Load(); n != 1 {
		t.Fatalf("summed %d times in three reads of an unchanged pack, want 1", n)
	}
	time.Sleep(20 * time.Millisecond) // a tick of the file system's clock: the flip's change time is new
	flip(t, c, k)
	if _, err := lookupRead(t, c, k); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read after a byte was flipped in the checked entry = %v, want ErrCorrupt", err)
	}
	if _, ok := c.Lookup(k); ok {
		t.Fatal("the corrupt entry is still found")
	}
	// Stored again and read: summed again, the pack being another.
	c.Put(k, data)
	sums := c.sums.Load()
	if b, err := lookupRead(t, c, k); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("read of the entry stored again: %v", err)
	}
	if c.sums.Load() != sums+1 {
		t.Fatal("an entry of a new pack was not summed")
	}
}

// TestUnsettledEntrySummedAgain: an entry read before its pack's change
// time is a tick old is summed at every read, since a write in the same
// tick would leave the pack's state as it was.
func TestUnsettledEntrySummedAgain(t *testing.T) {
	c, k, data := bigEntry(t, time.Hour)
	for i := range 3 {
		if b, err := lookupRead(t, c, k); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	if n := c.sums.Load(); n != 3 {
		t.Fatalf("summed %d times in three reads of a pack changed within the tick, want 3", n)
	}
	flip(t, c, k)
	if _, err := lookupRead(t, c, k); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read after a byte was flipped = %v, want ErrCorrupt", err)
	}
}

func TestPackStateSettled(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 0, 0, 123456789, time.UTC)
	fine := packState{ctime: at.UnixNano()}
	whole := packState{ctime: at.Truncate(time.Second).UnixNano()}
	for _, tc := range []struct {
		s     packState
		after time.Duration // of the read's start after the change time
		tick  time.Duration
		want  bool
	}{
		{fine, 0, settleTick, false},
		{fine, settleTick - 1, settleTick, false},
		{fine, settleTick, settleTick, true},
		{fine, time.Hour, settleTick, true},
		{fine, -time.Second, settleTick, false}, // a change time ahead of the clock
		{whole, time.Second, settleTick, false}, // a clock of seconds: two of them
		{whole, 2 * time.Second, settleTick, true},
		{fine, 0, 0, true},
	} {
		start := time.Unix(0, tc.s.ctime).Add(tc.after)
		if got := tc.s.settled(start, tc.tick); got != tc.want {
			t.Errorf("settled(ctime %d, read %v after, tick %v) = %v, want %v", tc.s.ctime, tc.after, tc.tick, got, tc.want)
		}
	}
}
