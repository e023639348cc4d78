package iosched

import (
	"errors"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// TestRetryDelay: a GET throttled again and again waits at most half the
// first retry's back-off while the throttling is random (no cut in force),
// and exponentially more otherwise; a longer Retry-After wins either way.
func TestRetryDelay(t *testing.T) {
	s := New(Options{Parallelism: 4, Backoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second, FirstByteTimeout: 5 * time.Second})
	defer s.Close()
	throttled := errors.New("x") // RetryAfter finds none
	for attempts := 1; attempts <= 6; attempts++ {
		for range 20 { // the jitter: every draw within its bounds
			if d := s.retryDelay(attempts, throttled, true); d < 0 || d > 50*time.Millisecond {
				t.Fatalf("random throttling, attempt %d: waits %v, want 0-50ms", attempts, d)
			}
			full := 100 * time.Millisecond << (attempts - 1)
			if d := s.retryDelay(attempts, throttled, false); d < full/2 || d > full {
				t.Fatalf("attempt %d: waits %v, want %v-%v", attempts, d, full/2, full)
			}
		}
	}
	asked := &store.RequestError{Op: "GET", URL: "s3://b/k", Status: 503, Err: store.ErrThrottled, RetryAfter: 2 * time.Second}
	if d := s.retryDelay(1, asked, true); d != 2*time.Second {
		t.Fatalf("Retry-After 2s: waits %v", d)
	}
}

// TestRandomThrottleNoCut: while the controller has cut nothing, or less
// than a quarter, a throttle counts as random for the back-off; after a
// larger cut it does not.
func TestRandomThrottleNoCut(t *testing.T) {
	c := newCongestion(16, time.Second, time.Now())
	if c.limit < c.p || !c.random() {
		t.Fatal("a new controller starts cut")
	}
	c.setLimit(13)
	if !c.random() {
		t.Fatal("a cut of 3 of 16 (what random throttling trips now and then) made throttles non-random")
	}
	c.setLimit(16)
	simulate(c, time.Now(), 20, 10*time.Millisecond, func(limit, i int) bool { return i >= 4 }) // serves 4 of 16
	if c.random() {
		t.Fatalf("a store serving 4 of 16 left the limit at %d: the back-off would stay flat", c.limit)
	}
}
