package cabi

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// AllowedPrefixesEnv names the process-wide list of sources a scan may open:
// comma-separated URL or path prefixes. When it is set, every object any scan
// of the process opens (catalog file, listing, chunk) must lie under one of
// them, whatever the query says. Unset or empty: no restriction by this
// list. It is read once per process, like REMOTE_SEGMENTS_MEMORY_LIMIT.
const AllowedPrefixesEnv = "REMOTE_SEGMENTS_ALLOWED_PREFIXES"

// ErrNotAllowed is wrapped by the error of a scan that opens a source the
// process's sandbox does not admit.
var ErrNotAllowed = errors.New("Permission Error")

// allowList is a parsed list of allowed prefixes; nil admits everything.
type allowList struct {
	prefixes []string // each normalized by canonicalSource
	raw      string   // as configured, for error messages
}

// processAllowList is the process's REMOTE_SEGMENTS_ALLOWED_PREFIXES, parsed
// at the first scan.
var processAllowList = sync.OnceValues(func() (*allowList, error) {
	return parseAllowList(os.Getenv(AllowedPrefixesEnv))
})

// parseAllowList parses comma-separated prefixes; an empty list (unset
// variable) gives nil, which admits every source. A prefix that cannot be
// normalized is an error, so a typo never silently opens the sandbox.
func parseAllowList(s string) (*allowList, error) {
	var prefixes []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		c, err := canonicalSource(p)
		if err != nil {
			return nil, fmt.Errorf("remote_segments: %s: prefix %q: %v", AllowedPrefixesEnv, p, err)
		}
		prefixes = append(prefixes, c)
	}
	if prefixes == nil {
		return nil, nil
	}
	return &allowList{prefixes: prefixes, raw: s}, nil
}

// admit returns nil when source lies under one of the prefixes, else an
// error wrapping ErrNotAllowed. A nil list admits everything.
func (l *allowList) admit(source string) error {
	if l == nil {
		return nil
	}
	c, err := canonicalSource(source)
	if err == nil {
		for _, p := range l.prefixes {
			if under(c, p) {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: %q is not under any prefix of %s (%s)", ErrNotAllowed, source, AllowedPrefixesEnv, l.raw)
}

// under reports whether c equals prefix p or continues it at a path
// boundary: "/data" admits "/data/x" but not "/database".
func under(c, p string) bool {
	if !strings.HasPrefix(c, p) {
		return false
	}
	return len(c) == len(p) || strings.HasSuffix(p, "/") || c[len(p)] == '/'
}

// canonicalSource normalizes a source so that prefixes compare as paths:
// a local path or file:// URL becomes an absolute, cleaned path (".." is
// resolved, so it cannot climb out of a prefix); any other URL becomes
// scheme://host followed by its cleaned path, scheme and host lower-cased.
// A trailing slash is kept (it marks a folder).
func canonicalSource(s string) (string, error) {
	if !strings.Contains(s, "://") {
		return cleanLocal(s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "file" {
		return cleanLocal(u.Path)
	}
	if u.Host == "" {
		return "", fmt.Errorf("no host")
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	return scheme + "://" + strings.ToLower(u.Host) + cleanKeepSlash(p), nil
}

func cleanLocal(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(abs, "/") {
		abs += "/"
	}
	return abs, nil
}

func cleanKeepSlash(p string) string {
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(c, "/") {
		c += "/"
	}
	return c
}
