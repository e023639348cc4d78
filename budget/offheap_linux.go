package budget

import (
	"syscall"
	"unsafe"
)

// mapHuge maps n bytes of zeroed memory whose start is aligned to a huge
// page and asks for huge pages over them. It maps a huge page more than n
// and unmaps what lies before the aligned start and after its n bytes.
func mapHuge(n int) ([]byte, error) {
	raw, err := syscall.Mmap(-1, 0, n+HugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, err
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	head := int((HugePage - base%HugePage) % HugePage)
	if head > 0 {
		unmap(unsafe.SliceData(raw), head)
	}
	if tail := HugePage - head; tail > 0 {
		unmap(&raw[head+n], tail)
	}
	buf := raw[head : head+n : head+n]
	// Advice only: a system without transparent huge pages, or one that
	// turned them off, maps 4 KiB pages as for the Go heap.
	syscall.Madvise(buf, syscall.MADV_HUGEPAGE)
	return buf, nil
}

// unmap unmaps n bytes at p, which mapHuge mapped.
func unmap(p *byte, n int) {
	if _, _, errno := syscall.Syscall(syscall.SYS_MUNMAP, uintptr(unsafe.Pointer(p)), uintptr(n), 0); errno != 0 {
		panic("budget: munmap: " + errno.Error())
	}
}

// dropPages gives the n bytes at p back to the kernel; they read as zero
// after, and a write maps a fresh page.
func dropPages(p *byte, n int) {
	syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(p)), uintptr(n), syscall.MADV_DONTNEED)
}
