package s3server_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/goleak"

	"github.com/remote-segments/remote_segments/test/s3server"
)

func TestServer(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	srv := s3server.ForTest(t, "bkt", "other")
	ctx := context.Background()
	if err := srv.PutObject(ctx, "bkt", "dir/a.bin", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	out, err := srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dir/a.bin"), Range: aws.String("bytes=1-3")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(b) != "ell" {
		t.Fatalf("ranged GET = %q", b)
	}
	// The posix backend stores objects as plain files under Dir.
	if data, err := os.ReadFile(filepath.Join(srv.Dir, "bkt", "dir", "a.bin")); err != nil || string(data) != "hello" {
		t.Fatalf("object file: %q %v", data, err)
	}
	buckets, err := srv.Client().ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(buckets.Buckets) != 2 {
		t.Fatalf("buckets %v %v", buckets, err)
	}
	// The server's CPU time grows as it serves, and is never read of a
	// stopped server.
	cpu0, err := srv.CPU()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for cpu := cpu0; cpu == cpu0; {
		if time.Now().After(deadline) {
			t.Fatalf("the server's CPU time stayed %v over 30 s of requests", cpu0)
		}
		for range 50 {
			if _, err := srv.Client().ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
				t.Fatal(err)
			}
		}
		if cpu, err = srv.CPU(); err != nil {
			t.Fatal(err)
		} else if cpu < cpu0 {
			t.Fatalf("the server's CPU time went from %v down to %v", cpu0, cpu)
		}
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Close() // idempotent
	if cpu, err := srv.CPU(); err == nil {
		t.Errorf("CPU of a stopped server: %v, want an error", cpu)
	}
}

func TestBinary(t *testing.T) {
	bin, err := s3server.Binary()
	if err != nil {
		if os.Getenv(s3server.SkipEnv) == "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	if filepath.Base(bin) != "versitygw" {
		t.Fatalf("Binary() = %s", bin)
	}
}

// TestMissingBinary: without .tools/bin/versitygw the error says how to get it.
func TestMissingBinary(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644)
	t.Chdir(dir)
	_, err := s3server.Binary()
	if !errors.Is(err, s3server.ErrNoBinary) || !strings.Contains(err.Error(), "make versitygw") {
		t.Fatalf("Binary() without the binary: %v", err)
	}
	if _, err := s3server.Start(context.Background(), filepath.Join(dir, "s3")); !errors.Is(err, s3server.ErrNoBinary) {
		t.Fatalf("Start without the binary: %v", err)
	}
}
