package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// The raw loop in a process of its own (host raw-proc): the bench's
// binary started again to GET every object of a catalog once, at P
// requests in flight, through the same store and proxy as the raw loop in
// the bench's process, and nothing else: no DuckDB, no decode. Against
// the raw loop of the same round, it is what a fresh process costs a scan
// by itself (its start, its first connections, its heap and stacks grown
// from nothing), the part of a host's ratio that no change to the scan
// can win back.

// rawProcHost is the host's key in -hosts: a reference, with no goal of
// its own, and not in the overload case (it has no scan to throttle).
const rawProcHost = "raw-proc"

// rawChildEnv names the environment variable that makes the binary the
// child: endpoint, key id, secret, region, catalog file and P, separated
// by newlines.
const rawChildEnv = "IOBENCH_RAW_CHILD"

// rawChildArgs is the value of rawChildEnv for a child reading catalog
// through endpoint at p requests in flight.
func (b *bench) rawChildArgs(endpoint, catalog string, p int) string {
	return strings.Join([]string{endpoint, b.srv.AccessKey, b.srv.SecretKey, b.srv.Region, catalog, strconv.Itoa(p)}, "\n")
}

// rawChild runs the child's loop if this process is one, printing
// "RESULT bytes=N", and reports whether it was.
func rawChild() bool {
	v := os.Getenv(rawChildEnv)
	if v == "" {
		return false
	}
	if err := runRawChild(strings.Split(v, "\n")); err != nil {
		fmt.Fprintln(os.Stderr, "raw-proc:", err)
		os.Exit(1)
	}
	return true
}

func runRawChild(args []string) error {
	if len(args) != 6 {
		return fmt.Errorf("%s has %d fields, want 6", rawChildEnv, len(args))
	}
	p, err := strconv.Atoi(args[5])
	if err != nil || p < 1 {
		return fmt.Errorf("bad P %q", args[5])
	}
	f, err := os.Open(args[4])
	if err != nil {
		return err
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		return err
	}
	if len(recs) < 2 {
		return fmt.Errorf("catalog %s names no object", args[4])
	}
	var pieces []rawPiece
	for _, r := range recs[1:] { // url,length
		n, err := strconv.ParseInt(r[1], 10, 64)
		if err != nil {
			return fmt.Errorf("catalog row %q: %v", r, err)
		}
		pieces = append(pieces, rawPiece{strings.TrimPrefix(r[0], "s3://"), 0, n})
	}
	st, _, err := store.Open("s3://bench/", store.Options{S3Endpoint: args[0], S3AccessKeyID: args[1],
		S3SecretAccessKey: args[2], S3Region: args[3], MaxConns: p + 1})
	if err != nil {
		return err
	}
	defer st.Close()
	got, err := rawLoop(st, p, pieces)
	if err != nil {
		return err
	}
	fmt.Printf("RESULT bytes=%d\n", got)
	return nil
}

// rawPiece is one ranged GET of the raw loop: n bytes at off of name.
type rawPiece struct {
	name   string
	off, n int64
}

// rawLoop GETs pieces with p goroutines, each reading its answers into
// one buffer of the largest piece's size, and returns the bytes read, or
// the first error.
func rawLoop(st store.Store, p int, pieces []rawPiece) (int64, error) {
	var largest int64
	for _, pc := range pieces {
		largest = max(largest, pc.n)
	}
	var next, got atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for range p {
		wg.Go(func() {
			// As large as the largest piece, no larger: zeroing a buffer
			// of a whole part per goroutine would slow the reference.
			buf := make([]byte, largest)
			for {
				i := next.Add(1) - 1
				if i >= int64(len(pieces)) || firstErr.Load() != nil {
					return
				}
				pc := pieces[i]
				body, err := st.GetRange(context.Background(), pc.name, pc.off, pc.n)
				if err == nil {
					var n int
					n, err = io.ReadFull(body, buf[:pc.n])
					body.Close()
					got.Add(int64(n))
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return got.Load(), *e
	}
	return got.Load(), nil
}
