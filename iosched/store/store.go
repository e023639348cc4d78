// Package store reads byte ranges of objects on local disk, HTTP(S) servers and S3 through one narrow interface.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Store reads objects of one store domain: the local file system, one HTTP(S)
// host, or one S3 endpoint with one set of credentials. Names are relative to
// the domain: an absolute slash path for files, the path (and query) for HTTP,
// "bucket/key" for S3. Open turns a URL into a Store and a name.
//
// All methods are safe for concurrent use. Errors are *RequestError values
// that name the URL and wrap one of the sentinels below where one applies.
type Store interface {
	// GetRange returns a reader of length bytes of name starting at off;
	// length < 0 reads to the end of the object. The body may be shorter than
	// asked when the connection breaks: callers check what they read. The
	// caller closes the reader; cancelling ctx aborts the read. A range that
	// starts or ends past the end of the object fails with ErrOutOfRange.
	GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error)
	// Size returns the size of name in bytes.
	Size(ctx context.Context, name string) (int64, error)
	// List returns every object whose name starts with prefix, sorted by
	// name. Stores that cannot list fail with ErrUnsupported.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// IsNotFound reports whether err means the object does not exist.
	IsNotFound(err error) bool
	// URL returns the URL of name for messages; it never contains credentials.
	URL(name string) string
	// Close releases idle connections. Requests that are still running are
	// not interrupted; the Store must not be used afterwards.
	Close() error
}

// Local is a Store of local files. A read of one, once begun, runs to its
// end whatever its context says (a pread is not interrupted), and a second
// read of the same bytes meets the same page cache and disk: a scheduler
// that watches a GET for a stall, to cancel or hedge it, could do neither
// to such a read, and sets no watch on it.
type Local interface {
	Store
	local()
}

// ObjectInfo describes one listed object.
type ObjectInfo struct {
	Name string // name within the store, usable with GetRange
	Size int64  // bytes
	// Version is the object's version in the form Versioner.Version
	// gives it, where the listing told it (S3's ETag); "" where it did not.
	Version string
}

// Sentinel errors, wrapped by *RequestError; test them with errors.Is.
var (
	ErrNotFound    = errors.New("not found")                   // HTTP 404, S3 NoSuchKey/NoSuchBucket, missing file
	ErrForbidden   = errors.New("forbidden")                   // HTTP 401/403, S3 AccessDenied, EACCES
	ErrThrottled   = errors.New("throttled")                   // HTTP 429, S3 503 SlowDown
	ErrOutOfRange  = errors.New("range outside of the object") // HTTP 416 or a range past the end
	ErrUnsupported = errors.New("not supported")               // listing over HTTP, a server that ignores Range
)

// RequestError is the error of one store operation. Its message names the
// operation, the URL and the byte range, for example
// "store: GET s3://bkt/a.arrow bytes=0-99: not found".
type RequestError struct {
	Op     string // GET, HEAD, LIST
	URL    string // without credentials
	Range  string // "bytes=0-99", "bytes=100-" or ""
	Status int    // HTTP status, 0 when there was no response
	Code   string // S3 error code such as "SlowDown", or ""
	Err    error  // a sentinel above or the transport error
	// RetryAfter is the wait a throttled answer asked for in its
	// Retry-After header (seconds or an HTTP date), 0 when it named none.
	RetryAfter time.Duration
}

func (e *RequestError) Error() string {
	var b strings.Builder
	b.WriteString("store: ")
	b.WriteString(e.Op)
	b.WriteByte(' ')
	b.WriteString(e.URL)
	if e.Range != "" {
		b.WriteByte(' ')
		b.WriteString(e.Range)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Code != "" && !strings.Contains(e.Err.Error(), e.Code) {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	return b.String()
}

func (e *RequestError) Unwrap() error { return e.Err }

// Throttled reports whether err asks the client to slow down (HTTP 429 or a
// 503, including S3's SlowDown).
func Throttled(err error) bool {
	if errors.Is(err, ErrThrottled) {
		return true
	}
	var re *RequestError
	return errors.As(err, &re) && (re.Status == 429 || re.Status == 503)
}

// RetryAfter returns the wait a throttled answer asked for (its
// Retry-After header), 0 when err carries none.
func RetryAfter(err error) time.Duration {
	var re *RequestError
	if errors.As(err, &re) {
		return re.RetryAfter
	}
	return 0
}

// parseRetryAfter reads a Retry-After header value: delay seconds or an
// HTTP date (relative to now). A missing, malformed or past value is 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(min(max(n, 0), 3600)) * time.Second // an hour at most
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Permanent reports whether retrying err cannot help: a missing object, a
// refused credential, a bad range, an unsupported operation or another 4xx
// status except 408 and 429.
func Permanent(err error) bool {
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrForbidden) ||
		errors.Is(err, ErrOutOfRange) || errors.Is(err, ErrUnsupported) {
		return true
	}
	var re *RequestError
	if errors.As(err, &re) && re.Status >= 400 && re.Status < 500 {
		return re.Status != 408 && re.Status != 429
	}
	return false
}

// rangeHeader formats an HTTP Range header value; length < 0 means to the end.
func rangeHeader(off, length int64) string {
	if length < 0 {
		return fmt.Sprintf("bytes=%d-", off)
	}
	return fmt.Sprintf("bytes=%d-%d", off, off+length-1)
}

// checkRange rejects ranges no store can serve.
func checkRange(off, length int64) error {
	if off < 0 || length == 0 {
		return fmt.Errorf("%w: offset %d length %d", ErrOutOfRange, off, length)
	}
	return nil
}

// Options configure the stores Open creates. A zero Options is valid: S3
// then uses the AWS default endpoint, region and credential chain.
// Credentials never appear in errors, in String or in GoString.
type Options struct {
	// S3Endpoint is a URL such as "http://127.0.0.1:7070"; a bare
	// "host:port" means https. Empty means AWS.
	S3Endpoint string
	// S3Region defaults to the AWS chain's region, else "us-east-1".
	S3Region string
	// S3URLStyle is "vhost" or "path". Empty means vhost, except for an
	// endpoint whose host is an IP address or localhost, where virtual
	// hosts cannot work, which gets path style.
	S3URLStyle string
	// Static credentials; all empty means the AWS default chain.
	S3AccessKeyID     string
	S3SecretAccessKey string
	S3SessionToken    string
	// MaxConns sizes the keep-alive pool per host; set it to the IO
	// parallelism or connections are re-dialed. Zero means 64.
	MaxConns int
	// AdmitRedirect, when set, is asked about the target of every
	// redirect an HTTP(S) store would follow; an error refuses it, and
	// the request fails without a connection to the target. A host's
	// sandbox goes here, so that a server cannot send the client where
	// the sandbox would not let the query go.
	AdmitRedirect func(target string) error
	// AdmitKey names AdmitRedirect's rule: stores share a domain only
	// when their keys are equal, so give a different key whenever the rule
	// differs. It is shown in domain keys: no secret.
	AdmitKey string
}

// String describes o without its secrets.
func (o Options) String() string {
	redact := func(s string) string {
		if s == "" {
			return ""
		}
		return "REDACTED"
	}
	return fmt.Sprintf("{S3Endpoint:%s S3Region:%s S3URLStyle:%s S3AccessKeyID:%s S3SecretAccessKey:%s S3SessionToken:%s MaxConns:%d AdmitKey:%s}",
		o.S3Endpoint, o.S3Region, o.S3URLStyle, redact(o.S3AccessKeyID), redact(o.S3SecretAccessKey), redact(o.S3SessionToken), o.MaxConns, o.AdmitKey)
}

// GoString describes o without its secrets.
func (o Options) GoString() string { return "store.Options" + o.String() }

func (o Options) maxConns() int {
	if o.MaxConns > 0 {
		return o.MaxConns
	}
	return 64
}

// Open returns a new Store for the domain of rawURL and the name of the object
// (or glob pattern) within it. It accepts s3://bucket/key, http(s)://host/path,
// file:///path and plain paths (made absolute). The caller closes the Store.
// On failure, returns a nil Store and an error naming the URL.
func Open(rawURL string, opts Options) (Store, string, error) {
	sc, u, err := lookup(rawURL)
	if err != nil {
		return nil, "", err
	}
	return sc.open(u, opts)
}

// Name returns the name Open would return for rawURL, without creating a
// store.
func Name(rawURL string) (string, error) {
	sc, u, err := lookup(rawURL)
	if err != nil {
		return "", err
	}
	return sc.name(u)
}

// Domain returns the key of the store domain of rawURL: URLs with the same key
// may share one Store and one IO scheduler. The key contains no secret: the
// credentials enter it only as a hash.
func Domain(rawURL string, opts Options) (string, error) {
	sc, u, err := lookup(rawURL)
	if err != nil {
		return "", err
	}
	return sc.domain(u, opts)
}

// DomainName returns Domain and Name of rawURL, the URL parsed once.
func DomainName(rawURL string, opts Options) (domain, name string, err error) {
	sc, u, err := lookup(rawURL)
	if err != nil {
		return "", "", err
	}
	if sc.domainName != nil {
		return sc.domainName(u, opts)
	}
	if domain, err = sc.domain(u, opts); err != nil {
		return "", "", err
	}
	if name, err = sc.name(u); err != nil {
		return "", "", err
	}
	return domain, name, nil
}

// schemeURL is a URL split at its scheme: raw as given, its lower-case
// scheme ("" for a plain path) and what follows "scheme://".
type schemeURL struct{ raw, scheme, rest string }

// scheme is what one URL scheme means: how to open its store, the object's
// name in that store, and the key of its store domain.
type scheme struct {
	open   func(u schemeURL, opts Options) (Store, string, error)
	name   func(u schemeURL) (string, error)
	domain func(u schemeURL, opts Options) (string, error)
	// domainName, if set, is domain and name at once, where both parse
	// the same thing (a scan asks for both once per chunk).
	domainName func(u schemeURL, opts Options) (string, string, error)
}

// schemes is the one table from URL scheme to store. It is never written.
var schemes = map[string]scheme{
	"":      fileScheme,
	"file":  fileScheme,
	"http":  httpScheme,
	"https": httpScheme,
	"s3":    s3Scheme,
}

// lookup splits rawURL and finds its scheme; an unknown scheme is an error
// wrapping ErrUnsupported.
func lookup(rawURL string) (scheme, schemeURL, error) {
	name, rest := splitScheme(rawURL)
	u := schemeURL{raw: rawURL, scheme: name, rest: rest}
	sc, ok := schemes[name]
	if !ok {
		return scheme{}, u, fmt.Errorf("store: open %s: %w: scheme %q", RedactURL(rawURL), ErrUnsupported, name)
	}
	return sc, u, nil
}

var fileScheme = scheme{
	open: func(u schemeURL, _ Options) (Store, string, error) {
		name, err := filePath(u.raw, u.scheme, u.rest)
		if err != nil {
			return nil, "", err
		}
		return newFileStore(), name, nil
	},
	name: func(u schemeURL) (string, error) { return filePath(u.raw, u.scheme, u.rest) },
	domain: func(u schemeURL, _ Options) (string, error) {
		if _, err := filePath(u.raw, u.scheme, u.rest); err != nil {
			return "", err
		}
		return "file", nil
	},
	domainName: func(u schemeURL, _ Options) (string, string, error) {
		name, err := filePath(u.raw, u.scheme, u.rest)
		if err != nil {
			return "", "", err
		}
		return "file", name, nil
	},
}

var httpScheme = scheme{
	open: func(u schemeURL, opts Options) (Store, string, error) { return openHTTP(u.raw, opts) },
	name: func(u schemeURL) (string, error) {
		pu, err := parseHTTP(u.raw)
		if err != nil {
			return "", err
		}
		return httpName(pu), nil
	},
	domain: func(u schemeURL, opts Options) (string, error) {
		pu, err := parseHTTP(u.raw)
		if err != nil {
			return "", err
		}
		return u.scheme + "://" + pu.Host + "#" + secretHash(pu.User.String()) + "|" + opts.AdmitKey, nil
	},
}

var s3Scheme = scheme{
	open: func(u schemeURL, opts Options) (Store, string, error) { return openS3(u.rest, opts) },
	name: func(u schemeURL) (string, error) {
		if _, _, err := splitBucket(u.rest); err != nil {
			return "", fmt.Errorf("store: open %s: %w", RedactURL(u.raw), err)
		}
		return u.rest, nil
	},
	domain: func(u schemeURL, opts Options) (string, error) {
		if _, _, err := splitBucket(u.rest); err != nil {
			return "", fmt.Errorf("store: open %s: %w", RedactURL(u.raw), err)
		}
		return "s3|" + opts.S3Endpoint + "|" + opts.S3Region + "|" + opts.S3URLStyle + "|" +
			secretHash(opts.S3AccessKeyID+"\x00"+opts.S3SecretAccessKey+"\x00"+opts.S3SessionToken), nil
	},
}

// parseHTTP parses an http(s) URL that must name a host.
func parseHTTP(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("store: open %s: bad URL", RedactURL(raw))
	}
	return u, nil
}

func secretHash(s string) string {
	if s == "" || s == "\x00\x00" {
		return "-"
	}
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

// splitScheme returns the lower-case scheme of a URL ("" for a plain path) and
// what follows "scheme://".
func splitScheme(raw string) (string, string) {
	i := strings.Index(raw, "://")
	if i <= 0 {
		return "", raw
	}
	scheme := strings.ToLower(raw[:i])
	for _, c := range scheme {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return "", raw
		}
	}
	return scheme, raw[i+3:]
}

// filePath turns a file URL or a plain path into an absolute slash path.
func filePath(raw, scheme, rest string) (string, error) {
	p := rest
	if scheme == "file" {
		// file:///abs or file://localhost/abs; percent escapes are decoded.
		host, path, _ := strings.Cut(rest, "/")
		if host != "" && host != "localhost" {
			return "", fmt.Errorf("store: open %s: %w: remote file host %q", raw, ErrUnsupported, host)
		}
		dec, err := url.PathUnescape("/" + path)
		if err != nil {
			return "", fmt.Errorf("store: open %s: %w", raw, err)
		}
		p = dec
	}
	if p == "" {
		return "", fmt.Errorf("store: open %q: empty path", raw)
	}
	abs, err := filepath.Abs(filepath.FromSlash(p))
	if err != nil {
		return "", fmt.Errorf("store: open %s: %w", raw, err)
	}
	abs = filepath.ToSlash(abs)
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(abs, "/") {
		abs += "/" // a directory prefix stays one
	}
	return abs, nil
}

// RedactURL is raw as messages, stats and traces show it: its query, which
// may carry a presigned signature, becomes "REDACTED", and its userinfo is
// dropped whole, since a token is as often written as the user
// ("https://TOKEN@host/") as as a password; the rest is kept as written.
// Every error, stats row and trace of this module that names a URL names it
// through RedactURL.
func RedactURL(raw string) string {
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		raw = raw[:i] + "?REDACTED"
	}
	scheme := strings.Index(raw, "://")
	if scheme < 0 {
		return raw
	}
	rest := raw[scheme+3:]
	host := rest
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		host = rest[:j]
	}
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		raw = raw[:scheme+3] + rest[at+1:]
	}
	return raw
}

// isLocalHost reports whether host (without port) is an IP literal or
// localhost, where S3 virtual-host addressing is impossible.
func isLocalHost(host string) bool {
	return host == "localhost" || net.ParseIP(strings.Trim(host, "[]")) != nil
}

// rangeErr reports a range past the end of an object of size bytes.
func rangeErr(size int64) error {
	return fmt.Errorf("%w (object size %d)", ErrOutOfRange, size)
}

// Versioner is a Store that can tell which version of an object it holds
// without reading its body (HTTP HEAD, S3 HeadObject): what a local cache
// keys its entries by, so that an object overwritten is never served from
// an entry of the bytes before. Local files do not implement it: they are
// never cached.
type Versioner interface {
	// Version returns a text that changes whenever the object's bytes do:
	// its ETag where the store gives one, else its Last-Modified time and
	// size. "" means the store gave neither, and the object must not be
	// cached.
	Version(ctx context.Context, name string) (string, error)
}

// RangeVersioner is a Store whose GETs tell the version of the object
// they read (the answer's ETag, else Last-Modified and size), so that
// bytes and their version come from one answer: a cache keyed by a
// version asked before the GET could store the bytes of a write that came
// between the two under the version before it.
type RangeVersioner interface {
	// GetRangeVersion is GetRange, and the version as Versioner.Version
	// would give it ("" when the answer has neither).
	GetRangeVersion(ctx context.Context, name string, off, length int64) (io.ReadCloser, string, error)
}

// objectVersion is the Version of an object from its entity tag, its
// modification time and its size: the tag alone where there is one, since
// a store changes it with every write; else the time with the size.
func objectVersion(etag, lastModified string, size int64) string {
	if etag != "" && !strings.HasPrefix(etag, "W/") {
		return "etag:" + etag
	}
	if lastModified != "" && size >= 0 {
		return "mtime:" + lastModified + "|size:" + strconv.FormatInt(size, 10)
	}
	return ""
}

// recentWindow is how long after an object's Last-Modified time its
// version may still not tell its bytes apart from those of a write after
// them: Last-Modified is in whole seconds, and so are the versions made of
// it (an ETag of the modification time and size, as nginx's, or
// objectVersion's own without an ETag). A write in the same second as the
// one before it, of the same size, gives the same version. One second
// covers that where the server's clock stamps both the file and the
// answer's Date; the other second covers a writer whose clock is a little
// apart (a file written over NFS).
const recentWindow = 2 * time.Second

// recentlyModified reports whether an answer's object was modified less
// than recentWindow before the answer (its Date), so that its version
// may be the same after a write to come: its bytes must not be cached
// under it. Apache makes its ETags weak for the same reason, for one
// second. With tagByContent (a store whose ETags change with every
// write), an answer with an ETag vouches for its bytes. An answer
// without a Last-Modified time says nothing of when it was written (a
// version of its ETag alone is the server's word); one whose Date or
// Last-Modified is missing or unreadable, or whose Last-Modified is after
// its Date (the clocks disagree), is taken as recent.
func recentlyModified(h http.Header, tagByContent bool) bool {
	etag, lm := h.Get("ETag"), h.Get("Last-Modified")
	if tagByContent && etag != "" && !strings.HasPrefix(etag, "W/") || lm == "" {
		return false
	}
	modified, err1 := http.ParseTime(lm)
	date, err2 := http.ParseTime(h.Get("Date"))
	return err1 != nil || err2 != nil || date.Sub(modified) < recentWindow
}

// recentBody is the body of an answer whose object was modified moments
// before it (recentlyModified).
type recentBody struct{ io.ReadCloser }

func (recentBody) recent() {}

// LenHint is the body's, or -1.
func (b recentBody) LenHint() int64 {
	if h, ok := b.ReadCloser.(LenHint); ok {
		return h.LenHint()
	}
	return -1
}

// Recent reports whether body, of a GetRange or GetRangeVersion, is of an
// object modified so shortly before it was read (see recentlyModified)
// that the same version may name other bytes after a write to come: a
// cache keyed by versions must not keep these bytes. A version check of
// the object later, once the window is past, gives a version that a
// write can no longer share.
func Recent(body io.ReadCloser) bool {
	_, ok := body.(interface{ recent() })
	return ok
}

// listedVersion is the Version of an object from the entity tag a listing
// gave for it: the tag alone, as objectVersion makes it, since a listing's
// modification time is written in another form than a HEAD's header.
func listedVersion(etag string) string { return objectVersion(etag, "", -1) }

// LenHint is implemented by the body of a read to the end of an object
// (length < 0) when the store's answer gave its length (Content-Length): a
// reader may size its buffer from it instead of growing one. A hint from
// the server, not a promise: the body may end sooner or go on longer. A
// wrapper of bodies may implement it for all of them and return -1 where
// the body it wraps gives no length.
type LenHint interface {
	LenHint() int64
}

type hintedBody struct {
	io.ReadCloser
	n int64
}

func (b hintedBody) LenHint() int64 { return b.n }

// withLenHint gives body the hint n when the read was to the end (length
// < 0) and n is known (>= 0).
func withLenHint(body io.ReadCloser, n, length int64) io.ReadCloser {
	if length >= 0 || n < 0 {
		return body
	}
	return hintedBody{body, n}
}
