// Package storetest is the acceptance suite every store.Store implementation passes.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// Fixture is a store holding the objects the suite asked for.
type Fixture struct {
	Store   store.Store
	Prefix  string // prepended to the suite's object names to get store names
	CanList bool   // false for stores whose List fails with ErrUnsupported
}

// Factory creates a store holding objects (name → contents; names use '/').
// It registers its own cleanup with t; the suite closes the Store.
type Factory func(t *testing.T, objects map[string][]byte) Fixture

// Objects returns the suite's objects: a few sizes, nested directories.
func Objects() map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	obj := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	return map[string][]byte{
		"a.bin":               obj(100 << 10),
		"dir/b.bin":           obj(1000),
		"dir/sub/c.bin":       obj(3 << 20),
		"dir/sub/d.txt":       obj(17),
		"dir/segment=7/e.bin": obj(64),
		"other/f.bin":         obj(1),
		"empty.dat":           {},
	}
}

// Run runs the acceptance suite against the stores newFixture makes.
func Run(t *testing.T, newFixture Factory) {
	objects := Objects()
	fx := newFixture(t, objects)
	st, pre := fx.Store, fx.Prefix
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()

	t.Run("GetRange", func(t *testing.T) {
		a := objects["a.bin"]
		n := int64(len(a))
		for _, c := range []struct{ off, length int64 }{
			{0, 10}, {5, 100}, {n - 1, 1}, {0, n}, {0, -1}, {100, -1}, {n - 1, -1}, {1 << 10, 64 << 10},
		} {
			got, err := read(ctx, st, pre+"a.bin", c.off, c.length)
			if err != nil {
				t.Fatalf("GetRange(%d, %d): %v", c.off, c.length, err)
			}
			want := a[c.off:]
			if c.length >= 0 {
				want = a[c.off : c.off+c.length]
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("GetRange(%d, %d): got %d bytes, want %d (equal prefix: %v)", c.off, c.length, len(got), len(want), bytes.HasPrefix(want, got))
			}
		}
		// An empty object read whole is an empty body (an empty catalog).
		if got, err := read(ctx, st, pre+"empty.dat", 0, -1); err != nil || len(got) != 0 {
			t.Fatalf("GetRange(0, -1) of an empty object: %d bytes, %v", len(got), err)
		}
		big := objects["dir/sub/c.bin"]
		got, err := read(ctx, st, pre+"dir/sub/c.bin", 1, int64(len(big))-2)
		if err != nil || !bytes.Equal(got, big[1:len(big)-1]) {
			t.Fatalf("GetRange of 3 MiB: %d bytes, %v", len(got), err)
		}
	})

	t.Run("OutOfRange", func(t *testing.T) {
		n := int64(len(objects["a.bin"]))
		for _, c := range []struct{ off, length int64 }{{n, 10}, {n - 5, 10}, {n + 100, -1}} {
			_, err := read(ctx, st, pre+"a.bin", c.off, c.length)
			if !errors.Is(err, store.ErrOutOfRange) {
				t.Errorf("GetRange(%d, %d) past the end: err = %v, want ErrOutOfRange", c.off, c.length, err)
			}
		}
		if _, err := read(ctx, st, pre+"empty.dat", 0, 1); !errors.Is(err, store.ErrOutOfRange) {
			t.Errorf("GetRange(0, 1) of an empty object: err = %v, want ErrOutOfRange", err)
		}
	})

	t.Run("Size", func(t *testing.T) {
		for name, data := range objects {
			n, err := st.Size(ctx, pre+name)
			if err != nil || n != int64(len(data)) {
				t.Errorf("Size(%s) = %d, %v; want %d", name, n, err, len(data))
			}
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		name := pre + "missing/nothing.bin"
		_, err := st.GetRange(ctx, name, 0, 10)
		checkNotFound(t, st, name, err)
		_, err = st.Size(ctx, name)
		checkNotFound(t, st, name, err)
	})

	t.Run("List", func(t *testing.T) {
		got, err := st.List(ctx, pre+"dir/")
		if !fx.CanList {
			if !errors.Is(err, store.ErrUnsupported) || !strings.Contains(err.Error(), "store: LIST") {
				t.Fatalf("List on a store that cannot list: err = %v, want ErrUnsupported", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		want := []store.ObjectInfo{}
		for name, data := range objects {
			if strings.HasPrefix(name, "dir/") {
				want = append(want, store.ObjectInfo{Name: pre + name, Size: int64(len(data))})
			}
		}
		sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
		if !equalInfos(got, want) {
			t.Fatalf("List(dir/) = %v, want %v", got, want)
		}
		// A version a listing gives is the one a HEAD gives: a cache
		// keys by either.
		for _, o := range got {
			if o.Version == "" {
				continue
			}
			v, err := st.(store.Versioner).Version(ctx, o.Name)
			if err != nil || v != o.Version {
				t.Fatalf("%s: listed version %q, Version %q, %v", o.Name, o.Version, v, err)
			}
		}
		// A prefix that ends inside a name.
		got, err = st.List(ctx, pre+"dir/sub/c")
		if err != nil || len(got) != 1 || got[0].Name != pre+"dir/sub/c.bin" {
			t.Fatalf("List(dir/sub/c) = %v, %v", got, err)
		}
		got, err = st.List(ctx, pre+"nothing-here/")
		if err != nil || len(got) != 0 {
			t.Fatalf("List of an absent prefix = %v, %v; want nothing", got, err)
		}
	})

	t.Run("Glob", func(t *testing.T) {
		one, err := store.Glob(ctx, st, pre+"dir/b.bin", 1)
		if err != nil || len(one) != 1 || one[0].Size != 1000 {
			t.Fatalf("Glob without wildcards = %v, %v", one, err)
		}
		if !fx.CanList {
			return
		}
		for pattern, want := range map[string][]string{
			"dir/**/*.bin":  {"dir/b.bin", "dir/segment=7/e.bin", "dir/sub/c.bin"},
			"dir/*.bin":     {"dir/b.bin"},
			"dir/sub/?.*":   {"dir/sub/c.bin", "dir/sub/d.txt"},
			"**/*.bin":      {"a.bin", "dir/b.bin", "dir/segment=7/e.bin", "dir/sub/c.bin", "other/f.bin"},
			"dir/**":        {"dir/b.bin", "dir/segment=7/e.bin", "dir/sub/c.bin", "dir/sub/d.txt"},
			"d*/s*/*":       {"dir/segment=7/e.bin", "dir/sub/c.bin", "dir/sub/d.txt"},
			"*/*/c*":        {"dir/sub/c.bin"},
			"nothing/*.bin": nil,
		} {
			// One listing at a time, and as many at once as the store
			// lists folders.
			for _, parallel := range []int{1, 8} {
				got, err := store.Glob(ctx, st, pre+pattern, parallel)
				if err != nil {
					t.Fatalf("Glob(%s, %d): %v", pattern, parallel, err)
				}
				var names []string
				for _, o := range got {
					names = append(names, strings.TrimPrefix(o.Name, pre))
				}
				if strings.Join(names, ",") != strings.Join(want, ",") {
					t.Errorf("Glob(%s, %d) = %v, want %v", pattern, parallel, names, want)
				}
			}
		}
	})

	t.Run("ListTree", func(t *testing.T) {
		if !fx.CanList {
			return
		}
		for _, prefix := range []string{"", "dir/", "dir/s", "nothing-here/"} {
			want, err := st.List(ctx, pre+prefix)
			if err != nil {
				t.Fatal(err)
			}
			got, err := store.ListTree(ctx, st, pre+prefix, 8)
			if err != nil || !equalInfos(got, want) {
				t.Errorf("ListTree(%q) = %v, %v; want List's %v", prefix, got, err, want)
			}
		}
	})

	t.Run("Canceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := read(cctx, st, pre+"a.bin", 0, 10)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("GetRange with a canceled context: err = %v, want context.Canceled", err)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		a := objects["a.bin"]
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for i := range 32 {
			wg.Go(func() {
				off := int64(i * 1000)
				got, err := read(ctx, st, pre+"a.bin", off, 3000)
				if err == nil && !bytes.Equal(got, a[off:off+3000]) {
					err = errors.New("wrong bytes")
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}

func read(ctx context.Context, st store.Store, name string, off, length int64) ([]byte, error) {
	body, err := st.GetRange(ctx, name, off, length)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}

func checkNotFound(t *testing.T, st store.Store, name string, err error) {
	t.Helper()
	if err == nil || !st.IsNotFound(err) || !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("reading a missing object: err = %v, want ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), st.URL(name)) || !strings.HasPrefix(err.Error(), "store: ") {
		t.Fatalf("error %q does not name %s", err, st.URL(name))
	}
}

// equalInfos compares names and sizes (a version is checked on its own).
func equalInfos(a, b []store.ObjectInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Size != b[i].Size {
			return false
		}
	}
	return true
}
