package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// httpStore reads one HTTP(S) host with Range GETs and HEAD. Names are the
// escaped path plus the query.
type httpStore struct {
	base   string // scheme://[user:pass@]host, for requests
	shown  string // scheme://host, for messages
	client *http.Client
	tr     *http.Transport
}

var (
	_ Store          = (*httpStore)(nil)
	_ Versioner      = (*httpStore)(nil)
	_ RangeVersioner = (*httpStore)(nil)
)

func openHTTP(raw string, opts Options) (Store, string, error) {
	u, err := parseHTTP(raw)
	if err != nil {
		return nil, "", err
	}
	name := httpName(u)
	base := u.Scheme + "://" + u.Host
	if u.User != nil {
		base = u.Scheme + "://" + u.User.String() + "@" + u.Host
	}
	tr := newTransport(opts.maxConns())
	return &httpStore{
		base:   base,
		shown:  u.Scheme + "://" + u.Host,
		client: &http.Client{Transport: tr, CheckRedirect: httpRedirects(opts.AdmitRedirect)},
		tr:     tr,
	}, name, nil
}

// newTransport returns the transport of an HTTP or S3 store: a keep-alive
// pool sized to the IO parallelism n (the default of 2 idle connections
// per host re-dials at every request beyond it), no transparent
// decompression (byte ranges must arrive as stored), and a dialer that
// never asks a resolver about a name under .invalid.
func newTransport(n int) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 2 * n
	tr.MaxIdleConnsPerHost = n
	tr.DisableCompression = true
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second} // http.DefaultTransport's
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		// RFC 6761 §6.4: .invalid names never resolve, and resolvers
		// should not be asked (the query would leave the machine).
		if host, _, err := net.SplitHostPort(addr); err == nil {
			if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "invalid" || strings.HasSuffix(h, ".invalid") {
				return nil, &net.DNSError{Err: "no such host (a name under .invalid never resolves)", Name: host, IsNotFound: true}
			}
		}
		return d.DialContext(ctx, network, addr)
	}
	return tr
}

// maxRedirects bounds the redirects one request follows.
const maxRedirects = 5

// checkRedirect follows at most maxRedirects redirects, and only to the
// scheme of the first request: never from https:// down to http://, up to
// https:// from a store opened as http://, or to file:// and the like.
// Its errors wrap ErrUnsupported, so they are not retried.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if from, to := via[0].URL.Scheme, req.URL.Scheme; to != from {
		return fmt.Errorf("%w: a redirect from %s:// to %s:// (only redirects to %s:// are followed)", ErrUnsupported, from, to, from)
	}
	if len(via) > maxRedirects {
		return fmt.Errorf("%w: more than %d redirects", ErrUnsupported, maxRedirects)
	}
	return nil
}

// httpRedirects is the redirect policy of an HTTP(S) store: checkRedirect,
// then admit (Options.AdmitRedirect, nil: none) must accept the target.
// Credentials in a URL's userinfo stay with their origin without more: the
// client turns them into Authorization per request from the request's own
// URL, and a redirect target has none (a relative one keeps the origin).
// The store sets no header of its own that carries a credential.
func httpRedirects(admit func(string) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if err := checkRedirect(req, via); err != nil {
			return err
		}
		if admit != nil {
			if err := admit(req.URL.String()); err != nil {
				return fmt.Errorf("%w: a redirect to %s: %w", ErrUnsupported, RedactURL(req.URL.String()), err)
			}
		}
		return nil
	}
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// encodingErr refuses a body the server encoded (gzip, br...) on the way:
// its bytes are not the object's, and a range of them means nothing.
func encodingErr(enc string) error {
	switch strings.ToLower(strings.TrimSpace(enc)) {
	case "", "identity", "aws-chunked":
		return nil
	}
	return fmt.Errorf("%w: the response has Content-Encoding %q; byte ranges must arrive as stored", ErrUnsupported, enc)
}

func httpName(u *url.URL) string {
	name := u.EscapedPath()
	if name == "" {
		name = "/"
	}
	if u.RawQuery != "" {
		name += "?" + u.RawQuery
	}
	return name
}

func (s *httpStore) URL(name string) string {
	return RedactURL(s.shown + name) // queries may carry signatures
}

func (s *httpStore) fail(op, name, rng string, status int, code string, err error) error {
	return &RequestError{Op: op, URL: s.URL(name), Range: rng, Status: status, Code: code, Err: err}
}

// statusErr maps an unsuccessful response to a sentinel and closes its body.
func (s *httpStore) statusErr(op, name, rng string, resp *http.Response) error {
	code, _ := s3ErrorBody(op, resp)
	resp.Body.Close()
	err := &RequestError{Op: op, URL: s.URL(name), Range: rng, Status: resp.StatusCode, Code: code,
		Err: statusSentinel(resp.StatusCode, resp.Status)}
	if resp.StatusCode == 429 || resp.StatusCode == 503 {
		err.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return err
}

func statusSentinel(status int, text string) error {
	switch status {
	case 404, 410:
		return ErrNotFound
	case 401, 403:
		return ErrForbidden
	case 416:
		return ErrOutOfRange
	case 429:
		return fmt.Errorf("%w: HTTP %d", ErrThrottled, status)
	case 503:
		return fmt.Errorf("%w: HTTP %d", ErrThrottled, status)
	}
	if text == "" {
		text = strconv.Itoa(status)
	}
	return fmt.Errorf("HTTP %s", text)
}

func (s *httpStore) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	body, _, err := s.GetRangeVersion(ctx, name, off, length)
	return body, err
}

// GetRangeVersion is GetRange that also returns the version of the
// object the answer came from (see RangeVersioner).
func (s *httpStore) GetRangeVersion(ctx context.Context, name string, off, length int64) (io.ReadCloser, string, error) {
	rng := rangeHeader(off, length)
	if err := checkRange(off, length); err != nil {
		return nil, "", s.fail("GET", name, rng, 0, "", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+name, nil)
	if err != nil {
		return nil, "", s.fail("GET", name, rng, 0, "", err)
	}
	if off > 0 || length >= 0 {
		req.Header.Set("Range", rng)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, "", s.fail("GET", name, rng, 0, "", unwrapURLError(err))
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return nil, "", s.statusErr("GET", name, rng, resp)
	}
	body, version, err := rangeBody(resp, off, length, false /* an HTTP server's ETag may be made of the time */, func(err error) error {
		return s.fail("GET", name, rng, resp.StatusCode, "", err)
	})
	return body, httpVersion(version, resp), err
}

// rangeBody is the body and version of a 206 or 200 answer to a GET of
// length bytes at off (length < 0: to the end), or fail's error (its body
// closed): an encoded body, a 200 (the whole object) to a read from off >
// 0, a 206 whose Content-Range is not the range asked (or is missing), or
// fewer bytes than asked where the object may have more. The body of an
// object modified moments before the answer is marked (see Recent);
// tagByContent says the store's ETags change with every write (S3's), so
// that one vouches for the bytes however recent the write.
func rangeBody(resp *http.Response, off, length int64, tagByContent bool, fail func(error) error) (io.ReadCloser, string, error) {
	body, version, err := answerBody(resp, off, length, fail)
	if err != nil || !recentlyModified(resp.Header, tagByContent) {
		return body, version, err
	}
	return recentBody{body}, version, nil
}

// answerBody is rangeBody without the mark.
func answerBody(resp *http.Response, off, length int64, fail func(error) error) (io.ReadCloser, string, error) {
	if err := encodingErr(resp.Header.Get("Content-Encoding")); err != nil {
		resp.Body.Close()
		return nil, "", fail(err)
	}
	if resp.StatusCode == http.StatusPartialContent {
		// The bytes are the range the answer names, which must be the one
		// asked: a server (or a cache or proxy on the way) that answers
		// with another range would give other bytes for the same offsets,
		// which nothing after this could tell (an IPC body has no checksum).
		cr := resp.Header.Get("Content-Range")
		first, last, total, ok := parseContentRange(cr)
		switch {
		case !ok || first != off || length >= 0 && last > off+length-1 || resp.ContentLength >= 0 && resp.ContentLength != last-first+1:
			resp.Body.Close()
			return nil, "", fail(fmt.Errorf("the server answered %s with another range (Content-Range %q, %d bytes)", rangeHeader(off, length), printable(cr, 80), resp.ContentLength))
		case length >= 0 && last < off+length-1:
			// Fewer bytes than asked: only where the object ends there.
			resp.Body.Close()
			if total >= 0 && last == total-1 {
				return nil, "", fail(rangeErr(total))
			}
			return nil, "", fail(fmt.Errorf("the server answered %s with fewer bytes (Content-Range %q), not up to the object's end", rangeHeader(off, length), printable(cr, 80)))
		}
		version := objectVersion(resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"), total)
		body := io.ReadCloser(resp.Body)
		if resp.ContentLength < 0 { // chunked: only the range bounds the body
			body = struct {
				io.Reader
				io.Closer
			}{io.LimitReader(resp.Body, last-first+1), resp.Body}
		}
		return withLenHint(body, last-first+1, length), version, nil
	}
	version := objectVersion(resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"), resp.ContentLength)
	if off > 0 {
		resp.Body.Close()
		return nil, "", fail(fmt.Errorf("%w: the server ignored the Range header", ErrUnsupported))
	}
	if length < 0 {
		return withLenHint(resp.Body, resp.ContentLength, length), version, nil
	}
	if resp.ContentLength >= 0 && resp.ContentLength < length {
		resp.Body.Close()
		return nil, "", fail(rangeErr(resp.ContentLength))
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, length), resp.Body}, version, nil
}

// parseContentRange reads the Content-Range of a 206 answer, "bytes
// first-last/total" (total -1 where the server gives "*"); ok is false
// for anything else, such as a range that ends before it starts or past
// the object's end.
func parseContentRange(v string) (first, last, total int64, ok bool) {
	unit, spec, found := strings.Cut(strings.TrimSpace(v), " ")
	if !found || !strings.EqualFold(unit, "bytes") {
		return 0, 0, 0, false
	}
	rng, size, found := strings.Cut(strings.TrimSpace(spec), "/")
	a, b, found2 := strings.Cut(rng, "-")
	if !found || !found2 {
		return 0, 0, 0, false
	}
	first, err1 := parseDecimal(a)
	last, err2 := parseDecimal(b)
	total = -1
	var err3 error
	if size != "*" {
		total, err3 = parseDecimal(size)
	}
	if err1 != nil || err2 != nil || err3 != nil || last < first || total >= 0 && last >= total {
		return 0, 0, 0, false
	}
	return first, last, total, true
}

// parseDecimal reads a non-negative decimal integer: digits only, no sign.
func parseDecimal(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a decimal: %q", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// contentRangeTotal returns the total of "bytes a-b/total", or -1.
func contentRangeTotal(v string) int64 {
	i := strings.LastIndexByte(v, '/')
	if i < 0 {
		return -1
	}
	n, err := strconv.ParseInt(v[i+1:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// Size sends HEAD; servers that refuse HEAD get a one-byte GET instead.
func (s *httpStore) Size(ctx context.Context, name string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, s.base+name, nil)
	if err != nil {
		return 0, s.fail("HEAD", name, "", 0, "", err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, s.fail("HEAD", name, "", 0, "", unwrapURLError(err))
	}
	if resp.StatusCode == http.StatusMethodNotAllowed {
		resp.Body.Close()
		return s.sizeByGet(ctx, name)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, s.statusErr("HEAD", name, "", resp)
	}
	resp.Body.Close()
	if resp.ContentLength < 0 {
		return s.sizeByGet(ctx, name)
	}
	return resp.ContentLength, nil
}

// Version asks for the object's headers (HEAD) and returns its ETag, else
// its Last-Modified time and size (see Versioner).
func (s *httpStore) Version(ctx context.Context, name string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, s.base+name, nil)
	if err != nil {
		return "", s.fail("HEAD", name, "", 0, "", err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "", s.fail("HEAD", name, "", 0, "", unwrapURLError(err))
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", s.statusErr("HEAD", name, "", resp)
	}
	return httpVersion(objectVersion(resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"), resp.ContentLength), resp), nil
}

// httpVersion is the version v (objectVersion's) of resp, an HTTP
// server's answer, in names of its own: before recentlyModified, a cache
// stored the bytes of an object written moments before under a version
// that a write in the same second kept, and entries stored so must never
// be found again. An answer that came through redirects names the
// resource it came from (scheme, host and path; a query, as a signed
// URL's, changes with each request): a version is one resource's (an
// ETag, a time and size), and a URL that redirects (a "latest" link) may
// lead to another file written in the same second at the same size.
func httpVersion(v string, resp *http.Response) string {
	if v == "" {
		return ""
	}
	if resp.Request == nil || resp.Request.Response == nil { // no redirect
		return "http:" + v
	}
	at := url.URL{Scheme: resp.Request.URL.Scheme, Host: resp.Request.URL.Host, Path: resp.Request.URL.Path, RawPath: resp.Request.URL.RawPath}
	return "http:" + v + "|at:" + at.String()
}

func (s *httpStore) sizeByGet(ctx context.Context, name string) (int64, error) {
	rng := rangeHeader(0, 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+name, nil)
	if err != nil {
		return 0, s.fail("GET", name, rng, 0, "", err)
	}
	req.Header.Set("Range", rng)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, s.fail("GET", name, rng, 0, "", unwrapURLError(err))
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		resp.Body.Close()
		if total := contentRangeTotal(resp.Header.Get("Content-Range")); total >= 0 {
			return total, nil
		}
	case http.StatusOK:
		resp.Body.Close()
		if resp.ContentLength >= 0 {
			return resp.ContentLength, nil
		}
	case http.StatusRequestedRangeNotSatisfiable:
		resp.Body.Close()
		return 0, nil // an empty object
	default:
		return 0, s.statusErr("GET", name, rng, resp)
	}
	return 0, s.fail("GET", name, rng, resp.StatusCode, "", errors.New("the server reports no size"))
}

// List fails: plain HTTP has no listing.
func (s *httpStore) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	return nil, s.fail("LIST", prefix, "", 0, "", fmt.Errorf("%w: HTTP servers cannot list objects; name them in a catalog", ErrUnsupported))
}

func (*httpStore) IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

func (s *httpStore) Close() error {
	s.tr.CloseIdleConnections()
	return nil
}

// unwrapURLError drops *url.Error, whose message repeats the URL with any
// credentials in it.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
