// Package install tests the extension as a user gets it: `INSTALL
// remote_segments FROM '<repository>'` from a repository written by
// extension/repository and served on 127.0.0.1, in every DuckDB host.
package install

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/csv"
	"encoding/pem"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/remote-segments/remote_segments/test/datagen"
)

var arm64 = flag.Bool("install.arm64", false, "also run the arm64 DuckDB 2.0 CLI under qemu-user (.tools/bin/duckdb-arm64, make test-arm64)")

// updateVersion is the extension version of the "rebuilt" files: the same
// libraries with another version in their metadata, which is what DuckDB
// compares on UPDATE EXTENSIONS.
const updateVersion = "v0.0.0-update-test"

// host is one DuckDB program the test installs into.
type host struct {
	name     string
	path     string
	args     []string // before any the test adds
	cli      bool     // a DuckDB 2.0 CLI: signed repositories, its packaged extensions
	platform string
	// packaged holds the loadable extensions shipped with the CLI's package
	// (httpfs, postgres_scanner, ...), loaded before ours in the late load.
	packaged string
}

// repositories are the two states of the served repository: as built, and
// after a rebuild (every file changed: another extension version).
type repositories struct {
	built, rebuilt string
	key            string // PEM public key the files are signed with
	otherKey       string // PEM public key of another key pair
	served         atomic.Pointer[string]
	url            string
}

func (r *repositories) serve(dir string) { r.served.Store(&dir) }

func TestInstallFromRepository(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // runs last: registered first
	// The checkout: this package is test/install.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ext := filepath.Join(root, "build/release/remote_segments.duckdb_extension")
	extV2 := filepath.Join(root, "build/release/v2.0.0/remote_segments.duckdb_extension")
	hosts := []host{
		{name: "cli", path: filepath.Join(root, ".tools/bin/duckdb"), cli: true, platform: "linux_amd64",
			packaged: filepath.Join(root, ".tools/duckdb/root/usr/lib/duckdb/extensions/v2.0.0/linux_amd64")},
		{name: "engine", path: filepath.Join(root, "build/host/duckdb_host"), platform: "linux_amd64"},
		{name: "engine-1.4", path: filepath.Join(root, "build/host/duckdb_host_1.4.4"), platform: "linux_amd64"},
	}
	files := []string{filepath.Join(root, "go.mod"), ext, extV2}
	repoArgs := []string{"-versions", "v1.4.4,v1.5.6,v2.0.0", "-v2-versions", "v2.0.0",
		"-ext", "linux_amd64=" + ext, "-ext-v2", "linux_amd64=" + extV2}
	if *arm64 {
		extArm := filepath.Join(root, "build/release/linux_arm64/remote_segments.duckdb_extension")
		extArmV2 := filepath.Join(root, "build/release/linux_arm64/v2.0.0/remote_segments.duckdb_extension")
		files = append(files, extArm, extArmV2)
		repoArgs = append(repoArgs, "-ext", "linux_arm64="+extArm, "-ext-v2", "linux_arm64="+extArmV2)
		hosts = append(hosts, host{name: "cli-arm64", path: filepath.Join(root, ".tools/bin/duckdb-arm64"), cli: true, platform: "linux_arm64",
			packaged: filepath.Join(root, ".tools/arm64/duckdb/root/usr/lib/duckdb/extensions/v2.0.0/linux_arm64")})
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v: run `make release` (and for arm64 `make test-arm64`)", err)
		}
	}
	for _, h := range hosts {
		if _, err := os.Stat(h.path); err != nil {
			t.Fatalf("%s: %v: run `make tools` (the arm64 CLI: tools/install-arm64.sh)", h.name, err)
		}
	}
	// The Go-driver host is not among them: the extension is a Go c-shared
	// library, and a Go program cannot load a second Go runtime; Go programs
	// register the same implementation through remotesql instead.

	data := t.TempDir()
	if _, err := datagen.Write(data, datagen.DefaultSpec); err != nil {
		t.Fatal(err)
	}
	demo, want := demoQuery(t, data)

	repos := buildRepositories(t, root, repoArgs)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.FileServer(http.Dir(*repos.served.Load())).ServeHTTP(w, req)
	}))
	defer srv.Close()
	repos.url = srv.URL

	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			unsignedRoute(t, h, repos, demo, want)
			if h.cli {
				signedRoute(t, h, repos, demo, want)
			}
		})
	}
}

// demoQuery returns the query of `make demo` over dir and its answer from the
// generator's expected.csv: segment_id, rows, sum_x, min_x, max_x, and the
// strings that are not NULL.
func demoQuery(t *testing.T, dir string) (string, []string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "expected.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("expected.csv: %v (%d records)", err, len(recs))
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	var want []string
	for _, r := range recs[1:] {
		var rows, nullS int64
		fmt.Sscan(r[col["rows"]], &rows)
		fmt.Sscan(r[col["null_s"]], &nullS)
		want = append(want, strings.Join([]string{r[col["segment_id"]], r[col["rows"]], r[col["sum_x"]],
			r[col["min_x"]], r[col["max_x"]], fmt.Sprint(rows - nullS)}, "|"))
	}
	q := fmt.Sprintf("SELECT segment_id, count(*) AS rows, sum(x) AS sum_x, min(x) AS min_x, max(x) AS max_x, count(s) AS strings "+
		"FROM remote_segments('%s/chunks/**/*.arrow', memory_budget := '1MiB') GROUP BY ALL ORDER BY 1;", dir)
	return q, want
}

// buildRepositories writes the repository as built and as rebuilt, signed
// with a key of the test's own.
func buildRepositories(t *testing.T, root string, args []string) *repositories {
	t.Helper()
	dir := t.TempDir()
	tool := filepath.Join(dir, "repository")
	build := exec.Command("go", "build", "-o", tool, "./extension/repository")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./extension/repository: %v\n%s", err, out)
	}
	key := filepath.Join(dir, "key.pem")
	r := &repositories{built: filepath.Join(dir, "built"), rebuilt: filepath.Join(dir, "rebuilt")}
	for _, run := range [][]string{
		append([]string{"-out", r.built, "-key", key}, args...),
		append([]string{"-out", r.rebuilt, "-key", key, "-ext-version", updateVersion}, args...),
	} {
		if out, err := exec.Command(tool, run...).CombinedOutput(); err != nil {
			t.Fatalf("repository %s: %v\n%s", strings.Join(run, " "), err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(r.built, "public-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	r.key = string(pub)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&other.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	r.otherKey = string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	return r
}

// step is one statement of a session and the rows it must print, each row
// its values joined by "|"; nil wants is not checked (but the statement
// must succeed).
type step struct {
	sql   string
	wants []string
}

func rows(r ...string) []string { return r }

// session runs steps in one process of h with HOME set to home (where DuckDB
// keeps installed extensions and repositories), checks every step's rows and
// returns them. A marker query after each step splits the output.
func session(t *testing.T, h host, home string, unsigned bool, steps []step) [][]string {
	t.Helper()
	var in strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&in, "%s\nSELECT '--step %d--';\n", s.sql, i)
	}
	args := append([]string(nil), h.args...)
	if h.cli {
		args = append(args, "-batch", "-init", "/dev/null", "-list", "-noheader")
		if unsigned {
			args = append(args, "-unsigned")
		}
	} else if !unsigned {
		t.Fatalf("%s opens its database with unsigned extensions allowed", h.name)
	}
	cmd := exec.Command(h.path, args...)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "DUCKDB_AGENT_MODE=0", "NO_COLOR=1")
	cmd.Stdin = strings.NewReader(in.String())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if err != nil || strings.Contains(stderr.String(), "Error") {
		t.Fatalf("%s: %v after %v\nstderr:\n%s\nstdout:\n%s", h.name, err, time.Since(start).Round(time.Millisecond), stderr.String(), stdout.String())
	}
	out := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	var all [][]string
	for i, s := range steps {
		marker := fmt.Sprintf("--step %d--", i)
		var got []string
		for len(out) > 0 && out[0] != marker {
			got, out = append(got, out[0]), out[1:]
		}
		if len(out) == 0 {
			t.Fatalf("%s: no output of step %d (%s)\nstdout:\n%s", h.name, i, s.sql, stdout.String())
		}
		out = out[1:]
		if s.wants != nil && strings.Join(got, "\n") != strings.Join(s.wants, "\n") {
			t.Errorf("%s: %s\n got: %q\nwant: %q", h.name, s.sql, got, s.wants)
		}
		all = append(all, got)
	}
	return all
}

// failing runs sql in a new process of h and returns its stderr; the process
// must fail.
func failing(t *testing.T, h host, home, sql string) string {
	t.Helper()
	cmd := exec.Command(h.path, append(append([]string(nil), h.args...), "-batch", "-init", "/dev/null", "-list", "-noheader")...)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "DUCKDB_AGENT_MODE=0", "NO_COLOR=1")
	cmd.Stdin = strings.NewReader(sql)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("%s: %s succeeded, want it refused", h.name, sql)
	}
	return stderr.String()
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

const versionQuery = "SELECT extension_version FROM duckdb_extensions() WHERE extension_name = 'remote_segments' AND loaded;"

// lateLoad loads DuckDB's own extensions (and, in a CLI, every loadable one
// its package ships, which link libraries of their own) and runs queries
// before ours is loaded: a Go c-shared library needs static TLS, which a
// process that has loaded many libraries may have used up.
func lateLoad(t *testing.T, h host) string {
	var b strings.Builder
	b.WriteString("LOAD json; LOAD parquet; ")
	if h.packaged != "" {
		exts, err := filepath.Glob(filepath.Join(h.packaged, "*.duckdb_extension"))
		if err != nil || len(exts) == 0 {
			t.Fatalf("%s: no packaged extensions in %s (%v)", h.name, h.packaged, err)
		}
		for _, e := range exts {
			fmt.Fprintf(&b, "LOAD %s; ", sqlString(e))
		}
	}
	b.WriteString("SELECT count(*) FROM (SELECT json_extract('{\"a\": [1, 2]}', '$.a[1]') AS j FROM range(100000)) WHERE j = '2';")
	return b.String()
}

// unsignedRoute: INSTALL FROM the repository's URL, LOAD by name, the demo
// query; after a rebuild, UPDATE EXTENSIONS, then LOAD by name late: after
// other extensions were loaded and a query ran.
func unsignedRoute(t *testing.T, h host, r *repositories, demo string, want []string) {
	home := t.TempDir()
	r.serve(r.built)
	got := session(t, h, home, true, []step{
		{"SELECT count(*) FROM duckdb_functions() WHERE function_name = 'remote_segments';", rows("0")},
		{fmt.Sprintf("INSTALL remote_segments FROM %s;", sqlString(r.url)), nil},
		{"LOAD remote_segments;", nil},
		{demo, want},
		{"SELECT installed_from FROM duckdb_extensions() WHERE extension_name = 'remote_segments';", rows(r.url)},
		{versionQuery, nil},
	})
	builtVersion := strings.Join(got[len(got)-1], "\n")
	if !strings.HasPrefix(builtVersion, "v") || builtVersion == updateVersion {
		t.Fatalf("%s: the installed version is %q", h.name, builtVersion)
	}

	// The update comes before the late load: once httpfs is loaded, DuckDB
	// 2.0.0 fetches an http:// repository over https.
	r.serve(r.rebuilt)
	session(t, h, home, true, []step{
		{"UPDATE EXTENSIONS;", rows(fmt.Sprintf("remote_segments|%s|UPDATED|%s|%s", r.url, builtVersion, updateVersion))},
		{lateLoad(t, h), rows("100000")},
		{"LOAD remote_segments;", nil},
		{versionQuery, rows(updateVersion)},
		{demo, want},
	})
}

// signedRoute, DuckDB 2.0 only: the repository registered with its key,
// without -unsigned, so every file's signature is checked; a repository
// registered with another key is refused; the key read from the repository's
// .well-known file (a local prefix: over HTTP that file is read through
// httpfs); after a rebuild, FORCE INSTALL (UPDATE EXTENSIONS of DuckDB
// 2.0.0 does not list extensions of a user-provided repository).
func signedRoute(t *testing.T, h host, r *repositories, demo string, want []string) {
	r.serve(r.built)
	stderr := failing(t, h, t.TempDir(), fmt.Sprintf("SET allow_extension_repositories = 'allowed';\n"+
		"CREATE EXTENSION REPOSITORY other WITH PREFIX %s USING PUBLIC KEY %s;\nINSTALL remote_segments FROM other;\n",
		sqlString(r.url), sqlString(r.otherKey)))
	if !strings.Contains(stderr, "valid signature") {
		t.Errorf("%s: a repository registered with another key: %s, want a refused signature", h.name, stderr)
	}

	home := t.TempDir()
	session(t, h, home, false, []step{
		{"SELECT current_setting('allow_unsigned_extensions');", rows("false")},
		{"SET allow_extension_repositories = 'allowed';", nil},
		{fmt.Sprintf("CREATE EXTENSION REPOSITORY rs WITH PREFIX %s USING PUBLIC KEY %s;", sqlString(r.url), sqlString(r.key)), nil},
		{"INSTALL remote_segments FROM rs;", nil},
		{"LOAD remote_segments FROM rs;", nil},
		{demo, want},
		{fmt.Sprintf("CREATE EXTENSION REPOSITORY local WITH PREFIX %s;", sqlString(r.built)), nil},
		{"INSTALL remote_segments FROM local;", nil},
	})
	// A new process: the repositories and their keys persist under HOME.
	session(t, h, home, false, []step{
		{lateLoadSigned(), rows("100000")},
		{"LOAD remote_segments FROM local;", nil},
		{demo, want},
	})
	r.serve(r.rebuilt)
	session(t, h, home, false, []step{
		{"SET allow_extension_repositories = 'allowed';", nil},
		{"FORCE INSTALL remote_segments FROM rs;", nil},
		{"LOAD remote_segments FROM rs;", nil},
		{versionQuery, rows(updateVersion)},
		{demo, want},
	})
}

// lateLoadSigned is the late load of a session without -unsigned: DuckDB's
// built-in extensions only (the packaged ones are not signed).
func lateLoadSigned() string {
	return "LOAD json; LOAD parquet; SELECT count(*) FROM (SELECT json_extract('{\"a\": [1, 2]}', '$.a[1]') AS j FROM range(100000)) WHERE j = '2';"
}
