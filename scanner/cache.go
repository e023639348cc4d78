package scanner

// The local cache of remote chunks (Config.CacheDir): every vector of
// requests for a remote object passes through viaCache, which serves the
// ranges the cache holds for the object's current version from the local
// disk, on the file domain's scheduler (a cache read never holds a remote
// slot), and fetches the others from the store and stores them.
//
// The version the ranges are looked up by is the catalog's (Chunk.Version,
// vouched for by the catalog: no request to the store at all), else, in
// the scan that follows bind, the one the listing of a glob or prefix
// gave at bind (Chunk.Listed: no request either), else the store's answer
// to one check per scan, asked only of objects the cache has stored
// ranges of: a request for the object's headers (store.Versioner), or,
// for many objects of one bucket, the listing of their prefix
// (store.VersionLister; see checkVersionsAhead).
// An object overwritten between two scans thus has a new version in the
// second, whose ranges are not in the cache. Fetched ranges are stored
// under the version their own answers carried (recordingStore). A store
// that gives no version, and local files, are not cached.

import (
	"cmp"
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/cache"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// caches are a process's open cache directories, one Cache per directory
// and size, so that the scans sharing one count into one set of
// statistics (remote_segments_cache()).
type caches struct {
	mu sync.Mutex
	m  map[string]*cache.Cache
}

// open returns the cache of dir holding size bytes (0: the default),
// opening it on first use.
func (cs *caches) open(dir string, size int64) (*cache.Cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	key := abs + "\x00" + strconv.FormatInt(size, 10)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c := cs.m[key]; c != nil {
		return c, nil
	}
	c, err := cache.Open(abs, size)
	if err != nil {
		return nil, err
	}
	if cs.m == nil {
		cs.m = map[string]*cache.Cache{}
	}
	cs.m[key] = c
	return c, nil
}

// close waits for the pending fills of every cache and stops their
// writers: no goroutine writes into a cache directory afterwards.
func (cs *caches) close() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.m {
		c.Close()
	}
}

// CacheStats returns the statistics of every cache directory the
// process's scans opened.
func (p *Process) CacheStats() []cache.Stats {
	p.caches.mu.Lock()
	cs := make([]*cache.Cache, 0, len(p.caches.m))
	for _, c := range p.caches.m {
		cs = append(cs, c)
	}
	p.caches.mu.Unlock()
	out := make([]cache.Stats, len(cs))
	for i, c := range cs {
		out[i] = c.Stats()
	}
	slices.SortFunc(out, func(a, b cache.Stats) int { return strings.Compare(a.Dir, b.Dir) })
	return out
}

// cacheUse is one scan's (or bind's) use of the cache: the versions it
// checked, each once, and its hits.
type cacheUse struct {
	c   *cache.Cache
	ctx context.Context
	// versions are the objects' version checks, each made once; the
	// first scan shares bind's, whose prefetches may still run.
	versions *versionSet
	// listed: the versions bind's listing gave (Chunk.Listed) stand for
	// checks. Bind's use and the first scan's only: a later scan of the
	// plan may come any time after the listing, and checks anew.
	listed bool

	// hits counts the ranges served from the cache and their bytes;
	// bind's and the first scan's share it, and fills.
	hits *cacheHits
	// fills are the writes of the ranges fetched, in the background: the
	// scan decodes its bytes at once, and its end waits for them (bounded
	// by cache.FillBytes), so that a scan that returned has stored what
	// it read.
	fills *cache.FillGroup
}

// cacheHits counts the ranges a scan read from the cache, and their bytes.
type cacheHits struct{ n, bytes atomic.Int64 }

// versionSet maps an object to its version check. Its lock is its own,
// not a cacheUse's: bind's and the first scan's cacheUse share one set.
type versionSet struct {
	mu sync.Mutex
	m  map[string]*versionCheck
}

// versionCheck is one object's version, once known (done closed).
type versionCheck struct {
	done    chan struct{}
	version string
	err     error
	// answered is the version its request's answer gave (the request's
	// callback sets it on an IO worker), made the version by finish: a
	// check ended otherwise (failOpen) is not written by a late answer.
	answered string
}

func newCacheUse(ctx context.Context, c *cache.Cache) *cacheUse {
	return &cacheUse{c: c, ctx: ctx, versions: &versionSet{m: map[string]*versionCheck{}}, hits: &cacheHits{},
		fills: c.NewFillGroup()}
}

// versionRequest is the request for the version of object name of st,
// whose answer finish makes vc's.
func versionRequest(st store.Store, name string, prio iosched.Priority, vc *versionCheck) iosched.Request {
	return iosched.Request{Store: st, Name: name, Priority: prio, Version: func(v string) { vc.answered = v }}
}

// claim returns object's check and whether the caller is to make it (the
// first to ask); the others wait for it (wait).
func (cu *cacheUse) claim(object string) (*versionCheck, bool) {
	cu.versions.mu.Lock()
	defer cu.versions.mu.Unlock()
	if vc := cu.versions.m[object]; vc != nil {
		return vc, false
	}
	vc := &versionCheck{done: make(chan struct{})}
	cu.versions.m[object] = vc
	return vc, true
}

// asked returns object's check if one was made or begun (nil: none).
func (cu *cacheUse) asked(object string) *versionCheck {
	cu.versions.mu.Lock()
	defer cu.versions.mu.Unlock()
	return cu.versions.m[object]
}

// wait returns vc's version once it is known.
func (cu *cacheUse) wait(vc *versionCheck) (string, error) {
	select {
	case <-vc.done:
		return vc.version, vc.err
	case <-cu.ctx.Done():
		return "", cu.ctx.Err()
	}
}

// finish ends vc with the outcome of its request (b's).
func (cu *cacheUse) finish(vc *versionCheck, b *iosched.Batch) {
	_, vc.err = b.Wait()
	if vc.err == nil {
		vc.version = vc.answered
	}
	cu.c.Validated(1)
	close(vc.done)
}

// version returns the version of object name of st, asked once per
// cacheUse (the callers for the same object wait for the one request),
// through sched's queue at priority prio like the object's GETs.
func (cu *cacheUse) version(object string, sched *iosched.Scheduler, st store.Store, name string, prio iosched.Priority) (string, error) {
	vc, mine := cu.claim(object)
	if mine {
		cu.finish(vc, sched.Submit(cu.ctx, []iosched.Request{versionRequest(st, name, prio, vc)}))
	}
	return cu.wait(vc)
}

// givenVersion is the version chunk c's ranges are looked up by that
// needs no request: the catalog's, else, in bind's and the first scan's
// use, the one bind's listing gave (as good as a check, made moments
// before; a range fetched is stored under its GET's version all the same,
// so that an object written since the listing leaves nothing under the
// listed version); "" when the store is to be asked.
func (cu *cacheUse) givenVersion(c *Chunk) string {
	if v := catalogVersion(c); v != "" {
		return v
	}
	if cu.listed {
		return c.Listed
	}
	return ""
}

// lookupVersion is the version chunk c's ranges of object (name of st)
// are looked up by: givenVersion, else the scan's one check of the
// object, waited for (made ahead, learned from a GET, or asked now on
// sched at priority prio), made only of an object the cache knows. ""
// means none: an object the cache does not know, or a check that failed
// or gave no version (the ranges are fetched, and the GET reports what is
// wrong with the object, if anything).
func (cu *cacheUse) lookupVersion(c *Chunk, object string, sched *iosched.Scheduler, st store.Store, name string, prio iosched.Priority) string {
	if v := cu.givenVersion(c); v != "" {
		return v
	}
	if vc := cu.asked(object); vc != nil {
		v, _ := cu.wait(vc)
		return v
	}
	if !cu.c.Known(object) {
		cu.learned(object, "") // its other reads need not ask the notes again
		return ""
	}
	v, _ := cu.version(object, sched, st, name, prio)
	return v
}

// catalogVersion is the version chunk c's ranges are cached under when
// its catalog row vouches for one (Chunk.Version), else "".
func catalogVersion(c *Chunk) string {
	if c.Version == "" {
		return ""
	}
	return "catalog:" + c.Version
}

// objectKey is how the cache names object name of st: the S3 endpoint
// tells apart objects of one s3:// URL; the URL is shown without
// credentials, and the version does the rest.
func (p *Plan) objectKey(st store.Store, name string) string {
	return p.cfg.Store.S3Endpoint + "\x00" + st.URL(name)
}

// checkVersionsAhead checks, at the scan's start, the versions of its
// objects that carry no catalog version (nor, in the scan after bind, a
// listed one) and that the cache filled before (those bind read or
// checked are checked already: see checkVersionsAtBind). Where a store
// can tell many objects' versions by
// listing them (store.VersionLister: dozens of objects of one bucket, a
// listing page each thousand), they are listed; the others, and those
// the listings do not show, get one request for the headers each, on
// the objects' schedulers with the others' GETs, in catalog order (the
// priority of the object's first chunk). A chunk waits for its object's
// check only if it comes before the check is done, so that the checks
// cost a round trip or two with a listing, objects ÷ slots without,
// however few chunks the budget lets run at once. Each request is a
// batch of its own: one object that fails its check (gone, refused)
// must not cancel the others'.
func (s *Scan) checkVersionsAhead() {
	if s.cache == nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.guard()
		s.plan.checkVersions(s.ctx, s.cache, s.id, 0, s.guard)
	}()
}

// checkVersionsAtBind begins, as bind begins to read, the checks of the
// first objects checkVersionsAhead would check: a wave of them (the
// catalog's first objects, known to the cache or not), of which bind's
// own check of the first object is one, so that the scan's first
// chunks do not wait for a round trip after bind's. The wave is the
// scan's max_parallel_io less one slot for bind's read of the first
// chunk (its requests are not the scan's: see fetchAtBind): bind's
// prefetches wait for their checks, so bind never has more requests in
// flight than max_parallel_io, and once the scan starts, the checks still
// running count in its share (they are the scan's query). Only where no
// chunk can be dropped after bind (as for bind's prefetches): a pruned
// object costs no request. The checks end on their own, or with the
// statement; the first scan shares them (see useCache), waits for those
// its chunks need and checks the rest.
func (p *Plan) checkVersionsAtBind(ctx context.Context, cu *cacheUse) {
	slots := p.bindParallelism()
	if slots < 2 {
		return // no slot beside bind's own read (0: bind reports why)
	}
	// No scan yet to fail: a panic fails the checks it left open (their
	// chunks are then fetched), and goes no further.
	guard := func() { recover() }
	go func() {
		defer guard()
		p.checkVersions(ctx, cu, p.id, slots-1, guard)
	}()
}

// checkVersions makes the checks of checkVersionsAhead for the scan with
// id query (its ctx and cache use cu), of the first limit objects (0: all).
// guard is deferred by each goroutine it starts (the scan's, or bind's).
func (p *Plan) checkVersions(ctx context.Context, cu *cacheUse, query uint64, limit int, guard func()) {
	var checks []*objectCheck
	defer func() { failOpen(checks) }() // a panic's: those claimed, not sent
	seen := map[string]bool{}
	// The scan's max_parallel_io on h's scheduler.
	slots := func(h *iosched.Hold) int {
		if n := p.cfg.MaxParallelIO; n > 0 {
			return n
		}
		return h.Scheduler.Parallelism()
	}
	// The checks go out in batches as the catalog is read, at most
	// max_parallel_io batches at once: the first chunks need not wait
	// for the whole of a catalog of a million objects.
	var batches sync.WaitGroup
	var sem chan struct{}
	send := func(checks []*objectCheck) {
		if len(checks) == 0 {
			return
		}
		if sem == nil {
			sem = make(chan struct{}, checks[0].slots)
		}
		sem <- struct{}{}
		batches.Go(func() {
			defer func() { <-sem }()
			defer guard()
			defer failOpen(checks) // a panic's: those not ended
			if p.cfg.DebugPanic == "check" && limit > 0 {
				panic("debug_panic at a version check of bind's")
			}
			unlisted := cu.listVersions(checks)
			for _, q := range unlisted {
				q.b = q.h.Scheduler.Submit(cu.ctx, []iosched.Request{versionRequest(q.h.Store, q.h.Name, q.prio, q.vc)})
			}
			for _, q := range unlisted {
				cu.finish(q.vc, q.b)
				q.h.Release()
			}
		})
	}
	for _, c := range p.Chunks.All() {
		if limit > 0 && len(seen) == limit {
			break
		}
		if cu.givenVersion(&c) != "" || seen[c.URL] || ctx.Err() != nil {
			continue
		}
		seen[c.URL] = true
		h, err := openObject(c.URL, &p.cfg)
		if err != nil {
			continue // the chunk's own read reports it
		}
		object := p.objectKey(h.Store, h.Name)
		if _, ok := h.Store.(store.Versioner); !ok {
			h.Release() // not cached
			continue
		}
		if cu.asked(object) != nil {
			h.Release() // checked, learned or being checked
			continue
		}
		if !cu.c.Known(object) {
			// Never cached: its reads need not ask the cache's notes again.
			cu.learned(object, "")
			h.Release()
			continue
		}
		vc, mine := cu.claim(object)
		if !mine {
			h.Release()
			continue
		}
		checks = append(checks, &objectCheck{vc: vc, h: h, prio: iosched.Priority{Query: query, Seq: int64(c.Row)}, slots: slots(h)})
		if len(checks) == checkBatch {
			send(checks)
			checks = nil
		}
	}
	send(checks)
	checks = nil
	batches.Wait()
}

// failOpen ends the checks of checks still open with an error (the
// version unknown: their chunks are fetched). Only the goroutine that
// ends them calls it: after a panic, nothing else ends them (a request's
// late answer sets only answered).
func failOpen(checks []*objectCheck) {
	for _, q := range checks {
		select {
		case <-q.vc.done:
		default:
			q.vc.version, q.vc.err = "", errors.New("remote_segments: internal error: a version check was not made")
			close(q.vc.done)
		}
	}
}

// checkBatch is how many objects' checks checkVersionsAhead sends at a
// time: a listing page's keys.
const checkBatch = 1000

// objectCheck is one object's version check of checkVersionsAhead.
type objectCheck struct {
	vc   *versionCheck
	h    *iosched.Hold // released once the check is done
	prio iosched.Priority
	// slots is the scan's max_parallel_io on the object's scheduler.
	slots int
	b     *iosched.Batch // the request for its headers, if one is sent
}

// listVersions ends the checks of checks whose objects a listing of
// their store shows (store.VersionLister), and returns the others, in
// their order. The stores' listings run at once.
func (cu *cacheUse) listVersions(checks []*objectCheck) []*objectCheck {
	byStore := map[store.VersionLister][]*objectCheck{}
	var rest []*objectCheck
	for _, q := range checks {
		if vl, ok := q.h.Store.(store.VersionLister); ok {
			byStore[vl] = append(byStore[vl], q)
		} else {
			rest = append(rest, q)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for vl, qs := range byStore {
		wg.Go(func() {
			names := make([]string, len(qs))
			for i, q := range qs {
				names[i] = q.h.Name
			}
			versions, sent := vl.ListVersions(cu.ctx, names, qs[0].slots)
			cu.c.Validated(int64(sent))
			var unlisted []*objectCheck
			for _, q := range qs {
				if v, ok := versions[q.h.Name]; ok {
					q.vc.version = v
					close(q.vc.done)
					q.h.Release()
				} else {
					unlisted = append(unlisted, q)
				}
			}
			mu.Lock()
			rest = append(rest, unlisted...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.SortFunc(rest, func(a, b *objectCheck) int { return cmp.Compare(a.prio.Seq, b.prio.Seq) })
	return rest
}

// learned notes version as object's for the rest of the scan, from the
// answer of one of its GETs: the scan need not ask again.
func (cu *cacheUse) learned(object, version string) {
	cu.versions.mu.Lock()
	defer cu.versions.mu.Unlock()
	if cu.versions.m[object] == nil {
		vc := &versionCheck{done: make(chan struct{}), version: version}
		close(vc.done)
		cu.versions.m[object] = vc
	}
}

// runFunc runs one vector of requests on a scheduler and returns their
// bytes in order.
type runFunc = func(*iosched.Scheduler, []iosched.Request) ([][]byte, error)

// viaCache wraps run, which reads ranges of chunk c's object, so that the
// ranges cu's cache holds are read from it and the others are stored
// after run fetched them. With no cache (cu nil) it is run. prepare, if
// not nil, is applied to the requests that read the cache's entries as the
// caller applied it to reqs (fetchWhole's): where the bytes go, and a
// mapping of the entry where the chunk may be read from one, as a local
// file is.
//
// The version the ranges are looked up by is the catalog's, else the
// listed one in the scan after bind, else the one the store gives now
// (one check per object and scan, see checkVersionsAhead), asked only of
// objects the cache has filled before (cache.Known): a scan of objects it
// never saw pays no check. Fetched ranges are stored
// under the version their own answers gave (store.RangeVersioner), never
// one asked before, so that an object overwritten between the check and
// the GET cannot leave the new bytes under the old version.
func (p *Plan) viaCache(cu *cacheUse, c *Chunk, prepare func(*iosched.Request), run runFunc) runFunc {
	if cu == nil {
		return run
	}
	return func(sched *iosched.Scheduler, reqs []iosched.Request) ([][]byte, error) {
		if len(reqs) == 0 {
			return run(sched, reqs)
		}
		st, name := reqs[0].Store, reqs[0].Name
		if _, ok := st.(store.Versioner); !ok {
			return run(sched, reqs) // a local file: nothing to gain
		}
		for _, r := range reqs {
			if r.Name != name || r.Store != st {
				panic("scanner: one vector of cached requests names two objects")
			}
		}
		object := p.objectKey(st, name)
		out := make([][]byte, len(reqs))
		miss := make([]int, len(reqs))
		for i := range miss {
			miss[i] = i
		}
		version := cu.lookupVersion(c, object, sched, st, name, reqs[0].Priority)
		if version != "" {
			miss = p.readCached(cu, object, version, reqs, out, prepare)
		} else {
			cu.c.Missed(int64(len(reqs)))
		}
		if len(miss) == 0 {
			return out, nil
		}
		mreqs := make([]iosched.Request, len(miss))
		for j, i := range miss {
			mreqs[j] = reqs[i]
		}
		var rec *recordingStore
		if c.Version == "" {
			rv, ok := st.(store.RangeVersioner)
			if !ok {
				return p.fetchUncached(sched, run, reqs, mreqs, miss, out)
			}
			rec = &recordingStore{Store: st, rv: rv}
			for j := range mreqs {
				mreqs[j].Store = rec
			}
		}
		data, err := run(sched, mreqs)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			if version = rec.result(); version != "" {
				cu.learned(object, version)
			}
		}
		for j, i := range miss {
			out[i] = data[j]
			if version != "" {
				// Queued, not written: a fill dropped (the queue full)
				// or failed is counted; the scan has its bytes. The
				// object is noted (cache.Known) once its first range
				// is stored.
				cu.fills.Fill(cache.Key{Object: object, Version: version, Offset: reqs[i].Offset, Length: reqs[i].Length},
					data[j], rec != nil && j == 0)
			}
		}
		return out, nil
	}
}

// fetchUncached runs mreqs (reqs at indexes miss) and places their bytes
// in out.
func (p *Plan) fetchUncached(sched *iosched.Scheduler, run runFunc, reqs, mreqs []iosched.Request, miss []int, out [][]byte) ([][]byte, error) {
	data, err := run(sched, mreqs)
	if err != nil {
		return nil, err
	}
	for j, i := range miss {
		out[i] = data[j]
	}
	return out, nil
}

// readCached reads the ranges of reqs the cache holds for object at
// version into out, and returns the indexes of the others (to fetch).
func (p *Plan) readCached(cu *cacheUse, object, version string, reqs []iosched.Request, out [][]byte, prepare func(*iosched.Request)) []int {
	entries := make([]cache.Entry, len(reqs))
	var hit, miss []int
	for i, r := range reqs {
		if e, ok := cu.c.Lookup(cache.Key{Object: object, Version: version, Offset: r.Offset, Length: r.Length}); ok {
			entries[i] = e
			hit = append(hit, i)
		} else {
			miss = append(miss, i)
		}
	}
	if len(hit) == 0 {
		return miss
	}
	bad, err := p.readEntries(cu, reqs, entries, hit, out, prepare)
	if err != nil {
		// Read from the store instead (an entry evicted since its
		// lookup): into fresh memory, since the failed batch may still
		// write into the requests' buffers.
		for _, i := range hit {
			reqs[i].Buffer, reqs[i].Alloc, out[i] = nil, nil, nil
		}
		bad = hit
	}
	miss = append(miss, bad...)
	slices.Sort(miss)
	return miss
}

// recordingStore is a remote store whose GETs note the version of the
// object they read: the version the fetched ranges are stored under.
type recordingStore struct {
	store.Store
	rv store.RangeVersioner

	mu      sync.Mutex
	version string
	mixed   bool // answers of two versions, or one without
	// recent: an answer of an object written moments before it, whose
	// version a write to come may keep (store.Recent).
	recent bool
}

// GetRange reads as the store does and notes the answer's version.
func (r *recordingStore) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	body, _, err := r.GetRangeVersion(ctx, name, off, length)
	return body, err
}

// GetRangeVersion is GetRange, and the answer's version: the scheduler
// checks with it that a range read in two answers is of one version.
func (r *recordingStore) GetRangeVersion(ctx context.Context, name string, off, length int64) (io.ReadCloser, string, error) {
	body, v, err := r.rv.GetRangeVersion(ctx, name, off, length)
	if err == nil {
		r.mu.Lock()
		r.recent = r.recent || store.Recent(body)
		switch {
		case v == "" || (r.version != "" && v != r.version):
			r.mixed = true
		default:
			r.version = v
		}
		r.mu.Unlock()
	}
	return body, v, err
}

// result is the one version every answer gave, or "" if they differed
// (the object changed while it was read: its ranges are not stored), gave
// none, or one was of an object written moments before (its ranges are
// stored by a later scan).
func (r *recordingStore) result() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mixed || r.recent {
		return ""
	}
	return r.version
}

// readEntries reads the entries of reqs at indexes hit into out, on the
// local file domain's scheduler, through the store the cache names for
// each (its own, which checks an entry as it reads it, or the store of
// local files), and checks each; it returns the indexes whose bytes
// failed the check (those entries are dropped). An error means no entry
// was read.
func (p *Plan) readEntries(cu *cacheUse, reqs []iosched.Request, entries []cache.Entry, hit []int, out [][]byte, prepare func(*iosched.Request)) ([]int, error) {
	h, err := p.cfg.Process.domains.Open(entries[hit[0]].Path, store.Options{}, iosched.Options{})
	if err != nil {
		return nil, err
	}
	defer h.Release()
	lreqs := make([]iosched.Request, len(hit))
	for j, i := range hit {
		e := entries[i]
		lreqs[j] = iosched.Request{Store: cu.c.StoreFor(e, h.Store), Name: e.Name(), Offset: e.Offset, Length: e.Length,
			Priority: reqs[i].Priority, Buffer: reqs[i].Buffer, Alloc: reqs[i].Alloc}
		if prepare != nil {
			prepare(&lreqs[j])
		}
	}
	data, err := h.Scheduler.Fetch(cu.ctx, lreqs)
	if err != nil {
		return nil, err
	}
	var bad []int
	for j, i := range hit {
		if cu.c.Check(entries[i], data[j]) != nil {
			bad = append(bad, i)
			continue
		}
		out[i] = data[j]
		n := int64(len(data[j]))
		cu.c.Hit(n)
		cu.hits.n.Add(1)
		cu.hits.bytes.Add(n)
	}
	return bad, nil
}

// cacheUseOf is the cache use of the scan with id query (0: bind's), nil
// when the scan has no cache.
func (p *Plan) cacheUseOf(query uint64) *cacheUse {
	if p.cache == nil {
		return nil
	}
	p.firstMu.Lock()
	defer p.firstMu.Unlock()
	if query == 0 {
		query = p.id
	}
	return p.cacheUses[query]
}

// useCache sets up the cache uses of a scan with id query, whose context
// is ctx: the first scan keeps the versions bind checked moments before
// (its prefetches and its first chunk were read with them), a later scan
// of the plan checks them anew. It returns the function that ends it.
func (p *Plan) useCache(ctx context.Context, query uint64) (*cacheUse, func()) {
	if p.cache == nil {
		return nil, func() {}
	}
	p.firstMu.Lock()
	defer p.firstMu.Unlock()
	cu := newCacheUse(ctx, p.cache)
	if bound := p.cacheUses[query]; bound != nil && query == p.id {
		// Bind's prefetches may still be reading: they count into the
		// same hits.
		cu.versions = bound.versions
		cu.listed = bound.listed
		cu.hits = bound.hits
		cu.fills = bound.fills
	}
	p.cacheUses[query] = cu
	return cu, func() {
		p.firstMu.Lock()
		delete(p.cacheUses, query)
		p.firstMu.Unlock()
		// The scan's reads are over: what it fetched is written before
		// its end, so that the next query finds it.
		cu.fills.Wait()
	}
}

// cacheColumns are the columns of remote_segments_cache(): one row per
// cache directory the process's scans opened.
var cacheColumns = []tableColumn[cache.Stats]{
	{"cache_dir", arrow.BinaryTypes.String, func(c *cache.Stats) any { return c.Dir }},
	{"cache_size", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Size }},
	{"entries", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Entries }},
	{"bytes", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Bytes }},
	{"hits", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Hits }},
	{"hit_bytes", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.HitBytes }},
	{"misses", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Misses }},
	{"fills", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Fills }},
	{"not_admitted", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Refused }},
	{"evictions", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Evictions }},
	{"validations", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Validations }},
	{"corrupt", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Corrupt }},
	{"fill_errors", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Errors }},
	{"fills_dropped", arrow.PrimitiveTypes.Int64, func(c *cache.Stats) any { return c.Dropped }},
}

// CacheSchema is the schema of remote_segments_cache().
func CacheSchema() *arrow.Schema { return tableSchema(cacheColumns) }

// CacheTable is the process's cache directories as the rows of
// remote_segments_cache(), in CacheSchema: entries and bytes on disk (of
// every process sharing the directory), and this process's hits, misses,
// fills, refusals, evictions, version checks and corrupt entries found.
func (p *Process) CacheTable() arrow.RecordBatch {
	return buildTable(CacheSchema(), cacheColumns, p.CacheStats())
}
