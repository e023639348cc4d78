// Command chunkrate measures what one worker (one DuckDB CLI process with the
// extension) scans per second, the figure DISTRIBUTED.md sizes a cluster
// with: chunks/s, GET/s and wire MiB/s of a per-segment aggregate over
// many small chunks on versitygw, directly (no network latency) and behind
// the fault proxy at 30 ms per request (an S3-like first-byte latency), at
// several max_parallel_io, and the CPU seconds of the DuckDB process (user +
// system), the figure that load on a shared machine disturbs least. It
// prints a markdown table with the load average beside every row.
//
//	go run ./test/bench/chunkrate [-segments 64 -chunks 16 -rows 500]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/remote-segments/remote_segments/test/datagen"
	"github.com/remote-segments/remote_segments/test/faultproxy"
	"github.com/remote-segments/remote_segments/test/s3server"
)

func main() {
	spec := datagen.Spec{Segments: 64, ChunksPerSegment: 16, RowsPerChunk: 500, BatchesPerChunk: 1, Seed: 7}
	flag.IntVar(&spec.Segments, "segments", spec.Segments, "segments")
	flag.IntVar(&spec.ChunksPerSegment, "chunks", spec.ChunksPerSegment, "chunks per segment")
	flag.IntVar(&spec.RowsPerChunk, "rows", spec.RowsPerChunk, "rows of a segment's first chunk (+517 each next)")
	duckdb := flag.String("duckdb", ".tools/bin/duckdb", "DuckDB CLI")
	ext := flag.String("ext", "build/release/remote_segments.duckdb_extension", "the extension")
	rounds := flag.Int("rounds", 3, "rounds of every configuration (interleaved)")
	flag.Parse()
	if err := run(spec, *duckdb, *ext, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "chunkrate:", err)
		os.Exit(1)
	}
}

func run(spec datagen.Spec, duckdb, ext string, rounds int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "chunkrate-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	data := filepath.Join(tmp, "data")
	if _, err := datagen.Write(data, spec); err != nil {
		return err
	}
	srv, err := s3server.Start(ctx, filepath.Join(tmp, "s3"), "bench")
	if err != nil {
		return err
	}
	defer srv.Close()
	var chunks int
	var bytes int64
	err = filepath.WalkDir(filepath.Join(data, "chunks"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(data, p)
		chunks++
		bytes += int64(len(b))
		return srv.PutObject(ctx, "bench", filepath.ToSlash(rel), b)
	})
	if err != nil {
		return err
	}
	slow, err := faultproxy.New(srv.Endpoint, faultproxy.Config{Latency: 30 * time.Millisecond})
	if err != nil {
		return err
	}
	defer slow.Close()
	fmt.Printf("%d chunks in %d segments, %.1f MiB on versitygw (mean %.0f KiB a chunk); load average %s\n\n",
		chunks, spec.Segments, float64(bytes)/(1<<20), float64(bytes)/float64(chunks)/1024, loadavg())
	fmt.Println("| store | max_parallel_io | chunks/s | GET/s | wire MiB/s | scan s | process s | CPU s | chunks per CPU s | load avg |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for round := 0; round < rounds; round++ {
		for _, c := range []struct {
			name, endpoint string
			io             int
		}{
			{"versitygw, 127.0.0.1", srv.Endpoint, 16},
			{"versitygw, 127.0.0.1", srv.Endpoint, 64},
			{"versitygw + 30 ms/request", slow.URL, 16},
			{"versitygw + 30 ms/request", slow.URL, 64},
			{"versitygw + 30 ms/request", slow.URL, 256},
		} {
			sql := fmt.Sprintf(`LOAD '%s';
SELECT count(*) AS segments FROM (SELECT segment_id, count(*), sum(x) FROM remote_segments('s3://bench/chunks/', max_parallel_io := %d) GROUP BY ALL);
SELECT chunks, gets, wire_bytes, wall_ms FROM remote_segments_stats();`, ext, c.io)
			cmd := exec.CommandContext(ctx, duckdb, "-unsigned", "-batch", "-init", "/dev/null", "-json", "-c", sql)
			cmd.Env = append(os.Environ(), "REMOTE_SEGMENTS_S3_ENDPOINT="+c.endpoint, "REMOTE_SEGMENTS_S3_REGION="+srv.Region,
				"REMOTE_SEGMENTS_S3_ACCESS_KEY_ID="+srv.AccessKey, "REMOTE_SEGMENTS_S3_SECRET_ACCESS_KEY="+srv.SecretKey)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			took := time.Since(start)
			if err != nil {
				return fmt.Errorf("%s: %v: %s", c.name, err, out)
			}
			dec := json.NewDecoder(strings.NewReader(string(out)))
			var first []map[string]any
			var second []struct {
				Chunks    int64   `json:"chunks"`
				Gets      int64   `json:"gets"`
				WireBytes int64   `json:"wire_bytes"`
				WallMS    float64 `json:"wall_ms"`
			}
			if err := dec.Decode(&first); err != nil {
				return fmt.Errorf("%s: %v: %s", c.name, err, out)
			}
			if err := dec.Decode(&second); err != nil || len(second) != 1 {
				return fmt.Errorf("%s: stats: %v: %s", c.name, err, out)
			}
			if got := first[0]["segments"]; fmt.Sprint(got) != fmt.Sprint(spec.Segments) {
				return fmt.Errorf("%s: %v segments, want %d", c.name, got, spec.Segments)
			}
			st := second[0]
			s := st.WallMS / 1000
			cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
			fmt.Printf("| %s | %d | %.0f | %.0f | %.1f | %.2f | %.2f | %.2f | %.0f | %s |\n", c.name, c.io, float64(st.Chunks)/s,
				float64(st.Gets)/s, float64(st.WireBytes)/(1<<20)/s, s, took.Seconds(), cpu, float64(st.Chunks)/cpu, loadavg())
		}
	}
	return nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
