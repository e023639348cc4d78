package cache

import (
	"strconv"
	"syscall"
	"testing"
	"time"
)

// benchEntry is the size of the entries benchmarked: small, so that the
// costs per entry (system calls, files made) show, not the copies.
const benchEntry = 4 << 10

// cpuNow is the process's CPU time, user and system: the writers' work
// is on goroutines of their own, which b's timer sees only as wall time.
func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFill: background fills of new objects, each noted as known,
// as a cold scan makes them.
func BenchmarkFill(b *testing.B) { benchmarkFill(b, benchEntry) }

// BenchmarkFillChunk: the same, of ranges the size of W2's chunks: the
// costs per byte (copies, checksum, writes, fill buffers) show.
func BenchmarkFillChunk(b *testing.B) { benchmarkFill(b, 124<<10) }

func benchmarkFill(b *testing.B, size int) {
	c, err := Open(b.TempDir(), 1<<40)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	data := payload(1, size)
	g := c.NewFillGroup()
	cpu := cpuNow(b)
	b.SetBytes(int64(size))
	b.ResetTimer()
	for i := range b.N {
		for !g.Fill(Key{Object: strconv.Itoa(i), Version: "\"etag\"", Length: int64(size)}, data, true) {
			g.Wait() // the queue full: the writers' pace, not the copies'
		}
	}
	g.Wait()
	b.ReportMetric(float64(cpuNow(b)-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkHit: lookups and reads of entries, as a warm scan makes them
// of entries a scan filled (sharing packs).
func BenchmarkHit(b *testing.B) {
	c, err := Open(b.TempDir(), 1<<40)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const n = 256
	key := func(i int) Key { return Key{Object: strconv.Itoa(i % n), Version: "v", Length: benchEntry} }
	g := c.NewFillGroup()
	for i := range n {
		g.Fill(key(i), payload(i, benchEntry), true)
	}
	g.Wait()
	cpu := cpuNow(b)
	b.SetBytes(benchEntry)
	b.ResetTimer()
	for i := range b.N {
		e, ok := c.Lookup(key(i))
		if !ok {
			b.Fatal("miss")
		}
		if _, err := readEntry(c, e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuNow(b)-cpu)/float64(b.N), "cpu-ns/op")
}
