package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/remote-segments/remote_segments/scanner"
)

// TestApplySourcesChosen: the parameters the query chose are those a named
// parameter or an unlocked setting gives with a value other than the
// operator's (environment, locked setting).
func TestApplySourcesChosen(t *testing.T) {
	env := fromMap(map[string]string{"REMOTE_SEGMENTS_S3_ENDPOINT": "http://op:9000", "REMOTE_SEGMENTS_S3_REGION": "eu-west-1"})
	for _, c := range []struct {
		name           string
		setting, query map[string]string
		locked         bool
		want           string // the chosen names, sorted, joined by ","
	}{
		{"nothing given", nil, nil, false, ""},
		{"the operator's endpoint repeated", nil, map[string]string{"s3_endpoint": "http://op:9000"}, false, ""},
		{"another endpoint", nil, map[string]string{"s3_endpoint": "http://127.0.0.1:7187"}, false, "s3_endpoint"},
		{"an empty endpoint (AWS's)", nil, map[string]string{"s3_endpoint": ""}, false, "s3_endpoint"},
		{"an unlocked setting", map[string]string{"s3_endpoint": "http://127.0.0.1:7187"}, nil, false, "s3_endpoint"},
		{"a locked setting", map[string]string{"s3_endpoint": "http://set:1"}, nil, true, ""},
		{"a locked setting, then the query", map[string]string{"s3_endpoint": "http://set:1"}, map[string]string{"s3_endpoint": "http://op:9000"}, true, "s3_endpoint"},
		{"a locked setting, repeated by the query", map[string]string{"s3_endpoint": "http://set:1"}, map[string]string{"s3_endpoint": "http://set:1"}, true, ""},
		{"keys", nil, map[string]string{"s3_access_key_id": "AK", "s3_secret_access_key": "SK", "s3_region": "eu-west-1"}, false, "s3_access_key_id,s3_secret_access_key"},
	} {
		var cfg scanner.Config
		src := ParameterSources{Env: env, Query: fromMap(c.query), SettingsLocked: c.locked}
		if c.setting != nil {
			src.Setting = fromMap(c.setting)
		}
		chosen, err := Apply(&cfg, src)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, p := range namedParameters {
			if chosen[p.name] {
				got = append(got, p.name)
			}
		}
		if g := strings.Join(got, ","); g != c.want {
			t.Errorf("%s: chosen %q, want %q", c.name, g, c.want)
		}
	}
}

// TestConfineEndpoint: while a sandbox is on, a query-chosen endpoint is
// refused with the process's credentials, and with the query's own it is
// admitted only where the sandbox admits the URLs the requests go to; with
// no sandbox nothing changes.
func TestConfineEndpoint(t *testing.T) {
	list, err := parseAllowList("s3://data/,http://127.0.0.1:7000/data/ok/,http://s3.test:7000/data/")
	if err != nil {
		t.Fatal(err)
	}
	listOnly := Sandboxes{env: list}
	duck := Sandboxes{db: &duckdbSandbox{dirs: []string{"s3://data/", "http://127.0.0.1:7000/data/ok/", "http://s3.test:7000/data/"}}}
	own := map[string]string{"s3_access_key_id": "AK", "s3_secret_access_key": "SK"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, sb := range []struct {
		name string
		s    Sandboxes
	}{{"allow-list", listOnly}, {"DuckDB's sandbox", duck}} {
		for _, c := range []struct {
			name     string
			env      map[string]string
			query    map[string]string
			source   string
			wantBind string // refused at confine
			wantOpen string // refused by Admit
		}{
			{name: "query endpoint, process credentials", query: map[string]string{"s3_endpoint": "http://127.0.0.1:7187"},
				source: "s3://data/x.arrow", wantBind: "process's credentials"},
			{name: "query endpoint, key from the query, secret from the environment",
				env:    map[string]string{"REMOTE_SEGMENTS_S3_SECRET_ACCESS_KEY": "ENVSECRET"},
				query:  map[string]string{"s3_endpoint": "http://127.0.0.1:7187", "s3_access_key_id": "AK"},
				source: "s3://data/x.arrow", wantBind: "process's credentials"},
			{name: "query endpoint and keys, the environment's session token",
				env:    map[string]string{"REMOTE_SEGMENTS_S3_SESSION_TOKEN": "ENVTOKEN"},
				query:  with(own, "s3_endpoint", "http://127.0.0.1:7187"),
				source: "s3://data/x.arrow", wantBind: "process's credentials"},
			{name: "the environment's endpoint repeated, process credentials",
				env:    map[string]string{"REMOTE_SEGMENTS_S3_ENDPOINT": "http://127.0.0.1:7187"},
				query:  map[string]string{"s3_endpoint": "http://127.0.0.1:7187"},
				source: "s3://data/x.arrow"},
			{name: "query endpoint and keys, the endpoint not admitted", query: with(own, "s3_endpoint", "http://127.0.0.1:7187"),
				source: "s3://data/x.arrow", wantOpen: "127.0.0.1:7187"},
			{name: "query endpoint and keys, the endpoint admitted", query: with(own, "s3_endpoint", "http://127.0.0.1:7000"),
				source: "s3://data/ok/x.arrow"},
			{name: "query endpoint and keys, admitted endpoint, another key", query: with(own, "s3_endpoint", "http://127.0.0.1:7000"),
				source: "s3://data/secret/x.arrow", wantOpen: "127.0.0.1:7000/data/secret/x.arrow"},
			{name: "query endpoint and keys, vhost: the bucket becomes the host", query: with(own, "s3_endpoint", "http://s3.test:7000", "s3_url_style", "vhost"),
				source: "s3://data/ok/x.arrow", wantOpen: "data.s3.test:7000"},
			{name: "query endpoint '' (AWS's) and process credentials",
				env:    map[string]string{"REMOTE_SEGMENTS_S3_ENDPOINT": "http://127.0.0.1:7000"},
				query:  map[string]string{"s3_endpoint": ""},
				source: "s3://data/ok/x.arrow", wantBind: "process's credentials"},
			{name: "query keys at the operator's endpoint", query: own, source: "s3://data/x.arrow"},
			{name: "query region at the operator's endpoint", query: map[string]string{"s3_region": "eu-west-1"}, source: "s3://data/x.arrow"},
		} {
			var cfg scanner.Config
			chosen, err := Apply(&cfg, ParameterSources{Env: fromMap(c.env), Query: fromMap(c.query)})
			if err != nil {
				t.Fatal(err)
			}
			err = sb.s.Confine(&cfg, chosen)
			if c.wantBind != "" {
				if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), c.wantBind) {
					t.Errorf("%s: %s: confine = %v, want ErrNotAllowed saying %q", sb.name, c.name, err, c.wantBind)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %s: confine = %v", sb.name, c.name, err)
				continue
			}
			if cfg.Store.AdmitRedirect == nil || cfg.Store.AdmitKey == "" {
				t.Errorf("%s: %s: the stores' redirects are not confined", sb.name, c.name)
			}
			err = cfg.Admit(c.source)
			if c.wantOpen == "" && err != nil {
				t.Errorf("%s: %s: Admit(%s) = %v", sb.name, c.name, c.source, err)
			}
			if c.wantOpen != "" && (!errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), c.wantOpen)) {
				t.Errorf("%s: %s: Admit(%s) = %v, want ErrNotAllowed naming %q", sb.name, c.name, c.source, err, c.wantOpen)
			}
		}
	}

	// No sandbox: the query is trusted with the process's reach.
	var cfg scanner.Config
	chosen, err := Apply(&cfg, ParameterSources{Env: fromMap(nil), Query: fromMap(map[string]string{"s3_endpoint": "http://127.0.0.1:7187"})})
	if err != nil {
		t.Fatal(err)
	}
	if err := (Sandboxes{}).Confine(&cfg, chosen); err != nil || cfg.Admit != nil || cfg.Store.AdmitRedirect != nil {
		t.Errorf("no sandbox: confine = %v, Admit set %v", err, cfg.Admit != nil)
	}
	if a, b := listOnly.key(), duck.key(); a == "" || a == b {
		t.Errorf("sandbox keys %q and %q: want two different non-empty keys", a, b)
	}
}

// TestConfineCacheDir: the cache directory is a place the scan writes: a
// sandbox confines it as it confines the trace file.
func TestConfineCacheDir(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Sandboxes
		dir  string
		ok   bool
	}{
		{"no sandbox", Sandboxes{}, "/anywhere/cache", true},
		{"external access off", Sandboxes{db: &duckdbSandbox{}}, "/tmp/cache", false},
		{"under allowed_directories", Sandboxes{db: &duckdbSandbox{dirs: []string{"/data/"}}}, "/data/cache", true},
		{"outside allowed_directories", Sandboxes{db: &duckdbSandbox{dirs: []string{"/data/"}}}, "/tmp/cache", false},
	} {
		var cfg scanner.Config
		if _, err := Apply(&cfg, ParameterSources{Env: fromMap(nil), Query: fromMap(map[string]string{"cache_dir": c.dir})}); err != nil {
			t.Fatal(err)
		}
		err := c.s.Confine(&cfg, Chosen{"cache_dir": true})
		if c.ok != (err == nil) || (err != nil && (!errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), "cache_dir"))) {
			t.Errorf("%s: Confine(cache_dir %s) = %v, want ok=%v", c.name, c.dir, err, c.ok)
		}
	}
}
