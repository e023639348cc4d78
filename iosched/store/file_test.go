package store_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
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
