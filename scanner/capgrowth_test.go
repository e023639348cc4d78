package scanner

import (
	"fmt"
	"testing"
	"time"
)

// TestCapProbeJudges: the probe's decisions over made-up windows. The
// warm-up window is never the baseline; a raise stays only when the
// windows after it are growthGain faster growthVerdicts times in a row, and a
// raise undone freezes the probe; a store without latency gets no trial.
func TestCapProbeJudges(t *testing.T) {
	const mib = 1 << 20
	t0 := time.Unix(0, 0)
	// run feeds one look per window of growthWindow: rates[i] MiB/s, a wait
	// in every window, IO free. It returns the caps set (0: none).
	latency := true
	run := func(rates ...float64) ([]int64, *capProbe) {
		k := &capProbe{step: 10 * mib}
		capNow, wire := int64(64*mib), int64(0)
		got := []int64{k.look(capLook{now: t0, cap: capNow, limit: 1 << 30, ioFree: true, latency: latency})}
		for i, r := range rates {
			wire += int64(r * mib * growthWindow.Seconds())
			c := k.look(capLook{now: t0.Add(time.Duration(i+1) * growthWindow), wire: wire, waits: int64(i + 1), cap: capNow, limit: 1 << 30, ioFree: true, latency: latency})
			if c > 0 {
				capNow = c
			}
			got = append(got, c)
		}
		return got, k
	}
	// A slow warm-up then a flat rate: one raise (judged against the
	// flat window, not the warm-up), undone after its first window, then
	// nothing.
	got, k := run(100, 1000, 1000, 1000, 1000, 1000)
	want := []int64{0, 0, 74 * mib, 64 * mib, 0, 0, 0}
	if fmt.Sprint(got) != fmt.Sprint(want) || !k.frozen || k.raises.Load() != 1 {
		t.Errorf("flat after warm-up: caps %v, want %v (frozen %v, raises %d)", got, want, k.frozen, k.raises.Load())
	}
	// One lucky window after the raise is not enough.
	got, _ = run(1000, 1000, 1200, 1000)
	want = []int64{0, 0, 74 * mib, 0, 64 * mib}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("one fast window: caps %v, want %v", got, want)
	}
	// A raise that pays twice stays, and the next is judged against the
	// faster rate.
	got, k = run(1000, 1000, 1200, 1200, 1250)
	want = []int64{0, 0, 74 * mib, 0, 84 * mib, 74 * mib}
	if fmt.Sprint(got) != fmt.Sprint(want) || k.raises.Load() != 2 {
		t.Errorf("paying raise: caps %v, want %v (raises %d)", got, want, k.raises.Load())
	}
	// A store without latency to hide (local files): no trial at all.
	latency = false
	got, k = run(1000, 1000, 1200, 1200, 1250)
	want = []int64{0, 0, 0, 0, 0, 0}
	if fmt.Sprint(got) != fmt.Sprint(want) || k.raises.Load() != 0 {
		t.Errorf("no latency: caps %v, want %v (raises %d)", got, want, k.raises.Load())
	}
}
