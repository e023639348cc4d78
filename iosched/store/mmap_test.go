package store_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/iosched/store/storetest"
)

func TestMapRange(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 3<<20+123)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	writeTree(t, dir, map[string][]byte{"a.arrow": data, "sub/b": {1}})
	path := filepath.Join(dir, "a.arrow")
	st, name := open(t, "file://"+filepath.ToSlash(path), store.Options{})
	m, ok := st.(store.Mapper)
	if !ok {
		t.Fatal("the file store is not a store.Mapper")
	}
	ctx := context.Background()
	for _, rg := range [][2]int64{{0, 1 << 20}, {5000, 2 << 20}, {int64(len(data)) - 7000, 7000}, {4096, 1}} {
		b, err := m.MapRange(ctx, name, rg[0], rg[1])
		if err != nil {
			t.Fatalf("MapRange(%d, %d): %v", rg[0], rg[1], err)
		}
		if !bytes.Equal(b, data[rg[0]:rg[0]+rg[1]]) {
			t.Fatalf("MapRange(%d, %d): not the file's bytes", rg[0], rg[1])
		}
		if n := storetest.Mappings(t, 0, path); n != 1 {
			t.Fatalf("MapRange(%d, %d): %d mappings of the file, want 1", rg[0], rg[1], n)
		}
		if err := store.Unmap(b[:len(b)/2]); err != nil { // resliced from the end: still the mapping
			t.Fatalf("Unmap: %v", err)
		}
		if n := storetest.Mappings(t, 0, path); n != 0 {
			t.Fatalf("after Unmap: %d mappings of the file, want 0", n)
		}
	}
	for _, c := range []struct {
		name     string
		off, len int64
		want     error
	}{
		{name, int64(len(data)) - 10, 11, store.ErrOutOfRange},
		{name, int64(len(data)), 1, store.ErrOutOfRange},
		{name, 0, 0, store.ErrUnsupported},
		{filepath.ToSlash(filepath.Join(dir, "missing")), 0, 1, store.ErrNotFound},
		{filepath.ToSlash(filepath.Join(dir, "sub")), 0, 1, store.ErrNotFound}, // a directory, as GetRange says
	} {
		if b, err := m.MapRange(ctx, c.name, c.off, c.len); !errors.Is(err, c.want) {
			store.Unmap(b)
			t.Errorf("MapRange(%s, %d, %d) = %v, want %v", c.name, c.off, c.len, err, c.want)
		}
	}
	if n := storetest.Mappings(t, 0, path); n != 0 {
		t.Fatalf("%d mappings of the file left, want 0", n)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	hs, _ := open(t, srv.URL+"/a.arrow", store.Options{})
	if _, ok := hs.(store.Mapper); ok {
		t.Error("the HTTP store claims to map")
	}
}
