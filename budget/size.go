package budget

import "math"

// Defaults of the adaptive cap computed by Size.
const (
	// DefaultFraction is the share of a query's total decoded bytes the
	// budget may hold at once.
	DefaultFraction = 0.25
	// DefaultMin is the smallest adaptive cap: 64 MiB.
	DefaultMin int64 = 64 << 20
	// DefaultMax is the largest adaptive cap: 1 GiB.
	DefaultMax int64 = 1 << 30
)

// Size returns the adaptive cap for a query that reads totalQueryBytes bytes:
// totalQueryBytes × fraction, clamped into [minCap, maxCap] and rounded down to a
// whole byte.
//
// A fraction that is not a positive finite number means DefaultFraction; a minCap or
// maxCap that is zero or negative means DefaultMin or DefaultMax. If minCap
// ends up above maxCap, maxCap wins: the result is never above it. A negative
// totalQueryBytes means the total is unknown and gives maxCap; zero gives
// minCap.
func Size(totalQueryBytes int64, fraction float64, minCap, maxCap int64) int64 {
	if !(fraction > 0) || math.IsInf(fraction, 1) {
		fraction = DefaultFraction
	}
	if minCap <= 0 {
		minCap = DefaultMin
	}
	if maxCap <= 0 {
		maxCap = DefaultMax
	}
	if minCap > maxCap {
		minCap = maxCap
	}
	if totalQueryBytes < 0 {
		return maxCap
	}
	want := math.Floor(float64(totalQueryBytes) * fraction)
	switch {
	case want <= float64(minCap):
		return minCap
	case want >= float64(maxCap): // also catches +Inf
		return maxCap
	}
	return int64(want)
}
