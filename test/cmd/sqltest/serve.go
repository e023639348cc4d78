package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/remote-segments/remote_segments/test/faultproxy"
	"github.com/remote-segments/remote_segments/test/s3server"
)

// servers are the real servers the SQL tests read through: Go's net/http
// file server over the data directory, and versitygw holding the same files
// in bucket "data".
type servers struct {
	http    *http.Server
	s3      *s3server.Server
	proxies []*faultproxy.Proxy
	written string // the files of /control/write/, served under /written/

	mu    sync.Mutex
	links map[string]string // /link/<name> → the path it redirects to (/control/link/)
}

// serve starts both servers over dataDir and sets the variables the SQL
// files use: HTTP (base URL; paths under /forbidden/ answer 403; see
// overwrite, write, serveWritten and link for /control/, /written/ and
// /link/),
// S3_ENDPOINT, S3_KEY, S3_SECRET and S3_REGION (objects are
// s3://data/<path under dataDir>), and the same S3 endpoint behind fault
// proxies: S3_SLOW (30 ms per request) and S3_THROTTLED (every third
// request answered 503 SlowDown when it is a GET of a .arrow object).
func serve(dataDir string, vars map[string]string) (*servers, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	files := http.FileServer(http.Dir(dataDir))
	written, err := os.MkdirTemp("", "sqltest-written-*")
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &servers{written: written, links: map[string]string{}}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/forbidden/") {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		if key, ok := strings.CutPrefix(r.URL.Path, "/control/overwrite/"); ok {
			s.overwrite(w, r, dataDir, key)
			return
		}
		if name, ok := strings.CutPrefix(r.URL.Path, "/control/write/"); ok {
			s.write(w, r, dataDir, name)
			return
		}
		if rest, ok := strings.CutPrefix(r.URL.Path, "/written/"); ok {
			s.serveWritten(w, r, rest)
			return
		}
		if name, ok := strings.CutPrefix(r.URL.Path, "/control/link/"); ok {
			s.link(w, r, dataDir, name)
			return
		}
		if name, ok := strings.CutPrefix(r.URL.Path, "/link/"); ok {
			s.mu.Lock()
			to, found := s.links[name]
			s.mu.Unlock()
			if !found {
				http.NotFound(w, r)
				return
			}
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		files.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	s.http = srv
	vars["HTTP"] = "http://" + ln.Addr().String()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "sqltest-s3-*")
	if err != nil {
		s.close()
		return nil, err
	}
	s.s3, err = s3server.Start(ctx, root, "data")
	if err != nil {
		os.RemoveAll(root)
		s.close()
		return nil, err
	}
	err = filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dataDir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return s.s3.PutObject(ctx, "data", filepath.ToSlash(rel), data)
	})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("upload to versitygw: %w", err)
	}
	vars["S3_ENDPOINT"] = s.s3.Endpoint
	vars["S3_KEY"] = s.s3.AccessKey
	vars["S3_SECRET"] = s.s3.SecretKey
	vars["S3_REGION"] = s.s3.Region
	// The same S3 server behind fault proxies: 30 ms per request
	// (S3_SLOW), and every third request, when it GETs an .arrow object,
	// answered 503 SlowDown (S3_THROTTLED; listings pass).
	for _, p := range []struct {
		name string
		cfg  faultproxy.Config
	}{
		{"S3_SLOW", faultproxy.Config{Latency: 30 * time.Millisecond}},
		{"S3_THROTTLED", faultproxy.Config{Rule: func(r *http.Request, n int64) (faultproxy.Fault, bool) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".arrow") && n%3 == 0 {
				return faultproxy.Fault{Kind: faultproxy.SlowDown}, true
			}
			return faultproxy.Fault{}, true
		}}},
	} {
		proxy, err := faultproxy.New(s.s3.Endpoint, p.cfg)
		if err != nil {
			s.close()
			return nil, err
		}
		s.proxies = append(s.proxies, proxy)
		vars[p.name] = proxy.URL
	}
	return s, nil
}

// overwrite answers ${HTTP}/control/overwrite/<key>?from=<path>: it puts
// the file at path under the data directory to versitygw as object
// data/<key>, and answers with that file's bytes, so that a SQL file can
// overwrite an object between two scans with a query
// (SELECT count(*) FROM remote_segments('${HTTP}/control/overwrite/...')).
func (s *servers) overwrite(w http.ResponseWriter, r *http.Request, dataDir, key string) {
	from := filepath.Join(dataDir, filepath.FromSlash(r.URL.Query().Get("from")))
	data, err := os.ReadFile(from)
	if err != nil || s.s3 == nil {
		http.Error(w, fmt.Sprintf("overwrite %s: %v", key, err), http.StatusNotFound)
		return
	}
	if err := s.s3.PutObject(r.Context(), "data", key, data); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	http.ServeContent(w, r, key, time.Time{}, bytes.NewReader(data))
}

// writtenAt is the modification time of every file /control/write/
// writes: two writes of one name are of the same second, as writes a
// moment apart are.
var writtenAt = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// write answers ${HTTP}/control/write/<name>?from=<path>: it writes the
// file at path under the data directory as <name> of /written/, with the
// time writtenAt, and answers with its bytes (as overwrite does).
func (s *servers) write(w http.ResponseWriter, r *http.Request, dataDir, name string) {
	data, err := os.ReadFile(filepath.Join(dataDir, filepath.FromSlash(r.URL.Query().Get("from"))))
	if err == nil && (name == "" || strings.ContainsAny(name, `/\`)) {
		err = fmt.Errorf("not a file name: %q", name)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(s.written, name), data, 0o644)
	}
	if err == nil {
		err = os.Chtimes(filepath.Join(s.written, name), writtenAt, writtenAt)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("write %s: %v", name, err), http.StatusNotFound)
		return
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

// serveWritten answers ${HTTP}/written/<after>/<name>: the file that
// /control/write/ wrote, as Go's file server does (Last-Modified, no
// ETag), with a Date <after> (a Go duration) after its modification: an
// answer in the second of the write ("300ms"), or long after it ("1h").
func (s *servers) serveWritten(w http.ResponseWriter, r *http.Request, rest string) {
	after, name, _ := strings.Cut(rest, "/")
	d, err := time.ParseDuration(after)
	fi, err2 := os.Stat(filepath.Join(s.written, name))
	if err != nil || err2 != nil || name == "" || strings.ContainsAny(name, `/\`) {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Date", fi.ModTime().Add(d).UTC().Format(http.TimeFormat))
	http.ServeFile(w, r, filepath.Join(s.written, name))
}

// link answers ${HTTP}/control/link/<name>?to=<path>&from=<file>: from
// then on /link/<name> redirects (302) to the path (a "latest" link), and
// the answer is the data directory's file from (a query's bytes, as
// overwrite's).
func (s *servers) link(w http.ResponseWriter, r *http.Request, dataDir, name string) {
	to := r.URL.Query().Get("to")
	data, err := os.ReadFile(filepath.Join(dataDir, filepath.FromSlash(r.URL.Query().Get("from"))))
	if err != nil || !strings.HasPrefix(to, "/") {
		http.Error(w, fmt.Sprintf("link %s to %q: %v", name, to, err), http.StatusNotFound)
		return
	}
	s.mu.Lock()
	s.links[name] = to
	s.mu.Unlock()
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

func (s *servers) close() {
	if s.written != "" {
		os.RemoveAll(s.written)
	}
	for _, p := range s.proxies {
		p.Close()
	}
	if s.http != nil {
		s.http.Close()
	}
	if s.s3 != nil {
		dir := s.s3.Dir
		s.s3.Close()
		os.RemoveAll(dir)
	}
}
