package cabi

/*
#include <stdlib.h>
#include "rs.h"
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
// query's named parameters (applyParameters). A parameter the query does not
// give takes the host's setting remote_segments_<name> when it is set (the
// 2.0 edition; parameter_settings.go): the setting sits between the
// environment and the query, and a SET was already checked by the same
// parser.
func readNamedParameters(info C.duckdb_bind_info, host *Host, cfg *scanner.Config) error {
	return applyParameters(cfg, os.LookupEnv, func(name string) (string, bool) {
		if v, ok := namedValue(info, name); ok {
			return v, true
		}
		return host.settingValue(info, name)
	})
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

// applyParameters is the one place parameters are parsed: for each named
// parameter, in the order of namedParameters, the environment's default
// (env, REMOTE_SEGMENTS_<NAME>, ignored when empty) and then the query's
// value (given: the value as text, and whether the query gave one that is
// not NULL) are set into cfg. An invalid value is an error naming the
// parameter (and the variable) and what it accepts.
func applyParameters(cfg *scanner.Config, env, given func(name string) (string, bool)) error {
	for _, p := range namedParameters {
		if v, ok := env(envName(p.name)); ok && v != "" {
			if err := p.set(cfg, v); err != nil {
				return fmt.Errorf("remote_segments: environment variable %s: %s %v", envName(p.name), p.name, err)
			}
		}
		v, ok := given(p.name)
		if !ok {
			continue
		}
		if err := p.set(cfg, v); err != nil {
			return fmt.Errorf("remote_segments: %s %v", p.name, err)
		}
	}
	return nil
}
