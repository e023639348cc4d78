package store

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// Glob returns the objects of st whose names match pattern, sorted by name.
// In pattern, '*' matches any run of characters other than '/', '?' one such
// character, '[...]' a class as in path.Match, and a whole '**' part any
// number of path parts, none included. Glob lists the longest literal prefix
// of pattern and filters the result, so the store must support List unless
// pattern has no wildcard, in which case the one object is looked up with
// Size (a missing object then fails with ErrNotFound).
// On failure, returns the store's error, which names the URL.
func Glob(ctx context.Context, st Store, pattern string) ([]ObjectInfo, error) {
	i := strings.IndexAny(pattern, "*?[\\")
	if i < 0 {
		size, err := st.Size(ctx, pattern)
		if err != nil {
			return nil, err
		}
		return []ObjectInfo{{Name: pattern, Size: size}}, nil
	}
	if _, err := path.Match(strings.ReplaceAll(pattern, "**", "*"), ""); err != nil {
		return nil, fmt.Errorf("store: glob %s: %w", st.URL(pattern), err)
	}
	prefix := pattern[:i]
	objs, err := st.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	pat := strings.Split(pattern, "/")
	out := objs[:0]
	for _, o := range objs {
		if matchParts(pat, strings.Split(o.Name, "/")) {
			out = append(out, o)
		}
	}
	return out, nil
}

// Match reports whether name matches the Glob pattern.
func Match(pattern, name string) bool {
	return matchParts(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

// matchParts matches slash-separated parts; "**" takes zero or more parts.
func matchParts(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			// Collapse runs of "**" and try every split point.
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for k := 0; k <= len(name); k++ {
				if matchParts(pat, name[k:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
