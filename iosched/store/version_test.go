package store_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/test/s3server"
)

// versionOf asks st for name's version, failing the test on an error or an
// empty version.
func versionOf(t *testing.T, st store.Store, name string) string {
	t.Helper()
	v, err := st.(store.Versioner).Version(context.Background(), name)
	if err != nil || v == "" {
		t.Fatalf("Version(%s) = %q, %v", name, v, err)
	}
	return v
}

// TestVersionChangesWithObject: an object overwritten has a new version,
// on S3 (ETag) and over HTTP (ETag, else Last-Modified and size).
func TestVersionChangesWithObject(t *testing.T) {
	leakCheck(t)
	t.Run("S3", func(t *testing.T) {
		srv := s3server.ForTest(t, "bkt")
		ctx := context.Background()
		if err := srv.PutObject(ctx, "bkt", "a.bin", []byte("first")); err != nil {
			t.Fatal(err)
		}
		st, name := open(t, "s3://bkt/a.bin", store.Options{S3Endpoint: srv.Endpoint, S3Region: srv.Region,
			S3AccessKeyID: srv.AccessKey, S3SecretAccessKey: srv.SecretKey})
		defer st.Close()
		v1 := versionOf(t, st, name)
		if v := versionOf(t, st, name); v != v1 {
			t.Fatalf("the same object has versions %q and %q", v1, v)
		}
		// A GET tells the same version as a HEAD, whole or a range.
		for _, r := range [][2]int64{{0, -1}, {1, 3}} {
			body, v, err := st.(store.RangeVersioner).GetRangeVersion(ctx, name, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			body.Close()
			if v != v1 {
				t.Fatalf("GET bytes %v: version %q, HEAD %q", r, v, v1)
			}
		}
		if err := srv.PutObject(ctx, "bkt", "a.bin", []byte("other")); err != nil { // same size
			t.Fatal(err)
		}
		if v := versionOf(t, st, name); v == v1 {
			t.Fatalf("an overwritten object keeps its version %q", v)
		}
	})
	t.Run("HTTP", func(t *testing.T) {
		for _, c := range []struct {
			name                   string
			etag1, etag2, lm1, lm2 string
		}{
			{"etag", `"a"`, `"b"`, "Mon, 01 Jan 2024 00:00:00 GMT", "Mon, 01 Jan 2024 00:00:00 GMT"},
			{"last-modified", "", "", "Mon, 01 Jan 2024 00:00:00 GMT", "Mon, 01 Jan 2024 00:00:01 GMT"},
			{"weak etag", `W/"a"`, `W/"a"`, "Mon, 01 Jan 2024 00:00:00 GMT", "Mon, 01 Jan 2024 00:00:01 GMT"},
		} {
			t.Run(c.name, func(t *testing.T) {
				etag, lm := c.etag1, c.lm1
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if etag != "" {
						w.Header().Set("ETag", etag)
					}
					w.Header().Set("Last-Modified", lm)
					w.Header().Set("Content-Length", "5")
				}))
				defer srv.Close()
				st, name := open(t, srv.URL+"/a.bin", store.Options{})
				defer st.Close()
				v1 := versionOf(t, st, name)
				etag, lm = c.etag2, c.lm2
				if v := versionOf(t, st, name); v == v1 {
					t.Fatalf("a changed object keeps its version %q", v)
				}
			})
		}
	})
	t.Run("HTTP none", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		defer srv.Close()
		st, name := open(t, srv.URL+"/a.bin", store.Options{})
		defer st.Close()
		if v, err := st.(store.Versioner).Version(context.Background(), name); v != "" || err != nil {
			t.Fatalf("no ETag nor Last-Modified: Version = %q, %v; want \"\" (not cacheable)", v, err)
		}
	})
}
