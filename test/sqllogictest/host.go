package sqllogictest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Host is a DuckDB process the runner drives over the CLI's line protocol:
// SQL through ".read FILE", ".print" markers, ".output /dev/stderr", list mode
// with the separators set by ".separator". Both the DuckDB CLI and
// build/host/duckdb_host speak it.
type Host struct {
	Name string   // one word, used in reports and by skipif/onlyif ("cli", "engine")
	Path string   // the executable
	Args []string // arguments before any the runner adds (it adds none)
	Env  []string // added to the runner's environment
	// Vars, when set, override the runner's ${NAME} substitutions for this
	// host (the 2.0 edition's host gives its own ${EXT}).
	Vars map[string]string
}

// CLIHost returns the DuckDB CLI at path (e.g. .tools/bin/duckdb) as the host
// "cli": unsigned extensions allowed, batch mode, no ~/.duckdbrc, list mode,
// and the CLI's agent mode off.
func CLIHost(path string) Host {
	return Host{
		Name: "cli",
		Path: path,
		Args: []string{"-unsigned", "-batch", "-init", "/dev/null", "-list", "-noheader"},
		Env:  []string{"DUCKDB_AGENT_MODE=0", "NO_COLOR=1"},
	}
}

// CLIv2Host returns the DuckDB 2.0 CLI at path as the host "cli-v2", which
// loads ext, the 2.0 edition of the extension (the V2 C API), as ${EXT}.
func CLIv2Host(path, ext string) Host {
	h := CLIHost(path)
	h.Name = "cli-v2"
	h.Vars = map[string]string{"EXT": ext}
	return h
}

// EngineHost returns build/host/duckdb_host at path (the pinned DuckDB engine)
// as the host "engine".
func EngineHost(path string) Host {
	return Host{Name: "engine", Path: path, Args: []string{"-unsigned"}}
}

// Engine14Host returns build/host/duckdb_host_1.4.4 at path (the same host
// program linked against DuckDB 1.4.4's libduckdb.so) as the host
// "engine-1.4".
func Engine14Host(path string) Host {
	return Host{Name: "engine-1.4", Path: path, Args: []string{"-unsigned"}}
}

// GoHost returns build/host/gohost at path (test/host/gohost: database/sql
// with the DuckDB Go driver and remotesql, no extension loaded) as the host
// "go".
func GoHost(path string) Host {
	return Host{Name: "go", Path: path}
}

// The separators the hosts print rows with: ASCII unit and record separators,
// so values holding tabs or newlines stay unambiguous.
const (
	colSep = "\x1f"
	rowSep = "\x1e\n"
)

// setup is sent to every new session; the same dot commands work in both hosts.
var setup = []string{
	".mode list",
	".headers off",
	".nullvalue " + nullText,
	`.separator "\037" "\036\n"`,
}

// errorLine finds the first line of a DuckDB error message on stderr, such as
// "Catalog Error: ...", "Invalid Input Error: ..." or "Error: ...". Other
// stderr text (an extension's log lines) does not make a statement fail.
var errorLine = regexp.MustCompile(`(?m)^(?:[A-Za-z][A-Za-z_ ]*)?Error: `)

// stmtResult is what one statement printed.
type stmtResult struct {
	rows   [][]Value
	err    string // the error message; "" when the statement succeeded
	stderr string // stderr text that is not part of the error message
}

// HostError is a failure of the host process rather than of a statement: it
// died (crash, abort) or a statement did not finish in time. The session is
// unusable afterwards.
type HostError struct {
	Host   string
	Msg    string
	Stderr string // the last lines the process wrote on stderr
}

func (e *HostError) Error() string {
	s := fmt.Sprintf("sqllogictest: %s: %s", e.Host, e.Msg)
	if e.Stderr != "" {
		s += "\n  stderr:\n    " + strings.ReplaceAll(strings.TrimRight(e.Stderr, "\n"), "\n", "\n    ")
	}
	return s
}

// session is one running host process.
type session struct {
	host    Host
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	out     chan string // stdout lines, each with its "\n"; closed at EOF
	errs    chan string // stderr lines
	exited  chan struct{}
	waitErr error // valid after exited is closed
	dir     string
	nonce   string
	seq     int
	stderr  []string // recent stderr lines, for crash reports
	dead    error
}

// startSession starts the host process and waits until it answers.
func startSession(h Host, timeout time.Duration) (*session, error) {
	dir, err := os.MkdirTemp("", "sqltest-"+h.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("sqllogictest: %w", err)
	}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	s := &session{
		host:   h,
		dir:    dir,
		nonce:  hex.EncodeToString(nonce[:]),
		out:    make(chan string),
		errs:   make(chan string),
		exited: make(chan struct{}),
	}
	s.cmd = exec.Command(h.Path, h.Args...)
	s.cmd.Env = append(os.Environ(), h.Env...)
	s.cmd.Dir = dir
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // kill the whole group on timeout
	stdin, err := s.cmd.StdinPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sqllogictest: %w", err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sqllogictest: %w", err)
	}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sqllogictest: %w", err)
	}
	s.stdin = stdin
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, &HostError{Host: h.Name, Msg: fmt.Sprintf("cannot start %s: %v", h.Path, err)}
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go readLines(stdout, s.out, &readers)
	go readLines(stderr, s.errs, &readers)
	go func() {
		// Wait closes the pipes, so it must run after the readers hit EOF.
		readers.Wait()
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()

	cmds := append([]string(nil), setup...)
	if _, err := s.roundTrip(cmds, timeout); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// readLines sends r's lines, "\n" included, to ch and closes ch at EOF.
func readLines(r io.Reader, ch chan<- string, wg *sync.WaitGroup) {
	defer wg.Done()
	defer close(ch)
	br := bufio.NewReaderSize(r, 64*1024)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			ch <- line
		}
		if err != nil {
			return
		}
	}
}

// exec runs sql (one or more statements) and returns what it printed. A
// *HostError means the process died or timed out; the session is then closed.
func (s *session) exec(sql string, timeout time.Duration) (stmtResult, error) {
	if s.dead != nil {
		return stmtResult{}, s.dead
	}
	file := filepath.Join(s.dir, "statement.sql")
	text := sql
	if !strings.HasSuffix(strings.TrimSpace(text), ";") {
		// The CLI runs a statement once it has seen its ';'. On its own line,
		// so that a trailing "-- comment" cannot swallow it.
		text += "\n;"
	}
	if err := os.WriteFile(file, []byte(text+"\n"), 0o644); err != nil {
		return stmtResult{}, fmt.Errorf("sqllogictest: %w", err)
	}
	return s.roundTrip([]string{".read " + quoteArg(file)}, timeout)
}

// quoteArg quotes a dot-command argument.
func quoteArg(s string) string {
	return "'" + s + "'"
}

// roundTrip sends cmds followed by a stdout and a stderr marker, and collects
// both streams up to the markers. The CLI runs its input in order, and each
// stream is read up to its own marker, so the output and the error message of
// the commands are exactly what precedes the markers, whatever the buffering.
func (s *session) roundTrip(cmds []string, timeout time.Duration) (stmtResult, error) {
	s.seq++
	marker := fmt.Sprintf("__sqltest_%s_%d__", s.nonce, s.seq)
	var in strings.Builder
	for _, c := range cmds {
		in.WriteString(c)
		in.WriteByte('\n')
	}
	fmt.Fprintf(&in, ".print %s\n.output /dev/stderr\n.print %s\n.output\n", marker, marker)
	if _, err := io.WriteString(s.stdin, in.String()); err != nil {
		// EPIPE: the process is gone; report how it ended.
		return stmtResult{}, s.died()
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var out, errText strings.Builder
	outDone, errDone := false, false
	for !outDone || !errDone {
		select {
		case line, ok := <-s.out:
			if !ok {
				return stmtResult{}, s.died()
			}
			if done, rest := atMarker(line, marker); done {
				out.WriteString(rest)
				outDone = true
			} else {
				out.WriteString(line)
			}
		case line, ok := <-s.errs:
			if !ok {
				return stmtResult{}, s.died()
			}
			if done, rest := atMarker(line, marker); done {
				errText.WriteString(rest)
				errDone = true
			} else {
				errText.WriteString(line)
				s.remember(line)
			}
		case <-timer.C:
			return stmtResult{}, s.fail(fmt.Sprintf("no answer within %v (statement timeout)", timeout))
		}
	}
	return parseOutput(out.String(), errText.String()), nil
}

// atMarker reports whether line ends with marker; rest is what precedes it
// (output not terminated by a newline).
func atMarker(line, marker string) (bool, string) {
	body := strings.TrimSuffix(line, "\n")
	if !strings.HasSuffix(body, marker) {
		return false, ""
	}
	return true, strings.TrimSuffix(body, marker)
}

// ansiEscape matches terminal color sequences, in case a host colors errors.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

func parseOutput(out, errText string) stmtResult {
	var res stmtResult
	if out != "" {
		body := strings.TrimSuffix(out, rowSep)
		for _, line := range strings.Split(body, rowSep) {
			cells := strings.Split(line, colSep)
			row := make([]Value, len(cells))
			for i, c := range cells {
				row[i] = Value{Text: c, Null: c == nullText}
			}
			res.rows = append(res.rows, row)
		}
	}
	errText = ansiEscape.ReplaceAllString(errText, "")
	if loc := errorLine.FindStringIndex(errText); loc != nil {
		res.err = strings.TrimSpace(errText[loc[0]:])
		res.stderr = strings.TrimSpace(errText[:loc[0]])
	} else {
		res.stderr = strings.TrimSpace(errText)
	}
	return res
}

const stderrTail = 30

func (s *session) remember(line string) {
	s.stderr = append(s.stderr, strings.TrimRight(line, "\n"))
	if len(s.stderr) > stderrTail {
		s.stderr = s.stderr[len(s.stderr)-stderrTail:]
	}
}

// died reports the end of the process: its exit status and its last stderr
// lines (a crash message, a Go panic).
func (s *session) died() error {
	// Drain what is left on stderr; the process is gone or going.
	deadline := time.After(5 * time.Second)
drain:
	for {
		select {
		case line, ok := <-s.errs:
			if !ok {
				break drain
			}
			s.remember(line)
		case <-s.out:
		case <-deadline:
			break drain
		}
	}
	status := "exited"
	select {
	case <-s.exited:
		if s.waitErr != nil {
			status = "exited: " + s.waitErr.Error()
		} else {
			status = "exited with status 0"
		}
	case <-time.After(5 * time.Second):
		status = "closed its output but did not exit"
	}
	return s.fail("host process " + status)
}

// fail marks the session dead, kills the process and returns the HostError.
func (s *session) fail(msg string) error {
	err := &HostError{Host: s.host.Name, Msg: msg, Stderr: strings.Join(s.stderr, "\n")}
	s.dead = err
	s.kill()
	return err
}

func (s *session) kill() {
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// close ends the session: stdin is closed so the host exits; a host that does
// not exit within a few seconds is killed. It returns an error when the host
// exited abnormally (killed by a signal), which a test must not hide: a crash
// at shutdown is a crash.
func (s *session) close() error {
	defer os.RemoveAll(s.dir)
	_ = s.stdin.Close()
	go func() { // keep the readers moving until the process is gone
		for range s.out {
		}
	}()
	go func() {
		for range s.errs {
		}
	}()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.kill()
		<-s.exited
		if s.dead == nil {
			return &HostError{Host: s.host.Name, Msg: "did not exit within 10s after its input ended; killed"}
		}
		return nil
	}
	if s.dead != nil {
		return nil // already reported
	}
	var exitErr *exec.ExitError
	if errors.As(s.waitErr, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &HostError{Host: s.host.Name, Msg: "host process died at exit: " + s.waitErr.Error(), Stderr: strings.Join(s.stderr, "\n")}
		}
	}
	return nil // exit status 1 only says that some statement failed
}
