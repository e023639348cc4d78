package iosched

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestAIMDSteps checks the arithmetic with explicit times: halve once per
// round of GETs, never below 1, grow by one per clean interval, never above
// the parallelism.
func TestAIMDSteps(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	s := New(Options{Parallelism: 16, AIMDInterval: time.Second})
	defer s.Close()
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	s.mu.Lock()
	defer s.mu.Unlock()
	step := func(issued, now, want int) {
		t.Helper()
		s.throttledLocked(at(issued), at(now))
		if s.limit != want {
			t.Fatalf("after a throttle at %d ms of a GET sent at %d ms: limit %d, want %d", now, issued, s.limit, want)
		}
	}
	step(0, 10, 8)
	step(1, 11, 8) // sent before the halving at 10 ms: same round
	step(20, 30, 4)
	step(40, 50, 2)
	step(60, 70, 1)
	step(80, 90, 1) // not below 1
	grow := func(now, want int) {
		t.Helper()
		s.growLocked(at(now))
		if s.limit != want {
			t.Fatalf("at %d ms: limit %d, want %d", now, s.limit, want)
		}
	}
	grow(1089, 1) // the interval since the last throttle (90 ms) is not over
	grow(1090, 2)
	grow(4090, 5)
	s.throttledLocked(at(85), at(4100)) // sent before the last halving: no halving, but the interval restarts
	grow(5000, 5)
	grow(5100, 6)
	grow(60000, 16) // not above the parallelism
}
