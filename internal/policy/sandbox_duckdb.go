package policy

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// duckdbSandbox is DuckDB's own file sandbox as one query's client context
// reports it: the settings enable_external_access, allowed_directories and
// allowed_paths. It is independent of how the settings were read (the C
// extension API v1.5.6 in bind, or another API); admit applies DuckDB's rule.
type duckdbSandbox struct {
	external bool     // enable_external_access: true admits everything
	dirs     []string // allowed_directories, as DuckDB reports them (canonical, ending in "/")
	paths    []string // allowed_paths, as DuckDB reports them (canonical)
	memo     *pathMemo
}

// admit returns nil when DuckDB's own readers would open source under s, else
// an error wrapping ErrNotAllowed that names source and the settings. The
// rule is DuckDB's DBConfig::CanAccessFile (1.5.x, 2.0):
//
//   - enable_external_access true: everything is admitted;
//   - otherwise the path is canonicalized as DuckDB does: a local path (or a
//     file:// URL) is made absolute, its longest existing prefix has its
//     symbolic links resolved (realpath) and the rest is cleaned, so ".."
//     and links cannot climb out; a URL is kept as written;
//   - it is admitted when it equals an entry of allowed_paths, or starts with
//     an entry of allowed_directories (each ends in "/", so "/data/" admits
//     "/data/x" but not "/database"); a directory (a listing) is compared
//     with a trailing "/", so naming an allowed directory itself lists it;
//   - DuckDB 1.5.x without httpfs loaded stores a URL entry as a path under
//     the working directory, and compares URLs in that form: both forms are
//     recognized (allowsLocalFormURL).
//
// One difference, stricter than DuckDB: a URL whose path has a "." or ".."
// segment is refused, since a server may resolve it out of the prefix that
// the string starts with.
func (s *duckdbSandbox) admit(source string) error {
	if s == nil || s.external {
		return nil
	}
	p, dir, err := duckdbCanonical(source, s.memo)
	if err == nil && (s.allows(p, dir, "") || s.allowsLocalFormURL(source, dir)) {
		return nil
	}
	why := "enable_external_access is false and no allowed_directories or allowed_paths entry admits it"
	if err != nil {
		why = err.Error()
	}
	return fmt.Errorf("%w: cannot access %q: %s (allowed_directories %s, allowed_paths %s)",
		ErrNotAllowed, source, why, listText(s.dirs), listText(s.paths))
}

// allows is DuckDB's prefix test on a canonical path; only entries that
// start with within count.
func (s *duckdbSandbox) allows(p string, dir bool, within string) bool {
	for _, a := range s.paths {
		if a == p && strings.HasPrefix(a, within) {
			return true
		}
	}
	if dir && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	for _, d := range s.dirs {
		if d == "" || !strings.HasPrefix(d, within) {
			continue
		}
		if !strings.HasSuffix(d, "/") {
			d += "/" // DuckDB stores them so; a caller may not have
		}
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// allowsLocalFormURL applies the rule to a URL in the form DuckDB 1.5.x
// gives it when no loaded extension claims its scheme (httpfs not loaded):
// a path relative to the working directory, "http://h/d" becoming
// "<cwd>/http:/h/d". DuckDB 1.5.x stores a URL entry of allowed_directories
// or allowed_paths so, and compares a URL it reads in the same form. Only
// entries in that form for the URL's own scheme and host count, so an
// allowed local directory that happens to hold the working directory never
// admits a URL.
func (s *duckdbSandbox) allowsLocalFormURL(source string, dir bool) bool {
	u, err := url.Parse(source)
	if err != nil || !strings.Contains(source, "://") || strings.EqualFold(u.Scheme, "file") || u.Host == "" {
		return false
	}
	root, err := duckdbLocalPath(u.Scheme + "://" + u.Host)
	if err != nil {
		return false
	}
	p, err := duckdbLocalPath(source)
	if err != nil {
		return false
	}
	return s.allows(p, dir, root+"/")
}

func listText(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	return "[" + strings.Join(l, ", ") + "]"
}

// duckdbCanonical returns the path DuckDB would check for source, and
// whether it names a directory (a trailing "/", or an existing local
// directory). It fails for a URL with a dot segment (see admit). Local
// paths are resolved through memo (nil: none).
func duckdbCanonical(source string, memo *pathMemo) (p string, dir bool, err error) {
	dir = strings.HasSuffix(source, "/")
	if i := strings.Index(source, "://"); i >= 0 {
		u, err := url.Parse(source)
		if err != nil {
			return "", false, fmt.Errorf("not a URL: %v", err)
		}
		if strings.EqualFold(u.Scheme, "s3") {
			// The S3 store takes the bucket and key as written, "?" and "#"
			// included (canonicalSource): check them so.
			if _, err := canonicalSource(source, nil); err != nil {
				return "", false, err
			}
			return source, dir, nil
		}
		if !strings.EqualFold(u.Scheme, "file") {
			if err := noDotSegments(u.Path); err != nil {
				return "", false, err
			}
			return source, dir, nil
		}
		source = u.Path
	}
	p, err = memo.local(source)
	if err != nil {
		return "", false, err
	}
	if !dir {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			dir = true
		}
	}
	return p, dir, nil
}

// duckdbLocalPath is DuckDB's LocalFileSystem::CanonicalizePath: the absolute
// path, with the longest existing prefix resolved by realpath (here
// filepath.EvalSymlinks) and the remainder appended; ".." components of the
// remainder cancel the components before them.
func duckdbLocalPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	abs := p
	if !filepath.IsAbs(abs) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		abs = wd + "/" + abs
	}
	current := abs
	var rest []string // the remainder, innermost component first
	dotdot := 0
	for current != "" {
		// Any failure (missing, not a directory, no permission) moves
		// up one component, as a failing realpath does in DuckDB.
		if dotdot == 0 {
			if r, err := filepath.EvalSymlinks(current); err == nil {
				slices.Reverse(rest)
				return joinRest(r, rest), nil
			}
		}
		i := strings.LastIndexByte(current, '/')
		if i < 0 {
			break
		}
		switch c := current[i+1:]; {
		case c == "..":
			dotdot++
		case c == "" || c == ".":
		case dotdot > 0:
			dotdot--
		default:
			rest = append(rest, c)
		}
		current = current[:i]
	}
	return lexicalPath(abs), nil
}

// pathMemo remembers, for one bind, where local folders resolve
// (duckdbLocalPath), so that a check of each of many files in a few
// folders costs a stat of the file, not a resolution of each folder of its
// path (a sandboxed scan of 20,000 small files took twice as long). A
// bind's checks are moments apart: a folder replaced by a link during
// them is judged as it was, as an open after any check may find it
// replaced anyway.
type pathMemo struct {
	mu   sync.Mutex
	dirs map[string]string // a clean absolute folder, ending in "/" → where it resolves
}

// pathMemoMax bounds a pathMemo's folders; when full it starts over.
const pathMemoMax = 4096

// local is duckdbLocalPath(p), its folder's resolution remembered: for an
// absolute, clean path whose last element is not a link (a link, or
// anything else, is resolved whole).
func (m *pathMemo) local(p string) (string, error) {
	dir, base := path.Split(p)
	if m == nil || !strings.HasPrefix(p, "/") || base == "" || base == "." || base == ".." || dir == "/" || path.Clean(dir)+"/" != dir {
		return duckdbLocalPath(p)
	}
	m.mu.Lock()
	rdir, ok := m.dirs[dir]
	m.mu.Unlock()
	if !ok {
		r, err := duckdbLocalPath(strings.TrimSuffix(dir, "/"))
		if err != nil {
			return "", err
		}
		rdir = r
		m.mu.Lock()
		if len(m.dirs) >= pathMemoMax {
			clear(m.dirs)
		}
		m.dirs[dir] = rdir
		m.mu.Unlock()
	}
	full := joinRest(rdir, []string{base})
	if st, err := os.Lstat(full); err == nil && st.Mode()&os.ModeSymlink != 0 {
		return duckdbLocalPath(p)
	}
	return full, nil
}

func joinRest(base string, rest []string) string {
	if len(rest) == 0 {
		return base
	}
	if strings.HasSuffix(base, "/") {
		return base + strings.Join(rest, "/")
	}
	return base + "/" + strings.Join(rest, "/")
}

// lexicalPath is DuckDB's FileSystem::CanonicalizePath for a local path:
// empty and "." components dropped, ".." pops one (never above the root).
func lexicalPath(p string) string {
	c := path.Clean("/" + p)
	if !strings.HasPrefix(p, "/") {
		return strings.TrimPrefix(c, "/")
	}
	return c
}
