package iosched_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// A read to the end of an object whose body never ends stops at
// Options.MaxReadToEnd with ErrTooLarge, once (never retried), instead of
// growing its buffer until the process runs out of memory.
func TestReadToEndIsBounded(t *testing.T) {
	leakCheck(t)
	const limit = 1 << 20
	var gets, sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		chunk := make([]byte, 32<<10)
		for r.Context().Err() == nil && sent.Load() < 64*limit { // endless, as far as the client can tell
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	st, name, err := store.Open(srv.URL+"/endless.arrow", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := newScheduler(t, iosched.Options{MaxReadToEnd: limit, Parallelism: 1})
	_, err = s.Fetch(context.Background(), []iosched.Request{{Store: st, Name: name, Length: -1}})
	if !errors.Is(err, iosched.ErrTooLarge) {
		t.Fatalf("an endless body read to the end: %v, want ErrTooLarge", err)
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("%d GETs, want 1: a body too large is not retried", n)
	}
	if n := sent.Load(); n >= 16*limit {
		t.Errorf("the server sent %d bytes before the client stopped, want about %d", n, limit)
	}
}

// A read to the end of an object whose answer gives its length is read
// into a buffer of that length (and one byte to see the end), not into one
// grown by doubling: a catalog of a few MiB would otherwise hold up to
// twice its size while it is parsed. The bytes are the object's, whether
// or not the server gives the length.
func TestReadToEndSizedByContentLength(t *testing.T) {
	leakCheck(t)
	obj := make([]byte, 3<<20+12345)
	for i := range obj {
		obj[i] = byte(i * 7)
	}
	for _, chunked := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if chunked {
				// No Content-Length: the body's length is unknown.
				w.Write(obj[:1000])
				w.(http.Flusher).Flush()
				w.Write(obj[1000:])
				return
			}
			http.ServeContent(w, r, "obj", time.Time{}, bytes.NewReader(obj))
		}))
		st, name, err := store.Open(srv.URL+"/obj.arrow", store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := newScheduler(t, iosched.Options{Parallelism: 1})
		got, err := s.Fetch(context.Background(), []iosched.Request{{Store: st, Name: name, Length: -1}})
		st.Close()
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[0], obj) {
			t.Fatalf("chunked %v: read %d bytes, not the object's %d", chunked, len(got[0]), len(obj))
		}
		if c := cap(got[0]); !chunked && c != len(obj)+1 {
			t.Errorf("a body of %d bytes with its length given was read into a buffer of %d", len(obj), c)
		}
	}
}
