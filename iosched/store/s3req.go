package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// GETs, HEADs and listings, the requests a scan makes by the thousand, are
// built and signed here (Signature Version 4, the SDK's signer) and sent on
// the store's own client, not through the SDK's operation stack: its
// middleware (endpoint rules, retry, checksum and logging steps, output
// deserialization) costs more CPU per request than the rest of a ranged
// read, and a host that runs the scan beside DuckDB's threads has that CPU
// to spare only at a lower rate. A listing's pages are read by s3list.go.

// emptyPayloadHash is the SHA-256 of an empty body, the payload hash of a
// GET or HEAD (sent as X-Amz-Content-Sha256, which S3 requires).
const emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// s3Target is where an S3 store's object requests go: the endpoint's
// scheme, host and path, and whether buckets that can be a host name are
// addressed as one (virtual-host style).
type s3Target struct {
	scheme, host, base string
	vhost              bool
}

// newS3Target returns the target of an endpoint and style as s3Addressing
// gave them; no endpoint means AWS's in region.
func newS3Target(endpoint, style, region string) (s3Target, error) {
	if endpoint == "" {
		return s3Target{scheme: "https", host: "s3." + region + ".amazonaws.com", vhost: style != "path"}, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return s3Target{}, fmt.Errorf("store: s3 endpoint %s: %w", RedactURL(endpoint), err)
	}
	return s3Target{scheme: u.Scheme, host: u.Host, base: strings.TrimSuffix(u.EscapedPath(), "/"), vhost: style != "path"}, nil
}

// url returns the URL of the object key in bucket. A bucket goes into the
// host name only when it is a valid DNS label of its own (no '.', which a
// TLS certificate for *.host does not cover; no capitals or '_', which
// host names do not keep); any other goes into the path, as the SDK's
// endpoint rules do. Both forms are the ones S3RequestURLs names.
func (t s3Target) url(bucket, key string) *url.URL {
	u := &url.URL{Scheme: t.scheme, Host: t.host}
	escaped := t.base + "/" + escapeKey(bucket) + "/" + escapeKey(key)
	if t.vhost && dnsBucket(bucket) {
		u.Host = bucket + "." + t.host
		escaped = t.base + "/" + escapeKey(key)
	}
	// The path goes on the wire, and into the signature, exactly as
	// escaped here (the signer takes it as given).
	u.Path, _ = url.PathUnescape(escaped)
	u.RawPath = escaped
	return u
}

// bucketURL returns the URL of bucket itself (where its listings are
// asked), addressed as url addresses its objects.
func (t s3Target) bucketURL(bucket string) *url.URL {
	u := t.url(bucket, "")
	if t.vhost && dnsBucket(bucket) {
		return u // "/": the bucket is the host
	}
	u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/"), strings.TrimSuffix(u.RawPath, "/")
	return u
}

// dnsBucket reports whether bucket can be the first label of a host name:
// 3 to 63 lowercase letters, digits and '-', starting and ending with a
// letter or digit.
func dnsBucket(bucket string) bool {
	if len(bucket) < 3 || len(bucket) > 63 || bucket[0] == '-' || bucket[len(bucket)-1] == '-' {
		return false
	}
	for i := 0; i < len(bucket); i++ {
		c := bucket[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// escapeKey escapes an object key for a URL path as S3 reads it and as
// Signature Version 4 signs it: every byte but the unreserved ones
// (letters, digits, '-', '.', '_', '~') and '/' as %XX. A key's "." and
// ".." segments and empty ones stay as they are: the client sends the
// path as given, and S3 does not resolve them.
func escapeKey(key string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(key) + 16)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '/' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// do sends a signed op (GET or HEAD) of the object name, with a Range
// header unless rng is "". Errors are *RequestError.
func (s *s3Store) do(ctx context.Context, op, name, rng string) (*http.Response, error) {
	bucket, key, err := splitBucket(name)
	if err != nil {
		return nil, s.fail(op, name, rng, err)
	}
	return s.send(ctx, op, op, name, s.target.url(bucket, key), rng)
}

// send signs a request of method for u, with a Range header unless rng is
// "", and sends it on the store's client, which follows a redirect only
// to the URL signed (s3Redirect). Errors are *RequestError of op (GET,
// HEAD, LIST) naming name.
func (s *s3Store) send(ctx context.Context, method, op, name string, u *url.URL, rng string) (*http.Response, error) {
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		// The SDK's message names the provider that failed, never a secret.
		return nil, &RequestError{Op: op, URL: s.URL(name), Range: rng, Err: fmt.Errorf("s3 credentials: %w", err)}
	}
	req, err := http.NewRequestWithContext(ctx, method, "", nil)
	if err != nil {
		return nil, s.fail(op, name, rng, err)
	}
	req.URL = u
	req.Host = u.Host
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	req.Header.Set("X-Amz-Content-Sha256", emptyPayloadHash)
	if err := s.signer.SignHTTP(ctx, creds, req, emptyPayloadHash, "s3", s.region, time.Now().UTC(), func(o *v4.SignerOptions) {
		o.DisableURIPathEscaping = true // escapeKey's path is the canonical one
	}); err != nil {
		return nil, s.fail(op, name, rng, err)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, &RequestError{Op: op, URL: s.URL(name), Range: rng, Err: unwrapURLError(err)}
	}
	return resp, nil
}

// statusErr maps an S3 error answer to a *RequestError and closes its
// body: by the error code of its XML body where it names one, else by the
// HTTP status.
func (s *s3Store) statusErr(op, name, rng string, resp *http.Response) error {
	code, msg := s3ErrorBody(op, resp)
	resp.Body.Close()
	re := &RequestError{Op: op, URL: s.URL(name), Range: rng, Status: resp.StatusCode, Code: code}
	switch {
	case code == "NoSuchKey" || code == "NoSuchBucket" || code == "NotFound":
		re.Err = ErrNotFound
	case code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch":
		re.Err = ErrForbidden
	case code == "InvalidRange":
		re.Err = ErrOutOfRange
	case code == "SlowDown":
		re.Err = fmt.Errorf("%w: HTTP %d", ErrThrottled, resp.StatusCode)
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		// A redirect the client did not follow (S3's 301 PermanentRedirect
		// names another region or endpoint): say so, do not retry.
		re.Err = fmt.Errorf("%w: HTTP %d, a redirect that was not followed (check s3_endpoint and s3_region)", ErrUnsupported, resp.StatusCode)
	default:
		re.Err = statusSentinel(resp.StatusCode, resp.Status)
		if msg != "" && !errors.Is(re.Err, ErrNotFound) && !errors.Is(re.Err, ErrForbidden) &&
			!errors.Is(re.Err, ErrOutOfRange) && !errors.Is(re.Err, ErrThrottled) {
			re.Err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
		}
	}
	if Throttled(re.Err) {
		re.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return re
}

var (
	s3Code    = regexp.MustCompile(`<Code>([^<]{1,64})</Code>`)
	s3Message = regexp.MustCompile(`<Message>([^<]{1,512})</Message>`)
)

// s3ErrorBody returns the Code and Message of an S3 error answer's XML
// body (its first 4 KiB; a HEAD has none), as printable text: the server's
// words end up in an error message shown to the user.
func s3ErrorBody(op string, resp *http.Response) (code, msg string) {
	if op == http.MethodHead {
		return "", ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if m := s3Code.FindSubmatch(b); m != nil {
		code = printable(string(m[1]), 64)
	}
	if m := s3Message.FindSubmatch(b); m != nil {
		msg = printable(string(m[1]), 256)
	}
	return code, msg
}

// printable returns s without control characters and invalid UTF-8, cut
// to at most n bytes.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// credentialsOf returns the provider of cfg's credentials, cached (the
// SDK's chain asks a file, the environment or a metadata server; the cache
// asks again only before they expire). A config without one (the SDK's
// chain always sets one) fails every request instead of panicking.
func credentialsOf(cfg aws.Config) aws.CredentialsProvider {
	switch cfg.Credentials.(type) {
	case nil:
		return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no credentials configured")
		})
	case *aws.CredentialsCache:
		return cfg.Credentials
	}
	return aws.NewCredentialsCache(cfg.Credentials)
}
