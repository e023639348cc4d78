package sqllogictest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"
)

// DefaultStatementTimeout bounds one statement, so that a hung extension fails
// its test instead of hanging CI.
const DefaultStatementTimeout = 120 * time.Second

// ErrNoHost is returned by Run when none of the hosts can be started.
var ErrNoHost = errors.New("sqllogictest: no DuckDB host available")

// Failure is one failed record (or a file that could not run).
type Failure struct {
	Host string
	File string
	Line int    // 0 when the file as a whole failed
	SQL  string // the SQL of the record, after substitution
	Msg  string
}

func (f Failure) String() string {
	head, detail, _ := strings.Cut(f.Msg, "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "FAIL %s %s:%d: %s", f.Host, f.File, f.Line, head)
	if f.SQL != "" {
		b.WriteString("\n  SQL: ")
		b.WriteString(strings.ReplaceAll(f.SQL, "\n", "\n       "))
	}
	if detail != "" {
		b.WriteString("\n")
		b.WriteString(detail)
	}
	return b.String()
}

// HostReport counts the records run on one host.
type HostReport struct {
	Host     string
	Passed   int
	Failed   int
	Skipped  int
	Failures []Failure
}

// Report is the outcome of Run.
type Report struct {
	Hosts       []HostReport // the hosts that ran, in order
	Unavailable []string     // one line per host that could not be used
}

// Totals adds up the counts of all hosts.
func (r Report) Totals() (passed, failed, skipped int) {
	for _, h := range r.Hosts {
		passed += h.Passed
		failed += h.Failed
		skipped += h.Skipped
	}
	return passed, failed, skipped
}

// OK reports whether at least one host ran and nothing failed.
func (r Report) OK() bool {
	_, failed, _ := r.Totals()
	return len(r.Hosts) > 0 && failed == 0
}

// Summary returns one line per host and a total line, in the plain form
// "NAME: N passed, N failed, N skipped".
func (r Report) Summary() string {
	var b strings.Builder
	for _, h := range r.Hosts {
		fmt.Fprintf(&b, "%s: %d passed, %d failed, %d skipped\n", h.Host, h.Passed, h.Failed, h.Skipped)
	}
	p, f, s := r.Totals()
	fmt.Fprintf(&b, "total: %d passed, %d failed, %d skipped\n", p, f, s)
	return b.String()
}

// Runner runs test files. A zero Runner is valid: it prints nothing and uses
// DefaultStatementTimeout.
type Runner struct {
	Out              io.Writer     // progress, failures and the summary; nil discards them
	StatementTimeout time.Duration // per statement; 0 means DefaultStatementTimeout
	Verbose          bool          // also print every record and stray stderr text
}

// Run runs every file on every host with a Runner that prints to stdout. See
// Runner.Run.
func Run(files []string, hosts []Host, vars map[string]string) (Report, error) {
	r := Runner{Out: os.Stdout}
	return r.Run(files, hosts, vars)
}

// Run runs every file on every host, each file in one fresh host process, and
// prints the failures and a summary. vars supplies ${NAME} substitutions.
//
// A host whose executable is missing is left out with a line starting with
// "WARNING:"; when no host is left, Run returns ErrNoHost. Failing records do
// not make Run return an error: they are in the Report (see Report.OK). A
// host process that crashes or times out fails the record it was running;
// the rest of that file is not run, and the next file gets a new process.
func (r *Runner) Run(files []string, hosts []Host, vars map[string]string) (Report, error) {
	var rep Report
	var usable []Host
	for _, h := range hosts {
		if _, err := exec.LookPath(h.Path); err != nil {
			msg := fmt.Sprintf("WARNING: DuckDB host %q is unavailable (%v); the SQL tests run without it", h.Name, err)
			rep.Unavailable = append(rep.Unavailable, msg)
			r.printf("%s\n", msg)
			continue
		}
		usable = append(usable, h)
	}
	if len(usable) == 0 {
		r.printf("ERROR: no DuckDB host available: nothing was tested\n")
		return rep, ErrNoHost
	}

	start := time.Now()
	parsed := make([]*File, len(files))
	parseErrs := make([]error, len(files))
	for i, path := range files {
		parsed[i], parseErrs[i] = ParseFile(path)
	}
	for _, h := range usable {
		hr := HostReport{Host: h.Name}
		for i, path := range files {
			if parseErrs[i] != nil {
				line := 0
				var pe *ParseError
				if errors.As(parseErrs[i], &pe) {
					line = pe.Line
				}
				r.fail(&hr, Failure{Host: h.Name, File: path, Line: line, Msg: parseErrs[i].Error()})
				continue
			}
			r.runFile(h, parsed[i], h.vars(vars), &hr)
		}
		rep.Hosts = append(rep.Hosts, hr)
	}
	r.printf("ran %d files on %d hosts in %.1fs\n", len(files), len(usable), time.Since(start).Seconds())
	for _, msg := range rep.Unavailable {
		r.printf("%s\n", msg)
	}
	r.printf("%s", rep.Summary())
	return rep, nil
}

// vars returns the substitutions for h: vars with h.Vars laid over them.
func (h Host) vars(vars map[string]string) map[string]string {
	if len(h.Vars) == 0 {
		return vars
	}
	out := make(map[string]string, len(vars)+len(h.Vars))
	for k, v := range vars {
		out[k] = v
	}
	for k, v := range h.Vars {
		out[k] = v
	}
	return out
}

func (r *Runner) printf(format string, args ...any) {
	if r.Out != nil {
		fmt.Fprintf(r.Out, format, args...)
	}
}

func (r *Runner) timeout() time.Duration {
	if r.StatementTimeout > 0 {
		return r.StatementTimeout
	}
	return DefaultStatementTimeout
}

func (r *Runner) fail(hr *HostReport, f Failure) {
	hr.Failed++
	hr.Failures = append(hr.Failures, f)
	r.printf("%s\n", f)
}

// countable reports whether a record counts as a test (passed/failed/skipped).
func countable(rec *Record) bool {
	return rec.Kind == Statement || rec.Kind == Query
}

func remaining(recs []Record) int {
	n := 0
	for i := range recs {
		if countable(&recs[i]) {
			n++
		}
	}
	return n
}

// appliesTo reports whether the record's skipif/onlyif conditions and mode
// skip let it run on host.
func appliesTo(rec *Record, host string) bool {
	if rec.Skip {
		return false
	}
	matches := func(cond string) bool { return cond == host || cond == "duckdb" }
	for _, c := range rec.SkipIf {
		if matches(c) {
			return false
		}
	}
	if len(rec.OnlyIf) == 0 {
		return true
	}
	for _, c := range rec.OnlyIf {
		if matches(c) {
			return true
		}
	}
	return false
}

func (r *Runner) runFile(h Host, f *File, vars map[string]string, hr *HostReport) {
	start := time.Now()
	before := *hr
	testDir, err := os.MkdirTemp("", "sqltest-dir-")
	if err != nil {
		r.fail(hr, Failure{Host: h.Name, File: f.Path, Msg: err.Error()})
		return
	}
	defer os.RemoveAll(testDir)

	h.Env = slices.Clip(h.Env)
	for _, rec := range f.Records {
		if rec.Kind == HostEnv && appliesTo(&rec, h.Name) {
			val, err := substitute(rec.Args[1], vars, testDir)
			if err != nil {
				r.fail(hr, Failure{Host: h.Name, File: f.Path, Line: rec.Line, Msg: err.Error()})
				return
			}
			h.Env = append(h.Env, rec.Args[0]+"="+val)
		}
	}
	sess, err := startSession(h, r.timeout())
	if err != nil {
		r.fail(hr, Failure{Host: h.Name, File: f.Path, Msg: "cannot start the host: " + err.Error()})
		return
	}
	defer func() {
		if sess != nil {
			if err := sess.close(); err != nil { // a dead session was reported already
				r.fail(hr, Failure{Host: h.Name, File: f.Path, Line: lastLine(f), Msg: err.Error()})
			}
		}
		r.fileDone(h, f, before, hr, start)
	}()

	for i := range f.Records {
		rec := &f.Records[i]
		if !appliesTo(rec, h.Name) {
			if countable(rec) {
				hr.Skipped++
			}
			continue
		}
		switch rec.Kind {
		case Load, HostEnv:
			continue
		case Halt:
			return
		case Sleep:
			d, _ := sleepDuration(rec.Args) // checked by the parser
			time.Sleep(d)
			continue
		case Restart:
			if err := sess.close(); err != nil {
				r.fail(hr, Failure{Host: h.Name, File: f.Path, Line: rec.Line, Msg: err.Error()})
			}
			sess, err = startSession(h, r.timeout())
			if err != nil {
				r.fail(hr, Failure{Host: h.Name, File: f.Path, Line: rec.Line, Msg: "cannot restart the host: " + err.Error()})
				return
			}
			continue
		case Require, RequireEnv:
			reason, err := r.require(sess, rec, vars)
			if err != nil {
				r.fail(hr, Failure{Host: h.Name, File: f.Path, Line: rec.Line, Msg: err.Error()})
				return
			}
			if reason != "" {
				n := remaining(f.Records[i+1:])
				hr.Skipped += n
				r.printf("SKIP %s %s:%d: %s (%d records)\n", h.Name, f.Path, rec.Line, reason, n)
				return
			}
			continue
		}

		sql, err := substitute(rec.SQL, vars, testDir)
		if err != nil {
			r.fail(hr, Failure{Host: h.Name, File: f.Path, Line: rec.Line, SQL: rec.SQL, Msg: err.Error()})
			continue
		}
		res, err := sess.exec(sql, r.timeout())
		if err != nil {
			r.fail(hr, Failure{Host: h.Name, File: f.Path, Line: rec.Line, SQL: sql, Msg: err.Error()})
			var he *HostError
			if !errors.As(err, &he) {
				continue // e.g. the statement file could not be written
			}
			if n := remaining(f.Records[i+1:]); n > 0 {
				r.printf("NOTE %s %s: %d later records not run: the host process is gone\n", h.Name, f.Path, n)
			}
			return
		}
		if res.stderr != "" && r.Verbose {
			r.printf("     %s %s:%d: stderr: %s\n", h.Name, f.Path, rec.Line, res.stderr)
		}
		var msg string
		if rec.Kind == Statement {
			msg = checkStatement(rec, res, vars, testDir)
		} else if res.err != "" {
			msg = "query failed: " + res.err
		} else {
			exp := *rec
			exp.Expected = substituteLines(rec.Expected, vars, testDir)
			msg = checkQuery(&exp, res.rows)
		}
		if msg != "" {
			r.fail(hr, Failure{Host: h.Name, File: f.Path, Line: rec.Line, SQL: sql, Msg: msg})
			continue
		}
		hr.Passed++
		if r.Verbose {
			r.printf("  ok %s %s:%d\n", h.Name, f.Path, rec.Line)
		}
	}
}

func (r *Runner) fileDone(h Host, f *File, before HostReport, hr *HostReport, start time.Time) {
	passed, failed, skipped := hr.Passed-before.Passed, hr.Failed-before.Failed, hr.Skipped-before.Skipped
	status := "ok  "
	if failed > 0 {
		status = "FAIL"
	}
	r.printf("%s %s %s (%d ok, %d failing, %d skipped; %.1fs)\n", status, h.Name, f.Path, passed, failed, skipped, time.Since(start).Seconds())
}

func lastLine(f *File) int {
	if len(f.Records) == 0 {
		return 0
	}
	return f.Records[len(f.Records)-1].Line
}

// require checks a require or require-env record. It returns a reason to skip
// the rest of the file, or "" to go on; an error means the host failed.
func (r *Runner) require(sess *session, rec *Record, vars map[string]string) (string, error) {
	if rec.Kind == RequireEnv {
		name := rec.Args[0]
		val, ok := vars[name]
		if !ok {
			val, ok = os.LookupEnv(name)
		}
		switch {
		case !ok || val == "":
			return fmt.Sprintf("require-env %s: not set", name), nil
		case len(rec.Args) > 1 && val != rec.Args[1]:
			return fmt.Sprintf("require-env %s: is %q, not %q", name, val, rec.Args[1]), nil
		}
		return "", nil
	}
	ext := rec.Args[0]
	if ext == "remote_segments" {
		path := vars["EXT"]
		if path == "" {
			return "require remote_segments: ${EXT} (the extension's path) is not set", nil
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Sprintf("require remote_segments: extension not built (%v)", err), nil
		}
		return "", nil // the file LOADs it itself, after checking it is absent before
	}
	res, err := sess.exec("LOAD "+ext+";", r.timeout())
	if err != nil {
		return "", err
	}
	if res.err != "" {
		first, _, _ := strings.Cut(res.err, "\n")
		return fmt.Sprintf("require %s: %s", ext, first), nil
	}
	return "", nil
}

func checkStatement(rec *Record, res stmtResult, vars map[string]string, testDir string) string {
	want, _ := substitute(rec.ErrorMessage, vars, testDir)
	switch rec.Expect {
	case ExpectOK:
		if res.err != "" {
			return "statement failed: " + res.err
		}
	case ExpectError:
		if res.err == "" {
			if want != "" {
				return "statement succeeded, but an error containing this was expected: " + want
			}
			return "statement succeeded, but an error was expected"
		}
		return checkError(want, res.err)
	case ExpectMaybe:
		if res.err != "" {
			return checkError(want, res.err)
		}
	}
	return ""
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// substitute replaces ${NAME} with vars[NAME] and __TEST_DIR__ with testDir.
// On failure (a ${NAME} without a value), returns an error naming it.
func substitute(s string, vars map[string]string, testDir string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		if v, ok := vars[name]; ok {
			return v
		}
		missing = append(missing, ref)
		return ref
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for %s (give it to the runner, e.g. -var %s=...)", strings.Join(missing, ", "), missing[0][2:len(missing[0])-1])
	}
	return strings.ReplaceAll(out, "__TEST_DIR__", testDir), nil
}

// substituteLines substitutes in expected result lines; a missing variable is
// left as written, so the comparison shows it.
func substituteLines(lines []string, vars map[string]string, testDir string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if s, err := substitute(l, vars, testDir); err == nil {
			out[i] = s
		} else {
			out[i] = l
		}
	}
	return out
}
