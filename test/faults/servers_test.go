package faults

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/remote-segments/remote_segments/test/s3server"
)

// A mode is how a misbehaving server answers a GET. The HTTP data server
// takes it from the first path element (/stall/chunks/...); an S3 front
// has one mode for all requests, because the path is signed.
type mode string

const (
	modeOK           mode = "ok"
	modeStall        mode = "stall"         // headers sent, body never
	modeShort        mode = "short"         // 200, Content-Length of the whole object, half the bytes, close
	modeNoRange      mode = "norange"       // Range ignored: 200 with the whole object
	modeGzip         mode = "gzip"          // the ranged body gzipped, Content-Encoding: gzip
	modeShifted      mode = "shifted"       // 206 with another range than asked (8 bytes on), its Content-Range saying so
	modeRedirect     mode = "redirect"      // one 302/307 to the same object, then served
	modeRedirectLoop mode = "redirect-loop" // a redirect to itself, for ever
	modeRedirectFile mode = "redirect-file" // a redirect to file:///etc/passwd
	modeRedirectTLS  mode = "redirect-tls"  // a redirect to https:// (another scheme)
	modeExpired      mode = "expired"       // S3: 403 ExpiredToken after expireAfter GETs
	modeNoPrefix     mode = "noprefix"      // S3: a listing's prefix ignored (the bucket's names from its start)
)

// parseRange reads "bytes=a-b" or "bytes=a-" against an object of size
// bytes; ok is false for no or another Range.
func parseRange(h string, size int64) (off, end int64, ok bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	if !found {
		return 0, 0, false
	}
	a, b, _ := strings.Cut(spec, "-")
	off, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	end = size - 1
	if b != "" {
		if end, err = strconv.ParseInt(b, 10, 64); err != nil {
			return 0, 0, false
		}
		end = min(end, size-1)
	}
	return off, end, off <= end
}

// misbehave answers r, for an object of data, the way m says. It reports
// false for the modes it does not handle (redirects, expiry).
func misbehave(w http.ResponseWriter, r *http.Request, m mode, data []byte, stop <-chan struct{}) bool {
	size := int64(len(data))
	off, end, ranged := parseRange(r.Header.Get("Range"), size)
	switch m {
	case modeStall:
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // the client gives up, or the test ends
		case <-r.Context().Done():
		case <-stop:
		}
	case modeShort:
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:size/2]) // net/http closes the connection: fewer bytes than declared
	case modeNoRange:
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.WriteHeader(http.StatusOK)
		w.Write(data)
	case modeGzip:
		if !ranged {
			off, end = 0, size-1
		}
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		zw.Write(data[off : end+1])
		zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(zb.Len()))
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, end, size))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(zb.Bytes())
	case modeShifted:
		if r.Method == http.MethodHead || !ranged {
			return misbehave(w, r, modeOK, data, stop)
		}
		// As a cache on the way that serves a range it holds near the one
		// asked: whole, labelled truly, and not the bytes at off.
		if off+8 <= end {
			off += 8
		} else {
			off = max(0, off-8)
		}
		w.Header().Set("Content-Length", strconv.FormatInt(end-off+1, 10))
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, end, size))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(data[off : end+1])
	case modeOK:
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			return true
		}
		if r.Header.Get("Range") != "" && !ranged {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return true
		}
		if !ranged {
			off, end = 0, size-1
		}
		w.Header().Set("Content-Length", strconv.FormatInt(end-off+1, 10))
		if ranged {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, end, size))
			w.WriteHeader(http.StatusPartialContent)
		}
		w.Write(data[off : end+1])
	default:
		return false
	}
	return true
}

// redirect answers the redirect modes; n counts the requests of this object
// in this mode from 1. It reports false when the request is to be served.
func redirect(w http.ResponseWriter, r *http.Request, m mode, n int64, self, tlsBase string) bool {
	switch m {
	case modeRedirect:
		if n%2 == 0 {
			return false // every second request: the redirected one
		}
		http.Redirect(w, r, self, http.StatusTemporaryRedirect)
	case modeRedirectLoop:
		http.Redirect(w, r, self, http.StatusTemporaryRedirect)
	case modeRedirectFile:
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	case modeRedirectTLS:
		http.Redirect(w, r, tlsBase+r.URL.RequestURI(), http.StatusFound)
	default:
		return false
	}
	return true
}

// httpData serves the objects of a dataset over HTTP on 127.0.0.1, each
// under every mode: /MODE/PATH. The query string is ignored (a presigned
// URL's signature). HEAD is answered truthfully in every mode.
type httpData struct {
	srv     *httptest.Server
	objects map[string][]byte // by path, "/chunks/segment=s0/chunk-0.arrow"
	stop    chan struct{}
	tlsHits *atomic.Int64 // connections the TLS target of modeRedirectTLS saw
	tlsBase string

	mu    sync.Mutex
	count map[string]int64
}

func newHTTPData(t *testing.T, objects map[string][]byte, tlsBase string, tlsHits *atomic.Int64) *httpData {
	d := &httpData{objects: objects, stop: make(chan struct{}), count: map[string]int64{}, tlsBase: tlsBase, tlsHits: tlsHits}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(func() { close(d.stop); d.srv.Close() })
	return d
}

func (d *httpData) url(m mode, path string) string { return d.srv.URL + "/" + string(m) + path }

func (d *httpData) serve(w http.ResponseWriter, r *http.Request) {
	m, path, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	data, ok := d.objects["/"+path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodHead {
		misbehave(w, r, modeOK, data, d.stop)
		return
	}
	d.mu.Lock()
	d.count[r.URL.Path]++
	n := d.count[r.URL.Path]
	d.mu.Unlock()
	if redirect(w, r, mode(m), n, r.URL.RequestURI(), d.tlsBase) {
		return
	}
	if !misbehave(w, r, mode(m), data, d.stop) {
		misbehave(w, r, modeOK, data, d.stop)
	}
}

// tlsTarget is an HTTPS server that only counts connections: a client that
// follows a redirect from http:// to https:// shows up here.
func tlsTarget(t *testing.T) (string, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			hits.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, &hits
}

// s3Front is a server in one mode in front of versitygw. Requests it lets
// through go to versitygw unchanged (the Host header kept, so signatures
// hold); the body modes read the object through their own client.
type s3Front struct {
	srv  *httptest.Server
	up   *s3server.Server
	mode mode
	stop chan struct{}
	// modeExpired: the session token a request must carry, and how many
	// GETs succeed before the token "expires".
	token       string
	expireAfter int64

	gets  atomic.Int64
	mu    sync.Mutex
	count map[string]int64
}

func newS3Front(t *testing.T, up *s3server.Server, m mode, tlsBase string) *s3Front {
	f := &s3Front{up: up, mode: m, stop: make(chan struct{}), count: map[string]int64{}}
	target, _ := url.Parse(up.Endpoint)
	proxy := httputil.NewSingleHostReverseProxy(target)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	proxy.Transport = tr
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		w.WriteHeader(http.StatusBadGateway) // the client went away, or versitygw did
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if r.Method != http.MethodGet || key == "" { // HEAD, LIST: untouched
			if m == modeNoPrefix && r.Method == http.MethodGet && r.URL.Query().Has("list-type") {
				f.listWithoutPrefix(w, r)
				return
			}
			if m == modeExpired {
				f.reSigned(w, r)
				return
			}
			proxy.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.count[r.URL.Path]++
		n := f.count[r.URL.Path]
		f.mu.Unlock()
		if redirect(w, r, m, n, r.URL.RequestURI(), tlsBase) {
			return
		}
		switch m {
		case modeOK, modeRedirect, modeNoPrefix:
			proxy.ServeHTTP(w, r)
		case modeExpired:
			f.reSigned(w, r)
		default:
			data, err := f.object(r.Context(), r.URL.Path)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			misbehave(w, r, m, data, f.stop)
		}
	}))
	t.Cleanup(func() { close(f.stop); f.srv.Close(); tr.CloseIdleConnections() })
	return f
}

// object reads /bucket/key whole through the front's own client.
func (f *s3Front) object(ctx context.Context, path string) ([]byte, error) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	key, _ = url.PathUnescape(key)
	out, err := f.up.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// reSigned serves modeExpired: versitygw issues session tokens only through
// its STS API with at least 900 s of life, so this front stands in for a
// store whose temporary credentials expire: it requires the planted session
// token, answers from versitygw through its own (root) client, and after
// expireAfter GETs answers 403 ExpiredToken, as S3 does.
func (f *s3Front) reSigned(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Security-Token") != f.token {
		s3Error(w, http.StatusForbidden, "InvalidToken", "The provided token is malformed or otherwise invalid.")
		return
	}
	if r.Method == http.MethodGet && f.gets.Add(1) > f.expireAfter {
		s3Error(w, http.StatusForbidden, "ExpiredToken", "The provided token has expired.")
		return
	}
	data, err := f.object(r.Context(), r.URL.Path)
	if err != nil {
		s3Error(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	}
	misbehave(w, r, modeOK, data, f.stop)
}

// listWithoutPrefix serves modeNoPrefix: the listing asked of versitygw
// without its prefix (as a server or proxy that drops it would), signed
// again with the front's own credentials, its answer passed on.
func (f *s3Front) listWithoutPrefix(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	q.Del("prefix")
	u, err := url.Parse(f.up.Endpoint)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	u.Path, u.RawQuery = r.URL.Path, q.Encode()
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	creds := aws.Credentials{AccessKeyID: f.up.AccessKey, SecretAccessKey: f.up.SecretKey}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, req, emptySHA256, "s3", f.up.Region, time.Now()); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}

// killable forwards TCP connections from a fixed 127.0.0.1 port to a
// backend. kill closes the listener and resets every connection, as a
// killed server does; restart listens on the same port again.
type killable struct {
	addr, backend string
	// killAfter: the forwarder kills itself once it has forwarded this
	// many response bytes (mid-scan); 0 never. onKill, when set, is
	// called (on its own goroutine) right after that kill.
	killAfter int64
	onKill    func()

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
	sent   int64
	killed bool
	fired  bool // killAfter fires once
	wg     sync.WaitGroup
}

func newKillable(t *testing.T, backend string) *killable {
	k := &killable{backend: backend, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k.addr = ln.Addr().String()
	k.serve(ln)
	t.Cleanup(func() { k.kill(); k.wg.Wait() })
	return k
}

func (k *killable) serve(ln net.Listener) {
	k.mu.Lock()
	k.ln, k.killed = ln, false
	k.mu.Unlock()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", k.backend)
			if err != nil {
				c.Close()
				continue
			}
			if !k.track(c, b) {
				return
			}
			k.wg.Add(2)
			go func() { defer k.wg.Done(); io.Copy(b, c); b.(*net.TCPConn).CloseWrite() }()
			go func() { defer k.wg.Done(); k.copyBack(c, b) }()
		}
	}()
}

func (k *killable) track(c, b net.Conn) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed {
		c.Close()
		b.Close()
		return false
	}
	k.conns[c], k.conns[b] = true, true
	return true
}

func (k *killable) copyBack(c, b net.Conn) {
	buf := make([]byte, 16<<10)
	for {
		n, err := b.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
			k.mu.Lock()
			k.sent += int64(n)
			fire := k.killAfter > 0 && k.sent >= k.killAfter && !k.fired
			k.fired = k.fired || fire
			onKill := k.onKill
			k.mu.Unlock()
			if fire {
				k.kill()
				if onKill != nil {
					go onKill()
				}
				return
			}
		}
		if err != nil {
			c.(*net.TCPConn).CloseWrite()
			return
		}
	}
}

// arm makes the forwarder kill itself after n more response bytes (0:
// never) and then call onKill.
func (k *killable) arm(n int64, onKill func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.killAfter, k.onKill, k.sent, k.fired = n, onKill, 0, false
}

// kill closes the listener and resets every connection.
func (k *killable) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed {
		return
	}
	k.killed = true
	k.ln.Close()
	for c := range k.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // RST
		}
		c.Close()
	}
	k.conns = map[net.Conn]bool{}
}

// restart listens on the same port again.
func (k *killable) restart() error {
	ln, err := net.Listen("tcp", k.addr)
	if err != nil {
		return err
	}
	k.serve(ln)
	return nil
}
