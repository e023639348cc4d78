package cache

// Reading an entry: the cache's own store reads the header and the bytes
// of an entry in one positional read (the header into a buffer of its
// own, the bytes straight into the caller's), and checks both as it
// reads: the header names the entry's key and length, and the checksum
// of the bytes is computed while they are still in the processor's
// cache. A hit thus costs a stat of its pack's descriptor (Lookup; the
// first hit of a pack opens it and reads the index, memo.go) and one
// read.
// An entry larger than readWholeMax is read through the store of local
// files instead, which may map it, and checked afterwards (Check): the
// header was read by Lookup.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// readWholeMax is the largest entry the cache's store reads: a local
// scheduler reads it in one request (it splits only larger ones), and
// the store of local files would not map it.
const readWholeMax = 1 << 20

// StoreFor returns the store to read e through (name e.Name(), offset
// e.Offset, length e.Length): the cache's own, which checks the entry as
// it reads it, or files (a store of local files), after which Check
// verifies the bytes.
func (c *Cache) StoreFor(e Entry, files store.Store) store.Store {
	if e.summed {
		return files
	}
	return c.entries
}

// entryStore reads entries of its cache whole, checking them.
type entryStore struct{ c *Cache }

var _ store.Store = (*entryStore)(nil)

func (s *entryStore) URL(name string) string { return store.FileURL(filepath.ToSlash(name)) }

func (s *entryStore) fail(name string, off, length int64, err error) error {
	return &store.RequestError{Op: "GET", URL: s.URL(name), Range: fmt.Sprintf("bytes=%d-%d", off, off+length-1), Err: err}
}

// GetRange reads the bytes of the entry name (Entry.Name: its pack and
// its key) at off: off must be where an entry's bytes start and length
// the entry's (a part of an entry is not read here: nothing could check
// it). An entry whose header or bytes do not match fails with an error
// wrapping ErrCorrupt and store.ErrNotFound (it is dropped from the
// index: a retry would not find it), and is counted (Stats.Corrupt).
func (s *entryStore) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if off < HeaderSize || (off-HeaderSize)%64 != 0 || length < 0 {
		return nil, s.fail(name, off, length, fmt.Errorf("%w: a part of a cache entry", store.ErrUnsupported))
	}
	path, key, ok := parseEntryName(name)
	num, isPack := packOf(path)
	if !ok || !isPack {
		return nil, s.fail(name, off, length, fmt.Errorf("%w: not a cache entry", store.ErrNotFound))
	}
	if err := ctx.Err(); err != nil {
		return nil, s.fail(name, off, length, err)
	}
	p, err := s.c.acquirePack(num, nil)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			err = store.ErrNotFound
		}
		return nil, s.fail(name, off, length, err)
	}
	return &entryBody{s: s, name: name, pack: p, key: key, at: place{pack: num, off: off - HeaderSize, length: length}, length: length}, nil
}

func (s *entryStore) Size(ctx context.Context, name string) (int64, error) {
	return 0, s.fail(name, 0, 0, store.ErrUnsupported)
}

func (s *entryStore) List(ctx context.Context, prefix string) ([]store.ObjectInfo, error) {
	return nil, s.fail(prefix, 0, 0, store.ErrUnsupported)
}

func (s *entryStore) IsNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

func (s *entryStore) Close() error { return nil }

// entryBody is the bytes of one entry being read.
type entryBody struct {
	s      *entryStore
	name   string
	pack   *openPack // nil once closed
	key    [32]byte
	at     place // where it is: its index slot is dropped if it fails
	length int64 // the entry's bytes
	done   int64 // read so far
	headed bool  // the header was read and matched
	hdr    [HeaderSize]byte
	sum    uint32 // of the bytes read so far
}

// Read reads the next bytes of the entry; the first read takes the
// header with them, and the read that would complete the entry checks its
// checksum first (a reader that stops short of the end gets bytes not
// checked).
func (b *entryBody) Read(p []byte) (int, error) {
	if b.done == b.length {
		return 0, io.EOF
	}
	if b.pack == nil {
		return 0, b.s.fail(b.name, b.at.off+HeaderSize, b.length, fs.ErrClosed)
	}
	p = p[:min(int64(len(p)), b.length-b.done)]
	var n int
	var err error
	if !b.headed {
		n, err = b.s.c.files.preadv(b.pack.fd, [][]byte{b.hdr[:], p}, b.at.off)
		if err == nil {
			if n < HeaderSize {
				return 0, b.corrupt("short header")
			}
			n -= HeaderSize
			if m, herr := parseHeader(&b.hdr, b.key); herr != nil || m != b.length {
				return 0, b.corrupt("header of another key or length")
			}
			b.headed = true
		}
	} else {
		n, err = b.s.c.files.preadv(b.pack.fd, [][]byte{p}, b.at.off+HeaderSize+b.done)
	}
	if err != nil {
		return 0, b.s.fail(b.name, b.at.off+HeaderSize, b.length, err)
	}
	if n == 0 && len(p) > 0 {
		return 0, b.corrupt("shorter than its header says")
	}
	b.sum = crc32.Update(b.sum, crcTable, p[:n])
	if b.done+int64(n) == b.length && b.sum != binary.LittleEndian.Uint32(b.hdr[16:20]) {
		// None of the last bytes count as read: a reader that stops at
		// the length it asked for (io.ReadFull) still sees the error.
		return 0, b.corrupt("checksum")
	}
	b.done += int64(n)
	return n, nil
}

// corrupt drops the entry and returns the error of its read.
func (b *entryBody) corrupt(what string) error {
	b.s.c.corrupt.Add(1)
	b.s.c.unindex(b.key, b.at)
	return b.s.fail(b.name, b.at.off+HeaderSize, b.length, fmt.Errorf("%w (%s): %w", ErrCorrupt, what, store.ErrNotFound))
}

func (b *entryBody) Close() error {
	if b.pack != nil {
		b.s.c.releasePack(b.pack)
		b.pack = nil
	}
	return nil
}
