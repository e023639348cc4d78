package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// s3Store reads one S3 endpoint with one set of credentials, the AWS SDK's
// (static, or its default chain), with requests it signs and sends itself
// (s3req.go) and listings it reads itself (s3list.go). Names are
// "bucket/key". There are no retries here but a listing's (nextPage): the
// scheduler above retries, hedges and backs off, and two retry loops would
// multiply.
type s3Store struct {
	http   *http.Client
	tr     *http.Transport
	target s3Target
	creds  aws.CredentialsProvider
	signer *v4.Signer
	region string
}

var (
	_ Store          = (*s3Store)(nil)
	_ Versioner      = (*s3Store)(nil)
	_ RangeVersioner = (*s3Store)(nil)
	_ folderLister   = (*s3Store)(nil)
)

func openS3(rest string, opts Options) (Store, string, error) {
	if _, _, err := splitBucket(rest); err != nil {
		return nil, "", fmt.Errorf("store: open s3://%s: %w", rest, err)
	}
	st, err := newS3Store(opts)
	if err != nil {
		return nil, "", err
	}
	return st, rest, nil
}

func splitBucket(name string) (bucket, key string, err error) {
	bucket, key, _ = strings.Cut(name, "/")
	if bucket == "" {
		return "", "", errors.New("no bucket in the URL")
	}
	if err := CheckBucket(bucket); err != nil {
		return "", "", err
	}
	return bucket, key, nil
}

// s3Addressing returns the endpoint URL ("" for AWS's) and the URL style
// ("vhost" or "path"; "" means vhost) requests of opts use, and refuses the
// options that would send them to a host nobody named: an endpoint that is
// not http(s)://host, a region that is not a host label, a virtual-host
// style on an IP address.
func s3Addressing(opts Options) (endpoint, style string, err error) {
	endpoint = opts.S3Endpoint
	if endpoint != "" && !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	style = opts.S3URLStyle
	switch style {
	case "", "vhost", "path":
	default:
		return "", "", fmt.Errorf("store: s3 url style %q: want vhost or path", style)
	}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
			return "", "", fmt.Errorf("store: s3 endpoint %s: want http(s)://host[:port], without userinfo", RedactURL(endpoint))
		}
		switch {
		case style == "" && isLocalHost(u.Hostname()):
			style = "path"
		case style == "vhost" && net.ParseIP(strings.Trim(u.Hostname(), "[]")) != nil:
			// "<bucket>.<IP>" is no address: it would go to a resolver,
			// which may answer anything.
			return "", "", fmt.Errorf("store: s3 endpoint %s: vhost style needs a host name, not an IP address", endpoint)
		}
	}
	if err := checkRegion(opts.S3Region); err != nil {
		return "", "", err
	}
	return endpoint, style, nil
}

// S3RequestURLs returns the http(s) URLs that the requests for rawURL
// (s3://bucket/key, or a prefix of keys) go to under opts: the path-style
// URL, and for the virtual-host style also the virtual-host URL (the client
// falls back to path style for a bucket that cannot be a host name).
// Without an endpoint they are AWS's, in opts.S3Region or us-east-1. A
// sandbox that must admit the endpoint as well as the bucket asks about
// these. On failure, returns the error Open would.
func S3RequestURLs(rawURL string, opts Options) ([]string, error) {
	scheme, rest := splitScheme(rawURL)
	if scheme != "s3" {
		return nil, fmt.Errorf("store: %s is not an s3:// URL", RedactURL(rawURL))
	}
	bucket, key, err := splitBucket(rest)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", RedactURL(rawURL), err)
	}
	endpoint, style, err := s3Addressing(opts)
	if err != nil {
		return nil, err
	}
	if endpoint == "" {
		region := opts.S3Region
		if region == "" {
			region = "us-east-1"
		}
		endpoint = "https://s3." + region + ".amazonaws.com"
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("store: s3 endpoint %s: %w", RedactURL(endpoint), err)
	}
	base := strings.TrimSuffix(u.Path, "/")
	urls := []string{u.Scheme + "://" + u.Host + base + "/" + bucket + "/" + key}
	if style != "path" {
		urls = append(urls, u.Scheme+"://"+bucket+"."+u.Host+base+"/"+key)
	}
	return urls, nil
}

// CheckBucket accepts a bucket name of S3 and the stores that copy it:
// letters, digits, '.', '-' and '_' (the last two and capitals for the
// legacy names some stores still serve), at most 255 of them. Anything
// else ('@', ':', '#', '%', '?') would change the meaning of the URL the
// bucket becomes part of: the host of a virtual-host request, or the path
// a sandbox compared. It returns an error naming the bucket.
func CheckBucket(bucket string) error {
	if bucket == "" || len(bucket) > 255 {
		return fmt.Errorf("bucket name %q: want 1 to 255 characters", bucket)
	}
	for _, c := range bucket {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("bucket name %q: only letters, digits, '.', '-' and '_' are allowed", bucket)
		}
	}
	return nil
}

// checkRegion accepts a region name: letters, digits, '-' and '_'. The
// region becomes part of the host name of an AWS endpoint
// (s3.<region>.amazonaws.com): a '.', '/', '@' or '#' would move the
// request to another host.
func checkRegion(region string) error {
	if len(region) > 64 {
		return fmt.Errorf("store: s3 region %q: too long", region)
	}
	for _, c := range region {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("store: s3 region %q: only letters, digits, '-' and '_' are allowed", region)
		}
	}
	return nil
}

// s3Redirect is the redirect policy of an S3 store: checkRedirect, and the
// target must be the very URL of the request. A signed request carries its
// signature and the session token (X-Amz-Security-Token, which the client
// copies to any host); a signature is only good for the host and path it
// was made for, so a redirect elsewhere can only fail there, or hand the
// token to whoever answers.
func s3Redirect(req *http.Request, via []*http.Request) error {
	if err := checkRedirect(req, via); err != nil {
		return err
	}
	from, to := via[len(via)-1].URL, req.URL
	if !sameOrigin(from, to) || from.Path != to.Path || from.RawQuery != to.RawQuery {
		return fmt.Errorf("%w: an S3 redirect to %s (a signed request goes only to the URL it was signed for)", ErrUnsupported, RedactURL(to.String()))
	}
	return nil
}

func newS3Store(opts Options) (*s3Store, error) {
	endpoint, style, err := s3Addressing(opts)
	if err != nil {
		return nil, err
	}

	// A default pool keeps a few idle connections per host and re-dials
	// beyond that: size it to the IO parallelism.
	tr := newTransport(opts.maxConns())

	var cfg aws.Config
	if opts.S3AccessKeyID != "" || opts.S3SecretAccessKey != "" || opts.S3SessionToken != "" {
		cfg = aws.Config{
			Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(
				opts.S3AccessKeyID, opts.S3SecretAccessKey, opts.S3SessionToken)),
		}
	} else {
		var err error
		cfg, err = config.LoadDefaultConfig(context.Background())
		if err != nil {
			// The SDK's message names the profile or file, never a secret.
			return nil, fmt.Errorf("store: s3 credentials: %w", err)
		}
		if opts.S3Endpoint == "" {
			// The chain's credentials go where the chain says, checked as
			// an endpoint of the options is.
			if ep := chainEndpoint(cfg); ep != "" {
				o := opts
				o.S3Endpoint = ep
				if endpoint, style, err = s3Addressing(o); err != nil {
					return nil, err
				}
			}
		}
	}
	if opts.S3Region != "" {
		cfg.Region = opts.S3Region
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	// The region names the host of an AWS endpoint: one from the
	// environment or a profile is checked as one from the options is.
	if err := checkRegion(cfg.Region); err != nil {
		return nil, err
	}
	target, err := newS3Target(endpoint, style, cfg.Region)
	if err != nil {
		return nil, err
	}
	return &s3Store{http: &http.Client{Transport: tr, CheckRedirect: s3Redirect}, tr: tr, target: target,
		creds: credentialsOf(cfg), signer: v4.NewSigner(), region: cfg.Region}, nil
}

// chainEndpoint returns the S3 endpoint the AWS chain of cfg configures,
// as the SDK's S3 client takes it: AWS_ENDPOINT_URL_S3 or a profile's
// services section, else AWS_ENDPOINT_URL or a profile's endpoint_url,
// none when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS (or the profile's
// ignore_configured_endpoint_urls) is set; "" for AWS's own.
func chainEndpoint(cfg aws.Config) string {
	ctx := context.Background()
	if ignore, found, err := config.GetIgnoreConfiguredEndpoints(ctx, cfg.ConfigSources); found && ignore && err == nil {
		return ""
	}
	_, global := os.LookupEnv("AWS_ENDPOINT_URL")
	_, service := os.LookupEnv("AWS_ENDPOINT_URL_S3")
	if !global || service {
		for _, src := range cfg.ConfigSources {
			p, ok := src.(interface {
				GetServiceBaseEndpoint(context.Context, string) (string, bool, error)
			})
			if !ok {
				continue
			}
			if v, found, err := p.GetServiceBaseEndpoint(ctx, "S3"); err != nil {
				break
			} else if found {
				return v
			}
		}
	}
	return aws.ToString(cfg.BaseEndpoint)
}

func (*s3Store) URL(name string) string { return "s3://" + name }

// fail is the *RequestError of an op that failed before an answer.
func (s *s3Store) fail(op, name, rng string, err error) error {
	return &RequestError{Op: op, URL: s.URL(name), Range: rng, Err: err}
}

func (s *s3Store) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	body, _, err := s.GetRangeVersion(ctx, name, off, length)
	return body, err
}

// GetRangeVersion is GetRange that also returns the version of the
// object the answer came from (see RangeVersioner).
func (s *s3Store) GetRangeVersion(ctx context.Context, name string, off, length int64) (io.ReadCloser, string, error) {
	rng := rangeHeader(off, length)
	if err := checkRange(off, length); err != nil {
		return nil, "", s.fail("GET", name, rng, err)
	}
	sent := rng
	if off == 0 && length < 0 {
		sent = "" // the whole object: no Range header
	}
	resp, err := s.do(ctx, http.MethodGet, name, sent)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return nil, "", s.statusErr("GET", name, rng, resp)
	}
	return rangeBody(resp, off, length, true /* S3 makes a new ETag with every write */, func(err error) error {
		return &RequestError{Op: "GET", URL: s.URL(name), Range: rng, Status: resp.StatusCode, Err: err}
	})
}

func (s *s3Store) Size(ctx context.Context, name string) (int64, error) {
	resp, err := s.head(ctx, name)
	if err != nil {
		return 0, err
	}
	return resp.ContentLength, nil
}

// Version asks for the object's headers (HEAD) and returns its ETag, else
// its Last-Modified time and size (see Versioner).
func (s *s3Store) Version(ctx context.Context, name string) (string, error) {
	resp, err := s.head(ctx, name)
	if err != nil {
		return "", err
	}
	return objectVersion(resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"), resp.ContentLength), nil
}

// head sends HEAD for name and returns its answer (its body closed), or
// the error of any answer but 200 or one without a length.
func (s *s3Store) head(ctx context.Context, name string) (*http.Response, error) {
	resp, err := s.do(ctx, http.MethodHead, name, "")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, s.statusErr("HEAD", name, "", resp)
	}
	resp.Body.Close()
	if resp.ContentLength < 0 {
		return nil, &RequestError{Op: "HEAD", URL: s.URL(name), Status: resp.StatusCode, Err: errors.New("the answer gives no Content-Length")}
	}
	return resp, nil
}

// List pages through ListObjectsV2 of the bucket named by prefix's first part.
func (s *s3Store) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	l, err := s.listKeys(ctx, keyQuery{prefix: prefix}, &listBound{})
	return l.objs, err
}

// listKeys pages through ListObjectsV2 for q (see folderLister). An object
// the server returns at or before q.startAfter is dropped, so that a
// server which ignores StartAfter costs time, not a wrong answer.
func (s *s3Store) listKeys(ctx context.Context, q keyQuery, bound *listBound) (keyList, error) {
	bucket, keyPrefix, err := splitBucket(q.prefix)
	if err != nil {
		return keyList{}, s.fail("LIST", q.prefix, "", err)
	}
	query := url.Values{"list-type": {"2"}, "prefix": {keyPrefix}}
	if q.folders {
		query.Set("delimiter", "/")
	}
	if after, ok := strings.CutPrefix(q.startAfter, bucket+"/"); ok && after != "" && !q.folders {
		query.Set("start-after", after)
	}
	// Inside the range: after startAfter (objects), before end. ListObjectsV2
	// returns keys in UTF-8 binary order, which is Go's string order, and
	// names are the keys under one "bucket/".
	before := func(name string) bool { return q.end == "" || name < q.end }
	var l keyList
	var token string
	for {
		if token != "" {
			query.Set("continuation-token", token)
		}
		page, err := s.nextPage(ctx, bucket, query, q.prefix)
		if err != nil {
			return keyList{}, err
		}
		l.pages++
		if bad := outside(page, keyPrefix); bad != "" {
			// A server or proxy that drops the prefix answers with the
			// bucket's names: taken, they would be chunks of other
			// datasets; left out, a listing by folder would miss some.
			return keyList{}, s.fail("LIST", q.prefix, "", fmt.Errorf("the server listed %q, outside the prefix %q asked for (does it ignore a listing's prefix?)", printable(bad, 128), printable(keyPrefix, 128)))
		}
		kept, past := 0, false
		for _, o := range page.objects {
			name := bucket + "/" + o.Name
			if name > q.startAfter && before(name) && (q.keep == nil || q.keep(name)) {
				l.objs = append(l.objs, ObjectInfo{Name: name, Size: o.Size, Version: o.Version})
				kept++
			}
			past = past || (q.end != "" && name >= q.end)
		}
		for _, cp := range page.prefixes {
			name := bucket + "/" + cp
			if before(name) {
				l.folders = append(l.folders, name)
			}
			past = past || (q.end != "" && name >= q.end)
		}
		// The objects kept count against the bound; folders, through the
		// pages that hold them.
		if err := bound.add(kept); err != nil {
			return keyList{}, s.fail("LIST", q.prefix, "", err)
		}
		if past {
			break // the rest of the listing lies past the range
		}
		if l.pages == q.pages {
			l.more = page.truncated
			break
		}
		if !page.truncated {
			break
		}
		if page.next == "" || page.next == token {
			// No token: a listing cut short; the same token: the same
			// page for ever.
			return keyList{}, s.fail("LIST", q.prefix, "", fmt.Errorf("a truncated page whose continuation token %q is empty or the last page's", printable(page.next, 128)))
		}
		token = page.next
	}
	return l, nil
}

// outside returns the first name of page (an object's or a folder's) that
// does not start with prefix, or "" if there is none.
func outside(page s3Page, prefix string) string {
	for _, o := range page.objects {
		if !strings.HasPrefix(o.Name, prefix) {
			return o.Name
		}
	}
	for _, p := range page.prefixes {
		if !strings.HasPrefix(p, prefix) {
			return p
		}
	}
	return ""
}

// Listing pages are retried here, not by the scheduler (listings do not
// go through it): a throttled answer or a broken connection on one of a
// glob's pages, which run many at once, would otherwise fail the query, as
// a GET that meets one would not.
const (
	listAttempts   = 6
	listBackoff    = 100 * time.Millisecond
	listMaxBackoff = 5 * time.Second
)

// maxListPage bounds the bytes of one listing page (a page of 1000 keys
// of the longest kind S3 allows is about 1.5 MB).
const maxListPage = 16 << 20

// nextPage asks for the listing page of query in bucket (failing with the
// LIST error naming prefix), again after a throttled answer (429, 503) or
// a connection broken before the answer was whole, up to listAttempts
// times, waiting an exponential back-off with jitter, or the Retry-After
// the store asked for if that is longer (capped at listMaxBackoff).
func (s *s3Store) nextPage(ctx context.Context, bucket string, query url.Values, prefix string) (s3Page, error) {
	for attempt := 1; ; attempt++ {
		page, err := s.listPage(ctx, bucket, query, prefix)
		if err == nil {
			return page, nil
		}
		if attempt == listAttempts || ctx.Err() != nil || !listRetryable(err) {
			return s3Page{}, err
		}
		d := min(listBackoff<<(attempt-1), listMaxBackoff)
		d = d/2 + rand.N(d/2+1)
		if ra := RetryAfter(err); ra > d {
			d = min(ra, listMaxBackoff)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return s3Page{}, err
		}
	}
}

// listPage sends one ListObjectsV2 request and reads its answer.
func (s *s3Store) listPage(ctx context.Context, bucket string, query url.Values, prefix string) (s3Page, error) {
	u := s.target.bucketURL(bucket)
	u.RawQuery = query.Encode() // the signer puts it in canonical form
	resp, err := s.send(ctx, http.MethodGet, "LIST", prefix, u, "")
	if err != nil {
		return s3Page{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return s3Page{}, s.statusErr("LIST", prefix, "", resp)
	}
	defer resp.Body.Close()
	fail := func(err error) error {
		return &RequestError{Op: "LIST", URL: s.URL(prefix), Status: resp.StatusCode, Err: err}
	}
	if err := encodingErr(resp.Header.Get("Content-Encoding")); err != nil {
		return s3Page{}, fail(err)
	}
	var buf bytes.Buffer
	if n := resp.ContentLength; n > 0 && n <= maxListPage {
		buf.Grow(int(n))
	}
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, maxListPage+1)); err != nil {
		return s3Page{}, fail(err)
	}
	if buf.Len() > maxListPage {
		return s3Page{}, fail(fmt.Errorf("a listing page of more than %d bytes", maxListPage))
	}
	page, err := parseListPage(buf.Bytes())
	if err != nil {
		return s3Page{}, fail(fmt.Errorf("the listing page: %w", err))
	}
	return page, nil
}

// listRetryable reports whether a listing page that failed with err may
// be asked again: the store throttled it, or the connection broke.
func listRetryable(err error) bool {
	return Throttled(err) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

func (*s3Store) IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

func (s *s3Store) Close() error {
	s.tr.CloseIdleConnections()
	return nil
}
