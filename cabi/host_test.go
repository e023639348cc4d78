package cabi

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/remote-segments/remote_segments/internal/heapfloor"
)

// TestLoadableProcs: the loadable extension's first load doubles its Go
// runtime's default GOMAXPROCS and keeps a floor under its heap's growth
// (heapfloor), and leaves a GOMAXPROCS or a GOGC set in the environment
// alone. Each case runs in a child process (the settings are the
// process's, and made once).
func TestLoadableProcs(t *testing.T) {
	if os.Getenv("RS_LOADABLE_PROCS_CHILD") != "" {
		before := runtime.GOMAXPROCS(0)
		loadableProcs()
		fmt.Printf("%d %d %d %d\n", before, runtime.GOMAXPROCS(0), heapfloor.Percent(), debug.SetGCPercent(100))
		os.Exit(0)
	}
	for _, env := range []struct{ procs, gogc string }{{"", ""}, {"3", ""}, {"", "50"}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLoadableProcs$")
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, "GOMAXPROCS=") || strings.HasPrefix(kv, "GOGC=")
		})
		cmd.Env = append(cmd.Env, "RS_LOADABLE_PROCS_CHILD=1")
		if env.procs != "" {
			cmd.Env = append(cmd.Env, "GOMAXPROCS="+env.procs)
		}
		if env.gogc != "" {
			cmd.Env = append(cmd.Env, "GOGC="+env.gogc)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%+v: child: %v", env, err)
		}
		var before, after, floor, percent int
		if _, err := fmt.Sscanf(string(out), "%d %d %d %d", &before, &after, &floor, &percent); err != nil {
			t.Fatalf("%+v: child printed %q: %v", env, out, err)
		}
		want := 2 * before
		if env.procs != "" {
			want = 3
		}
		if after != want {
			t.Errorf("%+v: GOMAXPROCS %d before the load, %d after, want %d", env, before, after, want)
		}
		switch {
		case env.gogc == "" && (floor < 100 || percent != floor):
			t.Errorf("%+v: heap floor's percent %d, the runtime's %d: want the floor's, at least 100", env, floor, percent)
		case env.gogc != "" && (floor != -1 || percent != 50):
			t.Errorf("%+v: heap floor's percent %d, the runtime's %d: want no floor and GOGC's 50", env, floor, percent)
		}
	}
}
