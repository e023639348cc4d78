package store_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

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
