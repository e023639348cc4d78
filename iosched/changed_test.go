package iosched_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/test/faultproxy"
)

// versionedServer serves one object, obj-000.bin, in ranges with an ETag
// of its version, and replaces it by next once the first GET has been
// answered: an object overwritten while a scan reads it.
type versionedServer struct {
	mu      sync.Mutex
	data    []byte
	version int
	next    []byte
	gets    int
	etag    string // in the ETag before the version
}

func (v *versionedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	data, version := v.data, v.version
	etag := v.etag
	v.gets++
	if v.next != nil {
		v.data, v.version, v.next = v.next, v.version+1, nil
	}
	v.mu.Unlock()
	w.Header().Set("ETag", fmt.Sprintf(`"%sv%d"`, etag, version))
	http.ServeContent(w, r, "obj-000.bin", time.Time{}, bytes.NewReader(data))
}

// TestChangedWhileRead: a GET cut short mid-body is resumed after the bytes
// it gave; where the object was overwritten in between, the rest is of
// the new version, and the range is read again from its start instead of
// being made of two versions. An object that did not change is resumed
// (TestResetRetriedAtOnce).
func TestChangedWhileRead(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(41, 2, 64<<10)
	before, after := objects["obj-000.bin"], objects["obj-001.bin"]
	srv := &versionedServer{data: before, next: after}
	upstream := httptest.NewServer(srv)
	t.Cleanup(upstream.Close)
	reset := faultproxy.Fault{Kind: faultproxy.Reset, After: 10 << 10}
	p := proxied(t, upstream.URL, faultproxy.Config{Rule: firstFaults("/obj-000.bin", faultproxy.Fault{}, reset)})
	st, pre := openStore(t, p.URL+"/", store.Options{})
	s := newScheduler(t, iosched.Options{Parallelism: 1, NoHedge: true, CoalesceGap: -1, Backoff: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := s.Fetch(ctx, []iosched.Request{{Store: st, Name: pre + "obj-000.bin", Length: int64(len(after))}})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case bytes.Equal(got[0], after):
	case bytes.Equal(got[0][:10<<10], before[:10<<10]) && bytes.Equal(got[0][10<<10:], after[10<<10:]):
		t.Fatal("the range is the first version's first 10 KiB and the second version's rest")
	default:
		t.Fatal("the range is neither version of the object")
	}
	srv.mu.Lock()
	gets := srv.gets
	srv.mu.Unlock()
	if gets != 3 {
		t.Fatalf("%d GETs, want 3: the one cut short, its resume (of the new version), the whole range again", gets)
	}

	// With one retry (the resume), the read fails saying so, with the server's two
	// versions quoted and cut short (an ETag is the server's words).
	srv.mu.Lock()
	srv.data, srv.next, srv.version, srv.etag = before, after, 0, strings.Repeat("e", 100)
	srv.mu.Unlock()
	p2 := proxied(t, upstream.URL, faultproxy.Config{Rule: firstFaults("/obj-000.bin", faultproxy.Fault{}, reset)})
	st2, pre2 := openStore(t, p2.URL+"/", store.Options{})
	s2 := newScheduler(t, iosched.Options{Parallelism: 1, NoHedge: true, CoalesceGap: -1, Backoff: time.Millisecond, Retries: 1})
	_, err = s2.Fetch(ctx, []iosched.Request{{Store: st2, Name: pre2 + "obj-000.bin", Length: int64(len(after))}})
	if !errors.Is(err, iosched.ErrChanged) || strings.Count(err.Error(), strings.Repeat("e", 50)+"…") != 2 || strings.Contains(err.Error(), strings.Repeat("e", 70)) {
		t.Fatalf("%v: want ErrChanged naming both versions, each cut short", err)
	}
}

// TestPartsOfOneVersion: a range longer than RequestSize is read in parts,
// each a GET of its own; where the object is overwritten after the first
// part was read, the read fails saying so instead of joining parts of two
// versions.
func TestPartsOfOneVersion(t *testing.T) {
	leakCheck(t)
	objects := randomObjects(43, 2, 64<<10)
	before, after := objects["obj-000.bin"], objects["obj-001.bin"]
	for _, changed := range []bool{false, true} {
		srv := &versionedServer{data: before}
		if changed {
			srv.next = after
		}
		upstream := httptest.NewServer(srv)
		t.Cleanup(upstream.Close)
		st, pre := openStore(t, upstream.URL+"/", store.Options{})
		s := newScheduler(t, iosched.Options{Parallelism: 1, NoHedge: true, CoalesceGap: -1, RequestSize: 16 << 10, Backoff: time.Millisecond})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		got, err := s.Fetch(ctx, []iosched.Request{{Store: st, Name: pre + "obj-000.bin", Length: 64 << 10}})
		cancel()
		switch {
		case !changed && (err != nil || !bytes.Equal(got[0], before)):
			t.Fatalf("unchanged: %v, or wrong bytes", err)
		case changed && err == nil:
			t.Fatalf("the object changed after the first of 4 parts: read %d bytes (%v the new version's), want ErrChanged",
				len(got[0]), bytes.Equal(got[0][16<<10:], after[16<<10:]))
		case changed && !errors.Is(err, iosched.ErrChanged):
			t.Fatalf("changed: %v, want ErrChanged", err)
		}
	}
}
