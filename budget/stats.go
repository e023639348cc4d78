package budget

import (
	"fmt"
	"time"
)

// Stats is a snapshot of a budget's state and counters. Byte totals of a
// parent include the requests of its children; Waits, Cancels, TotalWait,
// MaxWait and Multiplier belong to the budget the requests were made on.
//
// INVARIANT: InUse == Reserved + Grown - Refunded - Released.
type Stats struct {
	Cap   int64 // capacity in bytes
	InUse int64 // bytes held now, including requests that passed this level and wait at a parent
	Peak  int64 // highest InUse seen

	Reserved  int64 // bytes granted by Reserve and TryReserve (estimates)
	Committed int64 // sum of the actual sizes passed to Commit
	Grown     int64 // bytes added by commits larger than their estimate
	Refunded  int64 // bytes returned by commits smaller than their estimate
	Released  int64 // bytes given back by Release, Close and cancelled requests

	Releases int64 // Release and Close calls that gave bytes back
	Queued   int   // requests parked in this budget's queue now
	Growing  int   // Extend calls parked at this budget now

	Waits     int64         // Reserve calls that had to wait
	GrowWaits int64         // Extend calls that had to wait
	Cancels   int64         // Reserve and Extend calls that returned ctx.Err()
	TotalWait time.Duration // time spent waiting, summed over Reserve and Extend calls
	MaxWait   time.Duration // longest single wait

	OversizeAdmits int64 // requests larger than Cap admitted alone
	Overcommits    int64 // Commit, Grow and head-of-line Extend calls that left InUse above Cap

	Multiplier float64 // current decoded/wire ratio estimate

	// Bypasses counts requests of a budget below that held nothing here,
	// granted past the queue and the cap so that none waits on the others
	// forever (see WithIdlePass).
	Bypasses int64
}

// Stats returns a consistent snapshot of b's counters.
func (b *Budget) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Stats{
		Cap:            b.capacity,
		InUse:          b.inUse,
		Peak:           b.peak,
		Reserved:       b.reserved,
		Committed:      b.committed,
		Grown:          b.grown,
		Refunded:       b.refunded,
		Released:       b.released,
		Releases:       b.releases,
		Queued:         b.queue.len,
		Growing:        b.growers.len,
		GrowWaits:      b.growWaits,
		Waits:          b.waits,
		Cancels:        b.cancels,
		TotalWait:      b.totalWait,
		MaxWait:        b.maxWait,
		OversizeAdmits: b.oversizeAdmits,
		Overcommits:    b.overcommits,
		Multiplier:     b.mult,
		Bypasses:       b.bypasses,
	}
}

// String returns a one-line summary of b's Stats.
func (b *Budget) String() string { return b.Stats().String() }

// String returns a one-line summary such as
//
//	budget cap=64.0MiB in_use=0B peak=63.1MiB (98.6%) waits=120 wait=1.2s max_wait=40ms oversize=0 overcommit=0 ratio=1.42 reserved=1.2GiB committed=1.1GiB released=1.1GiB
func (s Stats) String() string {
	pct := ""
	if s.Cap > 0 {
		pct = fmt.Sprintf(" (%.1f%%)", 100*float64(s.Peak)/float64(s.Cap))
	}
	return fmt.Sprintf("budget cap=%s in_use=%s peak=%s%s waits=%d wait=%s max_wait=%s oversize=%d overcommit=%d ratio=%.2f reserved=%s committed=%s released=%s",
		formatBytes(s.Cap), formatBytes(s.InUse), formatBytes(s.Peak), pct,
		s.Waits, s.TotalWait.Round(time.Millisecond), s.MaxWait.Round(time.Millisecond),
		s.OversizeAdmits, s.Overcommits, s.Multiplier,
		formatBytes(s.Reserved), formatBytes(s.Committed), formatBytes(s.Released))
}

// formatBytes renders n in binary units with one decimal: 512B, 1.5KiB, 64.0MiB.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%dB", n)
	}
	v, i := float64(n)/unit, 0
	for ; (v >= unit || v <= -unit) && i < 5; i++ {
		v /= unit
	}
	return fmt.Sprintf("%.1f%ciB", v, "KMGTPE"[i])
}
