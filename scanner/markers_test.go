package scanner

import (
	"context"
	"os"
	"testing"

	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/test/s3server"
)

// TestFolderMarkers: on a real S3 server (versitygw), the empty objects
// that S3's console makes for folders ("ds/", "ds/m/") are not chunks: a
// prefix, a glob that matches them, and a folder named without its slash
// read the chunks beside them, as a local copy of the tree (folders
// there) reads; a listing of markers alone finds nothing. Without it,
// the first marker failed the scan ("the object is empty").
func TestFolderMarkers(t *testing.T) {
	srv := s3server.ForTest(t, "bkt")
	paths, want := writeIPCFiles(t, t.TempDir(), 2, 100, false)
	ctx := context.Background()
	put := func(key string, data []byte) {
		if err := srv.PutObject(ctx, "bkt", key, data); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"ds/", "ds/m/", "ds/m/n/", "only/", "only/m/"} {
		put(key, nil)
	}
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		put([]string{"ds/a.arrow", "ds/m/b.arrow"}[i], data)
	}
	opts := store.Options{S3Endpoint: srv.Endpoint, S3AccessKeyID: srv.AccessKey, S3SecretAccessKey: srv.SecretKey, S3Region: srv.Region}
	for _, src := range []string{"s3://bkt/ds/", "s3://bkt/ds/**", "s3://bkt/ds", "s3://bkt/d*/**"} {
		cfg := Config{Process: testProcess(t), Source: src, Store: opts, MaxParallelIO: 4}
		chunks, err := Resolve(ctx, cfg)
		if err != nil || len(chunks) != 2 {
			t.Fatalf("%s: %d chunks (%v), want the 2 objects beside the markers", src, len(chunks), err)
		}
		if sum, _ := scanSum(t, cfg); sum != want {
			t.Errorf("%s: sum(x) %d, want %d", src, sum, want)
		}
	}
	for _, src := range []string{"s3://bkt/only/", "s3://bkt/only/**"} {
		_, err := Resolve(ctx, Config{Process: testProcess(t), Source: src, Store: opts})
		if err == nil {
			t.Errorf("%s: a listing of folder markers alone gave chunks", src)
		}
	}
}
