package store_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

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

// TestListedVersionIsHeadVersion: the version an S3 listing gives an
// object (its ETag, in Version's form) is the one a HEAD and a GET give,
// for an object put whole and one uploaded in parts: a cache may key by
// either and find the other's entries. An overwrite changes it.
func TestListedVersionIsHeadVersion(t *testing.T) {
	leakCheck(t)
	srv := s3server.ForTest(t, "bkt")
	ctx := context.Background()
	if err := srv.PutObject(ctx, "bkt", "d/whole.bin", []byte("whole object")); err != nil {
		t.Fatal(err)
	}
	// A multipart upload of two parts (all but the last at least 5 MiB).
	part := bytes.Repeat([]byte("p"), 5<<20)
	c := srv.Client()
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("d/parts.bin")})
	if err != nil {
		t.Fatal(err)
	}
	var done []s3types.CompletedPart
	for i, data := range [][]byte{part, []byte("tail")} {
		n := int32(i + 1)
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("d/parts.bin"), UploadId: up.UploadId,
			PartNumber: aws.Int32(n), Body: bytes.NewReader(data)})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, s3types.CompletedPart{ETag: p.ETag, PartNumber: aws.Int32(n)})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("d/parts.bin"),
		UploadId: up.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatal(err)
	}
	st, _ := open(t, "s3://bkt/d/", store.Options{S3Endpoint: srv.Endpoint, S3Region: srv.Region,
		S3AccessKeyID: srv.AccessKey, S3SecretAccessKey: srv.SecretKey})
	defer st.Close()
	listed := func() map[string]string {
		objs, err := st.List(ctx, "bkt/d/")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, o := range objs {
			m[o.Name] = o.Version
		}
		return m
	}
	first := listed()
	t.Logf("listed: %q", first)
	for _, name := range []string{"bkt/d/whole.bin", "bkt/d/parts.bin"} {
		head := versionOf(t, st, name)
		if first[name] != head {
			t.Errorf("%s: listed version %q, HEAD %q", name, first[name], head)
		}
		body, v, err := st.(store.RangeVersioner).GetRangeVersion(ctx, name, 2, 3)
		if err != nil {
			t.Fatal(err)
		}
		body.Close()
		if v != head {
			t.Errorf("%s: GET version %q, HEAD %q", name, v, head)
		}
	}
	// Many objects' versions by listing (store.VersionLister), names with
	// characters a listing escapes among them: those of a HEAD.
	var names []string
	for i := range store.MinListedVersions + 2 {
		key := fmt.Sprintf("d/m/%c &<+=%03d.bin", 'a'+i%3, i)
		if err := srv.PutObject(ctx, "bkt", key, []byte(key)); err != nil {
			t.Fatal(err)
		}
		names = append(names, "bkt/"+key)
	}
	versions, sent := st.(store.VersionLister).ListVersions(ctx, append(names, "bkt/d/m/absent"), 4)
	if sent == 0 || len(versions) != len(names) {
		t.Fatalf("ListVersions: %d versions of %d objects, %d pages", len(versions), len(names), sent)
	}
	for _, name := range names {
		if v := versionOf(t, st, name); versions[name] != v {
			t.Errorf("%s: listed version %q, HEAD %q", name, versions[name], v)
		}
	}
	if err := srv.PutObject(ctx, "bkt", "d/whole.bin", []byte("other object")); err != nil { // same size
		t.Fatal(err)
	}
	if v := listed()["bkt/d/whole.bin"]; v == first["bkt/d/whole.bin"] || v != versionOf(t, st, "bkt/d/whole.bin") {
		t.Errorf("overwritten: listed version %q, before %q, HEAD %q", v, first["bkt/d/whole.bin"], versionOf(t, st, "bkt/d/whole.bin"))
	}
}
