package store

import (
	"context"
	"slices"
	"sync"
	"unicode/utf8"
)

// VersionLister is a Store that can tell the versions of many objects
// with a few listing requests instead of one request per object (S3's
// ListObjectsV2, whose entries carry each object's ETag).
type VersionLister interface {
	// ListVersions returns the versions, as Versioner.Version gives
	// them, of those of names that listings show, and how many listing
	// requests it sent. It lists only where that is cheaper than asking
	// each object (see MinListedVersions), at most parallel listings at
	// once, and gives up a listing that runs far past the names asked
	// (listPagesFor). A name it does not return is for the caller to ask
	// on its own: too few names beside it, listed past where its listing
	// gave up, absent from the listing, or its listing failed. It does
	// not fail: a listing's error leaves its names to those requests,
	// which report it if it is the object's.
	ListVersions(ctx context.Context, names []string, parallel int) (map[string]string, int)
}

var _ VersionLister = (*s3Store)(nil)

// MinListedVersions is the fewest names of one bucket ListVersions lists:
// a listing page is a round trip at least, and fewer objects are asked
// in a wave or two of requests on parallel slots for about as long.
const MinListedVersions = 48

// listRunNames is the most names one listing of ListVersions covers: a
// page holds 1000 keys, and runs of a bucket's names are listed at once.
const listRunNames = 1000

// listPagesFor is the most pages a listing of n names may take before it
// gives up (the rest of its names are asked one by one): a listing of
// names among many other objects (a prefix that is the whole bucket)
// costs at most a few round trips more than their requests alone.
func listPagesFor(n int) int { return 2 + 3*n/listRunNames }

// ListVersions lists the names of each bucket in runs of at most
// listRunNames consecutive names, each from just before its first name
// to its last, under the prefix they share (see VersionLister).
func (s *s3Store) ListVersions(ctx context.Context, names []string, parallel int) (map[string]string, int) {
	byBucket := map[string][]string{}
	for _, n := range names {
		bucket, key, err := splitBucket(n)
		if err != nil || key == "" {
			continue // asked on its own, which reports what is wrong
		}
		byBucket[bucket] = append(byBucket[bucket], n)
	}
	var runs [][]string
	for _, ns := range byBucket {
		slices.Sort(ns)
		ns = slices.Compact(ns)
		if len(ns) < MinListedVersions {
			continue
		}
		k := (len(ns) + listRunNames - 1) / listRunNames
		for i := range k {
			runs = append(runs, ns[i*len(ns)/k:(i+1)*len(ns)/k])
		}
	}
	var (
		mu       sync.Mutex
		found    = map[string]string{}
		requests int
		wg       sync.WaitGroup
		sem      = make(chan struct{}, max(1, parallel))
	)
	for _, run := range runs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var l []ObjectInfo
			sent := 1
			// A run that panics (guarded) shows no names: they are asked
			// one by one, which report what is wrong, if anything.
			guarded(func() error { l, sent = s.listRun(ctx, run); return nil })()
			mu.Lock()
			defer mu.Unlock()
			requests += sent
			for _, o := range l {
				if o.Version != "" {
					found[o.Name] = o.Version
				}
			}
		})
	}
	wg.Wait()
	return found, requests
}

// listRun lists the objects of run (sorted names of one bucket) and
// returns those of them it saw, and the pages it asked for.
func (s *s3Store) listRun(ctx context.Context, run []string) ([]ObjectInfo, int) {
	first, last := run[0], run[len(run)-1]
	asked := make(map[string]bool, len(run))
	for _, n := range run {
		asked[n] = true
	}
	// The names lie after first less its last character and up to last
	// (last+"\x00" is the least name after it); they share their common
	// prefix, cut to whole characters (a listing's prefix is UTF-8 text).
	prefix := commonPrefix(first, last)
	for !utf8.ValidString(prefix) {
		prefix = prefix[:len(prefix)-1]
	}
	_, size := utf8.DecodeLastRuneInString(first)
	q := keyQuery{prefix: prefix, startAfter: first[:len(first)-size], end: last + "\x00",
		pages: listPagesFor(len(run)), keep: func(name string) bool { return asked[name] }}
	l, err := s.listKeys(ctx, q, &listBound{})
	if err != nil {
		return nil, 1 // at least the one that failed
	}
	return l.objs, l.pages
}
