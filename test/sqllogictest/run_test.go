package sqllogictest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fakeHostEnv makes the test binary act as a host (see fakeHost).
const fakeHostEnv = "SQLLOGICTEST_FAKE_HOST"

func TestMain(m *testing.M) {
	if os.Getenv(fakeHostEnv) == "1" {
		fakeHost()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// fakeHost speaks the hosts' line protocol with canned statements, so the
// runner's process handling (errors, crashes, timeouts) is tested without
// DuckDB:
//
//	SELECT n            one row with n
//	ROWS a,b;c,d        rows of values
//	FAIL msg            the error "Fake Error: msg"
//	LOG msg             msg on stderr, not an error
//	CRASH               the process kills itself
//	HANG                never answers
//	LOAD json           succeeds; LOAD of anything else fails
func fakeHost() {
	out := os.Stdout
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		line := in.Text()
		switch {
		case strings.HasPrefix(line, ".print "):
			fmt.Fprintln(out, strings.TrimPrefix(line, ".print "))
		case line == ".output /dev/stderr":
			out = os.Stderr
		case line == ".output":
			out = os.Stdout
		case strings.HasPrefix(line, ".read "):
			data, err := os.ReadFile(strings.Trim(strings.TrimPrefix(line, ".read "), "'"))
			if err != nil {
				fmt.Fprintf(os.Stderr, "Error: %v\n", err)
				continue
			}
			fakeStatement(strings.TrimRight(strings.TrimSpace(string(data)), ";\n "))
		default:
			// .mode, .headers, .nullvalue, .separator: the fake always prints
			// with the runner's separators.
		}
	}
}

func fakeStatement(sql string) {
	verb, arg, _ := strings.Cut(sql, " ")
	switch verb {
	case "SELECT":
		fmt.Print(arg + rowSep)
	case "ROWS":
		for _, row := range strings.Split(arg, ";") {
			fmt.Print(strings.ReplaceAll(row, ",", colSep) + rowSep)
		}
	case "FAIL":
		fmt.Fprintf(os.Stderr, "Fake Error: %s\n", arg)
	case "LOG":
		fmt.Fprintln(os.Stderr, arg)
		fmt.Print("logged" + rowSep)
	case "CRASH":
		fmt.Fprintln(os.Stderr, "fake host: crashing on purpose")
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	case "HANG":
		time.Sleep(time.Hour)
	case "LOAD":
		if arg != "json" {
			fmt.Fprintf(os.Stderr, "IO Error: Extension %q not found\n", arg)
		}
	default:
		fmt.Fprintf(os.Stderr, "Parser Error: the fake host does not know %q\n", sql)
	}
}

func fakeHostFor(t *testing.T, name string) Host {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A -race binary sleeps 1s at exit unless told not to.
	return Host{Name: name, Path: exe, Env: []string{fakeHostEnv + "=1", "GORACE=atexit_sleep_ms=0"}}
}

func writeTest(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunFakeHost(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	ok := writeTest(t, dir, "ok.test", `# name: ok.test
query I
SELECT 42
----
42

statement error
FAIL boom
----
boom

# a query after an error in the same process
query IT
ROWS 1,a;2,NULL
----
1	a
2	NULL

statement ok
LOG remote_segments: a log line is not an error

require json

skipif fake
statement ok
FAIL skipped on the fake host
`)
	bad := writeTest(t, dir, "bad.test", `statement ok
FAIL not expected

statement error
SELECT 1

query I
SELECT 2
----
3

query I
SELECT ${UNSET}
----
1
`)
	var out bytes.Buffer
	r := Runner{Out: &out}
	rep, err := r.Run([]string{ok, bad}, []Host{fakeHostFor(t, "fake")}, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	h := rep.Hosts[0]
	if h.Passed != 4 || h.Failed != 4 || h.Skipped != 1 {
		t.Errorf("counts = %d passed, %d failed, %d skipped; want 4, 4, 1\n%s", h.Passed, h.Failed, h.Skipped, out.String())
	}
	for i, want := range []struct {
		line int
		msg  string
	}{
		{1, "statement failed: Fake Error: not expected"},
		{4, "statement succeeded, but an error was expected"},
		{7, "result differs"},
		{12, "no value for ${UNSET}"},
	} {
		f := h.Failures[i]
		if f.File != bad || f.Line != want.line || !strings.Contains(f.Msg, want.msg) {
			t.Errorf("failure %d = %s:%d %q, want %s:%d %q", i, f.File, f.Line, f.Msg, bad, want.line, want.msg)
		}
	}
	if rep.OK() {
		t.Error("Report.OK with failures")
	}
	if !regexp.MustCompile(`(?m)^total: 4 passed, 4 failed, 1 skipped$`).MatchString(out.String()) {
		t.Errorf("no summary line in:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "FAIL fake "+bad+":7: result differs\n  SQL: SELECT 2\n  expected:\n    3\n  actual:\n    2") {
		t.Errorf("failure report not as expected:\n%s", out.String())
	}
}

func TestRunCrashRestartsForNextFile(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	crash := writeTest(t, dir, "crash.test", "query I\nSELECT 1\n----\n1\n\nstatement ok\nCRASH\n\nstatement ok\nSELECT 2\n")
	after := writeTest(t, dir, "after.test", "query I\nSELECT 3\n----\n3\n")
	var out bytes.Buffer
	r := Runner{Out: &out}
	rep, err := r.Run([]string{crash, after}, []Host{fakeHostFor(t, "fake")}, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	h := rep.Hosts[0]
	if h.Passed != 2 || h.Failed != 1 {
		t.Fatalf("counts = %d passed, %d failed; want 2, 1\n%s", h.Passed, h.Failed, out.String())
	}
	f := h.Failures[0]
	if f.File != crash || f.Line != 6 || !strings.Contains(f.Msg, "host process exited: signal: killed") ||
		!strings.Contains(f.Msg, "fake host: crashing on purpose") {
		t.Errorf("crash failure = %s:%d %q", f.File, f.Line, f.Msg)
	}
	if !strings.Contains(out.String(), "1 later records not run") {
		t.Errorf("output does not say the rest was not run:\n%s", out.String())
	}
}

func TestRunTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	hang := writeTest(t, dir, "hang.test", "statement ok\nHANG\n")
	r := Runner{StatementTimeout: 300 * time.Millisecond}
	start := time.Now()
	rep, err := r.Run([]string{hang}, []Host{fakeHostFor(t, "fake")}, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if rep.Hosts[0].Failed != 1 || !strings.Contains(rep.Hosts[0].Failures[0].Msg, "no answer within 300ms") {
		t.Errorf("report = %+v", rep.Hosts[0])
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a hung statement took %v to fail", d)
	}
}

func TestRunRequireSkips(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	files := []string{
		writeTest(t, dir, "ext.test", "require remote_segments\n\nstatement ok\nSELECT 1\n"),
		writeTest(t, dir, "load.test", "require parquet\n\nstatement ok\nSELECT 1\n\nstatement ok\nSELECT 2\n"),
		writeTest(t, dir, "env.test", "require-env SQLLOGICTEST_SURELY_UNSET\n\nstatement ok\nSELECT 1\n"),
	}
	var out bytes.Buffer
	r := Runner{Out: &out}
	rep, err := r.Run(files, []Host{fakeHostFor(t, "fake")}, map[string]string{"EXT": filepath.Join(dir, "missing.duckdb_extension")})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if h := rep.Hosts[0]; h.Skipped != 4 || h.Failed != 0 || h.Passed != 0 {
		t.Errorf("counts = %+v\n%s", h, out.String())
	}
	for _, want := range []string{"require remote_segments: extension not built", `require parquet: IO Error: Extension "parquet" not found`, "require-env SQLLOGICTEST_SURELY_UNSET: not set"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunUnavailableHosts(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	file := writeTest(t, dir, "a.test", "query I\nSELECT 1\n----\n1\n")
	missing := Host{Name: "cli", Path: filepath.Join(dir, "no-such-duckdb")}

	var out bytes.Buffer
	r := Runner{Out: &out}
	rep, err := r.Run([]string{file}, []Host{missing, fakeHostFor(t, "fake")}, nil)
	if err != nil || !rep.OK() || len(rep.Hosts) != 1 || rep.Hosts[0].Host != "fake" {
		t.Errorf("one host missing: rep = %+v, err = %v", rep, err)
	}
	if !regexp.MustCompile(`(?m)^WARNING: DuckDB host "cli" is unavailable`).MatchString(out.String()) {
		t.Errorf("no WARNING line:\n%s", out.String())
	}

	out.Reset()
	rep, err = r.Run([]string{file}, []Host{missing}, nil)
	if !errors.Is(err, ErrNoHost) || rep.OK() {
		t.Errorf("no host: rep = %+v, err = %v", rep, err)
	}
}
