package policy

import (
	"strings"
	"testing"
)

// Every named parameter is a setting in the 2.0 edition, listed by
// duckdb_settings() with its description: each needs one.
func TestEveryParameterHasASettingDescription(t *testing.T) {
	for _, p := range namedParameters {
		if _, ok := parameterDocs[p.name]; !ok {
			t.Errorf("named parameter %s has no entry in parameterDocs", p.name)
		}
	}
	for name := range parameterDocs {
		found := false
		for _, p := range namedParameters {
			found = found || p.name == name
		}
		if !found {
			t.Errorf("parameterDocs describes %s, which is no named parameter", name)
		}
	}
}

func TestCheckSetting(t *testing.T) {
	if msg := CheckSetting("max_parallel_io", "12"); msg != "" {
		t.Errorf("a valid value: %s", msg)
	}
	msg := CheckSetting("max_parallel_io", "0")
	if msg == "" || !strings.Contains(msg, "remote_segments_max_parallel_io") {
		t.Errorf("an invalid value gave %q", msg)
	}
}
