package store

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"go.uber.org/goleak"
)

// seenRequest is what a test server saw of one request.
type seenRequest struct {
	method, host, path string
	header             http.Header
}

// s3At opens an S3 store for endpoint whose every connection goes to srv,
// whatever host the request names (a virtual-host request goes to
// "<bucket>.<endpoint host>", which resolves nowhere here).
func s3At(t *testing.T, srv *httptest.Server, endpoint, style string) *s3Store {
	t.Helper()
	st, err := newS3Store(Options{S3Endpoint: endpoint, S3URLStyle: style, S3Region: "eu-west-1",
		S3AccessKeyID: "AKIDTEST", S3SecretAccessKey: "secret", S3SessionToken: "TOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Listener.Addr().String()
	st.tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestS3RequestShape: the GETs and HEADs an S3 store signs itself go to the
// host and path S3 expects for each addressing style and bucket, with the
// key escaped byte by byte, the signature's headers and the session token,
// and the Range asked.
func TestS3RequestShape(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, seenRequest{r.Method, r.Host, r.URL.EscapedPath(), r.Header.Clone()})
		mu.Unlock()
		w.Header().Set("ETag", `"e1"`)
		w.Header().Set("Content-Range", "bytes 2-5/10")
		w.WriteHeader(http.StatusPartialContent)
		io.WriteString(w, "2345")
	}))
	t.Cleanup(srv.Close)
	const key = "dir/a b+c=%é?#&!*'()~_-.x.arrow"
	const escaped = "dir/a%20b%2Bc%3D%25%C3%A9%3F%23%26%21%2A%27%28%29~_-.x.arrow"
	for _, c := range []struct {
		endpoint, style, bucket string
		host, path              string
	}{
		{"http://s3.example.test:9000", "", "data", "data.s3.example.test:9000", "/" + escaped},
		{"http://s3.example.test:9000", "vhost", "a.b", "s3.example.test:9000", "/a.b/" + escaped},
		{"http://s3.example.test:9000", "vhost", "Legacy_B", "s3.example.test:9000", "/Legacy_B/" + escaped},
		{"http://s3.example.test:9000/base/", "path", "data", "s3.example.test:9000", "/base/data/" + escaped},
		{"http://127.0.0.1:9000", "", "data", "127.0.0.1:9000", "/data/" + escaped},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		st := s3At(t, srv, c.endpoint, c.style)
		body, version, err := st.GetRangeVersion(context.Background(), c.bucket+"/"+key, 2, 4)
		if err != nil {
			t.Fatalf("%s %s: %v", c.endpoint, c.bucket, err)
		}
		b, _ := io.ReadAll(body)
		body.Close()
		if string(b) != "2345" || version != `etag:"e1"` {
			t.Fatalf("%s %s: body %q version %q", c.endpoint, c.bucket, b, version)
		}
		if _, err := st.Version(context.Background(), c.bucket+"/"+key); err == nil {
			t.Fatalf("%s: HEAD answered 206 succeeded", c.endpoint)
		}
		mu.Lock()
		got := append([]seenRequest(nil), seen...)
		mu.Unlock()
		if len(got) != 2 || got[0].method != "GET" || got[1].method != "HEAD" {
			t.Fatalf("%s %s: requests %+v, want a GET and a HEAD", c.endpoint, c.bucket, got)
		}
		for _, r := range got {
			if r.host != c.host || r.path != c.path {
				t.Errorf("%s %s %s: host %q path %q, want %q %q", c.endpoint, c.bucket, r.method, r.host, r.path, c.host, c.path)
			}
			auth := r.header.Get("Authorization")
			if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(auth, "/eu-west-1/s3/aws4_request") ||
				!strings.Contains(auth, "SignedHeaders=host;") || strings.Contains(auth, "secret") {
				t.Errorf("%s %s: Authorization %q", c.endpoint, r.method, auth)
			}
			if r.header.Get("X-Amz-Security-Token") != "TOKEN" || r.header.Get("X-Amz-Content-Sha256") != emptyPayloadHash ||
				r.header.Get("X-Amz-Date") == "" {
				t.Errorf("%s %s: headers %v", c.endpoint, r.method, r.header)
			}
		}
		if rng := got[0].header.Get("Range"); rng != "bytes=2-5" {
			t.Errorf("GET Range %q, want bytes=2-5", rng)
		}
		if rng := got[1].header.Get("Range"); rng != "" {
			t.Errorf("HEAD Range %q, want none", rng)
		}
	}
}

// TestS3ErrorAnswers: each error answer of S3 maps to its sentinel, or to a
// message with the server's words made printable; nothing is retried here.
func TestS3ErrorAnswers(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	type answer struct {
		status  int
		header  map[string]string
		body    string
		partial bool
	}
	var mu sync.Mutex
	var next answer
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		a := next
		calls++
		mu.Unlock()
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	t.Cleanup(srv.Close)
	st := s3At(t, srv, "http://127.0.0.1:1", "")
	xml := func(code, msg string) string {
		return "<?xml version=\"1.0\"?><Error><Code>" + code + "</Code><Message>" + msg + "</Message></Error>"
	}
	for _, c := range []struct {
		name   string
		a      answer
		head   bool
		is     error
		want   string
		reject string
		after  time.Duration
	}{
		{name: "no such key", a: answer{status: 404, body: xml("NoSuchKey", "gone")}, is: ErrNotFound},
		{name: "no such bucket", a: answer{status: 404, body: xml("NoSuchBucket", "gone")}, is: ErrNotFound},
		{name: "HEAD 404", a: answer{status: 404}, head: true, is: ErrNotFound},
		{name: "HEAD 403", a: answer{status: 403}, head: true, is: ErrForbidden},
		{name: "denied", a: answer{status: 403, body: xml("AccessDenied", "no")}, is: ErrForbidden, want: "(AccessDenied)"},
		{name: "expired token", a: answer{status: 400, body: xml("ExpiredToken", "The provided token has expired.")}, want: "HTTP 400: The provided token has expired. (ExpiredToken)"},
		{name: "bad range", a: answer{status: 416, body: xml("InvalidRange", "no")}, is: ErrOutOfRange},
		{name: "slow down", a: answer{status: 503, header: map[string]string{"Retry-After": "3"}, body: xml("SlowDown", "easy")}, is: ErrThrottled, after: 3 * time.Second},
		{name: "429", a: answer{status: 429}, is: ErrThrottled},
		{name: "moved", a: answer{status: 301, body: xml("PermanentRedirect", "elsewhere")}, is: ErrUnsupported, want: "check s3_endpoint"},
		{name: "server's words", a: answer{status: 500, body: xml("InternalError", "bad\x1b[31m\x07 day\xff")}, want: "HTTP 500: bad[31m day (InternalError)", reject: "\x1b"},
		{name: "gzip", a: answer{status: 206, header: map[string]string{"Content-Encoding": "gzip", "Content-Range": "bytes 0-9/10"}, body: "0123456789"}, is: ErrUnsupported, want: "Content-Encoding"},
		{name: "short", a: answer{status: 206, header: map[string]string{"Content-Range": "bytes 0-4/5"}, body: "01234"}, is: ErrOutOfRange},
		{name: "range ignored", a: answer{status: 200, body: "0123456789"}, is: ErrUnsupported, want: "ignored the Range"},
	} {
		mu.Lock()
		next, calls = c.a, 0
		mu.Unlock()
		var err error
		if c.head {
			_, err = st.Size(context.Background(), "data/k")
		} else {
			var body io.ReadCloser
			off := int64(0)
			if c.name == "range ignored" {
				off = 1
			}
			body, err = st.GetRange(context.Background(), "data/k", off, 10)
			if err == nil {
				body.Close()
			}
		}
		mu.Lock()
		n := calls
		mu.Unlock()
		var re *RequestError
		switch {
		case err == nil || !errors.As(err, &re):
			t.Errorf("%s: err %v, want a *RequestError", c.name, err)
		case c.is != nil && !errors.Is(err, c.is):
			t.Errorf("%s: %v, want %v", c.name, err, c.is)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %q, want %q in it", c.name, err, c.want)
		case c.reject != "" && strings.Contains(err.Error(), c.reject):
			t.Errorf("%s: %q has %q", c.name, err, c.reject)
		case !strings.Contains(err.Error(), "s3://data/k"):
			t.Errorf("%s: %q does not name the object", c.name, err)
		case RetryAfter(err) != c.after:
			t.Errorf("%s: Retry-After %v, want %v", c.name, RetryAfter(err), c.after)
		case n != 1:
			t.Errorf("%s: %d requests, want 1", c.name, n)
		}
	}
}

// TestS3ListRequests: a listing's pages are signed GETs of the bucket
// (its host under vhost style, its path else) with the ListObjectsV2
// query, the continuation token of the page before; a page over
// maxListPage bytes, or encoded on the way, fails the listing naming it.
func TestS3ListRequests(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var mu sync.Mutex
	var seen []*http.Request
	huge := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		n, big := len(seen), huge
		mu.Unlock()
		if big {
			io.WriteString(w, "<ListBucketResult>"+strings.Repeat(" ", maxListPage)+"</ListBucketResult>")
			return
		}
		if n == 1 {
			io.WriteString(w, `<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>tok+/=&amp;</NextContinuationToken><Contents><Key>ds/a b</Key><Size>5</Size></Contents></ListBucketResult>`)
			return
		}
		io.WriteString(w, `<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>ds/c</Key><Size>6</Size></Contents></ListBucketResult>`)
	}))
	t.Cleanup(srv.Close)
	for _, c := range []struct{ style, host, path string }{
		{"vhost", "data.s3.example.test:9000", "/"},
		{"path", "s3.example.test:9000", "/data"},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		st := s3At(t, srv, "http://s3.example.test:9000", c.style)
		objs, err := st.List(context.Background(), "data/ds/")
		if err != nil {
			t.Fatal(err)
		}
		if want := []ObjectInfo{{Name: "data/ds/a b", Size: 5}, {Name: "data/ds/c", Size: 6}}; !reflect.DeepEqual(objs, want) {
			t.Fatalf("%s: %v, want %v", c.style, objs, want)
		}
		mu.Lock()
		got := seen
		mu.Unlock()
		if len(got) != 2 {
			t.Fatalf("%s: %d requests, want 2", c.style, len(got))
		}
		for i, r := range got {
			q := r.URL.Query()
			if r.Method != "GET" || r.Host != c.host || r.URL.Path != c.path || q.Get("list-type") != "2" || q.Get("prefix") != "ds/" ||
				!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") || r.Header.Get("X-Amz-Security-Token") != "TOKEN" {
				t.Errorf("%s: request %d: %s %s %s %v", c.style, i, r.Method, r.Host, r.URL, r.Header)
			}
			if tok := q.Get("continuation-token"); (i == 0) != (tok == "") || (i == 1 && tok != "tok+/=&") {
				t.Errorf("%s: request %d: continuation token %q", c.style, i, tok)
			}
		}
	}
	mu.Lock()
	huge = true
	mu.Unlock()
	st := s3At(t, srv, "http://127.0.0.1:1", "")
	if _, err := st.List(context.Background(), "data/ds/"); err == nil || !strings.Contains(err.Error(), "listing page of more than") ||
		!strings.Contains(err.Error(), "s3://data/ds/") {
		t.Fatalf("a page over the bound: %v", err)
	}
}

// TestChainEndpoint: which of the AWS chain's endpoint settings wins, as
// the SDK's S3 client decides it.
func TestChainEndpoint(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, ""},
		{map[string]string{"AWS_ENDPOINT_URL": "http://g:1"}, "http://g:1"},
		{map[string]string{"AWS_ENDPOINT_URL_S3": "http://s:1"}, "http://s:1"},
		{map[string]string{"AWS_ENDPOINT_URL": "http://g:1", "AWS_ENDPOINT_URL_S3": "http://s:1"}, "http://s:1"},
		{map[string]string{"AWS_ENDPOINT_URL_S3": "http://s:1", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, ""},
	} {
		for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
		for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1",
			"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"} {
			t.Setenv(k, v)
		}
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		cfg, err := config.LoadDefaultConfig(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := chainEndpoint(cfg); got != c.want {
			t.Errorf("%v: %q, want %q", c.env, got, c.want)
		}
	}
}

// TestCredentialsOfNone: a config without a credentials provider fails its
// requests with an error, never a nil dereference.
func TestCredentialsOfNone(t *testing.T) {
	if _, err := credentialsOf(aws.Config{}).Retrieve(context.Background()); err == nil {
		t.Fatal("no provider: credentials retrieved, want an error")
	}
}
