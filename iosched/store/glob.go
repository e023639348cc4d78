package store

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
)

// Glob returns the objects of st whose names match pattern, sorted by name.
// In pattern, '*' matches any run of characters other than '/', '?' one such
// character, '[...]' a class as in path.Match, and a whole '**' part any
// number of path parts, none included. Glob lists from the longest literal
// prefix of pattern and filters the result, so the store must support List
// unless pattern has no wildcard, in which case the one object is looked up
// with Size (a missing object then fails with ErrNotFound). On a store that
// lists by folder (S3), the folders that can hold a match are listed
// concurrently, at most parallel listings at once (see ListTree); the bounds
// MaxListObjects and MaxListPages hold for all of them together.
// On failure (of any one listing), returns the store's error, which names
// the URL, once every listing has stopped.
func Glob(ctx context.Context, st Store, pattern string, parallel int) ([]ObjectInfo, error) {
	return GlobFirst(ctx, st, pattern, parallel, nil)
}

// GlobFirst is Glob, and on a store that lists by folder it calls first,
// once, with the objects of the listing's first page that match (sorted
// by name, as the store sent them), when that page is not the whole
// listing: the answer's first objects, so a caller may start on them
// while the rest is listed. It is called on a goroutine of the listing,
// before GlobFirst returns; it must not block. It is not called when
// nothing on the first page matches. The objects are only a hint: a store
// whose listing changes between two pages, or that sends names out of
// order, can return an answer that does not start with them.
func GlobFirst(ctx context.Context, st Store, pattern string, parallel int, first func([]ObjectInfo)) ([]ObjectInfo, error) {
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
	return listTree(ctx, st, pattern[:i], strings.Split(pattern, "/"), parallel, first)
}

// ListTree returns what st.List(ctx, prefix) returns: every object whose
// name starts with prefix, sorted by name. On a store that lists by folder
// (S3), it lists the folders under prefix concurrently, at most parallel
// listings at once (parallel < 2: one listing, as List), within the bounds
// MaxListObjects and MaxListPages for all of them together. Other stores
// are asked once, with List. On failure (of any one listing), returns the
// store's error, which names the URL, once every listing has stopped.
func ListTree(ctx context.Context, st Store, prefix string, parallel int) ([]ObjectInfo, error) {
	return ListTreeFirst(ctx, st, prefix, parallel, nil)
}

// ListTreeFirst is ListTree, calling first as GlobFirst does.
func ListTreeFirst(ctx context.Context, st Store, prefix string, parallel int, first func([]ObjectInfo)) ([]ObjectInfo, error) {
	return listTree(ctx, st, prefix, nil, parallel, first)
}

// MaxListObjects bounds the objects one List returns, and MaxListPages the
// pages an S3 listing may take: a listing that does not end (a server that
// answers every page as truncated) fails with ErrTooMany rather than
// growing memory, or looping, until the process dies. A listing of that
// many objects in full pages of 1000 takes a twentieth of MaxListPages.
const (
	MaxListObjects = 5_000_000
	MaxListPages   = 100_000
)

// ErrTooMany is wrapped by the error of a listing past MaxListObjects or
// MaxListPages.
var ErrTooMany = errors.New("too many objects")

// The bounds List enforces: MaxListObjects and MaxListPages, lower in tests.
var maxListObjects, maxListPages = MaxListObjects, MaxListPages

// listBound counts one listing's objects and pages against the bounds; the
// listings of one Glob or ListTree share one, from their goroutines.
type listBound struct {
	mu             sync.Mutex
	objects, pages int
}

// add counts one page of n objects, and fails past a bound.
func (b *listBound) add(n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objects += n
	b.pages++
	switch {
	case b.objects > maxListObjects:
		return tooManyObjects()
	case b.pages > maxListPages:
		return fmt.Errorf("%w: a listing of more than %d pages", ErrTooMany, maxListPages)
	}
	return nil
}

func tooManyObjects() error {
	return fmt.Errorf("%w: more than %d in one listing", ErrTooMany, maxListObjects)
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
