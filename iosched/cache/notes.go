package cache

// Notes are the cache's hints: which objects it stored ranges of (worth
// a version check before a scan reads them, see Known) and which ranges
// it refused once (admitted on their next miss, see secondTouch). Each
// kind lives in one note table, a file of a fixed size that the
// processes sharing the directory read and write in place: a note is a
// 64-bit fingerprint in a bucket of noteSlots slots, the bucket and the
// fingerprint taken from two parts of one hash. Reading a note is one
// positional read of its bucket, writing one is a positional write of
// its slot; no note is a file of its own, because a file made per object
// filled is an inode allocated per fill, which on some file systems costs
// more than writing the entry's bytes.
//
// Nothing a note says is trusted for bytes: an entry's key holds the
// version, and a note only decides whether a version is asked for or a
// range admitted. So a table torn by a crash, written over by another
// process or user, full, or missing costs at most a version check not
// needed (a note that is not true), a range fetched and stored again (a
// note lost), or an admission decided wrongly; never a stale byte. Two
// processes writing one bucket at once may lose a note that way too.
//
// The table file is opened as entries are (no link followed, no open
// that blocks), checked to be a regular file, and read only within its
// fixed size: what else is found under its name (a link, a FIFO, a file
// of another size) is replaced by a new table.

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"syscall"
)

// noteSlots are the notes of one bucket: 64 bytes, read in one call.
const noteSlots = 8

// noteTableSize is the bytes of a note table: room for 262,144 notes. A
// cache holding ranges of more objects than that loses some objects'
// notes (they are fetched once more without a check, and noted again).
const noteTableSize = 1 << 21

// noteTable is one table file as this process uses it: opened on first
// use and kept open for the life of its Cache. Its slots are 8 bytes (a
// note table's) or more (the index of entries, whose slots hold the
// fingerprint and then where the entry is: index.go); the fingerprint
// is a slot's first 8 bytes.
type noteTable struct {
	path     string
	size     int64 // bytes of the file
	slotSize int   // bytes of a slot
	slots    int   // slots of a bucket

	mu     sync.Mutex
	opened bool
	fd     int // -1: the table could not be opened; notes are then not kept
}

// newNoteTable is a note table at path.
func newNoteTable(path string) *noteTable {
	return &noteTable{path: path, size: noteTableSize, slotSize: 8, slots: noteSlots}
}

func (t *noteTable) bucketSize() int { return t.slotSize * t.slots }

// note is where a note lives in its table and the fingerprint it holds
// there (never 0, which is an empty slot).
type note struct {
	bucket int64 // of all buckets a table could have; modulo the table's
	fp     uint64
}

// noteOf is the note of hash h.
func noteOf(h [32]byte) note {
	return note{bucket: int64(binary.LittleEndian.Uint64(h[0:8]) >> 1), fp: binary.LittleEndian.Uint64(h[8:16]) | 1}
}

// objectNote is the note of an object's name.
func objectNote(object string) note { return noteOf(sha256.Sum256([]byte(object))) }

// offset is where n's bucket starts in t.
func (t *noteTable) offset(n note) int64 {
	b := int64(t.bucketSize())
	return n.bucket % (t.size / b) * b
}

// file returns the table's descriptor, opening it on first use (-1: none).
func (t *noteTable) file(files fileCalls) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.opened {
		t.opened = true
		t.fd = openNoteTable(files, t.path, t.size)
	}
	return t.fd
}

// closeFile closes the table's descriptor; the table is not used after.
func (t *noteTable) closeFile() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.opened && t.fd >= 0 {
		syscall.Close(t.fd)
	}
	t.opened, t.fd = true, -1
}

// openNoteTable opens the table at path, made if missing, as a regular
// file of size bytes: a file of another size (new, or grown by
// another writer) is cut or extended to it, and anything else under the
// name is removed and a table made in its place.
func openNoteTable(files fileCalls, path string, size int64) int {
	for try := 0; try < 2; try++ {
		fd, err := files.open(path, syscall.O_RDWR|syscall.O_CREAT|noFollow, 0o644)
		if err == nil {
			var st syscall.Stat_t
			if files.fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG &&
				(st.Size == size || files.ftruncate(fd, size) == nil) {
				return fd
			}
			files.close(fd)
		}
		files.remove(path)
	}
	return -1
}

// bucket reads n's bucket into b (of bucketSize bytes) and returns the
// table's descriptor (-1: none), and whether the bucket was read whole.
func (t *noteTable) bucket(files fileCalls, n note, b []byte) (int, bool) {
	fd := t.file(files)
	if fd < 0 {
		return -1, false
	}
	got, err := files.preadv(fd, [][]byte{b}, t.offset(n))
	return fd, err == nil && got == len(b)
}

// slotOf returns the first slot of bucket b whose fingerprint is fp, or -1.
func (t *noteTable) slotOf(b []byte, fp uint64) int {
	for i := range t.slots {
		if binary.LittleEndian.Uint64(b[t.slotSize*i:]) == fp {
			return i
		}
	}
	return -1
}

// has reports whether the table holds n.
func (t *noteTable) has(files fileCalls, n note) bool {
	b := make([]byte, t.bucketSize())
	_, ok := t.bucket(files, n, b)
	return ok && t.slotOf(b, n.fp) >= 0
}

// add writes n into the table (see place).
func (t *noteTable) add(files fileCalls, n note) {
	b := make([]byte, t.bucketSize())
	fd, ok := t.bucket(files, n, b)
	if ok && t.slotOf(b, n.fp) >= 0 {
		return
	}
	t.place(files, fd, n, b, ok, nil)
}

// take removes n from the table and reports whether it held it;
// otherwise it adds n.
func (t *noteTable) take(files fileCalls, n note) bool {
	b := make([]byte, t.bucketSize())
	fd, ok := t.bucket(files, n, b)
	if ok {
		if i := t.slotOf(b, n.fp); i >= 0 {
			t.writeSlot(files, fd, n, i, make([]byte, t.slotSize))
			return true
		}
	}
	t.place(files, fd, n, b, ok, nil)
	return false
}

// place writes n, followed by rest (the slot's bytes after the
// fingerprint), into its bucket, whose slots b holds if read: in the slot
// holding n already, else an empty one, else in place of one chosen at
// random.
func (t *noteTable) place(files fileCalls, fd int, n note, b []byte, read bool, rest []byte) {
	if fd < 0 {
		return
	}
	i := rand.IntN(t.slots)
	if read {
		if j := t.slotOf(b, n.fp); j >= 0 {
			i = j
		} else if j := t.slotOf(b, 0); j >= 0 {
			i = j
		}
	}
	s := make([]byte, t.slotSize)
	binary.LittleEndian.PutUint64(s, n.fp)
	copy(s[8:], rest)
	t.writeSlot(files, fd, n, i, s)
}

// writeSlot writes s into slot i of n's bucket; a failure only loses a
// hint.
func (t *noteTable) writeSlot(files fileCalls, fd int, n note, i int, s []byte) {
	files.pwrite(fd, s, t.offset(n)+int64(t.slotSize*i))
}
