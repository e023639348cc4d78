// Package cache keeps byte ranges of remote objects in a local directory that processes share, each entry keyed by its object's version.
package cache

// How it stays correct without state of its own in memory:
//
// An entry is a header (magic, length, CRC-32C of the body, the hash of
// its Key: object, version, range) and the bytes, in a pack file of
// entries found through an index (pack.go). A fill writes a temporary
// pack in tmp/, renames it into place, then indexes its entries: the
// rename is atomic, so a reader (in this process or another) sees either
// no entry or a whole one, and a process killed during a fill leaves only
// a temporary file nothing reads, removed by a later eviction. Two
// processes filling the same key write the same bytes; the last index
// write wins. Readers check the header and the CRC of what they read (the
// cache's own store as it reads, read.go, or Check, which a process does
// not repeat for an entry whose pack it sees unchanged since it checked
// it: checked.go) and drop an entry that fails, so a corrupted or torn
// entry, or an index slot that is not true, costs one refetch, never a
// wrong answer. Nothing is synced to the disk: a crash that tears an
// entry is caught by the same check.
//
// Nothing in memory decides what is valid: the key carries the version,
// and a new version is a new key. The in-memory counters are only
// statistics and an estimate of the bytes in use, which eviction replaces
// by what it finds on disk; where entries are, as this process remembers
// it, and the packs it keeps open (memo.go) are no more trusted than the
// index on disk.
//
// Which objects are worth a version check is a hint kept in a note table
// (notes.go): an object with no note is fetched and stored without asking
// its version first.
//
// Recency is the pack's modification time, set after a hit by the
// cache's writers (see touch); an
// eviction (under an advisory lock on the directory, so that processes do
// not evict at once) removes the least recently used packs until the
// cache is below lowWater of its size. An entry being read when it is
// evicted stays readable through the reader's open file.
//
// Admission: while the cache has room every range read is kept. Once it
// is full, a range is admitted only on its second miss (a note remembers
// the first), so that one pass over more data than the
// cache holds does not evict what is read again and again.

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// HeaderSize is the bytes before an entry's body: the body starts at this
// offset of the entry file, a multiple of 64 so that a mapping of it keeps
// the alignment Arrow buffers have in the object.
const HeaderSize = 64

// magic opens every entry file; the layout's version is part of it.
var magic = [8]byte{'R', 'S', 'C', 'A', 'C', 'H', 'E', '1'}

// layout is the subdirectory of the cache directory this layout owns.
const layout = "remote_segments_cache_v1"

// DefaultFraction is the share of the free space of the cache directory's
// file system that a cache takes when no size is given.
const DefaultFraction = 0.1

// minDefaultSize is the least a default-sized cache takes, however full
// the disk: below it a cache would hold too little to help.
const minDefaultSize = 64 << 20

// lowWater is the share of its size an eviction brings the cache down to,
// so that every fill beyond the size does not trigger a directory walk.
const lowWater = 0.9

// touchEvery is how stale an entry's recency may be: a hit within it of
// the last this process made does not write the file's time again (a
// metadata write to the disk for every hit), and eviction cannot tell
// apart hits closer than it.
const touchEvery = time.Minute

// staleTemp is the age of a temporary file that eviction removes: a fill
// that old belongs to a process that died.
const staleTemp = time.Hour

// crcTable is CRC-32C (Castagnoli), computed in hardware on most CPUs.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is returned by Check for bytes that do not match their entry.
var ErrCorrupt = errors.New("cache: entry does not match its checksum")

// Key names one cached range: the object (its URL and whatever else tells
// apart objects of the same URL, such as an S3 endpoint), its version (see
// store.Versioner, or a catalog's version column), and the range. A
// Length of -1 is the range from Offset to the end of the object.
type Key struct {
	Object  string
	Version string
	Offset  int64
	Length  int64
}

// hash is the key's identity on disk: in the entry's header and its
// index slot.
func (k Key) hash() [32]byte {
	h := sha256.New()
	for _, s := range []string{k.Object, k.Version, strconv.FormatInt(k.Offset, 10), strconv.FormatInt(k.Length, 10)} {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Entry is a cached range found by Lookup: its bytes are Length bytes of
// the file Path from Offset. It is read through StoreFor's store, by the
// name Name; Check tells whether bytes read there are the ones that were
// stored.
type Entry struct {
	Path   string
	Offset int64
	Length int64
	sum    uint32
	summed bool     // sum was read by Lookup; if not, reading the entry checks it
	key    [32]byte // the hash of its Key
	at     place
	// state is its pack's, as Lookup found it; settled, whether a read
	// begun after that stat reads bytes that a later write would give
	// another state (see checked.go).
	state   packState
	settled bool
}

// Name is the name to read e by through StoreFor's store: the cache's
// own store is told the key it is to find there.
func (e Entry) Name() string {
	if e.summed {
		return e.Path
	}
	return entryName(e.Path, e.key)
}

// Check returns nil when data, read through StoreFor(e, …), are the
// entry's bytes. Otherwise it removes the entry, so that the range is
// fetched and stored anew, and returns an error wrapping ErrCorrupt. The
// bytes of an entry that the cache's own store reads are checked by that
// read (it fails on bytes that do not match): Check has nothing left to do.
//
// An entry this process checked before is not summed again while a stat
// of its pack gives the state Lookup found, the one it had when it was
// checked (checked.go).
func (c *Cache) Check(e Entry, data []byte) error {
	if !e.summed {
		return nil
	}
	if int64(len(data)) == e.Length {
		same := c.stateIs(e.at.pack, e.state)
		if same && c.checked.has(e.at, e.state) {
			return nil
		}
		c.sums.Add(1)
		if crc32.Checksum(data, crcTable) == e.sum {
			if same && e.settled {
				c.checked.add(e.at, e.state)
			}
			return nil
		}
	}
	c.checked.forget(e.at)
	c.corrupt.Add(1)
	c.unindex(e.key, e.at)
	return fmt.Errorf("%w: %s", ErrCorrupt, e.Path)
}

// stateIs reports whether pack num, stat'ed now, is still in the
// directory with state s.
func (c *Cache) stateIs(num uint64, s packState) bool {
	var st syscall.Stat_t
	p, err := c.acquirePack(num, &st)
	if err != nil {
		return false
	}
	c.releasePack(p)
	return stateOf(&st) == s
}

// Cache is a cache directory as one process sees it. Its methods are safe
// for concurrent use, and other processes may use the same directory at
// the same time.
type Cache struct {
	dir  string // the layout's directory: dir/remote_segments_cache_v1
	size int64

	used atomic.Int64 // bytes of entries, as last counted plus this process's fills since
	// evicting keeps one eviction of this process at a time (the file
	// lock keeps other processes out).
	evicting sync.Mutex

	hits, hitBytes, misses, stored, evictions, validations, corrupt, refused, errs atomic.Int64

	// checked are the entries this process checked (checked.go); sums
	// counts the entries Check summed, by which tests tell what it
	// remembered; settle is settleTick, or a test's own.
	checked checkedEntries
	sums    atomic.Int64
	settle  time.Duration

	fills fillQueue // see fill.go

	files   fileCalls     // systemFiles; a test's that counts the calls
	temps   atomic.Uint64 // the last temporary file's number in this process
	tempTag string        // ".<process id>.": between a temporary file's entry name and number
	entries *entryStore   // reads entries whole, checking them (read.go)

	// known notes the objects whose ranges were stored, seen the ranges
	// refused once (notes.go); index says where entries are (pack.go).
	known, seen, index *noteTable

	// places are the index slots this process remembers, packs the
	// packs it keeps open for reading (memo.go).
	places places
	packs  openPacks
}

// Open returns the cache in directory dir (created if missing), holding
// at most size bytes of entries; size 0 means DefaultFraction of the free
// space of dir's file system (at least 64 MiB). On failure (the directory
// cannot be made or written), returns an error naming it.
func Open(dir string, size int64) (*Cache, error) {
	if size < 0 {
		panic("cache: negative size")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cache: %s: %w", dir, err)
	}
	root := filepath.Join(abs, layout)
	for _, sub := range []string{"entries", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, sub), 0o755); err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
	}
	if size == 0 {
		size = defaultSize(root)
	}
	c := &Cache{dir: root, size: size, files: systemFiles{}, tempTag: "." + strconv.Itoa(os.Getpid()) + ".",
		known: newNoteTable(filepath.Join(root, "objects.notes")), seen: newNoteTable(filepath.Join(root, "seen.notes")),
		index: newIndex(filepath.Join(root, "index"))}
	// The tables' descriptors live as long as the Cache (Close leaves
	// Lookup and Put working).
	runtime.AddCleanup(c, func(ts [3]*noteTable) {
		for _, t := range ts {
			t.closeFile()
		}
	}, [3]*noteTable{c.known, c.seen, c.index})
	c.entries = &entryStore{c: c}
	c.fills.bound = FillBytes
	c.fills.linger = packLinger
	c.packs.idle = packIdle
	c.settle = settleTick
	c.used.Store(c.count())
	return c, nil
}

// defaultSize is DefaultFraction of the free space under dir.
func defaultSize(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return minDefaultSize
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	return max(int64(float64(free)*DefaultFraction), minDefaultSize)
}

// Dir is the directory the cache was opened on (its parent of the layout's).
func (c *Cache) Dir() string { return filepath.Dir(c.dir) }

// Size is the most bytes of entries the cache keeps.
func (c *Cache) Size() int64 { return c.size }

// Known reports whether ranges of object were stored (SetKnown), by any
// process: a hint of whether its version is worth checking, never a key.
// It may say yes of an object whose ranges are gone, and no of one whose
// note was lost (see notes.go).
func (c *Cache) Known(object string) bool {
	return c.known.has(c.files, objectNote(object))
}

// SetKnown notes that ranges of object are stored (see Known). A failure
// to write it only costs a later scan a fetch of the object's ranges
// without a check first.
func (c *Cache) SetKnown(object string) {
	c.known.add(c.files, objectNote(object))
}

// Lookup returns the entry of k if the cache has one of the right size,
// and marks it recently used. Where it is costs one read of the index,
// unless this process remembers it (memo.go); its pack is then stat'ed
// (opened on first use). The header of a range of a known length of at
// most readWholeMax bytes is checked by the read (StoreFor); of any
// other, it is read and checked here. A hit is counted only once its
// bytes pass their check (Hit); a miss is counted here.
func (c *Cache) Lookup(k Key) (Entry, bool) {
	h := k.hash()
	if at, ok := c.places.get(h); ok {
		if e, err := c.entryAt(h, at, k); err == nil {
			return e, true
		}
		// Its pack removed (or the entry not true): the index on disk
		// may name another place, or this one, which is then dropped.
		c.places.forget(h, at)
	}
	at, ok := c.locate(h)
	if !ok {
		c.misses.Add(1)
		return Entry{}, false
	}
	e, err := c.entryAt(h, at, k)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errNotItsKey) {
			c.corrupt.Add(1) // a header that is not whole is never trusted
		}
		c.unindex(h, at)
		c.misses.Add(1)
		return Entry{}, false
	}
	c.places.put(h, at)
	return e, true
}

// Holds reports whether the cache has an entry of k, as Lookup would find
// it (and marks it recently used, as Lookup does), without counting a hit
// or a miss: a scan choosing between ways to read an object asks it, then
// reads through Lookup. It may say yes of an entry that fails its check
// when read (that read counts it).
func (c *Cache) Holds(k Key) bool {
	h := k.hash()
	if at, ok := c.places.get(h); ok {
		if _, err := c.entryAt(h, at, k); err == nil {
			return true
		}
	}
	at, ok := c.locate(h)
	if !ok {
		return false
	}
	_, err := c.entryAt(h, at, k)
	return err == nil
}

// errNotItsKey is a slot of another key (whose fingerprint it shares),
// or of another length: not this key's entry, and nothing corrupt.
var errNotItsKey = errors.New("cache: a slot of another key")

// entryAt returns k's entry (of key hash h) at at, marked recently used,
// if its pack is a regular file that holds it whole; an entry of known
// length of at most readWholeMax bytes has its header and bytes checked
// as they are read, any other its header checked here.
func (c *Cache) entryAt(h [32]byte, at place, k Key) (Entry, error) {
	if at.length < 0 || at.off < 0 || at.off%64 != 0 || k.Length >= 0 && at.length != k.Length {
		return Entry{}, errNotItsKey
	}
	var st syscall.Stat_t
	start := time.Now()
	p, err := c.acquirePack(at.pack, &st)
	if err != nil {
		return Entry{}, err
	}
	defer c.releasePack(p)
	if at.off > st.Size || at.length > st.Size-at.off-HeaderSize { // (a sum of the index's numbers could overflow)
		return Entry{}, fmt.Errorf("cache: %s: %d bytes, no entry of %d at %d", p.path, st.Size, at.length, at.off)
	}
	e := Entry{Path: p.path, Offset: at.off + HeaderSize, Length: at.length, key: h, at: at, state: stateOf(&st)}
	e.settled = e.state.settled(start, c.settle)
	if k.Length < 0 || k.Length > readWholeMax {
		var hdr [HeaderSize]byte
		got, err := c.files.preadv(p.fd, [][]byte{hdr[:]}, at.off)
		if err != nil || got != HeaderSize {
			return Entry{}, fmt.Errorf("cache: %s: short header (%d bytes): %v", p.path, got, err)
		}
		if n, err := parseHeader(&hdr, h); err != nil || n != at.length {
			return Entry{}, fmt.Errorf("cache: %s: not an entry of its key at %d", p.path, at.off)
		}
		e.sum, e.summed = binary.LittleEndian.Uint32(hdr[16:20]), true
	}
	c.touch(p.path, mtimeOf(&st))
	return e, nil
}

// parseHeader returns the length of the body an entry header names, if
// it is a header of key hash h.
func parseHeader(hdr *[HeaderSize]byte, h [32]byte) (int64, error) {
	n := int64(binary.LittleEndian.Uint64(hdr[8:16]))
	if [8]byte(hdr[:8]) != magic || [32]byte(hdr[24:56]) != h || n < 0 {
		return 0, errors.New("not an entry of its key")
	}
	return n, nil
}

// Hit counts n bytes served from the cache.
func (c *Cache) Hit(n int64) { c.hits.Add(1); c.hitBytes.Add(n) }

// Missed counts n ranges looked for without a Lookup: ranges of an
// object the cache holds nothing of.
func (c *Cache) Missed(n int64) { c.misses.Add(n) }

// Validated counts n version checks (requests for an object's headers).
func (c *Cache) Validated(n int64) { c.validations.Add(n) }

// Put stores data as the bytes of k, if the admission rule takes them
// (see the package comment), and evicts the least recently used entries
// if the cache grows past its size. It reports whether the bytes were
// stored. A failure to write is counted (Stats.Errors) and reported, and
// leaves no entry: the caller has its bytes and need not care. The entry
// is a pack of its own (fills share packs: Fill).
func (c *Cache) Put(k Key, data []byte) (bool, error) {
	h := k.hash()
	n := int64(len(data))
	ok, evict := c.admit(h, n)
	if !ok {
		return false, nil
	}
	if evict {
		defer c.evict()
	}
	framed := make([]byte, padded(n))
	copy(framed[HeaderSize:], data)
	p := &pack{c: c}
	err := p.add(h, framed, n)
	if err = errors.Join(err, p.finish(err != nil)); err != nil {
		c.used.Add(-n)
		c.errs.Add(1)
		return false, err
	}
	c.stored.Add(1)
	return true, nil
}

// admit takes room for an entry of n bytes of key hash h, if the
// admission rule lets it in, and reports whether it did, and whether the
// cache is to evict once the entry is written. The room is taken before
// the write, so that fills running at once cannot all see the same room
// and together pass the size: that would evict entries to admit ranges
// seen once. A write that fails gives the room back (c.used).
func (c *Cache) admit(h [32]byte, n int64) (ok, evict bool) {
	if n > c.size {
		c.refused.Add(1)
		return false, false
	}
	if c.used.Add(n) > c.size {
		if !c.secondTouch(h) {
			c.used.Add(-n)
			c.refused.Add(1)
			return false, false
		}
		return true, true
	}
	return true, false
}

// secondTouch reports whether h was refused before (its note is
// found, and removed now); otherwise it notes h.
func (c *Cache) secondTouch(h [32]byte) bool {
	return c.seen.take(c.files, noteOf(h))
}

// createTemp creates a new temporary file for the pack named base, and
// returns its path and descriptor. Its name is unique in this process; a
// file of the same name left by a dead process of the same id is passed
// over (O_EXCL).
func (c *Cache) createTemp(base string) (string, int, error) {
	tmpDir := filepath.Join(c.dir, "tmp")
	prefix := filepath.Join(tmpDir, base) + c.tempTag
	made := false
	for try := 0; ; try++ {
		p := prefix + strconv.FormatUint(c.temps.Add(1), 10)
		fd, err := c.files.open(p, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL, 0o600)
		switch {
		case err == nil:
			return p, fd, nil
		case err == syscall.EEXIST && try < 100:
			continue
		case err == syscall.ENOENT && !made:
			// The directory was removed under the process (a user
			// clearing the cache): made again, so that fills do not
			// fail until the process ends.
			made = true
			if err := os.MkdirAll(tmpDir, 0o755); err != nil {
				return "", -1, err
			}
			continue
		}
		return "", -1, &fs.PathError{Op: "open", Path: p, Err: err}
	}
}

// writeAll writes b to fd whole.
func (c *Cache) writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := c.files.write(fd, b)
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		b = b[n:]
	}
	return nil
}

// file is one file eviction considers.
type file struct {
	path string
	size int64
	used time.Time
}

// walk lists the files of one subdirectory of the cache, recursively.
func (c *Cache) walk(sub string) []file {
	var out []file
	filepath.WalkDir(filepath.Join(c.dir, sub), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed by another process meanwhile
		}
		out = append(out, file{path: p, size: fi.Size(), used: fi.ModTime()})
		return nil
	})
	return out
}

// count is the bytes of the packs on disk (their headers and padding
// counted too: what they take).
func (c *Cache) count() int64 {
	var n int64
	for _, f := range c.walk("entries") {
		n += f.size
	}
	return n
}

// evict removes the least recently used packs until the cache is at
// lowWater of its size, temporary files of dead fills, and the oldest
// files of notes that an earlier build kept one per file (seen/ and
// objects/) beyond as many as there are entries (at least 1024 of each).
func (c *Cache) evict() {
	c.evicting.Lock()
	defer c.evicting.Unlock()
	lock, err := os.OpenFile(filepath.Join(c.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err == nil {
		defer lock.Close()
		// Another process evicting: it does this work, ours waits for it.
		syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	}
	entries := c.walk("entries")
	var total int64
	for _, f := range entries {
		total += f.size
	}
	slices.SortFunc(entries, func(a, b file) int { return a.used.Compare(b.used) })
	target := int64(float64(c.size) * lowWater)
	for _, f := range entries {
		if total <= target {
			break
		}
		if os.Remove(f.path) == nil {
			c.evictions.Add(1)
			if num, ok := packOf(f.path); ok {
				c.dropPack(num) // not kept open until unused
			}
		}
		total -= f.size
	}
	c.used.Store(total)
	for _, f := range c.walk("tmp") {
		if time.Since(f.used) > staleTemp {
			os.Remove(f.path)
		}
	}
	for _, sub := range []string{"seen", "objects"} {
		marks := c.walk(sub)
		if extra := len(marks) - max(len(entries), 1024); extra > 0 {
			slices.SortFunc(marks, func(a, b file) int { return a.used.Compare(b.used) })
			for _, f := range marks[:extra] {
				os.Remove(f.path)
			}
		}
	}
}

// Stats are a cache's counters: entries and bytes on disk (all
// processes'), and this process's hits, misses and the rest.
type Stats struct {
	Dir            string
	Size           int64 // the most bytes of entries kept
	Entries, Bytes int64 // on disk now
	Hits, HitBytes int64 // ranges served from the cache, and their bytes
	Misses         int64 // ranges not found
	Fills          int64 // ranges stored
	Refused        int64 // ranges not admitted (the cache full, seen once)
	Evictions      int64 // packs of entries removed to make room
	Validations    int64 // version checks (requests for headers)
	Corrupt        int64 // entries dropped for a bad header or checksum
	Errors         int64 // fills that failed to write
	Dropped        int64 // fills not queued: FillBytes pending already, or the cache closed
}

// Stats counts the entries on disk (reading every pack's headers) and
// returns the counters.
func (c *Cache) Stats() Stats {
	var entries, n int64
	for _, f := range c.walk("entries") {
		e, b := c.records(f.path)
		entries += e
		n += b
	}
	return Stats{Dir: c.Dir(), Size: c.size, Entries: entries, Bytes: n,
		Hits: c.hits.Load(), HitBytes: c.hitBytes.Load(), Misses: c.misses.Load(), Fills: c.stored.Load(),
		Refused: c.refused.Load(), Evictions: c.evictions.Load(), Validations: c.validations.Load(),
		Corrupt: c.corrupt.Load(), Errors: c.errs.Load(), Dropped: c.fills.dropped.Load()}
}
