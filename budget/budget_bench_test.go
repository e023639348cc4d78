package budget_test

import (
	"context"
	"sync"
	"testing"

	"golang.org/x/sync/semaphore"

	"github.com/remote-segments/remote_segments/budget"
)

// The reference is x/sync/semaphore.Weighted, the plain FIFO byte semaphore
// the budget extends. The budget runs with the multiplier pinned to 1 so both
// charge the same weight.

const (
	benchGoroutines = 8
	// benchContendedCap lets half of the goroutines hold a unit at once, so
	// the other half queue.
	benchContendedCap = benchGoroutines / 2
)

func newBenchBudget(capacity int64) *budget.Budget {
	return budget.New(capacity, budget.WithMultiplier(1), budget.WithMultiplierBounds(1, 1))
}

func BenchmarkReserveClose(b *testing.B) {
	ctx := context.Background()
	b.Run("budget", func(b *testing.B) {
		bud := newBenchBudget(1 << 20)
		b.ReportAllocs()
		for b.Loop() {
			l, err := bud.Reserve(ctx, 1)
			if err != nil {
				b.Fatal(err)
			}
			l.Close()
		}
	})
	b.Run("semaphore", func(b *testing.B) {
		sem := semaphore.NewWeighted(1 << 20)
		b.ReportAllocs()
		for b.Loop() {
			if err := sem.Acquire(ctx, 1); err != nil {
				b.Fatal(err)
			}
			sem.Release(1)
		}
	})
}

func BenchmarkReserveCloseContended(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, op func()) {
		b.ReportAllocs()
		b.ResetTimer()
		var wg sync.WaitGroup
		for g := range benchGoroutines {
			n := b.N / benchGoroutines
			if g < b.N%benchGoroutines {
				n++
			}
			wg.Go(func() {
				for range n {
					op()
				}
			})
		}
		wg.Wait()
	}
	b.Run("budget", func(b *testing.B) {
		bud := newBenchBudget(benchContendedCap)
		run(b, func() {
			l, err := bud.Reserve(ctx, 1)
			if err != nil {
				panic(err)
			}
			l.Close()
		})
	})
	b.Run("semaphore", func(b *testing.B) {
		sem := semaphore.NewWeighted(benchContendedCap)
		run(b, func() {
			if err := sem.Acquire(ctx, 1); err != nil {
				panic(err)
			}
			sem.Release(1)
		})
	})
}

// BenchmarkReserveCommitRelease is the full protocol for one chunk: reserve,
// commit a different size, release in vectors, close.
func BenchmarkReserveCommitRelease(b *testing.B) {
	ctx := context.Background()
	bud := budget.New(budget.DefaultMin)
	b.ReportAllocs()
	for b.Loop() {
		l, err := bud.Reserve(ctx, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		l.Commit(3 << 19)
		for range 4 {
			l.Release(1 << 17)
		}
		l.Close()
	}
}
