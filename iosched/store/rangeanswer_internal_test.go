package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// rangeAnswer is how the server of TestRangeAnswers answers a GET: its
// status, its Content-Range ("" for none) and the bytes of the object it
// sends, from and to (to exclusive).
type rangeAnswer struct {
	status       int
	contentRange string
	from, to     int
	chunked      bool // no Content-Length: the body is sent chunked
}

// TestRangeAnswers: the bytes of a ranged GET are the range asked, or the
// read fails naming the object, through the HTTP store and the S3 store
// alike. A 206 answer whose Content-Range is missing, another range than
// the one asked, or of another length than its body, would give other
// bytes at the same offsets, which nothing after the read can tell: it
// fails. Fewer bytes than asked are an out-of-range read only where the
// answer says the object ends there.
func TestRangeAnswers(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	object := []byte(strings.Repeat("0123456789abcdefghij", 5)) // 100 bytes
	var mu sync.Mutex
	var next rangeAnswer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		a := next
		mu.Unlock()
		if a.contentRange != "" {
			w.Header().Set("Content-Range", a.contentRange)
		}
		w.Header().Set("ETag", `"v1"`)
		body := object[a.from:a.to]
		if !a.chunked {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.WriteHeader(a.status)
		w.Write(body)
		if a.chunked {
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	httpSt, httpName, err := Open(srv.URL+"/data/k", Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { httpSt.(*httpStore).Close() })
	stores := map[string]Store{"http": httpSt, "s3": s3At(t, srv, "http://127.0.0.1:1", "path")}
	names := map[string]string{"http": httpName, "s3": "bkt/data/k"}
	for _, c := range []struct {
		name        string
		off, length int64
		a           rangeAnswer
		want        string // "" : the read gives object[off:off+length]
		is          error
	}{
		{name: "the range asked", off: 10, length: 20, a: rangeAnswer{206, "bytes 10-29/100", 10, 30, false}},
		{name: "the range asked, chunked", off: 10, length: 20, a: rangeAnswer{206, "bytes 10-29/100", 10, 30, true}},
		{name: "the range asked, size unknown", off: 10, length: 20, a: rangeAnswer{206, "bytes 10-29/*", 10, 30, false}},
		{name: "to the end", off: 90, length: -1, a: rangeAnswer{206, "bytes 90-99/100", 90, 100, false}},
		{name: "unit in capitals", off: 0, length: 5, a: rangeAnswer{206, "BYTES 0-4/100", 0, 5, false}},
		{name: "another range", off: 10, length: 20, a: rangeAnswer{206, "bytes 0-19/100", 0, 20, false}, want: "another range"},
		{name: "another range, chunked", off: 10, length: 20, a: rangeAnswer{206, "bytes 0-19/100", 0, 20, true}, want: "another range"},
		{name: "no Content-Range", off: 10, length: 20, a: rangeAnswer{206, "", 10, 30, false}, want: "another range"},
		{name: "more than asked", off: 10, length: 20, a: rangeAnswer{206, "bytes 10-39/100", 10, 40, false}, want: "another range"},
		{name: "body of another length", off: 10, length: 20, a: rangeAnswer{206, "bytes 10-29/100", 10, 25, false}, want: "another range"},
		{name: "ends before it starts", off: 10, length: 20, a: rangeAnswer{206, "bytes 29-10/100", 10, 30, false}, want: "another range"},
		{name: "past the object's end", off: 10, length: 20, a: rangeAnswer{206, "bytes 10-29/20", 10, 30, false}, want: "another range"},
		{name: "signed numbers", off: 10, length: 20, a: rangeAnswer{206, "bytes +10-29/100", 10, 30, false}, want: "another range"},
		{name: "unsatisfied form", off: 10, length: 20, a: rangeAnswer{206, "bytes */100", 10, 30, false}, want: "another range"},
		{name: "another unit", off: 10, length: 20, a: rangeAnswer{206, "items 10-29/100", 10, 30, false}, want: "another range"},
		{name: "the object ends there", off: 90, length: 20, a: rangeAnswer{206, "bytes 90-99/100", 90, 100, false}, is: ErrOutOfRange},
		{name: "fewer, the object has more", off: 10, length: 20, a: rangeAnswer{206, "bytes 10-19/100", 10, 20, false}, want: "fewer bytes"},
		{name: "fewer, size unknown", off: 10, length: 20, a: rangeAnswer{206, "bytes 10-19/*", 10, 20, false}, want: "fewer bytes"},
	} {
		for _, kind := range []string{"http", "s3"} {
			mu.Lock()
			next = c.a
			mu.Unlock()
			got, err := readRange(stores[kind], names[kind], c.off, c.length)
			if c.want == "" && c.is == nil {
				end := c.off + c.length
				if c.length < 0 {
					end = int64(len(object))
				}
				if err != nil || !bytes.Equal(got, object[c.off:end]) {
					t.Errorf("%s, %s: %q, %v; want %q", kind, c.name, got, err, object[c.off:end])
				}
				continue
			}
			var re *RequestError
			switch {
			case err == nil:
				t.Errorf("%s, %s: read %q, want an error", kind, c.name, got)
			case !errors.As(err, &re) || !strings.Contains(err.Error(), "data/k"):
				t.Errorf("%s, %s: %v does not name the object", kind, c.name, err)
			case c.is != nil && !errors.Is(err, c.is):
				t.Errorf("%s, %s: %v, want %v", kind, c.name, err, c.is)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Errorf("%s, %s: %q, want %q in it", kind, c.name, err, c.want)
			}
		}
	}
}

// readRange reads length bytes at off of name (to the end if length < 0).
func readRange(st Store, name string, off, length int64) ([]byte, error) {
	body, err := st.GetRange(context.Background(), name, off, length)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}
