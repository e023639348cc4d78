package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/scanner"
)

// fromMap is a source of parameter values for applyParameters.
func fromMap(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// TestApplyParameters: each named parameter lands in the scan's Config,
// the explicit zeros (retries 0, coalesce_gap 0) become their named
// values, and the query's value wins over the environment's.
func TestApplyParameters(t *testing.T) {
	var cfg scanner.Config
	env := fromMap(map[string]string{"REMOTE_SEGMENTS_MAX_PARALLEL_IO": "6", "REMOTE_SEGMENTS_REQUEST_SIZE": "1MiB", "REMOTE_SEGMENTS_TRACE": ""})
	query := fromMap(map[string]string{
		"max_parallel_io": "32", "memory_budget": "256MiB", "budget_fraction": "0.5", "ordered": "true",
		"coalesce_gap": "0", "retries": "0", "request_timeout": "2s", "hedge": "false", "union_by_name": "on",
		"s3_endpoint": "http://127.0.0.1:7070", "s3_region": "eu-west-1", "s3_url_style": "path",
		"s3_access_key_id": "AK", "s3_secret_access_key": "SK", "s3_session_token": "ST", "trace": "/tmp/t.json",
	})
	if err := applyParameters(&cfg, env, query); err != nil {
		t.Fatal(err)
	}
	want := scanner.Config{
		MaxParallelIO: 32, MemoryBudget: 256 << 20, BudgetFraction: 0.5, Ordered: true,
		RequestSize: 1 << 20, CoalesceGap: scanner.AdjacentOnly, Retries: scanner.NeverRetry,
		RequestTimeout: 2 * time.Second, NoHedge: true, UnionByName: true, Trace: "/tmp/t.json",
	}
	want.Store.S3Endpoint, want.Store.S3Region, want.Store.S3URLStyle = "http://127.0.0.1:7070", "eu-west-1", "path"
	want.Store.S3AccessKeyID, want.Store.S3SecretAccessKey, want.Store.S3SessionToken = "AK", "SK", "ST"
	if cfg.MaxParallelIO != want.MaxParallelIO || cfg.MemoryBudget != want.MemoryBudget || cfg.BudgetFraction != want.BudgetFraction ||
		cfg.Ordered != want.Ordered || cfg.RequestSize != want.RequestSize || cfg.CoalesceGap != want.CoalesceGap ||
		cfg.Retries != want.Retries || cfg.RequestTimeout != want.RequestTimeout || cfg.NoHedge != want.NoHedge ||
		cfg.UnionByName != want.UnionByName || cfg.Trace != want.Trace || !sameStoreOptions(cfg.Store, want.Store) {
		t.Errorf("Config = %+v\nwant     %+v", cfg, want)
	}

	// Nothing given: the zero Config, every field its default.
	var none scanner.Config
	if err := applyParameters(&none, fromMap(nil), fromMap(nil)); err != nil || none.MaxParallelIO != 0 || none.Retries != 0 || none.CoalesceGap != 0 {
		t.Errorf("no parameters: %+v, %v", none, err)
	}
	// Nonzero values pass through as they are.
	var some scanner.Config
	if err := applyParameters(&some, fromMap(nil), fromMap(map[string]string{"retries": "5", "coalesce_gap": "1MiB"})); err != nil ||
		some.Retries != 5 || some.CoalesceGap != 1<<20 {
		t.Errorf("retries 5, coalesce_gap 1MiB: %+v, %v", some, err)
	}
}

// TestApplyParametersRefuses: a bad value is an error naming the parameter
// (and, from the environment, the variable) and what it accepts.
func TestApplyParametersRefuses(t *testing.T) {
	for _, c := range []struct {
		env, query map[string]string
		want       string
	}{
		{nil, map[string]string{"max_parallel_io": "0"}, "max_parallel_io must be an integer from 1 to 4096"},
		{nil, map[string]string{"max_parallel_io": "5000"}, "max_parallel_io must be an integer from 1 to 4096"},
		{nil, map[string]string{"memory_budget": "12KiB"}, "memory_budget must be at least 1048576 bytes"},
		{nil, map[string]string{"memory_budget": "lots"}, "memory_budget must be a byte size"},
		{nil, map[string]string{"memory_budget": "-5"}, `memory_budget must be a byte size such as '512MiB' or '2GB': "-5" is not a non-negative number with an optional unit`},
		{nil, map[string]string{"budget_fraction": "1.5"}, "budget_fraction must be a number above 0 and at most 1"},
		{nil, map[string]string{"ordered": "maybe"}, "ordered must be true or false"},
		{nil, map[string]string{"request_size": "1KiB"}, "request_size must be at least 4096 bytes"},
		{nil, map[string]string{"retries": "-1"}, "retries must be an integer from 0 to 100"},
		{nil, map[string]string{"request_timeout": "0s"}, "request_timeout must be a positive duration"},
		{nil, map[string]string{"s3_url_style": "virtual"}, "s3_url_style must be 'vhost' or 'path'"},
		{nil, map[string]string{"debug_panic": "fill"}, "debug_panic must be 'bind' or 'next'"},
		{map[string]string{"REMOTE_SEGMENTS_RETRIES": "many"}, nil, "environment variable REMOTE_SEGMENTS_RETRIES: retries must be an integer"},
	} {
		var cfg scanner.Config
		err := applyParameters(&cfg, fromMap(c.env), fromMap(c.query))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "remote_segments: ") {
			t.Errorf("%v %v: err = %v, want %q", c.env, c.query, err, c.want)
		}
	}
}

// sameStoreOptions compares the options parameters set (Options holds a
// func, so it is not comparable as a whole).
func sameStoreOptions(a, b store.Options) bool {
	return a.S3Endpoint == b.S3Endpoint && a.S3Region == b.S3Region && a.S3URLStyle == b.S3URLStyle &&
		a.S3AccessKeyID == b.S3AccessKeyID && a.S3SecretAccessKey == b.S3SecretAccessKey && a.S3SessionToken == b.S3SessionToken
}

// TestCacheParameters: cache_dir comes from the query's named parameter,
// else the setting, else REMOTE_SEGMENTS_CACHE_DIR; cache_size is a byte
// size of at least 1 MiB.
func TestCacheParameters(t *testing.T) {
	env := fromMap(map[string]string{"REMOTE_SEGMENTS_CACHE_DIR": "/env/c", "REMOTE_SEGMENTS_CACHE_SIZE": "2GiB"})
	for _, c := range []struct {
		setting, query map[string]string
		dir            string
		size           int64
	}{
		{nil, nil, "/env/c", 2 << 30},
		{map[string]string{"cache_dir": "/set/c"}, nil, "/set/c", 2 << 30},
		{map[string]string{"cache_dir": "/set/c"}, map[string]string{"cache_dir": "/q/c", "cache_size": "64MiB"}, "/q/c", 64 << 20},
	} {
		var cfg scanner.Config
		if _, err := Apply(&cfg, ParameterSources{Env: env, Setting: fromMap(c.setting), Query: fromMap(c.query)}); err != nil {
			t.Fatal(err)
		}
		if cfg.CacheDir != c.dir || cfg.CacheSize != c.size {
			t.Errorf("setting %v query %v: cache_dir %q cache_size %d, want %q %d", c.setting, c.query, cfg.CacheDir, cfg.CacheSize, c.dir, c.size)
		}
	}
	var cfg scanner.Config
	if _, err := Apply(&cfg, ParameterSources{Env: fromMap(nil), Query: fromMap(map[string]string{"cache_size": "10KiB"})}); err == nil {
		t.Error("cache_size 10KiB is accepted")
	}
	var none scanner.Config
	if _, err := Apply(&none, ParameterSources{Env: fromMap(nil), Query: fromMap(nil)}); err != nil || none.CacheDir != "" {
		t.Errorf("no cache_dir anywhere: %q, %v (the cache is opt in)", none.CacheDir, err)
	}
}
