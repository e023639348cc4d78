package cabi

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// truncatedMapping maps a file of n bytes, each 7, then truncates the file
// to nothing: every read of the mapping raises SIGBUS.
func truncatedMapping(t *testing.T, n int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chunk.arrow")
	if err := os.WriteFile(path, []byte(strings.Repeat("\x07", n)), 0o644); err != nil {
		t.Fatal(err)
	}
	st, name, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.(store.Mapper).MapRange(context.Background(), name, 0, int64(n))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Unmap(m) })
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	return m
}

// The guard turns a SIGBUS in C on a truncated mapping into its verdict,
// again and again, and leaves a good mapping's bytes alone.
func TestGuardCatchesSIGBUS(t *testing.T) {
	installGuard()
	for i := range 3 {
		if _, why := guardedSum(truncatedMapping(t, 1<<20), true); why != guardFault {
			t.Fatalf("round %d: a truncated mapping read under the guard: verdict %d, want %d (SIGBUS)", i, why, guardFault)
		}
		good := make([]byte, 1<<20)
		for j := range good {
			good[j] = 1
		}
		if sum, why := guardedSum(good, true); why != 0 || sum != 2048 {
			t.Fatalf("round %d: good bytes: sum %d, verdict %d; want 2048, 0", i, sum, why)
		}
	}
}

// sink keeps a read of a mapping from being optimized away.
var sink byte

// With the guard installed, a SIGBUS in Go still reaches Go's handler: a
// panic under debug.SetPanicOnFault (how the scanner's decode survives a
// truncated file), and the usual crash without it, in a child process.
func TestGuardForwardsOtherFaults(t *testing.T) {
	if os.Getenv("RS_GUARD_CHILD") != "" {
		installGuard()
		m := truncatedMapping(t, 1<<16)
		println(m[100]) // no SetPanicOnFault: Go's fatal fault
		os.Exit(0)
	}
	installGuard()
	m := truncatedMapping(t, 1<<16)
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			r := recover()
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				t.Errorf("a Go read of a truncated mapping under SetPanicOnFault: recovered %v, want a fault panic", r)
			}
		}()
		sink = m[100]
	}()

	cmd := exec.Command(os.Args[0], "-test.run=^TestGuardForwardsOtherFaults$")
	cmd.Env = append(os.Environ(), "RS_GUARD_CHILD=1")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Success() || !strings.Contains(string(out), "SIGBUS") {
		t.Errorf("a Go read of a truncated mapping without SetPanicOnFault: %v, output %q; want Go's crash on SIGBUS", err, out)
	}
}

// The guard takes only a SIGBUS at an address of the buffers its copy was
// told are mappings: one elsewhere on a guarded thread (in DuckDB's own code,
// a hardware error) goes to the handler before it, which ends the process,
// rather than a jump that would leave another function's frames half done.
func TestGuardIgnoresFaultsOutsideItsMappings(t *testing.T) {
	if os.Getenv("RS_GUARD_CHILD") != "" {
		installGuard()
		_, why := guardedSum(truncatedMapping(t, 1<<16), false)
		println("survived, verdict", why) // must not be reached
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGuardIgnoresFaultsOutsideItsMappings$")
	cmd.Env = append(os.Environ(), "RS_GUARD_CHILD=1")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Success() || strings.Contains(string(out), "survived") || !strings.Contains(string(out), "SIGBUS") {
		t.Errorf("a SIGBUS outside the guard's mappings: %v, output %q; want the crash the guard forwards to", err, out)
	}
}
