// Command sqltest runs sqllogictest files (test/sql/*.test) against the DuckDB
// CLI, the pinned DuckDB engine host (1.5.6), the same host on DuckDB 1.4.4 and
// the Go-driver host, each file in one host process.
//
//	go run ./test/cmd/sqltest [flags] [FILE|DIR ...]
//
// Directories are searched for *.test files; the default is test/sql. Paths
// default to the repository layout (run it from the repository root):
// .tools/bin/duckdb (make duckdb), build/host/duckdb_host,
// build/host/duckdb_host_1.4.4 and build/host/gohost (make host) and
// build/release/remote_segments.duckdb_extension (make). A missing host is
// reported with a WARNING line and the others run (with -strict the run
// fails); with no host at all the run fails. Exit status: 0 when everything passed, 1 when a record
// failed, 2 when nothing could run.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/remote-segments/remote_segments/test/sqllogictest"
)

type varFlags map[string]string

func (v varFlags) String() string { return "" }

func (v varFlags) Set(s string) error {
	name, val, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	v[name] = val
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func main() {
	exit := 0
	defer func() { os.Exit(exit) }() // after the servers' deferred close
	vars := varFlags{}
	cli := flag.String("duckdb", envOr("SQLTEST_DUCKDB", ".tools/bin/duckdb"), "DuckDB CLI (empty: do not use)")
	flag.StringVar(cli, "cli", *cli, "same as -duckdb")
	host := flag.String("host", envOr("SQLTEST_HOST", "build/host/duckdb_host"), "pinned engine host (empty: do not use)")
	host14 := flag.String("host14", envOr("SQLTEST_HOST14", "build/host/duckdb_host_1.4.4"), "engine host linked against DuckDB 1.4.4 (empty: do not use)")
	goHost := flag.String("gohost", envOr("SQLTEST_GOHOST", "build/host/gohost"), "Go-driver host, database/sql and remotesql (empty: do not use)")
	extV2 := flag.String("ext-v2", envOr("SQLTEST_EXT_V2", ""), "the DuckDB 2.0 edition of the extension: runs every file on the -duckdb CLI once more with it as ${EXT} (host cli-v2; empty: do not)")
	strict := flag.Bool("strict", false, "fail when any host is unavailable, instead of running without it")
	ext := flag.String("ext", envOr("SQLTEST_EXT", "build/release/remote_segments.duckdb_extension"), "the extension, for ${EXT}")
	data := flag.String("data", envOr("SQLTEST_DATA", "test/data"), "data directory, for ${DATA}")
	timeout := flag.Duration("timeout", sqllogictest.DefaultStatementTimeout, "per-statement timeout")
	verbose := flag.Bool("v", false, "print every record")
	only := flag.String("hosts", "", "comma-separated host names to run (cli, cli-v2, engine, engine-1.4, go); empty: every host given")
	withServers := flag.Bool("serve", false, "serve -data over HTTP and from versitygw (bucket \"data\") and set ${HTTP}, ${S3_ENDPOINT}, ${S3_KEY}, ${S3_SECRET}, ${S3_REGION}")
	flag.Var(vars, "var", "NAME=VALUE for ${NAME} (repeatable)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: sqltest [flags] [FILE|DIR ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()

	args := flag.Args()
	if len(args) == 0 {
		args = []string{"test/sql"}
	}
	files, err := testFiles(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqltest: %v\n", err)
		os.Exit(2)
	}
	if len(files) == 0 {
		fmt.Fprintf(os.Stderr, "sqltest: no .test files in %s\n", strings.Join(args, " "))
		os.Exit(2)
	}

	var hosts []sqllogictest.Host
	if *cli != "" {
		hosts = append(hosts, sqllogictest.CLIHost(abs(*cli)))
	}
	if *cli != "" && *extV2 != "" {
		hosts = append(hosts, sqllogictest.CLIv2Host(abs(*cli), abs(*extV2)))
	}
	if *host != "" {
		hosts = append(hosts, sqllogictest.EngineHost(abs(*host)))
	}
	if *host14 != "" {
		hosts = append(hosts, sqllogictest.Engine14Host(abs(*host14)))
	}
	if *goHost != "" {
		hosts = append(hosts, sqllogictest.GoHost(abs(*goHost)))
	}
	if *only != "" {
		hosts = selectHosts(hosts, strings.Split(*only, ","))
		if len(hosts) == 0 {
			fmt.Fprintf(os.Stderr, "sqltest: -hosts %s names none of the hosts given\n", *only)
			os.Exit(2)
		}
	}
	if _, ok := vars["EXT"]; !ok && *ext != "" {
		vars["EXT"] = abs(*ext)
		if _, err := os.Stat(vars["EXT"]); err != nil {
			fmt.Printf("WARNING: extension not built (%v): files with 'require remote_segments' are skipped\n", err)
		}
	}
	if _, ok := vars["DATA"]; !ok && *data != "" {
		vars["DATA"] = abs(*data)
	}

	if *withServers {
		srv, err := serve(vars["DATA"], vars)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqltest: starting the test servers: %v\n", err)
			os.Exit(2)
		}
		fmt.Printf("serving %s at %s and from versitygw at %s\n", vars["DATA"], vars["HTTP"], vars["S3_ENDPOINT"])
		defer srv.close()
	}

	runner := sqllogictest.Runner{Out: os.Stdout, StatementTimeout: *timeout, Verbose: *verbose}
	rep, err := runner.Run(files, hosts, vars)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqltest: %v\n", err)
		exit = 2
		return
	}
	if !rep.OK() {
		exit = 1
	}
	if *strict && len(rep.Unavailable) > 0 {
		fmt.Fprintf(os.Stderr, "sqltest: -strict: %d host(s) unavailable\n", len(rep.Unavailable))
		exit = 2
	}
}

// selectHosts keeps the hosts whose name is in names.
func selectHosts(hosts []sqllogictest.Host, names []string) []sqllogictest.Host {
	var kept []sqllogictest.Host
	for _, h := range hosts {
		for _, n := range names {
			if h.Name == strings.TrimSpace(n) {
				kept = append(kept, h)
				break
			}
		}
	}
	return kept
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// testFiles expands directories into their *.test files, sorted.
func testFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		var found []string
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".test") {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}
