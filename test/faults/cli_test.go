package faults

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/test/sqllogictest"
)

// cli is one DuckDB CLI process with the extension loaded. Statements go in
// on stdin, each followed by a marker printed on stdout and on stderr, so
// the rows and the error of a statement are what precedes the markers. (The
// same line protocol as test/sqllogictest, whose session is unexported; this
// one also exposes the process id, for /proc.)
type cli struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	out     chan string // stdout lines
	errs    chan string // stderr lines
	readers sync.WaitGroup
	nonce   string
	seq     int
	tmp     string // the process's TMPDIR and working directory
	hung    string // the statement that did not answer: the session is out of step
	dead    bool   // the process died (reported by try): close does not report it again

	mu         sync.Mutex
	transcript strings.Builder // everything it printed, for the secrets check
}

// result is what one statement printed.
type result struct {
	rows [][]string
	err  string // the error message, "" when it succeeded
	took time.Duration
}

const (
	colSep = "\x1f"
	rowSep = "\x1e"
)

// startCLI starts the DuckDB CLI (sqllogictest.CLIHost's flags) and loads
// ext. The process ends with the test.
func startCLI(t *testing.T, duckdb, ext string, env ...string) *cli {
	t.Helper()
	return startHost(t, sqllogictest.CLIHost(duckdb), ext, env...)
}

// startHost starts h (the DuckDB CLI, or another host speaking its line
// protocol, such as sqllogictest.GoHost) and loads ext. The process ends
// with the test.
func startHost(t *testing.T, h sqllogictest.Host, ext string, env ...string) *cli {
	t.Helper()
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	c := &cli{t: t, out: make(chan string, 64), errs: make(chan string, 64),
		nonce: hex.EncodeToString(nonce[:]), tmp: t.TempDir()}
	c.cmd = exec.Command(h.Path, h.Args...)
	c.cmd.Env = append(append(append(os.Environ(), h.Env...), "TMPDIR="+c.tmp), env...)
	c.cmd.Dir = c.tmp
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", h.Path, err)
	}
	c.readers.Add(2)
	go c.read(stdout, c.out)
	go c.read(stderr, c.errs)
	t.Cleanup(c.close)
	for _, s := range []string{".mode list", ".headers off", ".nullvalue NULL", `.separator "\037" "\036\n"`} {
		c.send(s)
	}
	if r := c.exec(fmt.Sprintf("LOAD '%s'", ext), time.Minute); r.err != "" {
		t.Fatalf("LOAD: %s", r.err)
	}
	return c
}

func (c *cli) read(r io.Reader, ch chan<- string) {
	defer c.readers.Done()
	defer close(ch)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			c.mu.Lock()
			c.transcript.WriteString(line)
			c.mu.Unlock()
			ch <- line
		}
		if err != nil {
			return
		}
	}
}

func (c *cli) send(s string) {
	if _, err := io.WriteString(c.stdin, s+"\n"); err != nil {
		c.t.Fatalf("duckdb: write: %v", err)
	}
}

// exec runs one statement; the test fails if the process dies or does not
// answer within timeout.
func (c *cli) exec(sql string, timeout time.Duration) result {
	c.t.Helper()
	r, err := c.try(sql, timeout)
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// try runs one statement; an error says that the process died (its
// output's tail included) or did not answer within timeout, and the
// session is then unusable: its process group is killed.
func (c *cli) try(sql string, timeout time.Duration) (result, error) {
	if c.hung != "" {
		return result{}, fmt.Errorf("duckdb: unusable since %q did not answer", c.hung)
	}
	if c.dead {
		return result{}, fmt.Errorf("duckdb: dead")
	}
	c.seq++
	marker := fmt.Sprintf("__faults_%s_%d__", c.nonce, c.seq)
	start := time.Now()
	if _, err := io.WriteString(c.stdin, strings.TrimRight(strings.TrimSpace(sql), ";")+"\n;\n.print "+marker+
		"\n.output /dev/stderr\n.print "+marker+"\n.output\n"); err != nil {
		return result{}, c.died(sql)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var out, errText strings.Builder
	var took time.Duration
	for outDone, errDone := false, false; !outDone || !errDone; {
		select {
		case line, ok := <-c.out:
			if !ok {
				return result{}, c.died(sql)
			}
			if strings.HasSuffix(strings.TrimSuffix(line, "\n"), marker) {
				out.WriteString(strings.TrimSuffix(strings.TrimSuffix(line, "\n"), marker))
				outDone, took = true, time.Since(start)
			} else {
				out.WriteString(line)
			}
		case line, ok := <-c.errs:
			if !ok {
				return result{}, c.died(sql)
			}
			if strings.HasSuffix(strings.TrimSuffix(line, "\n"), marker) {
				errDone = true
			} else {
				errText.WriteString(line)
			}
		case <-timer.C:
			c.hung, c.dead = sql, true
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			return result{}, fmt.Errorf("duckdb: no answer to %q within %v (a hang)", sql, timeout)
		}
	}
	r := result{took: took}
	if body := strings.TrimSuffix(out.String(), rowSep+"\n"); body != "" {
		for _, line := range strings.Split(body, rowSep+"\n") {
			r.rows = append(r.rows, strings.Split(line, colSep))
		}
	}
	if e := strings.TrimSpace(errText.String()); e != "" {
		if i := strings.Index(e, "Error: "); i >= 0 {
			r.err = e // the whole message, DuckDB's context lines included
		}
	}
	return r, nil
}

// died marks the session dead and says how the process ended running sql.
func (c *cli) died(sql string) error {
	c.dead = true
	done := c.exited()
	status := "did not exit"
	select {
	case err := <-done:
		status = fmt.Sprint(err)
	case <-time.After(10 * time.Second):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
	return fmt.Errorf("duckdb died running %q (%s):\n%s", sql, status, c.stderrTail())
}

// exited drains the process's output and reports how it exited.
func (c *cli) exited() <-chan error {
	done := make(chan error, 1)
	go func() {
		for range c.out {
		}
	}()
	go func() {
		for range c.errs {
		}
	}()
	go func() { c.readers.Wait(); done <- c.cmd.Wait() }()
	return done
}

// value runs a query of one value.
func (c *cli) value(sql string) string {
	c.t.Helper()
	r := c.exec(sql, time.Minute)
	if r.err != "" || len(r.rows) != 1 || len(r.rows[0]) != 1 {
		c.t.Fatalf("%s: want one value, got %q (error %q)", sql, r.rows, r.err)
	}
	return r.rows[0][0]
}

// fds counts the process's open file descriptors.
func (c *cli) fds() int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", c.cmd.Process.Pid))
	if err != nil {
		c.t.Fatalf("/proc: %v", err)
	}
	return len(ents)
}

// tempFiles counts what the process left in its TMPDIR and working directory.
func (c *cli) tempFiles() int {
	n := 0
	filepath.WalkDir(c.tmp, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != c.tmp {
			n++
		}
		return nil
	})
	return n
}

// output returns everything the process printed so far.
func (c *cli) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.transcript.String()
}

func (c *cli) stderrTail() string {
	s := c.output()
	if len(s) > 3000 {
		s = s[len(s)-3000:]
	}
	return s
}

// close ends the process: stdin closed, killed if it has not exited within
// 10 s. A signal at exit (a crash) fails the test.
func (c *cli) close() {
	c.stdin.Close()
	if c.dead {
		return // reported by try
	}
	done := c.exited()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				c.t.Errorf("duckdb died at exit: %v\n%s", err, c.stderrTail())
			}
		}
	case <-time.After(10 * time.Second):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-done
		c.t.Errorf("duckdb did not exit within 10s after its input ended; killed")
	}
}
