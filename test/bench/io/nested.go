package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/remote-segments/remote_segments/test/faultproxy"
)

// nested is the design the IO scheduler replaces, over d's objects at p
// requests in flight: segments k1 at a time × chunks k2 at a time (k1·k2 =
// p), every level waiting for its whole wave before the next one starts,
// each chunk fetched whole and decoded (every column; sum(x) checked)
// between the waves. (test/bench/iosched and test/bench/peers have the
// same design over other data, in main packages that cannot be imported.)
func (b *bench) nested(d *dataset, cfg faultproxy.Config, p int) runResult {
	proxy, st := b.open(cfg, p)
	defer proxy.Close()
	defer st.Close()
	cpu0 := cpuTime()
	segs := segmentsOf(d)
	perSeg := 0
	for _, s := range segs {
		perSeg = max(perSeg, len(s))
	}
	k1, k2 := splitP(p, len(segs), perSeg)
	var rows, sumX atomic.Int64
	var firstErr atomic.Pointer[error]
	fail := func(err error) { firstErr.CompareAndSwap(nil, &err) }
	segment := func(ids []int) {
		for w := 0; w < len(ids) && firstErr.Load() == nil; w += k2 {
			wave := ids[w:min(w+k2, len(ids))]
			data := make([][]byte, len(wave))
			var wg sync.WaitGroup
			for k, i := range wave {
				wg.Go(func() {
					body, err := st.GetRange(context.Background(), "bench/"+d.keys[i], 0, d.sizes[i])
					if err != nil {
						fail(err)
						return
					}
					defer body.Close()
					buf := make([]byte, d.sizes[i])
					if _, err := io.ReadFull(body, buf); err != nil {
						fail(fmt.Errorf("%s: %w", d.keys[i], err))
						return
					}
					data[k] = buf
				})
			}
			wg.Wait()
			for k, buf := range data { // decode between the awaits
				if buf == nil {
					return
				}
				n, s, err := decodeChunk(buf)
				if err != nil {
					fail(fmt.Errorf("%s: %w", d.keys[wave[k]], err))
					return
				}
				rows.Add(n)
				sumX.Add(s)
			}
		}
	}
	for s := 0; s < len(segs) && firstErr.Load() == nil; s += k1 {
		var wg sync.WaitGroup
		for _, ids := range segs[s:min(s+k1, len(segs))] {
			wg.Go(func() { segment(ids) })
		}
		wg.Wait()
	}
	r := measured(runResult{}, proxy, cpu0)
	if e := firstErr.Load(); e != nil {
		r.err = *e
	} else if rows.Load() != d.rows || sumX.Load() != d.sumX {
		r.err = fmt.Errorf("nested: %d rows, sum(x) %d; want %d and %d", rows.Load(), sumX.Load(), d.rows, d.sumX)
	}
	return r
}

// segmentsOf groups d's objects by their segment (the "segment=…" folder),
// in the order the segments first appear.
func segmentsOf(d *dataset) [][]int {
	var order []string
	bySeg := map[string][]int{}
	for i, k := range d.keys {
		seg := k[:max(0, strings.LastIndex(k, "/"))]
		if _, ok := bySeg[seg]; !ok {
			order = append(order, seg)
		}
		bySeg[seg] = append(bySeg[seg], i)
	}
	out := make([][]int, len(order))
	for i, s := range order {
		out[i] = bySeg[s]
	}
	return out
}

// splitP factors p into k1 (segments at a time) × k2 (chunks at a time),
// both near √p: 4 = 2×2, 16 = 4×4, 64 = 8×8.
func splitP(p, segments, perSeg int) (k1, k2 int) {
	k1 = int(math.Sqrt(float64(p)))
	for k1 > 1 && p%k1 != 0 {
		k1--
	}
	k1 = max(1, min(k1, segments))
	k2 = max(1, min(p/k1, perSeg))
	return k1, k2
}

// decodeChunk decodes an Arrow IPC file or stream held in data (every
// column) and returns its rows and sum(x) (column 0).
func decodeChunk(data []byte) (rows, sumX int64, err error) {
	err = eachBatch(data, func(rec arrow.RecordBatch) error {
		rows += rec.NumRows()
		x := rec.Column(0).(*array.Int64)
		for i := range x.Len() {
			if x.IsValid(i) {
				sumX += x.Value(i)
			}
		}
		return nil
	})
	return rows, sumX, err
}

// eachBatch calls fn with every record batch of the Arrow IPC file or
// stream held in data, in order; a batch is valid during the call (fn
// retains it to keep it). The first error of fn ends the loop.
func eachBatch(data []byte, fn func(arrow.RecordBatch) error) error {
	if bytes.HasPrefix(data, []byte("ARROW1")) {
		r, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			return err
		}
		defer r.Close()
		for i := range r.NumRecords() {
			rec, err := r.RecordBatch(i)
			if err != nil {
				return err
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
		return nil
	}
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return err
	}
	defer r.Release()
	for r.Next() {
		if err := fn(r.RecordBatch()); err != nil {
			return err
		}
	}
	return r.Err()
}

// fileFormat returns data as an Arrow IPC file: data itself when it is one,
// else the stream's batches written again as a file (same rows).
func fileFormat(data []byte) ([]byte, error) {
	if bytes.HasPrefix(data, []byte("ARROW1")) {
		return data, nil
	}
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, err
	}
	defer r.Release()
	var out bytes.Buffer
	w, err := ipc.NewFileWriter(&out, ipc.WithSchema(r.Schema()), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, err
	}
	for r.Next() {
		if err := w.Write(r.RecordBatch()); err != nil {
			return nil, err
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
