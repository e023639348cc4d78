package iosched_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/test/faultproxy"
)

// leakCheck registers the goroutine-leak check first, so it runs after all
// other cleanups (schedulers, stores, servers).
func leakCheck(t testing.TB) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// randomObjects returns n objects named obj-000.bin … of size bytes each.
func randomObjects(seed uint64, n, size int) map[string][]byte {
	r := rand.New(rand.NewPCG(seed, 99))
	m := make(map[string][]byte, n)
	for i := range n {
		b := make([]byte, size)
		for j := 0; j < size; j += 8 {
			v := r.Uint64()
			for k := 0; k < 8 && j+k < size; k++ {
				b[j+k] = byte(v >> (8 * k))
			}
		}
		m[fmt.Sprintf("obj-%03d.bin", i)] = b
	}
	return m
}

func writeDir(t testing.TB, objects map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range objects {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fileServer serves objects with net/http's file server on 127.0.0.1.
func fileServer(t testing.TB, objects map[string][]byte) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(writeDir(t, objects))))
	t.Cleanup(srv.Close)
	return srv.URL
}

// proxied puts a fault proxy in front of upstream.
func proxied(t testing.TB, upstream string, cfg faultproxy.Config) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(upstream, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// openStore opens the store of base (a URL ending in '/') and returns it
// with the name prefix of its objects.
func openStore(t testing.TB, base string, opts store.Options) (store.Store, string) {
	t.Helper()
	st, name, err := store.Open(base, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, name
}

func newScheduler(t testing.TB, o iosched.Options) *iosched.Scheduler {
	s := iosched.New(o)
	t.Cleanup(func() { s.Close() })
	return s
}

func sum(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

// memStore is an in-memory store whose GETs take delay, or wait until gate
// is closed (honouring ctx), and that records the order and concurrency of
// GETs.
type memStore struct {
	objects map[string][]byte
	delay   func(name string, off int64) time.Duration
	gate    chan struct{} // if set, every GET waits until the test closes it

	mu       sync.Mutex
	order    []string // "name@off" in the order GETs started
	cur, max int
	gets     int
}

func (m *memStore) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	m.mu.Lock()
	m.order = append(m.order, fmt.Sprintf("%s@%d", name, off))
	m.gets++
	m.cur++
	m.max = max(m.max, m.cur)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.cur--
		m.mu.Unlock()
	}()
	if m.gate != nil {
		select {
		case <-m.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if m.delay != nil {
		if d := m.delay(name, off); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	data, ok := m.objects[name]
	if !ok {
		return nil, &store.RequestError{Op: "GET", URL: m.URL(name), Err: store.ErrNotFound}
	}
	if length < 0 {
		length = int64(len(data)) - off
	}
	if off+length > int64(len(data)) {
		return nil, &store.RequestError{Op: "GET", URL: m.URL(name), Err: store.ErrOutOfRange}
	}
	return io.NopCloser(bytes.NewReader(data[off : off+length])), nil
}

func (m *memStore) Size(ctx context.Context, name string) (int64, error) {
	return int64(len(m.objects[name])), nil
}
func (m *memStore) List(ctx context.Context, prefix string) ([]store.ObjectInfo, error) {
	return nil, store.ErrUnsupported
}
func (m *memStore) IsNotFound(err error) bool { return false }
func (m *memStore) URL(name string) string    { return "mem://" + name }
func (m *memStore) Close() error              { return nil }

func (m *memStore) snapshot() (order []string, maxConc, gets int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.order...), m.max, m.gets
}

// wholeReqs returns one request per object, whole, in name order.
func wholeReqs(st store.Store, prefix string, objects map[string][]byte, q uint64) []iosched.Request {
	var reqs []iosched.Request
	for i := range len(objects) {
		name := fmt.Sprintf("obj-%03d.bin", i)
		reqs = append(reqs, iosched.Request{Store: st, Name: prefix + name, Length: int64(len(objects[name])),
			Priority: iosched.Priority{Query: q, Seq: int64(i)}})
	}
	return reqs
}

// eventually polls cond every 2 ms for up to d and reports whether it
// held: every caller asserts the result (a test that waits for a condition
// and then ignores it passes whether or not the condition was reached).
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return cond()
}
