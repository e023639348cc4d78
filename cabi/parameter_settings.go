package cabi

/*
#include "rs.h"
*/
import "C"

import "github.com/remote-segments/remote_segments/internal/policy"

// settingReader reads a setting in a bind: the value's text, and whether the
// setting is set (a NULL or unset setting is not).
type settingReader func(info C.duckdb_bind_info, setting string) (string, bool)

// settingValue reads the setting of parameter name for a bind; a host
// without settings (the v1.2.0 file, the Go driver) has none.
func (h *Host) settingValue(info C.duckdb_bind_info, name string) (string, bool) {
	if h == nil || h.settings == nil {
		return "", false
	}
	return h.settings(info, policy.SettingName(name))
}
