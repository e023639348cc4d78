package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// fileStore reads local files with pread. Names are absolute slash paths.
//
// A range is read through a bare descriptor, not an *os.File: os.Open of a
// regular file switches it to non-blocking mode, tries to register it with
// the poller, switches it back and sets a finalizer, a syscall or more each
// and an allocation, where a scan of many small files pays for every one
// of them on every file.
type fileStore struct{}

var (
	_ Store = (*fileStore)(nil)
	_ Local = (*fileStore)(nil)
)

func newFileStore() *fileStore { return &fileStore{} }

func (*fileStore) URL(name string) string { return FileURL(name) }

// FileURL is the file:// URL of the absolute slash path name, escaped so
// that it names that file and no other: the stores decode a file URL's
// percent escapes (Name), and a URL parser ends its path at '?' or '#',
// so a name holding "%41" would read as one holding "A", and a folder
// "c#1" as "c". The characters of ordinary names ("segment=s0", '+',
// ',', '@', ':') are kept.
func FileURL(name string) string {
	return (&url.URL{Scheme: "file", Path: name}).String()
}

func (*fileStore) local() {}

func (s *fileStore) fail(op, name, rng string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		err = ErrNotFound
	case errors.Is(err, fs.ErrPermission):
		err = ErrForbidden
	}
	return &RequestError{Op: op, URL: s.URL(name), Range: rng, Err: err}
}

// GetRange opens the file and returns a reader over the range; the file is
// closed with the reader. The context is only checked up front: a local
// read does not block for long.
func (s *fileStore) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	fd, _, length, err := s.openRange(ctx, "GET", name, off, length)
	if err != nil {
		return nil, err
	}
	return &fileBody{fd: fd, name: name, off: off, end: off + length}, nil
}

// openRange opens the file name for a request op of length bytes from off
// (length < 0: to the end of the file), and returns its descriptor, which
// the caller closes (closeFD), with its stat and the range's length, once
// the range lies inside the file.
func (s *fileStore) openRange(ctx context.Context, op, name string, off, length int64) (int, unix.Stat_t, int64, error) {
	var st unix.Stat_t
	if err := checkRange(off, length); err != nil {
		return -1, st, 0, s.fail(op, name, rangeHeader(off, length), err)
	}
	if err := ctx.Err(); err != nil {
		return -1, st, 0, s.fail(op, name, rangeHeader(off, length), err)
	}
	path := filepath.FromSlash(name)
	var fd int
	var err error
	for {
		// O_NONBLOCK: a FIFO named by a catalog row would block the open
		// until a writer came, out of reach of the query's cancel; a
		// regular file's reads ignore it.
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return -1, st, 0, s.fail(op, name, rangeHeader(off, length), &fs.PathError{Op: "open", Path: path, Err: err})
	}
	if err := unix.Fstat(fd, &st); err != nil {
		closeFD(fd)
		return -1, st, 0, s.fail(op, name, rangeHeader(off, length), &fs.PathError{Op: "stat", Path: path, Err: err})
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		closeFD(fd)
		return -1, st, 0, s.fail(op, name, rangeHeader(off, length), ErrNotFound)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		closeFD(fd)
		return -1, st, 0, s.fail(op, name, rangeHeader(off, length), fmt.Errorf("%w: not a regular file (a FIFO, a socket or a device)", ErrUnsupported))
	}
	size := st.Size
	// An empty file read whole is an empty body, as an empty object is
	// over HTTP and S3 (a GET without a Range header).
	whole := off == 0 && length < 0
	if length < 0 {
		length = size - off
	}
	if (off >= size && !whole) || off+length > size {
		closeFD(fd)
		return -1, st, 0, s.fail(op, name, rangeHeader(off, length), rangeErr(size))
	}
	return fd, st, length, nil
}

// closeFD closes a descriptor openRange returned.
func closeFD(fd int) error {
	return unix.Close(fd)
}

// fileBody reads the range [off, end) of an open descriptor with pread; it
// is not safe for concurrent use (neither is a GET's body).
type fileBody struct {
	fd       int // -1 once closed
	name     string
	off, end int64
}

func (b *fileBody) Read(p []byte) (int, error) {
	if b.fd < 0 {
		return 0, fs.ErrClosed
	}
	if b.off >= b.end {
		return 0, io.EOF
	}
	if rest := b.end - b.off; int64(len(p)) > rest {
		p = p[:rest]
	}
	for {
		n, err := unix.Pread(b.fd, p, b.off)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: filepath.FromSlash(b.name), Err: err}
		case n == 0 && len(p) > 0:
			return 0, io.EOF // the file is shorter now than when it was opened
		}
		b.off += int64(n)
		return n, nil
	}
}

// Close closes the descriptor; a second Close does nothing.
func (b *fileBody) Close() error {
	if b.fd < 0 {
		return nil
	}
	fd := b.fd
	b.fd = -1
	return closeFD(fd)
}

func (s *fileStore) Size(ctx context.Context, name string) (int64, error) {
	st, err := os.Stat(filepath.FromSlash(name))
	if err != nil {
		return 0, s.fail("HEAD", name, "", err)
	}
	if st.IsDir() {
		return 0, s.fail("HEAD", name, "", ErrNotFound)
	}
	return st.Size(), nil
}

// List walks the directory that contains prefix and returns the regular
// files below it whose names start with prefix, and the links to regular
// files, as DuckDB's glob does. A link to a folder is not followed, as
// DuckDB's ** follows none: only the root's, when prefix names it with a
// final slash.
//
// A folder is read through its descriptor and each file's size asked of
// it (fstatat), not by the file's whole path: of a listing of many small
// files, the path walks and a FileInfo each were much of bind's work.
// Subfolders are listed up to listFolders at once: bind waits for the
// listing on one thread, and that stat of every file is work the other
// cores can share.
func (s *fileStore) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	dir := prefix
	if !strings.HasSuffix(dir, "/") {
		dir = path.Dir(dir)
	}
	if dir == "" {
		dir = "/"
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listFolders())
	l := &fileListing{ctx: gctx, prefix: prefix, g: g}
	err := l.dir(filepath.FromSlash(dir), true)
	if err != nil {
		cancel() // the folders still being read stop
	}
	if werr := g.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return nil, s.fail("LIST", prefix, "", err)
	}
	out := l.out
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// listFolders is how many subfolders a local listing reads at once beside
// the caller's: one a core, at most 4 (a folder open each).
func listFolders() int {
	return min(4, runtime.GOMAXPROCS(0))
}

// listFolderHook, if set (by a test), is called with each folder a
// listing is about to read.
var listFolderHook func(path string)

// fileListing is one List: its folders are read on the caller's goroutine
// and on up to listFolders more of g, each appending what it found to out.
type fileListing struct {
	ctx    context.Context // g's: done at the first failure
	prefix string
	g      *errgroup.Group
	n      atomic.Int64 // objects found, against maxListObjects

	mu  sync.Mutex
	out []ObjectInfo
}

// dir appends the regular files under folder p whose names start with the
// listing's prefix to out, then lists its subfolders that can hold such
// names: each on a goroutine of g if one is free, else here. A folder is
// closed before its subfolders are listed. An absent root, or one that is
// no folder (a file, a link not named with a final slash), lists nothing.
func (l *fileListing) dir(p string, root bool) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	if listFolderHook != nil {
		listFolderHook(p)
	}
	var fd int
	var err error
	for {
		fd, err = unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case root && err == unix.ENOENT:
		return nil
	case root && (err == unix.ENOTDIR || err == unix.ELOOP):
		// A file or a link lists nothing; a path through a file fails.
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return &fs.PathError{Op: "lstat", Path: p, Err: err}
		}
		return nil
	case err == unix.ENOTDIR || err == unix.ELOOP:
		return nil // replaced by a file or a link since its folder was read
	case err != nil:
		return &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p) // closes fd
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return err
	}
	base := filepath.ToSlash(p)
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	var dirs []string
	var found []ObjectInfo
	for _, d := range entries {
		if err := l.ctx.Err(); err != nil {
			return err
		}
		name := base + d.Name()
		if d.IsDir() {
			// Skip folders that cannot contain a match.
			if strings.HasPrefix(name+"/", l.prefix) || strings.HasPrefix(l.prefix, name+"/") {
				dirs = append(dirs, d.Name())
			}
			continue
		}
		// As DuckDB's own glob: a link to a regular file is a match (of
		// the file's size), a link to a folder is not listed (a ** through
		// links could loop), nor is a dangling link.
		link := d.Type()&fs.ModeSymlink != 0
		if !d.Type().IsRegular() && !link || !strings.HasPrefix(name, l.prefix) {
			continue
		}
		flags := unix.AT_SYMLINK_NOFOLLOW
		if link {
			flags = 0
		}
		var st unix.Stat_t
		for {
			err = unix.Fstatat(fd, d.Name(), &st, flags)
			if err != unix.EINTR {
				break
			}
		}
		if link && (err == unix.ENOENT || err == unix.ELOOP) {
			continue // dangling, or a loop of links
		}
		if err != nil {
			return &fs.PathError{Op: "stat", Path: filepath.Join(p, d.Name()), Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue // a link to a folder or a device, or replaced since the folder was read
		}
		if l.n.Add(1) > int64(maxListObjects) {
			return tooManyObjects()
		}
		found = append(found, ObjectInfo{Name: name, Size: st.Size})
	}
	f.Close()
	if len(found) > 0 {
		l.mu.Lock()
		l.out = append(l.out, found...)
		l.mu.Unlock()
	}
	for _, d := range dirs {
		sub := filepath.Join(p, d)
		if l.g.TryGo(guarded(func() error { return l.dir(sub, false) })) {
			continue
		}
		if err := l.dir(sub, false); err != nil {
			return err
		}
	}
	return nil
}

func (*fileStore) IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

func (*fileStore) Close() error { return nil }
