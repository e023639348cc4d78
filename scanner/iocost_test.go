package scanner

import (
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched"
)

// TestProjectionSavesTime: small chunks behind a 30 ms store are read
// whole; large ones project; saving nothing never projects.
func TestProjectionSavesTime(t *testing.T) {
	remote := iosched.Model{Latency: 30 * time.Millisecond, Bandwidth: 100e6, Samples: 100}
	local := iosched.Model{Latency: 50 * time.Microsecond, Bandwidth: 2e9, Samples: 100}
	for _, c := range []struct {
		name       string
		m          iosched.Model
		size, need int64
		want       bool
	}{
		{"120 KiB chunk, one narrow column, 30 ms", remote, 120 << 10, 40 << 10, false},
		{"2,000 × 4 KiB chunk, 30 ms", remote, 4 << 10, 1 << 10, false},
		{"64 MiB chunk, a quarter of it, 30 ms", remote, 64 << 20, 16 << 20, true},
		{"8 MiB chunk on local disk, a quarter", local, 8 << 20, 2 << 20, true},
		{"nothing saved", local, 8 << 20, 8 << 20, false},
		{"more than the object", local, 8 << 20, 9 << 20, false},
	} {
		if got := projectionSavesTime(c.m, c.size, c.need); got != c.want {
			t.Errorf("%s: projects %v, want %v", c.name, got, c.want)
		}
	}
}
