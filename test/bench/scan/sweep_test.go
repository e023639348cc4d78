package main

import (
	"math"
	"testing"
	"time"
)

// TestDefaultMet: the default-budget goal allows the run-to-run spread of
// the best budget's own peak RSS, and nothing beyond it or below 0.95 of
// its throughput.
func TestDefaultMet(t *testing.T) {
	const mib = 1 << 20
	best := sweepSummary{defBest: 0.98, defRSS: 121.3 * mib, bestRSS: 121.1 * mib, bestRSSHi: 122 * mib}
	for _, c := range []struct {
		name   string
		change func(*sweepSummary)
		want   bool
	}{
		{"the same cap, a fraction of a MiB more than the best's median", func(*sweepSummary) {}, true},
		{"more than any run of the best", func(s *sweepSummary) { s.defRSS = 123 * mib }, false},
		{"slower than 0.95 of the best", func(s *sweepSummary) { s.defBest = 0.94 }, false},
	} {
		s := best
		c.change(&s)
		if got := s.defaultMet(); got != c.want {
			t.Errorf("%s: defaultMet() = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDefaultAgainstBestOfOtherRounds: each round's default ÷ best takes
// the best from the other rounds. Budget b leads the default by 20 % in
// three rounds and trails it by 22 % in two; picked over every round it is
// "the best" (median 120 against 100) and the default looks 0.83 of it,
// but in the three rounds where it led, the other four rounds make the
// default the best.
func TestDefaultAgainstBestOfOtherRounds(t *testing.T) {
	const size = 100 << 20 // 100 MiB: a run of s seconds is 100/s MiB/s
	runs := func(rates ...float64) []usage {
		u := make([]usage, len(rates))
		for i, r := range rates {
			u[i].wall = time.Duration(float64(time.Second) * 100 / r)
		}
		return u
	}
	b := sweepPoint{label: "b", fast: runs(120, 120, 120, 78, 78)}
	others := sweepPoint{label: "64MiB", fast: runs(90, 90, 90, 90, 90)}
	def := sweepPoint{label: "default", fast: runs(100, 100, 100, 100, 100)}
	pts := []sweepPoint{others, b, others, others, def}
	s := summarize(pts, size)
	if s.best.label != "b" {
		t.Errorf("best over every round = %s, want b", s.best.label)
	}
	if math.Abs(s.defBest-1) > 1e-9 {
		t.Errorf("default ÷ best = %.3f, want 1 (the default is the best of the other rounds in rounds 1-3)", s.defBest)
	}
	if math.Abs(s.defHi-100.0/78) > 1e-9 || math.Abs(s.defBestLo-1) > 1e-9 {
		t.Errorf("default ÷ best spread = %.3f–%.3f, want 1–%.3f", s.defBestLo, s.defHi, 100.0/78)
	}
}
