package scanner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// A fault reading a chunk's mapping, whether it reaches the scan as a
// panic or as an error a library made of the panic (arrow-go recovers its
// own, which is how LZ4 chunks failed with "nil pointer dereference"), or
// as any error while a page of the mapping is gone, reads as the file
// having changed, never as the runtime's words.
var sink byte

// mappedFile maps a file of size zero bytes as a chunk's mapping (released with the test).
func mappedFile(t *testing.T, size int) (path string, b []byte, m *mapping) {
	path = filepath.Join(t.TempDir(), "chunk.arrow")
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	st, name, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err = st.(store.Mapper).MapRange(context.Background(), name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	m = &mapping{}
	m.used.Store(true)
	m.live = [][]byte{b}
	t.Cleanup(m.release)
	return path, b, m
}

func TestMappedFaultWording(t *testing.T) {
	path, b, m := mappedFile(t, 3<<20)

	other := errors.New("bad chunk: some other error")
	if got := mappedError(other, m); got != other {
		t.Errorf("an intact mapping: %v, want the error as it was", got)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	// The fault as arrow-go reports it: recovered and wrapped.
	var fault error
	func() {
		defer func() { fault = fmt.Errorf("arrow/ipc: error reading record batch: %w", recover().(error)) }()
		sink = b[1<<20]
	}()
	for _, err := range []error{fault, other} {
		got := mappedError(err, m)
		if !errors.Is(got, ErrBadChunk) || !strings.Contains(got.Error(), "the file changed or was truncated during the scan") ||
			strings.Contains(got.Error(), "nil pointer") {
			t.Errorf("mappedError(%v) = %v", err, got)
		}
	}
	// And as a panic, through faultFails.
	err := func() (err error) {
		defer faultFails(&err)
		sink = b[2<<20]
		return nil
	}()
	if err != errMappingChanged {
		t.Errorf("faultFails: %v", err)
	}
}

// Bytes written over a mapped chunk between the framing's check and
// arrow-go's decode make arrow-go panic on its own offsets; it recovers
// and returns the runtime's words ("runtime error: slice bounds out of
// range"), flattened into its message or wrapped. Of a mapped chunk, that
// reads as the file having changed too.
func TestMappedOverwriteWording(t *testing.T) {
	_, b, m := mappedFile(t, 2<<20)

	var panicked error
	func() {
		defer func() { panicked = recover().(error) }()
		i := len(b) + 1
		sink = b[i:2][0]
	}()
	for _, err := range []error{
		fmt.Errorf("arrow/ipc: unknown error while reading: %v", panicked), // flattened, as arrow-go's stream reader does
		fmt.Errorf("arrow IPC decode: %w", panicked),
	} {
		got := mappedError(err, m)
		if !errors.Is(got, ErrBadChunk) || !strings.Contains(got.Error(), "the file changed or was truncated during the scan") ||
			strings.Contains(got.Error(), "runtime error") {
			t.Errorf("mappedError(%v) = %v", err, got)
		}
		if got := mappedError(err, nil); got != err {
			t.Errorf("not mapped: mappedError(%v) = %v, want the error as it was", err, got)
		}
	}
}

// A chunk error of a local file whose size is no longer what the scan was
// told (truncated while it was read, mapped or not) reads as the file having
// changed; an unchanged file's error, another error, or a remote chunk's is
// left as it was.
func TestResizedFileWording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chunk.arrow")
	if err := os.WriteFile(path, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := fmt.Errorf("%w: arrow IPC stream: no more bytes", ErrBadChunk)
	listed := &Chunk{URL: path, Size: 1000, Length: -1}
	ranged := &Chunk{URL: "file://" + path, Size: -1, Offset: 100, Length: 900}
	for _, c := range []*Chunk{listed, ranged} {
		if got := resizedError(bad, c); got != bad {
			t.Errorf("%s unchanged: %v, want the error as it was", c.URL, got)
		}
	}
	if err := os.Truncate(path, 500); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Chunk{listed, ranged} {
		got := resizedError(bad, c)
		if !errors.Is(got, ErrBadChunk) || !strings.Contains(got.Error(), "the file changed or was truncated during the scan") {
			t.Errorf("%s truncated: %v", c.URL, got)
		}
	}
	other := errors.New("iosched: scheduler closed")
	if got := resizedError(other, listed); got != other {
		t.Errorf("not a chunk error: %v", got)
	}
	remote := &Chunk{URL: "https://h/x.arrow", Size: 1000, Length: -1}
	if got := resizedError(bad, remote); got != bad {
		t.Errorf("a remote chunk: %v, want the error as it was", got)
	}
}
