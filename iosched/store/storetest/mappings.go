package storetest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Mappings counts the memory mappings of process pid (0: this one) whose
// file path contains path: the mappings store.Mapper made and nobody has
// unmapped yet. It skips the test where /proc cannot say.
func Mappings(t testing.TB, pid int, path string) int {
	t.Helper()
	file := "/proc/self/maps"
	if pid != 0 {
		file = fmt.Sprintf("/proc/%d/maps", pid)
	}
	maps, err := os.ReadFile(file)
	if err != nil {
		t.Skipf("cannot count mappings: %v", err)
	}
	return strings.Count(string(maps), path)
}
