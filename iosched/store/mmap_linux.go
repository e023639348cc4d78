package store

import (
	"context"
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MapRange maps length bytes of the file name from off, with MAP_POPULATE.
// Read the mapping only under a fault guard (see Mapper).
func (s *fileStore) MapRange(ctx context.Context, name string, off, length int64) ([]byte, error) {
	if length == 0 {
		return nil, s.fail("MAP", name, rangeHeader(off, length), ErrUnsupported)
	}
	fd, st, length, err := s.openRange(ctx, "MAP", name, off, length)
	if err != nil {
		return nil, err
	}
	defer closeFD(fd) // the mapping outlives the descriptor
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, s.fail("MAP", name, rangeHeader(off, length), ErrUnsupported) // a device, a pipe
	}
	page := int64(os.Getpagesize())
	base := off &^ (page - 1)
	size := uintptr(off - base + length)
	// Not syscall.Mmap: its registry of mappings would want the whole
	// mapping back, where the caller keeps the range.
	p, err := unix.MmapPtr(fd, base, nil, size, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, s.fail("MAP", name, rangeHeader(off, length), errors.Join(ErrUnsupported, err))
	}
	return unsafe.Slice((*byte)(p), size)[off-base:], nil
}
