package faultproxy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/remote-segments/remote_segments/test/faultproxy"
)

func leakCheck(t *testing.T) { t.Cleanup(func() { goleak.VerifyNone(t) }) }

var payload = bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB

func setup(t *testing.T, cfg faultproxy.Config) (*faultproxy.Proxy, *http.Client) {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "obj", time.Time{}, bytes.NewReader(payload))
	}))
	t.Cleanup(up.Close)
	p, err := faultproxy.New(up.URL, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return p, &http.Client{Transport: tr}
}

func get(ctx context.Context, c *http.Client, url string) (int, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func TestFaults(t *testing.T) {
	leakCheck(t)
	p, c := setup(t, faultproxy.Config{StallFor: 20 * time.Millisecond, Rule: func(r *http.Request, n int64) (faultproxy.Fault, bool) {
		switch r.URL.Path {
		case "/slowdown":
			return faultproxy.Fault{Kind: faultproxy.SlowDown}, true
		case "/forbidden":
			return faultproxy.Fault{Kind: faultproxy.Status, Status: 403}, true
		case "/reset":
			return faultproxy.Fault{Kind: faultproxy.Reset, After: 100 << 10}, true
		case "/short":
			return faultproxy.Fault{Kind: faultproxy.Short, After: -1}, true
		case "/stall":
			return faultproxy.Fault{Kind: faultproxy.Stall, After: 1000}, true
		}
		return faultproxy.Fault{}, true
	}})
	ctx := context.Background()

	code, body, err := get(ctx, c, p.URL+"/ok")
	if err != nil || code != 200 || !bytes.Equal(body, payload) {
		t.Fatalf("clean GET: %d, %d bytes, %v", code, len(body), err)
	}
	code, body, _ = get(ctx, c, p.URL+"/slowdown")
	if code != 503 || !strings.Contains(string(body), "<Code>SlowDown</Code>") {
		t.Fatalf("slowdown: %d %s", code, body)
	}
	code, _, _ = get(ctx, c, p.URL+"/forbidden")
	if code != 403 {
		t.Fatalf("forbidden: %d", code)
	}
	for _, path := range []string{"/reset", "/short"} {
		_, body, err = get(ctx, c, p.URL+path)
		if err == nil || len(body) >= len(payload) {
			t.Fatalf("%s: got %d bytes, err %v; want a broken body", path, len(body), err)
		}
	}
	// A stall of 20ms resumes and delivers everything.
	code, body, err = get(ctx, c, p.URL+"/stall")
	if err != nil || code != 200 || !bytes.Equal(body, payload) {
		t.Fatalf("stall that resumes: %d, %d bytes, %v", code, len(body), err)
	}
	st := p.Stats()
	if st.Requests != 6 || st.Faults[faultproxy.Reset] != 1 || st.Faults[faultproxy.Stall] != 1 || p.Count("/reset") != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestStallUntilClientGivesUp(t *testing.T) {
	leakCheck(t)
	p, c := setup(t, faultproxy.Config{Stall: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, body, err := get(ctx, c, p.URL+"/x")
	if !errors.Is(err, context.DeadlineExceeded) || len(body) >= len(payload) {
		t.Fatalf("stalled GET: %d bytes, %v", len(body), err)
	}
}

func TestInFlight(t *testing.T) {
	leakCheck(t)
	p, c := setup(t, faultproxy.Config{Latency: 50 * time.Millisecond})
	p.StartWindow()
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { get(context.Background(), c, p.URL+"/x") })
	}
	wg.Wait()
	end := time.Now()
	avg, max, _ := p.Window()
	st := p.Stats()
	if st.MaxInFlight != 4 || max != 4 || st.InFlight != 0 {
		t.Fatalf("max in flight %d (window %d), now %d; want 4, 4, 0", st.MaxInFlight, max, st.InFlight)
	}
	if avg <= 0 || avg > 4 {
		t.Fatalf("window average %v", avg)
	}
	if a := faultproxy.Average(p.Events(), start, end); a <= 0 || a > 4 {
		t.Fatalf("Average = %v", a)
	}
}

func TestSeededProbabilities(t *testing.T) {
	leakCheck(t)
	p, c := setup(t, faultproxy.Config{SlowDown: 0.5, Seed: 7})
	var got503 int
	for range 40 {
		if code, _, _ := get(context.Background(), c, p.URL+"/x"); code == 503 {
			got503++
		}
	}
	if got503 < 8 || got503 > 32 || int64(got503) != p.Stats().Faults[faultproxy.SlowDown] {
		t.Fatalf("%d of 40 requests got 503 (counted %d)", got503, p.Stats().Faults[faultproxy.SlowDown])
	}
}

func TestAverage(t *testing.T) {
	leakCheck(t)
	t0 := time.Unix(0, 0)
	ev := []faultproxy.Sample{{t0, 2}, {t0.Add(time.Second), 4}, {t0.Add(2 * time.Second), 0}}
	if a := faultproxy.Average(ev, t0, t0.Add(2*time.Second)); a != 3 {
		t.Fatalf("Average = %v, want 3", a)
	}
	if a := faultproxy.Average(ev, t0.Add(500*time.Millisecond), t0.Add(4*time.Second)); a != (2*0.5+4)/3.5 {
		t.Fatalf("Average = %v", a)
	}
}

// TestCapacity: with Capacity 2, a third GET while two are being served is
// answered 503 SlowDown with the configured Retry-After; once they are
// done, GETs pass again.
func TestCapacity(t *testing.T) {
	leakCheck(t)
	entered := make(chan struct{})
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(up.Close)
	p, err := faultproxy.New(up.URL, faultproxy.Config{Capacity: 2, RetryAfter: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}

	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if code, _, err := get(context.Background(), c, p.URL+"/block"); err != nil || code != 200 {
				t.Errorf("blocked GET: %d %v", code, err)
			}
		})
	}
	<-entered
	<-entered // both are being served now
	resp, err := c.Get(p.URL + "/third")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "SlowDown") || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("third GET: %d %q Retry-After %q, want 503 SlowDown with Retry-After 2", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	close(release)
	wg.Wait()
	if code, b, err := get(context.Background(), c, p.URL+"/after"); err != nil || code != 200 || string(b) != "ok" {
		t.Fatalf("GET after the others finished: %d %q %v", code, b, err)
	}
	if st := p.Stats(); st.OverCapacity != 1 || st.Faults[faultproxy.SlowDown] != 1 {
		t.Fatalf("over capacity %d, slowdowns %d; want 1 and 1", st.OverCapacity, st.Faults[faultproxy.SlowDown])
	}
}
