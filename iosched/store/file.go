package store

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// fileStore reads local files with pread (os.File.ReadAt). Names are absolute
// slash paths.
type fileStore struct{}

var _ Store = (*fileStore)(nil)

func newFileStore() *fileStore { return &fileStore{} }

func (*fileStore) URL(name string) string { return "file://" + name }

func (s *fileStore) fail(op, name, rng string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		err = ErrNotFound
	case errors.Is(err, fs.ErrPermission):
		err = ErrForbidden
	}
	return &RequestError{Op: op, URL: s.URL(name), Range: rng, Err: err}
}

// GetRange opens the file and returns a section reader over the range; the
// file is closed with the reader. The context is only checked up front: a
// local read does not block for long.
func (s *fileStore) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	f, _, length, err := s.openRange(ctx, "GET", name, off, length)
	if err != nil {
		return nil, err
	}
	return &fileBody{SectionReader: io.NewSectionReader(f, off, length), f: f}, nil
}

// openRange opens the file name for a request op of length bytes from off
// (length < 0: to the end of the file), and returns it with its FileInfo
// and the range's length, once the range lies inside the file.
func (s *fileStore) openRange(ctx context.Context, op, name string, off, length int64) (*os.File, fs.FileInfo, int64, error) {
	rng := rangeHeader(off, length)
	if err := checkRange(off, length); err != nil {
		return nil, nil, 0, s.fail(op, name, rng, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, s.fail(op, name, rng, err)
	}
	f, err := os.Open(filepath.FromSlash(name))
	if err != nil {
		return nil, nil, 0, s.fail(op, name, rng, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, 0, s.fail(op, name, rng, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, nil, 0, s.fail(op, name, rng, ErrNotFound)
	}
	size := st.Size()
	// An empty file read whole is an empty body, as an empty object is
	// over HTTP and S3 (a GET without a Range header).
	whole := off == 0 && length < 0
	if length < 0 {
		length = size - off
	}
	if (off >= size && !whole) || off+length > size {
		f.Close()
		return nil, nil, 0, s.fail(op, name, rng, rangeErr(size))
	}
	return f, st, length, nil
}

type fileBody struct {
	*io.SectionReader
	f *os.File
}

func (b *fileBody) Close() error { return b.f.Close() }

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
// files below it whose names start with prefix.
func (s *fileStore) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	dir := prefix
	if !strings.HasSuffix(dir, "/") {
		dir = path.Dir(dir)
	}
	if dir == "" {
		dir = "/"
	}
	var out []ObjectInfo
	root := filepath.FromSlash(dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll // an absent directory lists nothing
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := filepath.ToSlash(p)
		if d.IsDir() {
			// Skip directories that cannot contain a match.
			if p != root && !strings.HasPrefix(name+"/", prefix) && !strings.HasPrefix(prefix, name+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(name, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if len(out) == maxListObjects {
			return tooManyObjects()
		}
		out = append(out, ObjectInfo{Name: name, Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, s.fail("LIST", prefix, "", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (*fileStore) IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

func (*fileStore) Close() error { return nil }
