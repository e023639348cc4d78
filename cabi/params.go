package cabi

/*
#include <stdlib.h>
#include "rs.h"
#include "settings.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/remote-segments/remote_segments/scanner"
)

// namedParameter is one named parameter of remote_segments(...): its SQL
// type, and how its text lands in the scanner's Config. Every parameter can
// also be given process-wide as the environment variable
// REMOTE_SEGMENTS_<NAME>; a value in the query wins.
type namedParameter struct {
	name     string
	duckType C.duckdb_type
	set      func(cfg *scanner.Config, v string) error
}

// namedParameters is the one list of named parameters; registration, bind
// and the README's table follow it.
var namedParameters = []namedParameter{
	{"max_parallel_io", C.DUCKDB_TYPE_BIGINT, func(c *scanner.Config, v string) (err error) {
		c.MaxParallelIO, err = intIn(v, 1, 4096)
		return err
	}},
	{"memory_budget", C.DUCKDB_TYPE_VARCHAR, func(c *scanner.Config, v string) (err error) {
		c.MemoryBudget, err = bytesIn(v, 1<<20)
		return err
	}},
	{"budget_fraction", C.DUCKDB_TYPE_DOUBLE, func(c *scanner.Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 || f > 1 {
			return fmt.Errorf("must be a number above 0 and at most 1, not %q", v)
		}
		c.BudgetFraction = f
		return nil
	}},
	{"ordered", C.DUCKDB_TYPE_BOOLEAN, func(c *scanner.Config, v string) (err error) {
		c.Ordered, err = boolean(v)
		return err
	}},
	{"request_size", C.DUCKDB_TYPE_VARCHAR, func(c *scanner.Config, v string) (err error) {
		c.RequestSize, err = bytesIn(v, 4<<10)
		return err
	}},
	{"coalesce_gap", C.DUCKDB_TYPE_VARCHAR, func(c *scanner.Config, v string) error {
		n, err := scanner.ParseBytes(v)
		if err != nil {
			return fmt.Errorf("must be a byte size ('64KiB'; '0' merges only adjacent ranges): %v", err)
		}
		c.CoalesceGap = n
		if n == 0 {
			c.CoalesceGap = scanner.AdjacentOnly // the Config's zero is the default gap
		}
		return nil
	}},
	{"retries", C.DUCKDB_TYPE_BIGINT, func(c *scanner.Config, v string) error {
		n, err := intIn(v, 0, 100)
		c.Retries = n
		if n == 0 {
			c.Retries = scanner.NeverRetry // the Config's zero is the default
		}
		return err
	}},
	{"request_timeout", C.DUCKDB_TYPE_VARCHAR, func(c *scanner.Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return fmt.Errorf("must be a positive duration such as '30s' or '500ms', not %q", v)
		}
		c.RequestTimeout = d
		return nil
	}},
	{"hedge", C.DUCKDB_TYPE_BOOLEAN, func(c *scanner.Config, v string) error {
		on, err := boolean(v)
		c.NoHedge = !on
		return err
	}},
	{"union_by_name", C.DUCKDB_TYPE_BOOLEAN, func(c *scanner.Config, v string) (err error) {
		c.UnionByName, err = boolean(v)
		return err
	}},
	{"s3_endpoint", C.DUCKDB_TYPE_VARCHAR, func(c *scanner.Config, v string) error { c.Store.S3Endpoint = v; return nil }},
	{"s3_region", C.DUCKDB_TYPE_VARCHAR, func(c *scanner.Config, v string) error { c.Store.S3Region = v; return nil }},
	{"s3_url_style", C.DUCKDB_TYPE_VARCHAR, func(c *scanner.Config, v string) error {
		if v != "vhost" && v != "path" {
			return fmt.Errorf("must be 'vhost' or 'path', not %q", v)
		}
		c.Store.S3URLStyle = v
		return nil
	}},
	{"s3_access_key_id", C.DUCKDB_TYPE_VARCHAR, func(c *scanner.Config, v string) error { c.Store.S3AccessKeyID = v; return nil }},
	{"s3_secret_access_key", C.DUCKDB_TYPE_VARCHAR, func(c *scanner.Config, v string) error { c.Store.S3SecretAccessKey = v; return nil }},
	{"s3_session_token", C.DUCKDB_TYPE_VARCHAR, func(c *scanner.Config, v string) error { c.Store.S3SessionToken = v; return nil }},
	{"trace", C.DUCKDB_TYPE_VARCHAR, func(c *scanner.Config, v string) error { c.Trace = v; return nil }},
	{"shard", C.DUCKDB_TYPE_VARCHAR, func(_ *scanner.Config, v string) error {
		_, err := parseShard(v) // checked here; bind hands it to scanner.Bind as Config.Keep (chunks.go)
		return err
	}},
	{
		// Test-only: makes the scan panic at "bind" or "next", to prove that a
		// panic becomes a DuckDB error and the host keeps running.
		"debug_panic", C.DUCKDB_TYPE_VARCHAR,
		func(c *scanner.Config, v string) error {
			switch v {
			case "", "bind", "next":
				c.DebugPanic = v
				return nil
			}
			return fmt.Errorf("must be 'bind' or 'next', not %q", v)
		},
	},
}

func intIn(v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("must be an integer from %d to %d, not %q", lo, hi, v)
	}
	return n, nil
}

func bytesIn(v string, lo int64) (int64, error) {
	n, err := scanner.ParseBytes(v)
	if err != nil {
		return 0, fmt.Errorf("must be a byte size such as '512MiB' or '2GB': %v", err)
	}
	if n < lo {
		return 0, fmt.Errorf("must be at least %d bytes, not %q", lo, v)
	}
	return n, nil
}

func boolean(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "on", "yes":
		return true, nil
	case "false", "0", "off", "no":
		return false, nil
	}
	return false, fmt.Errorf("must be true or false, not %q", v)
}

// envName is the environment variable that sets parameter name's default.
func envName(name string) string { return "REMOTE_SEGMENTS_" + strings.ToUpper(name) }

// readNamedParameters fills cfg from the environment defaults, then from the
// host's settings remote_segments_<name> (the 2.0 edition;
// parameter_settings.go), then from the query's named parameters
// (applySources), and returns the parameters whose value the query chose
// (queryChosen). A SET was already checked by the same parser. A setting
// counts as the operator's only while DuckDB's lock_configuration is on:
// otherwise any query may have SET it.
func readNamedParameters(info C.duckdb_bind_info, host *Host, cfg *scanner.Config) (queryChosen, error) {
	src := parameterSources{
		env:   os.LookupEnv,
		query: func(name string) (string, bool) { return namedValue(info, name) },
	}
	if host != nil && host.settings != nil {
		src.setting = func(name string) (string, bool) { return host.settingValue(info, name) }
		src.settingsLocked = settingsLocked(info)
	}
	return applySources(cfg, src)
}

// settingsLocked reports whether DuckDB's lock_configuration is on in the
// client context of a bind; false when it cannot be read.
func settingsLocked(info C.duckdb_bind_info) bool {
	v := bindSetting(info, "lock_configuration")
	if v == nil {
		return false
	}
	defer C.rs_value_destroy(v)
	return bool(C.rs_settings_value_bool(v))
}

// namedValue is the query's value of named parameter name as text, and
// whether the query gave one that is not NULL.
func namedValue(info C.duckdb_bind_info, name string) (string, bool) {
	var present C.bool
	cname := C.CString(name)
	cv := C.rs_bind_get_named_varchar(info, cname, &present)
	C.free(unsafe.Pointer(cname))
	if !present || cv == nil { // absent, or NULL: the default
		return "", false
	}
	defer C.rs_free(unsafe.Pointer(cv))
	return C.GoString(cv), true
}

// parameterSources are where a scan's parameters come from, in rising
// precedence: env (REMOTE_SEGMENTS_<NAME>, ignored when empty), setting
// (remote_segments_<name>; nil: the host has none) and query (the named
// parameter). Each gives the value as text, and whether it gives one.
type parameterSources struct {
	env, setting, query func(name string) (string, bool)
	// settingsLocked: DuckDB's lock_configuration is on, so only the
	// operator can have set the settings.
	settingsLocked bool
}

// queryChosen holds the names of the parameters whose value the query
// chose: a named parameter, or a setting while the configuration is not
// locked, whose text differs from the one the operator's sources (the
// environment, a locked setting) give. The sandbox rules ask it who chose
// the endpoint and the credentials (sandboxes.confine).
type queryChosen map[string]bool

// applyParameters applies env, then given as the query's values: see
// applySources.
func applyParameters(cfg *scanner.Config, env, given func(name string) (string, bool)) error {
	_, err := applySources(cfg, parameterSources{env: env, query: given})
	return err
}

// applySources is the one place parameters are parsed: for each named
// parameter, in the order of namedParameters, the value of each source
// that gives one is set into cfg, in src's order of precedence. An
// invalid value is an error naming the parameter (and the variable) and
// what it accepts. It returns the parameters the query chose.
func applySources(cfg *scanner.Config, src parameterSources) (queryChosen, error) {
	chosen := queryChosen{}
	for _, p := range namedParameters {
		operator, byOperator := "", false
		if v, ok := src.env(envName(p.name)); ok && v != "" {
			if err := p.set(cfg, v); err != nil {
				return nil, fmt.Errorf("remote_segments: environment variable %s: %s %v", envName(p.name), p.name, err)
			}
			operator, byOperator = v, true
		}
		var layers []func(string) (string, bool)
		if src.setting != nil {
			layers = append(layers, src.setting)
		}
		layers = append(layers, src.query)
		for i, given := range layers {
			v, ok := given(p.name)
			if !ok {
				continue
			}
			if err := p.set(cfg, v); err != nil {
				if src.setting != nil && i == 0 {
					return nil, fmt.Errorf("remote_segments: %s: %s %v", settingName(p.name), p.name, err)
				}
				return nil, fmt.Errorf("remote_segments: %s %v", p.name, err)
			}
			isOperator := src.setting != nil && i == 0 && src.settingsLocked
			switch {
			case isOperator:
				operator, byOperator = v, true
				delete(chosen, p.name)
			case !byOperator || v != operator:
				chosen[p.name] = true
			default:
				delete(chosen, p.name) // the operator's own value, repeated
			}
		}
	}
	return chosen, nil
}
