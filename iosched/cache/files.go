package cache

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fileCalls are the system calls a fill and a hit make: on their paths,
// each call is a cost paid per entry, so they go through raw descriptors
// (an os.File would also register with the poller, and os.Rename stats
// its target first) and through this interface, so that tests count them.
type fileCalls interface {
	open(path string, flags int, perm uint32) (int, error)
	preadv(fd int, bufs [][]byte, off int64) (int, error)
	write(fd int, b []byte) (int, error)
	close(fd int) error
	stat(path string, st *syscall.Stat_t) error
	rename(from, to string) error
	pwrite(fd int, b []byte, off int64) (int, error)
	fstat(fd int, st *syscall.Stat_t) error
	ftruncate(fd int, size int64) error
	remove(path string) error
	utimes(path string, t time.Time) error
}

// noFollow are the flags of every open of an entry to read, and of a note
// table. Nothing in the cache's directory is a link to follow: stat is
// lstat, and an entry is opened neither through a link
// nor blocking on a FIFO or device (a regular file ignores O_NONBLOCK), so
// that what another user plants in a shared directory is a miss, not a
// read of what it names, or an open that never returns.
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// systemFiles is fileCalls of the operating system.
type systemFiles struct{}

func (systemFiles) open(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flags|syscall.O_CLOEXEC, perm)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func (systemFiles) preadv(fd int, bufs [][]byte, off int64) (int, error) {
	for {
		n, err := unix.Preadv(fd, bufs, off)
		if err != unix.EINTR {
			return n, err
		}
	}
}

func (systemFiles) write(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Write(fd, b)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

func (systemFiles) close(fd int) error                         { return syscall.Close(fd) }
func (systemFiles) stat(path string, st *syscall.Stat_t) error { return syscall.Lstat(path, st) }
func (systemFiles) rename(from, to string) error               { return syscall.Rename(from, to) }
func (systemFiles) fstat(fd int, st *syscall.Stat_t) error     { return syscall.Fstat(fd, st) }
func (systemFiles) ftruncate(fd int, size int64) error         { return syscall.Ftruncate(fd, size) }

func (systemFiles) pwrite(fd int, b []byte, off int64) (int, error) {
	for {
		n, err := syscall.Pwrite(fd, b, off)
		if err != syscall.EINTR {
			return n, err
		}
	}
}
func (systemFiles) remove(path string) error { return syscall.Unlink(path) }
func (systemFiles) utimes(path string, t time.Time) error {
	ts := syscall.NsecToTimespec(t.UnixNano())
	return syscall.UtimesNano(path, []syscall.Timespec{ts, ts})
}
