package store

import (
	"context"
	"fmt"
	"path"
	"runtime/debug"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
)

// folderLister is a Store that can list one folder level at a time and a
// range of names (S3's ListObjectsV2 with Delimiter and StartAfter): what
// lets a listing of many objects run as several listings at once.
type folderLister interface {
	// listKeys pages through the objects of q (see keyQuery), counting
	// every page and every object it keeps against b. Objects and folders
	// each come back sorted by name.
	listKeys(ctx context.Context, q keyQuery, b *listBound) (keyList, error)
}

// keyQuery is one listing: the names that start with prefix, greater than
// startAfter ("": from the first) and less than end ("": to the last). With
// folders, a name that has a '/' after prefix comes back once as its
// folder, the name up to and including that '/', instead of as objects;
// then startAfter drops objects only, and is not sent to the server:
// whether a server names a folder that straddles it differs. With pages
// > 0, at most that many pages are asked for. With keep, only the objects
// it returns true for are kept.
type keyQuery struct {
	prefix, startAfter, end string
	folders                 bool
	pages                   int
	keep                    func(name string) bool
}

// keyList is what one listing found. more reports that a listing of
// keyQuery.pages stopped before its end; pages counts the pages it asked
// for.
type keyList struct {
	objs    []ObjectInfo
	folders []string
	more    bool
	pages   int
}

// maxFolderLevels is how many levels below the listing's prefix may be
// listed one folder at a time before the rest is listed in ranges.
const maxFolderLevels = 4

// listTree lists the objects under prefix that match the Glob pattern
// parts pat (nil: all of them), sorted by name. A store that is no
// folderLister, or parallel < 2, is asked once with List.
//
// The prefix is listed twice at once: with a delimiter, which names its
// folders, and without, for one page. When that page holds the whole
// listing, it is the answer, in one round trip, as a flat listing's. Else
// its names are the answer's first, and the folders after them that can
// hold a match are listed, a level at a time, all of a level at once, each
// level in the way that what the first page tells of its folders' sizes
// calls for:
//   - where it ended past some of a level's folders, a page holds about
//     that many of them, so the level is split into contiguous ranges of
//     that many folders each, listed without a delimiter: about one page
//     each, and no more requests than a flat listing takes plus one per
//     range;
//   - where it ended inside the level's first folder, the folders are
//     large and their sizes unknown: each is listed with a delimiter, which
//     returns its own objects (nothing is listed twice) and names its
//     subfolders, the next level, at one request per folder and a round
//     trip per level (the folder the page ended in is a range from there);
//   - a level of parallel folders or more, or below maxFolderLevels, is
//     split into parallel ranges: more folders at once would not run at
//     once, and a deep tree of sparse folders would cost a request per
//     folder, a chain of single folders a round trip per level.
//
// first, if not nil, is called with the first page's matches as soon as
// that page is in and known not to be the whole listing (see GlobFirst).
func listTree(ctx context.Context, st Store, prefix string, pat []string, parallel int, first func([]ObjectInfo)) ([]ObjectInfo, error) {
	fl, ok := st.(folderLister)
	if !ok || parallel < 2 {
		objs, err := st.List(ctx, prefix)
		if err != nil {
			return nil, err
		}
		return keepMatches(objs, pat), nil
	}
	var bound listBound
	// The first page has a bound of its own until it is known to be a
	// part of the answer, not all of it: the delimiter listing beside it
	// lists the same objects.
	var page, top keyList
	g, gctx := errgroup.WithContext(ctx)
	g.Go(guarded(func() error {
		var err error
		page, err = fl.listKeys(gctx, keyQuery{prefix: prefix, pages: 1}, &listBound{})
		if err == nil && page.more && first != nil {
			if objs := keepMatches(slices.Clone(page.objs), pat); len(objs) > 0 {
				first(objs)
			}
		}
		return err
	}))
	g.Go(guarded(func() error {
		var err error
		top, err = fl.listKeys(gctx, keyQuery{prefix: prefix, folders: true}, &bound)
		return err
	}))
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if !page.more {
		return keepMatches(page.objs, pat), nil
	}
	// Every name up to seenTo is on the first page; the other listings
	// keep only names after it.
	seenTo := ""
	if len(page.objs) > 0 {
		seenTo = page.objs[len(page.objs)-1].Name
	}
	// The delimiter listing counted the prefix's own objects, and those up
	// to seenTo are on the first page too (unless the listing changed
	// between the two answers).
	i := sort.Search(len(top.objs), func(k int) bool { return top.objs[k].Name > seenTo })
	if err := bound.add(max(0, len(page.objs)-i)); err != nil {
		return nil, &RequestError{Op: "LIST", URL: st.URL(prefix), Err: err}
	}
	found := [][]ObjectInfo{keepMatches(page.objs, pat), keepMatches(top.objs[i:], pat)}
	level := keepFolders(top.folders, pat)
	for depth := 1; len(level) > 0; depth++ {
		// The level's first seen folders had every name on the first page.
		seen := sort.Search(len(level), func(i int) bool { return level[i] >= seenTo })
		if seen > 0 && strings.HasPrefix(seenTo, level[seen-1]) {
			seen--
		}
		level = level[seen:]
		if len(level) == 0 {
			break
		}
		runs := parallel
		if seen > 0 {
			runs = (len(level) + seen - 1) / seen
		}
		if seen > 0 || len(level) >= parallel || depth > maxFolderLevels {
			objs, err := listRanges(ctx, fl, level, pat, min(runs, parallel), seenTo, &bound)
			if err != nil {
				return nil, err
			}
			found = append(found, objs...)
			break
		}
		lists := make([]keyList, len(level))
		var rest [][]ObjectInfo
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(parallel)
		for i, p := range level {
			if i == 0 && strings.HasPrefix(seenTo, p) {
				// The first page ended inside this folder: the rest of it,
				// from there, without a delimiter.
				g.Go(guarded(func() error {
					var err error
					rest, err = listRanges(gctx, fl, level[:1], pat, 1, seenTo, &bound)
					return err
				}))
				continue
			}
			g.Go(guarded(func() error {
				var err error
				lists[i], err = fl.listKeys(gctx, keyQuery{prefix: p, folders: true}, &bound)
				return err
			}))
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		found = append(found, rest...)
		// The folders of a level come out sorted: those of each folder are,
		// and the level's folders are disjoint ranges of names, in order.
		var next []string
		for _, l := range lists {
			found = append(found, keepMatches(l.objs, pat))
			next = append(next, keepFolders(l.folders, pat)...)
		}
		level = next
	}
	var n int
	for _, objs := range found {
		n += len(objs)
	}
	out := make([]ObjectInfo, 0, n)
	for _, objs := range found {
		out = append(out, objs...)
	}
	// A folder's own objects interleave with its subfolders' names
	// ("a.x" < "a/" < "a0"): the pieces are each sorted, not in order.
	slices.SortFunc(out, func(a, b ObjectInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// keepFolders filters folders, in place, to those below which a name can
// match pat; nil keeps all.
func keepFolders(folders []string, pat []string) []string {
	if pat == nil {
		return folders
	}
	return slices.DeleteFunc(folders, func(f string) bool { return !mayHold(pat, f) })
}

// listRanges lists the objects after seenTo in folders (sorted, each
// ending in '/', none the prefix of another) that match pat, in runs
// listings of contiguous runs of folders, all at once; each piece it
// returns is sorted.
func listRanges(ctx context.Context, fl folderLister, folders []string, pat []string, runs int, seenTo string, bound *listBound) ([][]ObjectInfo, error) {
	n := min(runs, len(folders))
	out := make([][]ObjectInfo, n)
	g, gctx := errgroup.WithContext(ctx)
	for i := range n {
		run := folders[i*len(folders)/n : (i+1)*len(folders)/n]
		g.Go(guarded(func() error {
			first, last := run[0], run[len(run)-1]
			q := keyQuery{prefix: first}
			if len(run) > 1 {
				// Every name under first is past first less its '/', and every
				// name under last is before last with its '/' made '0' (the
				// next byte): the names of the run's folders lie between.
				q = keyQuery{prefix: commonPrefix(first, last), startAfter: first[:len(first)-1], end: last[:len(last)-1] + "0"}
			}
			if seenTo > q.startAfter && strings.HasPrefix(seenTo, q.prefix) && (q.end == "" || seenTo < q.end) {
				q.startAfter = seenTo // the run's first names were on the first page
			}
			l, err := fl.listKeys(gctx, q, bound)
			if err != nil {
				return err
			}
			objs := l.objs
			if len(run) > 1 {
				// Between the run's folders lie names outside of them: a
				// parent's own objects, folders that cannot match.
				objs = slices.DeleteFunc(objs, func(o ObjectInfo) bool { return !inFolders(run, o.Name) })
			}
			out[i] = keepMatches(objs, pat)
			return nil
		}))
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// inFolders reports whether name lies in one of folders (sorted, none the
// prefix of another): the last folder not after name is its only candidate.
func inFolders(folders []string, name string) bool {
	i := sort.Search(len(folders), func(k int) bool { return folders[k] > name }) - 1
	return i >= 0 && strings.HasPrefix(name, folders[i])
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return a[:i]
		}
	}
	return a[:n]
}

// keepMatches filters objs, in place, to the names that match the Glob
// pattern parts pat; nil keeps all.
func keepMatches(objs []ObjectInfo, pat []string) []ObjectInfo {
	if pat == nil {
		return objs
	}
	return slices.DeleteFunc(objs, func(o ObjectInfo) bool { return !matchParts(pat, strings.Split(o.Name, "/")) })
}

// mayHold reports whether a name below folder (a name ending in '/') can
// match the Glob pattern parts pat. It may say yes when none does, never
// no when one does: the listing filters every name it keeps.
func mayHold(pat []string, folder string) bool {
	dir := strings.Split(strings.TrimSuffix(folder, "/"), "/")
	for ; len(dir) > 0; dir = dir[1:] {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true // it takes the rest of dir, and what follows
		}
		if ok, _ := path.Match(pat[0], dir[0]); !ok {
			return false
		}
		pat = pat[1:]
	}
	return len(pat) > 0 // a name below has at least one more part
}

// guarded is f made safe to run on a goroutine of its own: a panic in it is
// its error. A listing parses bytes from outside (a server the query may
// name), and a bug they meet must fail the query, never end the host
// process, which a panic on a goroutine without a recover does.
func guarded(f func() error) func() error {
	return func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("store: internal error (panic) while listing: %v\n%s", r, debug.Stack())
			}
		}()
		return f()
	}
}
