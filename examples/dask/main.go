// Command dask runs examples/dask/shards.py against the demo data on a real
// S3 server: it writes the demo dataset (test/datagen, the data of `make
// demo`), starts versitygw on 127.0.0.1 (test/s3server), uploads the chunks
// to bucket "demo", and runs the Dask program with a scheduler and two
// workers on 127.0.0.1, one task per shard, the S3 endpoint and credentials
// in the workers' environment only.
//
//	go run ./examples/dask [-shards 3] [-kill=false]       (make dask-demo)
//
// It needs the extension (make), the DuckDB CLI (make duckdb), versitygw
// (make versitygw) and Dask (make dask: Debian's python3-distributed,
// unpacked into .tools/ by tools/install-dask.sh).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/remote-segments/remote_segments/test/datagen"
	"github.com/remote-segments/remote_segments/test/s3server"
)

// options of one run; paths are relative to the repository root.
type options struct {
	root    string // the repository root
	data    string // where the demo dataset is written
	shards  int
	workers int
	kill    bool // kill a worker mid-run
	out     io.Writer
}

func main() {
	o := options{out: os.Stdout}
	flag.StringVar(&o.data, "data", "build/demo-data", "folder for the demo dataset (rewritten)")
	flag.IntVar(&o.shards, "shards", 3, "shards: one Dask task each")
	flag.IntVar(&o.workers, "workers", 2, "Dask workers on 127.0.0.1")
	flag.BoolVar(&o.kill, "kill", true, "SIGKILL the worker running the first task to start, mid-scan")
	flag.Parse()
	var err error
	if o.root, err = repoRoot(); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		err = run(ctx, o)
		cancel()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dask-demo:", err)
		os.Exit(1)
	}
}

// tools are the programs a run needs, found under root.
type tools struct{ python, duckdb, ext, script string }

// errNoDask means Dask is not provisioned (tools/install-dask.sh).
var errNoDask = errors.New("Dask is not installed: .tools/bin/dask-python missing or it finds no distributed module (make dask runs tools/install-dask.sh)")

func findTools(root string) (tools, error) {
	t := tools{
		python: filepath.Join(root, ".tools/bin/dask-python"),
		duckdb: filepath.Join(root, ".tools/bin/duckdb"),
		ext:    filepath.Join(root, "build/release/remote_segments.duckdb_extension"),
		script: filepath.Join(root, "examples/dask/shards.py"),
	}
	for _, p := range []string{t.duckdb, t.ext} {
		if _, err := os.Stat(p); err != nil {
			return t, fmt.Errorf("%w (make duckdb release)", err)
		}
	}
	// find_spec, not import: importing distributed takes seconds on a loaded machine.
	check := "import importlib.util, sys; sys.exit(importlib.util.find_spec('distributed') is None)"
	if out, err := exec.Command(t.python, "-c", check).CombinedOutput(); err != nil {
		return t, fmt.Errorf("%w: %v %s", errNoDask, err, strings.TrimSpace(string(out)))
	}
	return t, nil
}

func run(ctx context.Context, o options) error {
	t, err := findTools(o.root)
	if err != nil {
		return err
	}
	data := o.data
	if !filepath.IsAbs(data) {
		data = filepath.Join(o.root, data)
	}
	if err := os.RemoveAll(data); err != nil { // as make demo: the folder is the generator's
		return err
	}
	stats, err := datagen.Write(data, datagen.DefaultSpec)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.out, "dask-demo: demo data (%d segments) in %s\n", len(stats), data)

	s3dir, err := os.MkdirTemp("", "rs-dask-s3-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(s3dir)
	srv, err := s3server.Start(ctx, s3dir, "demo")
	if err != nil {
		return err
	}
	defer srv.Close()
	n := 0
	err = filepath.WalkDir(filepath.Join(data, "chunks"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(data, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		return srv.PutObject(ctx, "demo", filepath.ToSlash(rel), b)
	})
	if err != nil {
		return fmt.Errorf("upload to versitygw: %w", err)
	}
	fmt.Fprintf(o.out, "dask-demo: versitygw at %s, %d chunks uploaded to s3://demo/chunks/\n", srv.Endpoint, n)

	args := []string{t.script, "--local-cluster", fmt.Sprint(o.workers), "--shards", fmt.Sprint(o.shards),
		"--source", "s3://demo/chunks/", "--duckdb", t.duckdb, "--ext", t.ext,
		"--expected", filepath.Join(data, "expected.csv")}
	if o.kill {
		args = append(args, "--kill-one")
	}
	cmd := exec.CommandContext(ctx, t.python, args...)
	// The workers' (and the planning client's) DuckDB read S3 with these:
	// the credentials never travel through Dask.
	cmd.Env = append(os.Environ(),
		"REMOTE_SEGMENTS_S3_ENDPOINT="+srv.Endpoint,
		"REMOTE_SEGMENTS_S3_REGION="+srv.Region,
		"REMOTE_SEGMENTS_S3_ACCESS_KEY_ID="+srv.AccessKey,
		"REMOTE_SEGMENTS_S3_SECRET_ACCESS_KEY="+srv.SecretKey,
		"REMOTE_SEGMENTS_MAX_PARALLEL_IO=8")
	cmd.Stdout, cmd.Stderr = o.out, o.out
	cmd.WaitDelay = 10 * time.Second
	fmt.Fprintf(o.out, "dask-demo: %s %s\n", filepath.Base(t.python), strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("shards.py: %w", err)
	}
	return nil
}

// repoRoot is the folder holding go.mod, searched upwards from the working
// directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from the repository")
		}
		dir = parent
	}
}
