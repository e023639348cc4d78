package iosched_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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
}

func (v *versionedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	data, version := v.data, v.version
	v.gets++
	if v.next != nil {
		v.data, v.version, v.next = v.next, v.version+1, nil
	}
	v.mu.Unlock()
	w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, version))
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
}
