package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// TestFileGetRangeAllocs guards the cost of one local read, which a scan
// of many small files pays once per file: GetRange, reading the body and
// closing it allocate no *os.File (its non-blocking mode and poller
// registration, a finalizer, a FileInfo) and no range text on success.
// The bound is generous: it fails only when those come back.
func TestFileGetRangeAllocs(t *testing.T) {
	leakCheck(t)
	dir := t.TempDir()
	data := make([]byte, 6500)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.arrow"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	st, name := open(t, filepath.Join(dir, "c.arrow"), store.Options{})
	buf := make([]byte, len(data))
	ctx := context.Background()
	read := func() {
		body, err := st.GetRange(ctx, name, 100, int64(len(data)-100))
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.ReadFull(body, buf[:len(data)-100])
		if err != nil || n != len(data)-100 {
			t.Fatalf("read %d bytes: %v", n, err)
		}
		if err := body.Close(); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if buf[0] != data[100] || buf[len(data)-101] != data[len(data)-1] {
		t.Fatal("wrong bytes")
	}
	if n := testing.AllocsPerRun(100, read); n > 3 {
		t.Errorf("a local GetRange, read and close: %.0f allocations, want at most 3", n)
	}
}

// TestFileNotRegular: a FIFO, a device or a socket named as a chunk fails
// at once naming it; the open of a FIFO without a writer does not block.
func TestFileNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "chunk.arrow")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	st, name, err := store.Open(fifo, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, n := range []string{name, "/dev/null"} {
		done := make(chan error, 1)
		go func() {
			rc, err := st.GetRange(context.Background(), n, 0, -1)
			if err == nil {
				rc.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, store.ErrUnsupported) || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), n) {
				t.Fatalf("GET of %s: %v, want a refusal naming it", n, err)
			}
		case <-time.After(10 * time.Second):
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Fatalf("GET of %s blocked", n)
		}
	}
}

// TestFileListAllocs guards the cost of listing many small files, which
// bind pays once per file of a glob: a file's size is asked of its folder's
// descriptor, without a FileInfo or its whole path walked again. The bound
// is generous: it fails only when those come back (6.5 a file before, 4.5 now).
func TestFileListAllocs(t *testing.T) {
	dir := t.TempDir()
	const n = 200
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("s%d", i%4))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("c%d.arrow", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, name := open(t, dir+"/", store.Options{})
	list := func() {
		objs, err := st.List(context.Background(), name)
		if err != nil || len(objs) != n {
			t.Fatalf("%d objects, %v", len(objs), err)
		}
	}
	a := testing.AllocsPerRun(5, list) / n
	t.Logf("%.2f allocations a file", a)
	if a > 5 {
		t.Errorf("a listing of %d files: %.1f allocations a file, want at most 5", n, a)
	}
}

// TestFileListFolders: a local listing reads its subfolders at once, not
// one after the other (a folder's read here waits until another's has
// begun), and still finds every file once, sorted, within its bound on
// objects.
func TestFileListFolders(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for _, sub := range []string{"a", "b", "b/c"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			name := filepath.Join(dir, sub, fmt.Sprintf("f%d", i))
			if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			want = append(want, filepath.ToSlash(name))
		}
	}
	sort.Strings(want)
	st, name := open(t, dir+"/", store.Options{})
	// Whichever of a and b is read first waits for the other to begin.
	begun := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	other := map[string]string{"a": "b", "b": "a"}
	var serial atomic.Bool
	restore := store.SetListFolderHook(func(p string) {
		name := filepath.Base(p)
		if begun[name] == nil {
			return
		}
		close(begun[name])
		select {
		case <-begun[other[name]]:
		case <-time.After(10 * time.Second):
			serial.Store(true)
		}
	})
	objs, err := st.List(context.Background(), name)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if serial.Load() {
		t.Fatal("folder a or b was not read while the other waited for it: the subfolders were listed one after the other")
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Name)
		if o.Size != 1 {
			t.Errorf("%s: size %d, want 1", o.Name, o.Size)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	defer store.SetListBounds(len(want)-1, 1)()
	if objs, err := st.List(context.Background(), name); !errors.Is(err, store.ErrTooMany) {
		t.Errorf("a listing of %d files with a bound of %d: %d objects, err %v; want ErrTooMany", len(want), len(want)-1, len(objs), err)
	}
}

// TestFileListLinks: a listing keeps the regular files and the links to
// regular files (of the file's size), as DuckDB's glob does, each sorted
// by name; it follows no link to a folder but its root's named with a
// final slash (a root that is a link otherwise, or a file, lists nothing;
// a path through a file fails), and skips a dangling link, a loop of
// links and a FIFO. (Before, a link to a file was left out, which DuckDB's
// glob lists: a scan of a tree of linked files read part of it, with no
// error.)
func TestFileListLinks(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"d/a.arrow": []byte("12345"), "d/sub/b.arrow": []byte("1"), "d/sub/deeper/c.arrow": nil, "other/x.arrow": []byte("xx")})
	for _, l := range [][2]string{{"../other", "d/dirlink"}, {"../other/x.arrow", "d/filelink.arrow"}, {"d", "rootlink"},
		{"../other/gone.arrow", "d/dangling.arrow"}, {"loop2.arrow", "d/loop1.arrow"}, {"loop1.arrow", "d/loop2.arrow"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "d/fifo.arrow"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := open(t, dir+"/", store.Options{})
	root := filepath.ToSlash(dir)
	for _, c := range []struct {
		prefix string
		want   string
	}{
		{root + "/d/", "d/a.arrow:5 d/filelink.arrow:2 d/sub/b.arrow:1 d/sub/deeper/c.arrow:0"},
		{root + "/d/s", "d/sub/b.arrow:1 d/sub/deeper/c.arrow:0"},
		{root + "/d/a", "d/a.arrow:5"},
		{root + "/d/f", "d/filelink.arrow:2"},
		{root + "/rootlink/a", ""}, // the root, rootlink, is a link
		{root + "/rootlink/", "rootlink/a.arrow:5 rootlink/filelink.arrow:2 rootlink/sub/b.arrow:1 rootlink/sub/deeper/c.arrow:0"}, // named as a folder
		{root + "/d/a.arrow/x", ""}, // the root is a file
		{root + "/absent/", ""},
		{root + "/d/a.arrow/", "error"},
	} {
		objs, err := st.List(context.Background(), c.prefix)
		if (err != nil) != (c.want == "error") {
			t.Fatalf("%s: %v", c.prefix, err)
		}
		if err != nil {
			continue
		}
		var got []string
		for _, o := range objs {
			got = append(got, fmt.Sprintf("%s:%d", strings.TrimPrefix(o.Name, root+"/"), o.Size))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("List(%s) = %v, want %s", c.prefix, got, c.want)
		}
	}
}
