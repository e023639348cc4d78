package cabi

import "testing"

func TestEngineHasSettings(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.5.6": true, "v1.5.7": true, "v1.6.0": true, "v2.0.0": true, "v1.5.6-dev42": true, "1.5.6": true,
		"v1.5.5": false, "v1.4.4": false, "v1.2.0": false, "v0.10.3": false, "": false, "v1": false, "vx.y.z": false, "v1.5": false,
	} {
		if got := engineHasSettings(v); got != want {
			t.Errorf("engineHasSettings(%q) = %v, want %v", v, got, want)
		}
	}
}
