package store_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// listener is a server on 127.0.0.1 that counts the connections it accepts
// and records the headers of every request, answering 200 "ok".
type listener struct {
	srv   *httptest.Server
	mu    sync.Mutex
	conns int
	heads []http.Header
}

func newListener(t *testing.T) *listener {
	l := &listener{}
	l.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.heads = append(l.heads, r.Header.Clone())
		l.mu.Unlock()
		io.WriteString(w, "ok")
	}))
	l.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			l.mu.Lock()
			l.conns++
			l.mu.Unlock()
		}
	}
	l.srv.Start()
	t.Cleanup(l.srv.Close)
	return l
}

func (l *listener) seen() (int, []http.Header) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns, append([]http.Header(nil), l.heads...)
}

// redirector answers every request with 307 to target+path (query kept).
func redirector(t *testing.T, target func(r *http.Request) string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", target(r))
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHTTPRedirectKeepsCredentials: a redirect to another origin (here
// another port of 127.0.0.1, which the Go client counts as the same host
// and would send Authorization to) carries neither the URL's userinfo nor
// an Authorization header.
func TestHTTPRedirectKeepsCredentials(t *testing.T) {
	leakCheck(t)
	other := newListener(t)
	front := redirector(t, func(r *http.Request) string { return other.srv.URL + r.URL.Path })
	u := strings.Replace(front.URL, "http://", "http://reader:hunter2@", 1) + "/x.arrow"
	st, name := open(t, u, store.Options{})
	defer st.Close()
	rc, err := st.GetRange(context.Background(), name, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	n, heads := other.seen()
	if n == 0 || len(heads) != 1 {
		t.Fatalf("the target saw %d connections and %d requests, want the one redirected request", n, len(heads))
	}
	if a := heads[0].Get("Authorization"); a != "" {
		t.Fatalf("the redirect to another origin carried Authorization %q", a)
	}
}

// TestHTTPRedirectAdmitted: with Options.AdmitRedirect, a redirect whose
// target it refuses fails the request (not retried: ErrUnsupported, and the
// admission's own error) and makes no connection to the target; one it
// admits is followed.
func TestHTTPRedirectAdmitted(t *testing.T) {
	leakCheck(t)
	other := newListener(t)
	front := redirector(t, func(r *http.Request) string { return other.srv.URL + r.URL.Path })
	errNo := errors.New("not admitted")
	var asked []string
	opts := store.Options{AdmitKey: "test", AdmitRedirect: func(target string) error {
		asked = append(asked, target)
		if strings.Contains(target, "/ok/") {
			return nil
		}
		return errNo
	}}
	st, name := open(t, front.URL+"/no/x.arrow", opts)
	defer st.Close()
	_, err := st.GetRange(context.Background(), name, 0, 2)
	if !errors.Is(err, errNo) || !errors.Is(err, store.ErrUnsupported) || !store.Permanent(err) {
		t.Fatalf("a refused redirect: %v, want the admission's error, ErrUnsupported and permanent", err)
	}
	if _, err := st.Size(context.Background(), name); !errors.Is(err, errNo) {
		t.Fatalf("a refused redirect of HEAD: %v", err)
	}
	if n, _ := other.seen(); n != 0 {
		t.Fatalf("the refused target saw %d connections, want 0", n)
	}
	if len(asked) != 2 || asked[0] != other.srv.URL+"/no/x.arrow" {
		t.Fatalf("AdmitRedirect was asked %q", asked)
	}
	st2, name2 := open(t, front.URL+"/ok/x.arrow", opts)
	defer st2.Close()
	rc, err := st2.GetRange(context.Background(), name2, 0, 2)
	if err != nil {
		t.Fatalf("an admitted redirect: %v", err)
	}
	rc.Close()
}

// TestS3RedirectStaysPut: an S3 store follows a redirect only to the URL it
// signed; a redirect to another port, host or object fails the request and
// the target never sees a connection, so neither the signature nor the
// session token reaches it.
func TestS3RedirectStaysPut(t *testing.T) {
	leakCheck(t)
	other := newListener(t)
	for _, c := range []struct {
		name   string
		target func(front string, r *http.Request) string
	}{
		{"another port", func(_ string, r *http.Request) string { return other.srv.URL + r.URL.RequestURI() }},
		{"another object", func(front string, r *http.Request) string { return front + "/data/other.arrow" }},
	} {
		var front *httptest.Server
		front = redirector(t, func(r *http.Request) string { return c.target(front.URL, r) })
		opts := store.Options{S3Endpoint: front.URL, S3Region: "us-east-1",
			S3AccessKeyID: "AKIDPLANTED", S3SecretAccessKey: "secret", S3SessionToken: "TOKENPLANTED"}
		st, name := open(t, "s3://data/x.arrow", opts)
		_, err := st.GetRange(context.Background(), name, 0, 2)
		st.Close()
		if !errors.Is(err, store.ErrUnsupported) || !strings.Contains(err.Error(), "S3 redirect") {
			t.Fatalf("%s: %v, want a refused S3 redirect", c.name, err)
		}
	}
	if n, heads := other.seen(); n != 0 {
		t.Fatalf("the redirect target saw %d connections (%v), want 0", n, heads)
	}
}

// TestS3AddressChecks: what of an S3 URL and options decides the host a
// request goes to is checked before any store exists: the bucket (it may
// become part of the host name), the region (part of AWS host names) and a
// vhost style with an IP endpoint.
func TestS3AddressChecks(t *testing.T) {
	leakCheck(t)
	for _, c := range []struct {
		url  string
		opts store.Options
		want string
	}{
		{"s3://evil.com#/x.arrow", store.Options{}, "bucket name"},
		{"s3://a@evil.com/x.arrow", store.Options{}, "bucket name"},
		{"s3://data:1/x.arrow", store.Options{}, "bucket name"},
		{"s3://data%2F/x.arrow", store.Options{}, "bucket name"},
		{"s3://data/x.arrow", store.Options{S3Region: "x.evil.com#", S3AccessKeyID: "k", S3SecretAccessKey: "s"}, "s3 region"},
		{"s3://data/x.arrow", store.Options{S3Region: "us-east-1/", S3AccessKeyID: "k", S3SecretAccessKey: "s"}, "s3 region"},
		{"s3://data/x.arrow", store.Options{S3Endpoint: "http://127.0.0.1:9", S3URLStyle: "vhost", S3AccessKeyID: "k", S3SecretAccessKey: "s"}, "vhost style needs a host name"},
		{"s3://data/x.arrow", store.Options{S3Endpoint: "http://tok@127.0.0.1:9", S3AccessKeyID: "k", S3SecretAccessKey: "s"}, "without userinfo"},
		{"s3://data/x.arrow", store.Options{S3Endpoint: "file:///etc", S3AccessKeyID: "k", S3SecretAccessKey: "s"}, "want http(s)"},
	} {
		st, _, err := store.Open(c.url, c.opts)
		if err == nil {
			st.Close()
			t.Errorf("%s %v: opened, want an error with %q", c.url, c.opts, c.want)
		} else if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "tok@") {
			t.Errorf("%s %v: %v, want %q (and no userinfo)", c.url, c.opts, err, c.want)
		}
	}
	for _, b := range []string{"data", "Data_legacy-1", "a.b.c"} {
		if err := store.CheckBucket(b); err != nil {
			t.Errorf("CheckBucket(%q): %v", b, err)
		}
	}
}

// TestDomainAdmitKey: stores with different redirect rules never share a
// domain (a store opened without a sandbox must not serve a sandboxed scan).
func TestDomainAdmitKey(t *testing.T) {
	a, err := store.Domain("https://h/x", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.Domain("https://h/x", store.Options{AdmitKey: "sandbox 1"})
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("one domain key %q for two redirect rules", a)
	}
}
