package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"golang.org/x/sync/semaphore"

	"github.com/remote-segments/remote_segments/test/faultproxy"
)

// channelCap is the byte cap of the channel design (W1 uses the same).
const channelCap = 64 << 20

// channel is the other design the project replaces, over d's objects at p
// requests in flight: p goroutines each GET the next object whole, decode
// it themselves (CPU work on the fetch goroutine) and send its record
// batches into a channel whose cap counts decoded bytes only (what a
// channel can see; fetched bytes are not counted); one consumer sums x.
func (b *bench) channel(d *dataset, cfg faultproxy.Config, p int) runResult {
	proxy, st := b.open(cfg, p)
	defer proxy.Close()
	defer st.Close()
	cpu0 := cpuTime()
	type item struct {
		rec  arrow.RecordBatch
		size int64
	}
	out := make(chan item, 64)
	sem := semaphore.NewWeighted(channelCap)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var next atomic.Int64
	var firstErr atomic.Pointer[error]
	fail := func(err error) { firstErr.CompareAndSwap(nil, &err); cancel() }
	var wg sync.WaitGroup
	for range p {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(d.keys) || ctx.Err() != nil {
					return
				}
				body, err := st.GetRange(ctx, "bench/"+d.keys[i], 0, d.sizes[i])
				if err != nil {
					fail(err)
					return
				}
				buf := make([]byte, d.sizes[i])
				_, err = io.ReadFull(body, buf)
				body.Close()
				if err == nil {
					err = eachBatch(buf, func(rec arrow.RecordBatch) error {
						n := min(batchBytes(rec), channelCap) // one batch larger than the cap passes alone
						if err := sem.Acquire(ctx, n); err != nil {
							return err
						}
						rec.Retain()
						select {
						case out <- item{rec, n}:
							return nil
						case <-ctx.Done():
							rec.Release()
							sem.Release(n)
							return ctx.Err()
						}
					})
				}
				if err != nil {
					fail(fmt.Errorf("%s: %w", d.keys[i], err))
					return
				}
			}
		})
	}
	var rows, sumX int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for it := range out {
			rows += it.rec.NumRows()
			x := it.rec.Column(0).(*array.Int64)
			for j := range x.Len() {
				if x.IsValid(j) {
					sumX += x.Value(j)
				}
			}
			it.rec.Release()
			sem.Release(it.size)
		}
	}()
	wg.Wait()
	close(out)
	<-done
	r := measured(runResult{}, proxy, cpu0)
	if e := firstErr.Load(); e != nil {
		r.err = *e
	} else if rows != d.rows || sumX != d.sumX {
		r.err = fmt.Errorf("channel: %d rows, sum(x) %d; want %d and %d", rows, sumX, d.rows, d.sumX)
	}
	return r
}

func batchBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, col := range rec.Columns() {
		for _, b := range col.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}
