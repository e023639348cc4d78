package heapfloor

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestPercentFor(t *testing.T) {
	for _, tt := range []struct {
		floor, live int64
		want        int
	}{
		{16 << 20, 0, 400},                 // before the first cycle: the runtime's 4 MiB minimum
		{16 << 20, 1 << 20, 400},           // below the minimum: the minimum's percent
		{16 << 20, 8 << 20, 200},           // 8 MiB live + 16 MiB
		{16 << 20, 16 << 20, 100},          // the floor is the default's growth
		{16 << 20, 1 << 30, 100},           // never below the default
		{1 << 40, 4 << 20, maxPercent},     // bounded
		{4 << 20, 4 << 20, defaultPercent}, // a floor the runtime gives anyway
	} {
		if got := percentFor(tt.floor, tt.live); got != tt.want {
			t.Errorf("percentFor(%d, %d) = %d, want %d", tt.floor, tt.live, got, tt.want)
		}
	}
}

// TestStartStop: Start sets the percent for the live heap and again after
// each collection; Stop gives back the percent there was before, and no
// later collection changes it.
func TestStartStop(t *testing.T) {
	before := debug.SetGCPercent(70)
	defer debug.SetGCPercent(before)
	stop := Start(64 << 20)
	if p := Percent(); p < 100 {
		t.Fatalf("after Start: percent %d, want at least 100", p)
	}
	if again := Start(1 << 20); Percent() < 100 {
		t.Fatal("a second Start replaced the first")
	} else {
		again() // a no-op
	}
	if p := Percent(); p < 100 {
		t.Fatalf("after the second Start's stop: percent %d", p)
	}
	// Grow the live heap past the floor: after a collection the percent
	// falls to the default.
	keep := make([][]byte, 0, 96)
	for range 96 {
		keep = append(keep, make([]byte, 1<<20))
	}
	for range 20 {
		runtime.GC()
		if Percent() == defaultPercent {
			break
		}
		runtime.Gosched()
	}
	if p := Percent(); p != defaultPercent {
		t.Errorf("with %d MiB live and a 64 MiB floor: percent %d, want %d", len(keep), p, defaultPercent)
	}
	runtime.KeepAlive(keep)
	stop()
	if p := Percent(); p != -1 {
		t.Errorf("after stop: Percent() = %d, want -1", p)
	}
	keep = nil
	runtime.GC()
	runtime.GC()
	if p := debug.SetGCPercent(70); p != 70 {
		t.Errorf("after stop: the runtime's percent is %d, want the 70 there was before Start", p)
	}
}
