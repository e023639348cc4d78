package cache

// Packs: entries are written many to a file. A pack is a file of entries
// one after the other, each a header (HeaderSize bytes: magic, length,
// CRC-32C of the bytes, the key's hash) then the bytes, padded to a
// multiple of 64 bytes; a file holding one entry has the layout an entry
// file always had. A fill writer appends the ranges it takes to one
// temporary pack and renames it into entries/ when nothing more is
// queued, or when it reaches packMax: a file, and so an inode, per pack
// rather than per range, whose creation costs more than writing the
// range on some file systems.
//
// Where an entry is, is found in the index, a table like the notes'
// (notes.go) whose slots hold a key's fingerprint, the pack's number, the
// entry's offset in it and its length; the slot is written after the
// pack is renamed into place. Like a note, a slot is not trusted: the
// read of an entry checks that the header at that offset names the key
// looked for and its length, and the bytes their checksum. A slot torn,
// written over or pointing to a pack evicted since is a miss (a fetch
// again), never another key's bytes. A slot written over by another
// key's (its bucket full) loses an entry the same way; its bytes stay in
// their pack until eviction removes it.
//
// Recency and eviction are per pack: the pack's modification time, set
// by a hit on any of its entries, and its removal whole.

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// packMax is the size past which a writer renames its pack and starts
// another (and at most an eighth of the cache's size, so that eviction,
// a pack at a time, stays fine-grained in a small cache).
const packMax = 8 << 20

// The index: slots of a fingerprint, a pack number, the entry's offset
// and its length, 8 bytes each; 524,288 of them.
const (
	indexSlotSize  = 32
	indexSlots     = 8
	indexTableSize = 1 << 24
)

func newIndex(path string) *noteTable {
	return &noteTable{path: path, size: indexTableSize, slotSize: indexSlotSize, slots: indexSlots}
}

// place is where an entry is: the pack numbered pack, its header at off,
// length bytes after it.
type place struct {
	pack   uint64
	off    int64
	length int64
}

// packPrefix begins the name of every pack in entries/.
const packPrefix = "p-"

func (c *Cache) packPath(pack uint64) string {
	return filepath.Join(c.dir, "entries", packPrefix+strconv.FormatUint(pack, 16))
}

// packOf returns the number of the pack at path.
func packOf(path string) (uint64, bool) {
	base := filepath.Base(path)
	if !strings.HasPrefix(base, packPrefix) {
		return 0, false
	}
	n, err := strconv.ParseUint(base[len(packPrefix):], 16, 64)
	return n, err == nil
}

// locate returns where the index says the entry of key hash h is.
func (c *Cache) locate(h [32]byte) (place, bool) {
	n := noteOf(h)
	b := make([]byte, c.index.bucketSize())
	if _, ok := c.index.bucket(c.files, n, b); !ok {
		return place{}, false
	}
	i := c.index.slotOf(b, n.fp)
	if i < 0 {
		return place{}, false
	}
	s := b[i*indexSlotSize:]
	return place{pack: binary.LittleEndian.Uint64(s[8:]), off: int64(binary.LittleEndian.Uint64(s[16:])),
		length: int64(binary.LittleEndian.Uint64(s[24:]))}, true
}

// indexAt notes that the entry of key hash h is at p.
func (c *Cache) indexAt(h [32]byte, p place) {
	n := noteOf(h)
	b := make([]byte, c.index.bucketSize())
	fd, ok := c.index.bucket(c.files, n, b)
	var rest [indexSlotSize - 8]byte
	binary.LittleEndian.PutUint64(rest[0:], p.pack)
	binary.LittleEndian.PutUint64(rest[8:], uint64(p.off))
	binary.LittleEndian.PutUint64(rest[16:], uint64(p.length))
	c.index.place(c.files, fd, n, b, ok, rest[:])
	if fd >= 0 { // remembered as the index has it: not without one
		c.places.put(h, p)
	}
}

// unindex removes the index's slot of key hash h if it still says p: the
// entry there failed its check, or is gone.
func (c *Cache) unindex(h [32]byte, p place) {
	c.places.forget(h, p)
	n := noteOf(h)
	b := make([]byte, c.index.bucketSize())
	fd, ok := c.index.bucket(c.files, n, b)
	if !ok {
		return
	}
	if i := c.index.slotOf(b, n.fp); i >= 0 {
		s := b[i*indexSlotSize:]
		if binary.LittleEndian.Uint64(s[8:]) == p.pack && int64(binary.LittleEndian.Uint64(s[16:])) == p.off {
			c.index.writeSlot(c.files, fd, n, i, make([]byte, indexSlotSize))
		}
	}
}

// padded is n rounded up to a multiple of 64: where the entry after an
// entry of n bytes starts, from the start of its header.
func padded(n int64) int64 { return (HeaderSize + n + 63) &^ 63 }

// pack is one pack being written.
type pack struct {
	c    *Cache
	num  uint64
	tmp  string
	fd   int
	size int64
	hs   [][32]byte
	at   []place
}

// add appends the entry of key hash h: framed is HeaderSize bytes of room
// for its header, then its bytes, then room to pad it (padded), all of
// which it may change.
func (p *pack) add(h [32]byte, framed []byte, n int64) error {
	c := p.c
	if p.tmp == "" {
		p.num = rand.Uint64()
		tmp, fd, err := c.createTemp(packPrefix + strconv.FormatUint(p.num, 16))
		if err != nil {
			return fmt.Errorf("cache: fill %s: %w", c.packPath(p.num), err)
		}
		p.tmp, p.fd = tmp, fd
	}
	data := framed[HeaderSize : HeaderSize+n]
	hdr := framed[:HeaderSize]
	clear(hdr)
	copy(hdr[:8], magic[:])
	binary.LittleEndian.PutUint64(hdr[8:16], uint64(n))
	binary.LittleEndian.PutUint32(hdr[16:20], crc32.Checksum(data, crcTable))
	copy(hdr[24:56], h[:])
	whole := framed[:padded(n)]
	clear(whole[HeaderSize+n:])
	if err := c.writeAll(p.fd, whole); err != nil {
		return fmt.Errorf("cache: fill %s: %w", c.packPath(p.num), err)
	}
	p.hs = append(p.hs, h)
	p.at = append(p.at, place{pack: p.num, off: p.size, length: n})
	p.size += int64(len(whole))
	return nil
}

// finish renames the pack into place and indexes its entries; with
// failed (an add failed), or on an error, it removes the pack instead.
// The pack may take entries again after.
func (p *pack) finish(failed bool) error {
	c := p.c
	if p.tmp == "" {
		return nil
	}
	final := c.packPath(p.num)
	err := c.files.close(p.fd)
	p.fd = -1 // closed: a recover (fillWriter.recover) must not close it again
	if failed {
		err = fmt.Errorf("cache: fill %s: a write failed", final)
	}
	if err == nil {
		err = c.files.rename(p.tmp, final)
		if err == syscall.ENOENT {
			// The folder was removed under the process (a user
			// clearing the cache): made again.
			if err = os.MkdirAll(filepath.Dir(final), 0o755); err == nil {
				err = c.files.rename(p.tmp, final)
			}
		}
	}
	if err == nil {
		for i, h := range p.hs {
			c.indexAt(h, p.at[i])
		}
	} else {
		c.files.remove(p.tmp)
		err = fmt.Errorf("cache: fill %s: %w", final, err)
	}
	*p = pack{c: c}
	return err
}

// records counts the entries of the pack at path and their bytes, by
// their headers (a header that is not whole ends the count).
func (c *Cache) records(path string) (n, bytes int64) {
	fd, err := c.files.open(path, syscall.O_RDONLY|noFollow, 0)
	if err != nil {
		return 0, 0
	}
	defer c.files.close(fd)
	var st syscall.Stat_t
	if c.files.fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return 0, 0
	}
	var hdr [HeaderSize]byte
	for off := int64(0); off+HeaderSize <= st.Size; {
		got, err := c.files.preadv(fd, [][]byte{hdr[:]}, off)
		if err != nil || got != HeaderSize || [8]byte(hdr[:8]) != magic {
			break
		}
		m := int64(binary.LittleEndian.Uint64(hdr[8:16]))
		if m < 0 || m > st.Size-off-HeaderSize { // (off+HeaderSize+m could overflow)
			break
		}
		n++
		bytes += m
		off += padded(m)
	}
	return n, bytes
}

// entryName is the name the cache's store reads the entry of key hash h
// in the pack at path by: the path, then '#' and the key's hash.
func entryName(path string, h [32]byte) string {
	return path + "#" + hex.EncodeToString(h[:])
}

// parseEntryName returns the pack path and key hash of an entryName.
func parseEntryName(name string) (string, [32]byte, bool) {
	i := strings.LastIndexByte(name, '#')
	if i < 0 {
		return "", [32]byte{}, false
	}
	x, err := hex.DecodeString(name[i+1:])
	if err != nil || len(x) != 32 {
		return "", [32]byte{}, false
	}
	return name[:i], [32]byte(x), true
}
