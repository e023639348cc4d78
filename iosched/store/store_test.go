package store_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/iosched/store/storetest"
	"github.com/remote-segments/remote_segments/test/s3server"
	"go.uber.org/goleak"
)

// leakCheck registers the goroutine-leak check first so that it runs after
// every other cleanup (servers, stores).
func leakCheck(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

func writeTree(t *testing.T, dir string, objects map[string][]byte) {
	t.Helper()
	for name, data := range objects {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func open(t *testing.T, url string, opts store.Options) (store.Store, string) {
	t.Helper()
	st, name, err := store.Open(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return st, name
}

func fileFixture(t *testing.T, objects map[string][]byte) storetest.Fixture {
	dir := t.TempDir()
	writeTree(t, dir, objects)
	st, name := open(t, dir+"/", store.Options{})
	return storetest.Fixture{Store: st, Prefix: name, CanList: true}
}

func TestFileStore(t *testing.T) {
	leakCheck(t)
	storetest.Run(t, fileFixture)
}

func TestFileURLStore(t *testing.T) {
	leakCheck(t)
	storetest.Run(t, func(t *testing.T, objects map[string][]byte) storetest.Fixture {
		dir := t.TempDir()
		writeTree(t, dir, objects)
		st, name := open(t, "file://"+filepath.ToSlash(dir)+"/", store.Options{})
		return storetest.Fixture{Store: st, Prefix: name, CanList: true}
	})
}

// TestFileURLNamesItsFile: the URL a file store gives a name (a listing's
// objects become chunks by it) opens that name and no other, however the
// name reads as a URL: "%41" is no "A", '#' and '?' end nothing, and it is
// the file a URL parser finds too (the sandbox's and a catalog's base).
func TestFileURLNamesItsFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"p%41", "pA", "c#1", "q?1", "sp ace", "seg=s0", "a+b,c@d:e;f", "é", "%", "%zz", "x%2F..%2Fy"} {
		p := filepath.ToSlash(filepath.Join(dir, name, "x.arrow"))
		st, got, err := store.Open(store.FileURL(p), store.Options{})
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		st.Close()
		if got != p {
			t.Errorf("%q: FileURL(%q) = %q names %q", name, p, store.FileURL(p), got)
		}
		u, err := url.Parse(store.FileURL(p))
		if err != nil || u.Path != p || u.RawQuery != "" || u.Fragment != "" {
			t.Errorf("%q: FileURL(%q) = %q parses as path %q, query %q, fragment %q (%v)", name, p, store.FileURL(p), u.Path, u.RawQuery, u.Fragment, err)
		}
	}
	if got, want := store.FileURL("/data/segment=s0/chunk-0.arrow"), "file:///data/segment=s0/chunk-0.arrow"; got != want {
		t.Errorf("FileURL of an ordinary name = %q, want %q", got, want)
	}
}

func TestHTTPStore(t *testing.T) {
	leakCheck(t)
	storetest.Run(t, func(t *testing.T, objects map[string][]byte) storetest.Fixture {
		dir := t.TempDir()
		writeTree(t, dir, objects)
		srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
		t.Cleanup(srv.Close)
		st, name := open(t, srv.URL+"/", store.Options{MaxConns: 8})
		return storetest.Fixture{Store: st, Prefix: name, CanList: false}
	})
}

func TestS3Store(t *testing.T) {
	leakCheck(t)
	srv := s3server.ForTest(t, "bkt")
	storetest.Run(t, func(t *testing.T, objects map[string][]byte) storetest.Fixture {
		for name, data := range objects {
			if err := srv.PutObject(context.Background(), "bkt", name, data); err != nil {
				t.Fatal(err)
			}
		}
		st, name := open(t, "s3://bkt/", store.Options{
			S3Endpoint: srv.Endpoint, S3Region: srv.Region,
			S3AccessKeyID: srv.AccessKey, S3SecretAccessKey: srv.SecretKey,
		})
		return storetest.Fixture{Store: st, Prefix: name, CanList: true}
	})

	t.Run("BadSecret", func(t *testing.T) {
		const secret = "not-the-secret-xyz"
		st, name := open(t, "s3://bkt/a.bin", store.Options{
			S3Endpoint: srv.Endpoint, S3URLStyle: "path",
			S3AccessKeyID: srv.AccessKey, S3SecretAccessKey: secret,
		})
		defer st.Close()
		_, err := st.GetRange(context.Background(), name, 0, 10)
		if !errors.Is(err, store.ErrForbidden) {
			t.Fatalf("GET with a wrong secret: err = %v, want ErrForbidden", err)
		}
		if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "s3://bkt/a.bin") {
			t.Fatalf("error %q leaks the secret or does not name the URL", err)
		}
	})

	// Keys with every kind of byte a path escapes: the server checks the
	// signature over the path as sent, so a key escaped one way and
	// signed another is refused.
	t.Run("OddKeys", func(t *testing.T) {
		st, _ := open(t, "s3://bkt/", store.Options{
			S3Endpoint: srv.Endpoint, S3Region: srv.Region,
			S3AccessKeyID: srv.AccessKey, S3SecretAccessKey: srv.SecretKey,
		})
		defer st.Close()
		ctx := context.Background()
		for i, key := range []string{"odd/a b+c=d.bin", "odd/%25 100%.bin", "odd/é ü 日本.bin", "odd/q?x#y&z.bin",
			"odd/!*'();:@$,[]{}^`|\\\".bin", "odd/~tilde_-.bin"} {
			data := []byte(strings.Repeat(string(rune('a'+i)), 10+i))
			if err := srv.PutObject(ctx, "bkt", key, data); err != nil {
				t.Fatal(err)
			}
			name := "bkt/" + key
			rc, err := st.GetRange(ctx, name, 1, 5)
			if err != nil {
				t.Fatalf("GET %q: %v", key, err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || string(got) != string(data[1:6]) {
				t.Fatalf("GET %q: %q, %v; want %q", key, got, err, data[1:6])
			}
			if n, err := st.Size(ctx, name); err != nil || n != int64(len(data)) {
				t.Fatalf("HEAD %q: %d, %v; want %d", key, n, err, len(data))
			}
			if v, err := st.(store.Versioner).Version(ctx, name); err != nil || v == "" {
				t.Fatalf("version of %q: %q, %v", key, v, err)
			}
		}
	})

	// No credentials in the options: the AWS chain's (here the
	// environment's) sign the requests.
	t.Run("ChainCredentials", func(t *testing.T) {
		for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey,
			"AWS_SESSION_TOKEN": "", "AWS_REGION": srv.Region, "AWS_EC2_METADATA_DISABLED": "true",
			"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_PROFILE": ""} {
			t.Setenv(k, v)
		}
		st, name := open(t, "s3://bkt/a.bin", store.Options{S3Endpoint: srv.Endpoint})
		defer st.Close()
		rc, err := st.GetRange(context.Background(), name, 0, 10)
		if err != nil {
			t.Fatalf("GET signed with the environment's credentials: %v", err)
		}
		rc.Close()
		t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
		st2, _ := open(t, "s3://bkt/a.bin", store.Options{S3Endpoint: srv.Endpoint})
		defer st2.Close()
		if _, err := st2.Size(context.Background(), name); !errors.Is(err, store.ErrForbidden) {
			t.Fatalf("HEAD signed with a wrong secret from the environment: %v, want forbidden", err)
		}
	})

	// No endpoint in the options: the AWS chain's, as the SDK's S3 client
	// would take it (README: the operator's endpoint).
	t.Run("ChainEndpoint", func(t *testing.T) {
		for _, c := range []struct{ name, env string }{{"service", "AWS_ENDPOINT_URL_S3"}, {"global", "AWS_ENDPOINT_URL"}} {
			for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey,
				"AWS_SESSION_TOKEN": "", "AWS_REGION": srv.Region, "AWS_EC2_METADATA_DISABLED": "true",
				"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_PROFILE": "",
				"AWS_ENDPOINT_URL_S3": "", "AWS_ENDPOINT_URL": "", c.env: srv.Endpoint} {
				t.Setenv(k, v)
			}
			st, name := open(t, "s3://bkt/a.bin", store.Options{})
			n, err := st.Size(context.Background(), name)
			st.Close()
			if err != nil || n != 100<<10 {
				t.Fatalf("%s: HEAD through %s: %d, %v", c.name, c.env, n, err)
			}
		}
	})

	t.Run("NoSuchBucket", func(t *testing.T) {
		st, name := open(t, "s3://no-such-bucket/a.bin", store.Options{
			S3Endpoint: srv.Endpoint, S3AccessKeyID: srv.AccessKey, S3SecretAccessKey: srv.SecretKey,
		})
		defer st.Close()
		_, err := st.GetRange(context.Background(), name, 0, 10)
		if !st.IsNotFound(err) || !strings.Contains(err.Error(), "s3://no-such-bucket/a.bin") {
			t.Fatalf("GET from a missing bucket: err = %v, want not found naming the URL", err)
		}
	})
}

func TestOpen(t *testing.T) {
	leakCheck(t)
	wd, _ := os.Getwd()
	for _, c := range []struct{ url, name string }{
		{"s3://bkt/ds/a.arrow", "bkt/ds/a.arrow"},
		{"s3://bkt/ds/**/*.arrow", "bkt/ds/**/*.arrow"},
		{"file:///tmp/x%20y.arrow", "/tmp/x y.arrow"},
		{"file://localhost/tmp/a", "/tmp/a"},
		{"/tmp/a/../b", "/tmp/b"},
		{"rel/a.arrow", filepath.ToSlash(filepath.Join(wd, "rel/a.arrow"))},
		{"https://h.example:8443/d/a.arrow?X-Amz-Signature=abc", "/d/a.arrow?X-Amz-Signature=abc"},
	} {
		st, name, err := store.Open(c.url, store.Options{})
		if err != nil {
			t.Errorf("Open(%s): %v", c.url, err)
			continue
		}
		if name != c.name {
			t.Errorf("Open(%s) name = %q, want %q", c.url, name, c.name)
		}
		if strings.Contains(st.URL(name), "abc") {
			t.Errorf("URL(%s) = %s shows the query signature", name, st.URL(name))
		}
		st.Close()
	}
	for _, bad := range []string{"gs://b/k", "s3:///key", "file://otherhost/a"} {
		if _, _, err := store.Open(bad, store.Options{}); err == nil {
			t.Errorf("Open(%s) succeeded, want an error", bad)
		}
	}
	opts := store.Options{S3AccessKeyID: "AKIAEXAMPLE", S3SecretAccessKey: "sekrit", S3SessionToken: "tok"}
	for _, s := range []string{opts.String(), opts.GoString()} {
		if strings.Contains(s, "sekrit") || strings.Contains(s, "AKIAEXAMPLE") || strings.Contains(s, "tok}") {
			t.Errorf("Options printed with secrets: %s", s)
		}
	}
	d1, _ := store.Domain("s3://a/x", opts)
	d2, _ := store.Domain("s3://b/y", opts)
	d3, _ := store.Domain("s3://a/x", store.Options{})
	if d1 != d2 || d1 == d3 || strings.Contains(d1, "sekrit") {
		t.Errorf("Domain: %q %q %q", d1, d2, d3)
	}
}

func TestMatch(t *testing.T) {
	leakCheck(t)
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/*/b", "a/x/y/b", false},
		{"a/?.arrow", "a/1.arrow", true},
		{"a/?.arrow", "a/12.arrow", false},
		{"**", "x/y", true},
		{"a/*.arrow", "a/sub/x.arrow", false},
	} {
		if got := store.Match(c.pattern, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// TestRetryAfter: a throttled answer's Retry-After header (seconds or an
// HTTP date) reaches the error; other answers carry none.
func TestRetryAfter(t *testing.T) {
	leakCheck(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/seconds":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(503)
		case "/date":
			w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
			w.WriteHeader(429)
		default:
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(500)
		}
	}))
	t.Cleanup(srv.Close)
	st, _ := open(t, srv.URL+"/", store.Options{})
	t.Cleanup(func() { st.Close() })
	for _, c := range []struct {
		name     string
		min, max time.Duration
	}{{"/seconds", 3 * time.Second, 3 * time.Second}, {"/date", 59 * time.Minute, time.Hour}, {"/other", 0, 0}} {
		_, err := st.GetRange(context.Background(), c.name, 0, 10)
		if err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		if got := store.RetryAfter(err); got < c.min || got > c.max {
			t.Fatalf("%s: Retry-After %v, want %v..%v (%v)", c.name, got, c.min, c.max, err)
		}
	}
}

// TestRedactURL: the one redaction of URLs for messages, stats and traces
// drops a query (presigned signatures) and the whole userinfo (a token is
// often the user: https://TOKEN@host/), and keeps the rest as written.
func TestRedactURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://h/a.arrow?X-Amz-Signature=secret", "https://h/a.arrow?REDACTED"},
		{"https://user:pass@h:8080/d/x.arrow", "https://h:8080/d/x.arrow"},
		{"http://u:p@h/x?sig=1", "http://h/x?REDACTED"},
		{"https://ghp_TOKEN@h/d/x.arrow", "https://h/d/x.arrow"},
		{"https://a@b@h/x", "https://h/x"},
		{"https://h/x#frag@y", "https://h/x#frag@y"},
		{"s3://bucket/key with space.arrow", "s3://bucket/key with space.arrow"},
		{"/data/a@b:c/x.arrow", "/data/a@b:c/x.arrow"},
		{"file:///a/b.arrow", "file:///a/b.arrow"},
		{"s3://b/k/a@b:c.arrow", "s3://b/k/a@b:c.arrow"},
	} {
		if got := store.RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
