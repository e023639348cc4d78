// Package s3server runs a real S3 server (versitygw with its posix backend) on 127.0.0.1 for tests and benchmarks.
package s3server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Fixed credentials of the root account of every server this package starts.
const (
	AccessKey = "remote-segments-test"
	SecretKey = "remote-segments-test-secret"
	Region    = "us-east-1"
)

// SkipEnv names the environment variable that, set to 1, makes ForTest skip
// instead of fail when the versitygw binary is missing.
const SkipEnv = "REMOTE_SEGMENTS_SKIP_S3"

// ErrNoBinary means .tools/bin/versitygw was not found; `make versitygw`
// installs it.
var ErrNoBinary = errors.New("s3server: versitygw binary not found: run `make versitygw` (or set " + SkipEnv + "=1 to skip S3 tests)")

// Server is a running versitygw process. Endpoint is its base URL
// ("http://127.0.0.1:PORT"); the credentials are the constants above.
type Server struct {
	Endpoint  string
	AccessKey string
	SecretKey string
	Region    string
	Dir       string // the posix root: each directory is a bucket

	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
	client *s3.Client
	tr     *http.Transport
}

// Binary returns the path of .tools/bin/versitygw in the directory holding
// go.mod, searched upwards from the working directory, or ErrNoBinary.
func Binary() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			bin := filepath.Join(dir, ".tools", "bin", "versitygw")
			if _, err := os.Stat(bin); err != nil {
				return "", fmt.Errorf("%w (looked for %s)", ErrNoBinary, bin)
			}
			return bin, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoBinary
		}
		dir = parent
	}
}

// Start runs versitygw on a free port of 127.0.0.1 serving dir (created if
// absent), waits until it answers S3 requests and creates buckets. The caller
// must Close the server. On failure, nothing is left running.
func Start(ctx context.Context, dir string, buckets ...string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("s3server: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("s3server: free port: %w", err)
	}
	logf, err := os.CreateTemp("", "versitygw-*.log")
	if err != nil {
		return nil, fmt.Errorf("s3server: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin,
		"--access", AccessKey, "--secret", SecretKey, "--region", Region,
		"--port", addr, "--keep-alive", "--quiet",
		"posix", dir)
	cmd.Stdout, cmd.Stderr = logf, logf // files: no copying goroutines
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		os.Remove(logf.Name())
		return nil, fmt.Errorf("s3server: start %s: %w", bin, err)
	}
	s := &Server{
		Endpoint: "http://" + addr, AccessKey: AccessKey, SecretKey: SecretKey, Region: Region, Dir: dir,
		cmd: cmd, exited: make(chan struct{}), log: logf,
	}
	go func() { cmd.Wait(); close(s.exited) }()
	s.tr = http.DefaultTransport.(*http.Transport).Clone()
	s.client = s3.New(s3.Options{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		HTTPClient:   &http.Client{Transport: s.tr},
	})
	if err := s.wait(ctx); err != nil {
		s.Close()
		return nil, err
	}
	for _, b := range buckets {
		if err := s.CreateBucket(ctx, b); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// ForTest starts a server for t in a temporary directory and closes it when
// t ends. A missing binary fails t with the message to run `make versitygw`,
// or skips it when REMOTE_SEGMENTS_SKIP_S3=1.
func ForTest(t testing.TB, buckets ...string) *Server {
	t.Helper()
	if _, err := Binary(); err != nil {
		if os.Getenv(SkipEnv) == "1" {
			t.Skipf("%s=1 and %v", SkipEnv, err)
		}
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, filepath.Join(t.TempDir(), "s3"), buckets...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// wait polls ListBuckets until the server answers.
func (s *Server) wait(ctx context.Context) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := s.client.ListBuckets(cctx, &s3.ListBucketsInput{})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("s3server: versitygw exited: %s", s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("s3server: waiting for %s: %w", s.Endpoint, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("s3server: %s did not answer: %v; log: %s", s.Endpoint, err, s.logTail())
		}
	}
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.log.Name())
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// Client returns an S3 client of the server's root account (path style).
func (s *Server) Client() *s3.Client { return s.client }

// CreateBucket creates a bucket through the S3 API.
func (s *Server) CreateBucket(ctx context.Context, bucket string) error {
	_, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	if err != nil {
		return fmt.Errorf("s3server: create bucket %s: %w", bucket, err)
	}
	return nil
}

// PutObject stores data under bucket/key through the S3 API.
func (s *Server) PutObject(ctx context.Context, bucket, key string, data []byte) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	})
	if err != nil {
		return fmt.Errorf("s3server: put s3://%s/%s: %w", bucket, key, err)
	}
	return nil
}

// CPU is the CPU time (user and system) the server's process has used so
// far: a benchmark's runs take the difference, to show what the store
// itself cost the machine beside the client it measures.
func (s *Server) CPU() (time.Duration, error) {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0, errors.New("s3server: not running")
	}
	return processCPU(s.cmd.Process.Pid)
}

// Close stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it.
// Close is idempotent.
func (s *Server) Close() error {
	if s.cmd == nil {
		return nil
	}
	s.tr.CloseIdleConnections()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.log.Close()
	os.Remove(s.log.Name())
	s.cmd = nil
	return nil
}
