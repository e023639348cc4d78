package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/remote-segments/remote_segments/scanner"
)

// Kind is the SQL type of a named parameter; the host maps it to its own
// type ids (cabi to DuckDB's), so the table needs no engine header.
type Kind uint8

const (
	Varchar Kind = iota
	Bigint
	Double
	Boolean
)

// Parameter is one named parameter as a host registers it.
type Parameter struct {
	Name string
	Kind Kind
}

// Parameters returns the named parameters of remote_segments(...), in the
// order registration, bind and the README's table follow.
func Parameters() []Parameter {
	out := make([]Parameter, len(namedParameters))
	for i, p := range namedParameters {
		out[i] = Parameter{Name: p.name, Kind: p.kind}
	}
	return out
}

// namedParameter is one named parameter of remote_segments(...): its SQL
// type, and how its text lands in the scanner's Config. Every parameter can
// also be given process-wide as the environment variable
// REMOTE_SEGMENTS_<NAME>; a value in the query wins.
type namedParameter struct {
	name string
	kind Kind
	set  func(cfg *scanner.Config, v string) error
}

// namedParameters is the one list of named parameters; registration, bind
// and the README's table follow it.
var namedParameters = []namedParameter{
	{"max_parallel_io", Bigint, func(c *scanner.Config, v string) (err error) {
		c.MaxParallelIO, err = intIn(v, 1, 4096)
		return err
	}},
	{"memory_budget", Varchar, func(c *scanner.Config, v string) (err error) {
		c.MemoryBudget, err = bytesIn(v, 1<<20)
		return err
	}},
	{"budget_fraction", Double, func(c *scanner.Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 || f > 1 {
			return fmt.Errorf("must be a number above 0 and at most 1, not %q", v)
		}
		c.BudgetFraction = f
		return nil
	}},
	{"ordered", Boolean, func(c *scanner.Config, v string) (err error) {
		c.Ordered, err = boolean(v)
		return err
	}},
	{"request_size", Varchar, func(c *scanner.Config, v string) (err error) {
		c.RequestSize, err = bytesIn(v, 4<<10)
		return err
	}},
	{"coalesce_gap", Varchar, func(c *scanner.Config, v string) error {
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
	{"retries", Bigint, func(c *scanner.Config, v string) error {
		n, err := intIn(v, 0, 100)
		c.Retries = n
		if n == 0 {
			c.Retries = scanner.NeverRetry // the Config's zero is the default
		}
		return err
	}},
	{"request_timeout", Varchar, func(c *scanner.Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return fmt.Errorf("must be a positive duration such as '30s' or '500ms', not %q", v)
		}
		c.RequestTimeout = d
		return nil
	}},
	{"hedge", Boolean, func(c *scanner.Config, v string) error {
		on, err := boolean(v)
		c.NoHedge = !on
		return err
	}},
	{"union_by_name", Boolean, func(c *scanner.Config, v string) (err error) {
		c.UnionByName, err = boolean(v)
		return err
	}},
	{"local_mmap", Boolean, func(c *scanner.Config, v string) (err error) {
		c.MapLocal, err = boolean(v)
		return err
	}},
	{"s3_endpoint", Varchar, func(c *scanner.Config, v string) error { c.Store.S3Endpoint = v; return nil }},
	{"s3_region", Varchar, func(c *scanner.Config, v string) error { c.Store.S3Region = v; return nil }},
	{"s3_url_style", Varchar, func(c *scanner.Config, v string) error {
		if v != "vhost" && v != "path" {
			return fmt.Errorf("must be 'vhost' or 'path', not %q", v)
		}
		c.Store.S3URLStyle = v
		return nil
	}},
	{"s3_access_key_id", Varchar, func(c *scanner.Config, v string) error { c.Store.S3AccessKeyID = v; return nil }},
	{"s3_secret_access_key", Varchar, func(c *scanner.Config, v string) error { c.Store.S3SecretAccessKey = v; return nil }},
	{"s3_session_token", Varchar, func(c *scanner.Config, v string) error { c.Store.S3SessionToken = v; return nil }},
	{"trace", Varchar, func(c *scanner.Config, v string) error { c.Trace = v; return nil }},
	{"cache_dir", Varchar, func(c *scanner.Config, v string) error { c.CacheDir = strings.TrimSpace(v); return nil }},
	{"cache_size", Varchar, func(c *scanner.Config, v string) (err error) {
		c.CacheSize, err = bytesIn(v, 1<<20)
		return err
	}},
	{"shard", Varchar, func(_ *scanner.Config, v string) error {
		_, err := ParseShard(v) // checked here; bind hands it to scanner.Bind as Config.Keep (chunks.go)
		return err
	}},
	{
		// Test-only: makes the scan panic at "bind" or "next", to prove that a
		// panic becomes a DuckDB error and the host keeps running.
		"debug_panic", Varchar,
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

// EnvName is the environment variable that sets parameter name's default.
func EnvName(name string) string { return "REMOTE_SEGMENTS_" + strings.ToUpper(name) }

// ParameterSources are where a scan's parameters come from, in rising
// precedence: Env (REMOTE_SEGMENTS_<NAME>, ignored when empty), Setting
// (remote_segments_<name>; nil: the host has none) and Query (the named
// parameter). Each gives the value as text, and whether it gives one.
type ParameterSources struct {
	Env, Setting, Query func(name string) (string, bool)
	// SettingsLocked: DuckDB's lock_configuration is on, so only the
	// operator can have set the settings.
	SettingsLocked bool
}

// Chosen holds the names of the parameters whose value the query
// chose: a named parameter, or a setting while the configuration is not
// locked, whose text differs from the one the operator's sources (the
// environment, a locked setting) give. The sandbox rules ask it who chose
// the endpoint and the credentials (Sandboxes.Confine).
type Chosen map[string]bool

// applyParameters applies env, then given as the query's values: see
// Apply.
func applyParameters(cfg *scanner.Config, env, given func(name string) (string, bool)) error {
	_, err := Apply(cfg, ParameterSources{Env: env, Query: given})
	return err
}

// Apply is the one place parameters are parsed: for each named
// parameter, in the order of namedParameters, the value of each source
// that gives one is set into cfg, in src's order of precedence. An
// invalid value is an error naming the parameter (and the variable) and
// what it accepts. It returns the parameters the query chose.
func Apply(cfg *scanner.Config, src ParameterSources) (Chosen, error) {
	chosen := Chosen{}
	for _, p := range namedParameters {
		operator, byOperator := "", false
		if v, ok := src.Env(EnvName(p.name)); ok && v != "" {
			if err := p.set(cfg, v); err != nil {
				return nil, fmt.Errorf("remote_segments: environment variable %s: %s %v", EnvName(p.name), p.name, err)
			}
			operator, byOperator = v, true
		}
		var layers []func(string) (string, bool)
		if src.Setting != nil {
			layers = append(layers, src.Setting)
		}
		layers = append(layers, src.Query)
		for i, given := range layers {
			v, ok := given(p.name)
			if !ok {
				continue
			}
			if err := p.set(cfg, v); err != nil {
				if src.Setting != nil && i == 0 {
					return nil, fmt.Errorf("remote_segments: %s: %s %v", SettingName(p.name), p.name, err)
				}
				return nil, fmt.Errorf("remote_segments: %s %v", p.name, err)
			}
			isOperator := src.Setting != nil && i == 0 && src.SettingsLocked
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
