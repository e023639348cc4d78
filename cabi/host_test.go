package cabi

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestLoadableProcs: the loadable extension's first load doubles its Go
// runtime's default GOMAXPROCS, and leaves a GOMAXPROCS set in the
// environment alone. Each case runs in a child process (the setting is the
// process's, and made once).
func TestLoadableProcs(t *testing.T) {
	if os.Getenv("RS_LOADABLE_PROCS_CHILD") != "" {
		before := runtime.GOMAXPROCS(0)
		loadableProcs()
		fmt.Printf("%d %d\n", before, runtime.GOMAXPROCS(0))
		os.Exit(0)
	}
	for _, env := range []string{"", "3"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLoadableProcs$")
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") })
		cmd.Env = append(cmd.Env, "RS_LOADABLE_PROCS_CHILD=1")
		if env != "" {
			cmd.Env = append(cmd.Env, "GOMAXPROCS="+env)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOMAXPROCS=%q: child: %v", env, err)
		}
		var before, after int
		if _, err := fmt.Sscanf(string(out), "%d %d", &before, &after); err != nil {
			t.Fatalf("GOMAXPROCS=%q: child printed %q: %v", env, out, err)
		}
		want := 2 * before
		if env != "" {
			want = 3
		}
		if after != want {
			t.Errorf("GOMAXPROCS=%q: %d before the load, %d after, want %d", env, before, after, want)
		}
	}
}
