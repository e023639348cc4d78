package iosched_test

import (
	"context"
	"io"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/remote-segments/remote_segments/iosched"
)

// The scheduler against the trivial reference it replaces: an errgroup
// with a concurrency limit, one goroutine per request. The store answers at
// once, so this measures the scheduler's own cost per request.
const benchRequests = 256

func benchStore() (*memStore, []iosched.Request) {
	ms := &memStore{objects: randomObjects(20, benchRequests, 64<<10)}
	return ms, wholeReqs(ms, "", ms.objects, 0)
}

func BenchmarkScheduler(b *testing.B) {
	ms, reqs := benchStore()
	s := iosched.New(iosched.Options{Parallelism: 16, CoalesceGap: -1, NoHedge: true})
	defer s.Close()
	b.SetBytes(benchRequests * 64 << 10)
	for b.Loop() {
		if _, err := s.Fetch(context.Background(), reqs); err != nil {
			b.Fatal(err)
		}
	}
	_ = ms
}

func BenchmarkReferenceErrgroup(b *testing.B) {
	_, reqs := benchStore()
	b.SetBytes(benchRequests * 64 << 10)
	for b.Loop() {
		out := make([][]byte, len(reqs))
		g, ctx := errgroup.WithContext(context.Background())
		g.SetLimit(16)
		for i, r := range reqs {
			g.Go(func() error {
				body, err := r.Store.GetRange(ctx, r.Name, r.Offset, r.Length)
				if err != nil {
					return err
				}
				defer body.Close()
				out[i] = make([]byte, r.Length)
				_, err = io.ReadFull(body, out[i])
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}
