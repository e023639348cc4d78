package catalog

// The absolute bounds on everything a source brings in from outside: the
// catalog file's bytes, its rows, a CSV line, JSON nesting. (Thrift
// lengths: internal/parquet.)

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/scanner/catalog/internal/parquet/parquettest"
)

// resolveWith resolves src through a registry of its own, closed after.
func resolveWith(t *testing.T, src Source) ([]Chunk, error) {
	t.Helper()
	d := iosched.NewDomains(iosched.Options{})
	defer d.Close()
	l, err := Resolve(context.Background(), src, func(u string) (*iosched.Hold, error) {
		return d.Open(u, store.Options{}, iosched.Options{})
	})
	if err != nil {
		return nil, err
	}
	return l.Slice(), nil
}

// TestCatalogEndlessBody: a catalog served as an endless HTTP body (no
// Content-Length, chunked) fails with ErrTooLarge naming the catalog and
// the limit, after about the limit's bytes, and allocating about that much.
func TestCatalogEndlessBody(t *testing.T) {
	defer goleak.VerifyNone(t)
	const limit = 1 << 20
	// The server stops at serverCap, so that a reader that ignores the
	// limit makes this test fail rather than run out of memory.
	const serverCap = 256 << 20
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := []byte("url,segment_id\n" + strings.Repeat("seg/chunk.arrow,1\n", 4000))
		for sent.Load() < serverCap {
			n, err := w.Write(line)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	source := srv.URL + "/ds/catalog.csv"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := resolveWith(t, Source{Path: source, MaxBytes: limit})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "catalog "+source+":") ||
		!strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes", limit)) {
		t.Fatalf("err = %v, want ErrTooLarge naming %s and %d bytes", err, source, limit)
	}
	// What the server sent beyond the limit sits in socket buffers: the
	// reader stopped long before serverCap.
	if got := sent.Load(); got > limit+32<<20 {
		t.Errorf("the server sent %d bytes for a limit of %d", got, limit)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*limit+1<<20 {
		t.Errorf("reading a catalog of at most %d bytes allocated %d", limit, got)
	}
}

// TestCatalogMaxBytes: a file of exactly MaxBytes bytes is read, one byte
// more fails before it is parsed; also through the default limit.
func TestCatalogMaxBytes(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	body := "url\n" + strings.Repeat("a.arrow\n", 100)
	path := filepath.Join(dir, "cat.csv")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	chunks, err := resolveWith(t, Source{Path: path, MaxBytes: int64(len(body))})
	if err != nil || len(chunks) != 100 {
		t.Fatalf("a catalog of exactly the limit: %d chunks, %v", len(chunks), err)
	}
	_, err = resolveWith(t, Source{Path: path, MaxBytes: int64(len(body)) - 1})
	var ce *Error
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &ce) || ce.Catalog != path ||
		!strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes (the most a catalog file may have)", len(body)-1)) {
		t.Fatalf("one byte over: err = %v", err)
	}
	if (&Source{}).maxBytes() != DefaultMaxBytes || (&Source{}).maxChunks() != DefaultMaxChunks {
		t.Fatal("a zero Source does not take the defaults")
	}
}

// TestCatalogMaxChunks: every kind of source stops at MaxChunks, and a
// catalog file stops reading rows there.
func TestCatalogMaxChunks(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	rec := parquettest.AllNullTable(4)
	defer rec.Release()
	files := map[string][]byte{
		"cat.csv":     []byte("url\na.arrow\nb.arrow\nc.arrow\nd.arrow\n"),
		"cat.json":    []byte(`[{"url":"a.arrow"},{"url":"b.arrow"},{"url":"c.arrow"},{"url":"d.arrow"}]`),
		"cat.jsonl":   []byte("{\"url\":\"a.arrow\"}\n{\"url\":\"b.arrow\"}\n{\"url\":\"c.arrow\"}\n{\"url\":\"d.arrow\"}\n"),
		"cat.parquet": parquettest.WriteArrow(t, rec),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, seg := range []string{"s1", "s2"} {
		for _, c := range []string{"a", "b"} {
			if err := os.MkdirAll(filepath.Join(dir, "objs", seg), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "objs", seg, c+".arrow"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tt := range []struct {
		name string
		src  Source
		what string // the catalog the error names
	}{
		{"csv", Source{Path: filepath.Join(dir, "cat.csv")}, filepath.Join(dir, "cat.csv")},
		{"json", Source{Path: filepath.Join(dir, "cat.json")}, filepath.Join(dir, "cat.json")},
		{"json lines", Source{Path: filepath.Join(dir, "cat.jsonl")}, filepath.Join(dir, "cat.jsonl")},
		{"parquet", Source{Path: filepath.Join(dir, "cat.parquet")}, filepath.Join(dir, "cat.parquet")},
		{"glob", Source{Path: dir + "/objs/*/*.arrow"}, dir + "/objs/*/*.arrow"},
		{"prefix", Source{Path: dir + "/objs/"}, dir + "/objs/"},
		{"rows", Source{Rows: []Row{{"url": "/a"}, {"url": "/b"}, {"url": "/c"}, {"url": "/d"}}}, "(LIST argument)"},
		{"urls", Source{URLs: []string{"/a", "/b", "/c", "/d"}}, "(LIST argument)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.src.MaxChunks = 4
			if chunks, err := resolveWith(t, tt.src); err != nil || len(chunks) != 4 {
				t.Fatalf("at the limit: %d chunks, %v", len(chunks), err)
			}
			tt.src.MaxChunks = 3
			_, err := resolveWith(t, tt.src)
			var ce *Error
			if !errors.Is(err, ErrTooLarge) || !errors.As(err, &ce) || ce.Catalog != tt.what || !strings.Contains(err.Error(), "more than 3") {
				t.Fatalf("over the limit: err = %v, want ErrTooLarge naming %s", err, tt.what)
			}
		})
	}
}

// TestCatalogLongCSVLine: a line longer than maxCSVLine is refused, naming
// it; one of exactly maxCSVLine bytes is read.
func TestCatalogLongCSVLine(t *testing.T) {
	long := "url\n/a.arrow\n/" + strings.Repeat("b", maxCSVLine) + "\n"
	_, err := Parse([]byte(long), CSV, "/c.csv")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("catalog /c.csv: bad catalog: CSV line 3 is longer than %d bytes", maxCSVLine)) {
		t.Fatalf("err = %v", err)
	}
	fits := "url\n/" + strings.Repeat("b", maxCSVLine-1) + "\r\n"
	if chunks, err := Parse([]byte(fits), CSV, "/c.csv"); err != nil || len(chunks) != 1 {
		t.Fatalf("a line of %d bytes: %d chunks, %v", maxCSVLine, len(chunks), err)
	}
}

// TestCatalogDeepJSON: nesting deeper than encoding/json takes is an
// error, not a stack overflow.
func TestCatalogDeepJSON(t *testing.T) {
	deep := `[{"url": "/a", "extra": ` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "}]"
	if _, err := Parse([]byte(deep), JSON, "/c.json"); err == nil || !strings.Contains(err.Error(), "bad catalog: JSON") {
		t.Fatalf("err = %v", err)
	}
}

// TestCappedBody: the cap passes a body of exactly max bytes with io.EOF
// in the read that ends it, and refuses a longer one without a read past
// max into the caller's buffer.
func TestCappedBody(t *testing.T) {
	for _, tt := range []struct {
		body string
		max  int64
		err  bool
	}{{"abcd", 4, false}, {"abcd", 5, false}, {"abcde", 4, true}, {"", 1, false}} {
		b := &cappedBody{body: io.NopCloser(strings.NewReader(tt.body)), left: tt.max, max: tt.max}
		buf := make([]byte, tt.max)
		n, total := 0, 0
		var err error
		for err == nil && total < len(buf) {
			n, err = b.Read(buf[total:])
			total += n
		}
		if err == nil {
			n, err = b.Read(make([]byte, 8))
		}
		var se *sizeError
		if tt.err != errors.As(err, &se) || (!tt.err && err.Error() != "EOF") || total != min(len(tt.body), int(tt.max)) {
			t.Errorf("%q capped at %d: %d bytes, %v", tt.body, tt.max, total, err)
		}
		if se != nil && (!errors.Is(err, ErrTooLarge) || !store.Permanent(err)) {
			t.Errorf("the size error is not ErrTooLarge or not permanent: %v", err)
		}
	}
}

// hinted is a body whose store gave its length.
type hinted struct {
	io.ReadCloser
	n int64
}

func (h hinted) LenHint() int64 { return h.n }

// TestCappedBodyLenHint: the cap passes on the length the store gave for
// a catalog's body (so that the read to its end is sized by it), never
// more than the cap, and says it knows none when the store gave none.
func TestCappedBodyLenHint(t *testing.T) {
	body := io.NopCloser(strings.NewReader("abcd"))
	for _, tt := range []struct {
		body io.ReadCloser
		max  int64
		want int64
	}{{hinted{body, 4}, 10, 4}, {hinted{body, 1 << 40}, 10, 10}, {body, 10, -1}, {hinted{body, -1}, 10, -1}} {
		var h store.LenHint = &cappedBody{body: tt.body, left: tt.max, max: tt.max}
		if got := h.LenHint(); got != tt.want {
			t.Errorf("%T capped at %d: hint %d, want %d", tt.body, tt.max, got, tt.want)
		}
	}
}
