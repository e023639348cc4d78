package store

import (
	"context"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mapper is a Store that can hand out a range of an object as read-only
// memory instead of a copy: a local file, mapped. The pages are the page
// cache's own, so a scan that copies them into DuckDB's vectors copies each
// byte once, where a read copies it twice (into a buffer, then out of it).
//
// A mapping can fail to read later, with SIGBUS, if the file is truncated
// while it is mapped; whoever reads it must survive that (debug.SetPanicOnFault
// in Go; a guard in C, see cabi's rs_fill_guarded). The rule: no byte of a
// mapping is read by code that is not under that guard or under
// SetPanicOnFault on its own goroutine, so a mapping is never handed to a
// library that reads on goroutines of its own (a ZSTD decoder): see
// scanner/mmap.go.
type Mapper interface {
	// MapRange maps length bytes of name from off (length < 0: to the end
	// of the object; 0 is ErrUnsupported) and faults the pages
	// in (reading them from disk if they are not cached): the caller gets
	// memory that is ready to read. Release it with Unmap. It fails like
	// GetRange for a missing object or a range past its end, and with
	// ErrUnsupported where the file system cannot map.
	MapRange(ctx context.Context, name string, off, length int64) ([]byte, error)
}

// Unmap releases a mapping MapRange returned, as returned or resliced
// from its end only (m[:k], not m[k:]). Nothing may read it afterwards.
func Unmap(m []byte) error {
	if cap(m) == 0 {
		return nil
	}
	// The mapping starts at the page m starts in and ends where m's
	// capacity ends (MapRange slices it from the front only).
	p := unsafe.Pointer(unsafe.SliceData(m))
	into := uintptr(p) & uintptr(os.Getpagesize()-1) // m's offset in its first page
	return unix.MunmapPtr(unsafe.Add(p, -int(into)), into+uintptr(cap(m)))
}
