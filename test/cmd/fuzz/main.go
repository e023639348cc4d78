// Command fuzz runs every Go fuzz target of the module for a while each
// (`make fuzz`) and writes the last result of each into the fuzzing section
// of test/RELIABILITY.md: target, time, executions, result. Targets run two
// at a time by default, each with one fuzzing worker. A failing input is
// written by `go test` into the target's testdata/fuzz/<name>/ seed corpus,
// which `go test` (and so `make test`) then runs as a normal test.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// target is one fuzz target and, after its run, its result.
type target struct {
	pkg, name string

	took    time.Duration // with the build
	fuzzed  string        // time fuzzing, as go test printed it last
	execs   string        // as go test printed it last
	result  string        // "ok", or "FAIL: ..." with the failing input
	crasher string
}

func main() {
	def := os.Getenv("FUZZTIME")
	if def == "" {
		def = "5m"
	}
	fuzztime := flag.String("fuzztime", def, "how long each target runs (go test -fuzztime); default $FUZZTIME or 5m")
	parallel := flag.Int("parallel", 2, "targets run at once (each with one fuzzing worker)")
	match := flag.String("run", ".", "only targets whose name matches this regexp")
	report := flag.String("report", "test/RELIABILITY.md", "file whose fuzzing section is rewritten (empty: none)")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	re, err := regexp.Compile(*match)
	if err != nil {
		fail("-run: %v", err)
	}
	targets, err := list(pkgs, re)
	if err != nil {
		fail("%v", err)
	}
	if len(targets) == 0 {
		fail("no fuzz targets in %s", strings.Join(pkgs, " "))
	}
	fmt.Printf("fuzz: %d targets, %s each, %d at a time\n", len(targets), *fuzztime, *parallel)
	sem := make(chan struct{}, max(1, *parallel))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, t := range targets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			run(t, *fuzztime)
			mu.Lock()
			fmt.Printf("%-28s %-58s fuzzed %-6s execs %-10s %s\n", t.name, t.pkg, t.fuzzed, t.execs, t.result)
			mu.Unlock()
		}()
	}
	wg.Wait()
	failed := 0
	for _, t := range targets {
		if t.result != "ok" {
			failed++
		}
	}
	if *report != "" {
		if err := writeSection(*report, targets, *fuzztime); err != nil {
			fail("%v", err)
		}
		fmt.Printf("fuzz: results written to %s\n", *report)
	}
	if failed > 0 {
		fmt.Printf("fuzz: %d of %d targets failed; their inputs are in testdata/fuzz and now run in go test\n", failed, len(targets))
		os.Exit(1)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fuzz: "+format+"\n", args...)
	os.Exit(2)
}

// list finds the fuzz targets of pkgs with go test -list.
func list(pkgs []string, re *regexp.Regexp) ([]*target, error) {
	args := append([]string{"test", "-list", "^Fuzz", "-json"}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go test -list: %v", err)
	}
	// -json gives one event per line: {"Action":"output","Package":...,"Output":"FuzzX\n"}.
	var ts []*target
	sc := bufio.NewScanner(bytes.NewReader(out))
	evt := regexp.MustCompile(`"Action":"output","Package":"([^"]+)","Output":"(Fuzz[A-Za-z0-9_]*)\\n"`)
	for sc.Scan() {
		if m := evt.FindStringSubmatch(sc.Text()); m != nil && re.MatchString(m[2]) {
			ts = append(ts, &target{pkg: m[1], name: m[2]})
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].pkg+ts[i].name < ts[j].pkg+ts[j].name })
	return ts, nil
}

var (
	progress = regexp.MustCompile(`fuzz: elapsed: ([^,]+), execs: (\d+)`)
	written  = regexp.MustCompile(`Failing input written to (\S+)`)
)

// run fuzzes t for fuzztime and records its last progress line.
func run(t *target, fuzztime string) {
	start := time.Now()
	d, err := time.ParseDuration(fuzztime)
	if err != nil {
		d = 5 * time.Minute
	}
	// A hang guard far above the fuzz time (build, minimization of a failure).
	ctx, cancel := context.WithTimeout(context.Background(), d+15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-fuzz", "^"+t.name+"$", "-fuzztime", fuzztime,
		// New inputs are minimized for at most 5 s (default 60 s): the IPC
		// seeds are 10-150 KB, and minimizing each new one for a minute
		// left a target a few executions in 40 s.
		"-fuzzminimizetime", "5s", "-parallel", "1", t.pkg)
	out, err := cmd.CombinedOutput()
	t.took = time.Since(start)
	t.execs, t.fuzzed = "?", "?"
	for _, m := range progress.FindAllSubmatch(out, -1) {
		t.fuzzed, t.execs = string(m[1]), string(m[2])
	}
	switch {
	case err == nil:
		t.result = "ok"
	default:
		t.result = "FAIL"
		if m := written.FindSubmatch(out); m != nil {
			t.crasher = string(m[1])
			t.result += ": input in " + t.crasher
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		for _, l := range lines {
			if l = strings.TrimSpace(l); strings.Contains(l, ".go:") && !strings.HasPrefix(l, "fuzz:") {
				t.result += ": " + l
				break
			}
		}
		if len(t.result) == len("FAIL") {
			t.result += ": " + lines[len(lines)-1]
		}
	}
}

// sectionMark starts the fuzzing section: everything from it to the end of
// the report is this command's (the fault matrix keeps it when it rewrites
// the rest).
const sectionMark = "<!-- fuzz: written by `make fuzz` (test/cmd/fuzz) -->"

func writeSection(path string, ts []*target, fuzztime string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	head := string(old)
	if i := strings.Index(head, sectionMark); i >= 0 {
		head = head[:i]
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(head, "\n"))
	b.WriteString("\n\n" + sectionMark + "\n## Fuzzing\n\n")
	fmt.Fprintf(&b, "The last `make fuzz` (FUZZTIME=%s each, two targets at a time with one worker each, new inputs\nminimized for at most 5 s; %s, on a\n", fuzztime, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	b.WriteString("machine shared with other jobs). A failing input goes into the target's `testdata/fuzz/<target>/`\n" +
		"seed corpus, which `go test` runs as a normal test; the seeds of every target run in `make test`.\n\n")
	b.WriteString("| target | package | time fuzzed | executions | result |\n|---|---|---|---|---|\n")
	for _, t := range ts {
		res := strings.NewReplacer("|", `\|`, "\n", " ").Replace(t.result)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", t.name, strings.TrimPrefix(t.pkg, "github.com/remote-segments/remote_segments/"), t.fuzzed, t.execs, res)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
