package main

import "testing"

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
