package scanner

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBindAheadOfListing: a glob listed in more than one page reads its
// first chunk's schema (and, but for a host that prunes after bind,
// starts its prefetches) on the first page, while the rest is listed:
// every listing request but the first page's waits here until the first
// chunk's GET has come. Without that, bind's first GET comes after the
// whole listing, and the waits end at their deadline, which fails the
// test. The scan answers as the files do.
func TestBindAheadOfListing(t *testing.T) {
	dir, want := writeDataset(t)
	rows := chunkRows(t, dir, "", "")
	var keys []string
	for _, r := range rows {
		keys = append(keys, strings.TrimPrefix(r["url"].(string), "/"))
	}
	slices.Sort(keys)
	for _, prune := range []bool{false, true} {
		srv := serveS3Dir(t, dir, "bkt")
		srv.pageSize = 2
		got := make(chan struct{})
		var once sync.Once
		var late atomic.Int64
		srv.hooks(func(r *http.Request) {
			if firstPage(r) {
				return
			}
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				late.Add(1)
			}
		}, func(key string) {
			if key == keys[0] {
				once.Do(func() { close(got) })
			}
		})
		cfg := Config{Process: testProcess(t), Source: "s3://bkt/chunks/**/*.arrow", Store: srv.options(), PruneAfterBind: prune}
		plan, err := Bind(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if n := late.Load(); n > 0 {
			t.Errorf("prune after bind %v: %d listing requests waited 10 s for the first chunk's GET: bind read it after the listing", prune, n)
		}
		if plan.Chunks.Len() != len(keys) || plan.Chunks.First().URL != "s3://bkt/"+keys[0] {
			t.Fatalf("prune after bind %v: %d chunks, the first %s; want %d, s3://bkt/%s", prune, plan.Chunks.Len(), plan.Chunks.First().URL, len(keys), keys[0])
		}
		if (len(plan.prefetched) > 0) == prune {
			t.Errorf("prune after bind %v: %d prefetches", prune, len(plan.prefetched))
		}
		scan, err := plan.Start(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, sum := drain(t, scan, 2, 0)
		scan.Close()
		checkSegments(t, want, rows, sum)
	}
}

// TestBindAheadDropped: what bind read on the listing's first page is
// dropped, its prefetches stopped, when the listing's first chunk is not
// the one it read (a server that sent a page out of order) or reads ahead
// otherwise, and when the listing fails after its first page (bind fails
// with the listing's error).
func TestBindAheadDropped(t *testing.T) {
	dir, want := writeDataset(t)
	srv := serveS3Dir(t, dir, "bkt")
	srv.pageSize = 4
	cfg := Config{Process: testProcess(t), Source: "s3://bkt/chunks/**/*.arrow", Store: srv.options(), MaxParallelIO: 4}
	plan, err := Bind(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	all := plan.Chunks
	plan.dropPrefetch(nil)
	first := all.Slice()
	for _, tt := range []struct {
		name  string
		head  Chunk
		ahead bool
	}{
		{"another first chunk", first[1], true},
		{"not fetched ahead", first[0], false},
	} {
		a := newBindAhead(t.Context(), &cfg, 99)
		a.start(all)
		p := &Plan{cfg: cfg}
		if _, taken, _ := a.take(p, &tt.head, tt.ahead); taken {
			t.Errorf("%s: the work on the first page was taken", tt.name)
		}
		if len(p.prefetched) != 0 || len(a.plan.prefetched) != 0 {
			t.Errorf("%s: prefetches kept: %d, %d", tt.name, len(p.prefetched), len(a.plan.prefetched))
		}
	}

	// A listing that fails after its first page.
	srv.hooks(func(r *http.Request) {
		if !firstPage(r) {
			panic(http.ErrAbortHandler)
		}
	}, nil)
	c := cfg
	c.Retries = NeverRetry
	if _, err := Bind(t.Context(), c); err == nil {
		t.Error("bind over a listing that failed after its first page succeeded")
	}
	srv.hooks(nil, nil)
	scanAll(t, cfg, want)
}

// firstPage reports whether r asks for a listing's first page, without a
// delimiter.
func firstPage(r *http.Request) bool {
	q := r.URL.Query()
	return q.Get("delimiter") == "" && q.Get("continuation-token") == "" && q.Get("start-after") == ""
}

// TestBindAheadFirstObjects: the list bind starts on is the first page's
// first objects only, as many as it reads ahead needs (four times
// max_parallel_io, plus one), each the chunk of the same row in the full
// listing.
func TestBindAheadFirstObjects(t *testing.T) {
	dir, _ := writeDataset(t)
	extra := filepath.Join(dir, "chunks", "segment=s9")
	if err := os.MkdirAll(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if err := os.WriteFile(filepath.Join(extra, fmt.Sprintf("c%02d.arrow", i)), []byte("not read"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := serveS3Dir(t, dir, "bkt")
	srv.pageSize = 11 // 18 objects: two pages
	var early *Chunks
	cfg := Config{Process: testProcess(t), Source: "s3://bkt/chunks/**/*.arrow", Store: srv.options(), MaxParallelIO: 2}
	cfg.firstListed = func(l *Chunks) { early = l }
	all, err := resolveSource(t.Context(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if early == nil || early.Len() != 4*2+1 || all.Len() != 18 {
		t.Fatalf("the first page's list: %v; want 9 of the 18 chunks", early)
	}
	for i := range early.Len() {
		if e, a := early.At(i), all.At(i); e.URL != a.URL || e.Row != a.Row || e.Size != a.Size {
			t.Errorf("chunk %d of the first page: %s row %d, the listing's %s row %d", i, e.URL, e.Row, a.URL, a.Row)
		}
	}
}
