// Package catalog turns a remote_segments source into the list of chunks a
// scan reads: a catalog file in one of three formats (Parquet, CSV, JSON),
// inline catalog rows, a LIST of URLs, a glob, a prefix or one object.
//
// It owns the catalog's columns, the formats and the rules that name a
// chunk's segment and id; it reads catalog files and listings through the
// store domain an Opener hands it. It must not import scanner, arrowipc or
// budget: it produces chunks and knows nothing of what is in them.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// ErrNoChunks is returned when a source resolves to no chunk at all.
var ErrNoChunks = errors.New("no chunks")

// ErrTooLarge is wrapped by the error of a catalog file larger than its
// limit in bytes, or a source of more chunks than its limit.
var ErrTooLarge = errors.New("catalog too large")

// The limits of a source when its Source leaves them 0. A catalog file is
// read whole before it is parsed, and every row becomes a chunk the scan
// plans: without a bound, a catalog served as an endless HTTP body or a
// listing that never ends grows memory until the process dies. A catalog
// row is a URL and a few numbers, so DefaultMaxBytes holds millions of
// rows in any format, more than DefaultMaxChunks. That is as many objects
// as one listing may return.
const (
	DefaultMaxBytes  = 256 << 20            // bytes of a catalog file
	DefaultMaxChunks = store.MaxListObjects // chunks of a source: catalog rows, URLs or listed objects
)

// Source names what a scan reads: Rows (inline catalog rows) if non-nil,
// else URLs if non-nil, else Path (a catalog file, glob, prefix or object
// URL).
type Source struct {
	Path string
	Rows []Row
	URLs []string
	// MaxBytes bounds the size of a catalog file (0: DefaultMaxBytes),
	// MaxChunks the chunks the source resolves to (0: DefaultMaxChunks);
	// beyond either, Resolve fails with ErrTooLarge. A listing is also
	// bounded by store.MaxListObjects.
	MaxBytes  int64
	MaxChunks int
	// Parallelism bounds the listings a glob or prefix source runs at
	// once (the query's max_parallel_io); 0 means the parallelism of the
	// store domain's scheduler. Either is lowered to the scheduler's
	// throttling limit: a domain that answers SlowDown gets no more
	// listings at once than it gets GETs.
	Parallelism int
	// Keep, when set, is asked of every chunk as the source is read: the
	// list holds only those it keeps (a shard's), plus the source's first
	// chunk aside (List.First). The limits count every row.
	Keep func(c *Chunk) bool
	// Listed keeps the versions a glob's or prefix's listing gives
	// (Chunk.Listed), which a local cache uses; without it they are not
	// kept (a few dozen bytes an object).
	Listed bool
	// First, when set, is called at most once, on a goroutine of a glob's
	// or prefix's listing, with the list of its first page's first objects
	// (at most four times the parallelism, plus one), while the rest is
	// listed (see store.GlobFirst): the source's first chunks, made as
	// Resolve makes them, unless the listing changes before its end. It
	// must not block.
	First func(*List)
}

func (s *Source) maxBytes() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return DefaultMaxBytes
}

func (s *Source) maxChunks() int {
	if s.MaxChunks > 0 {
		return s.MaxChunks
	}
	return DefaultMaxChunks
}

// tooManyChunks is the error of the source called name: n chunks, more
// than max.
func tooManyChunks(name string, n, max int) error {
	return &Error{Catalog: name, Row: -1, Err: fmt.Errorf("%w: %d chunks, more than %d (the most a source may have)", ErrTooLarge, n, max)}
}

// Opener returns a hold on rawURL's store domain (its scheduler and store,
// and the object's name in it), or an error that refuses the URL. The
// caller releases the hold.
type Opener func(rawURL string) (*iosched.Hold, error)

// Resolve turns src into its list of chunks, in catalog order: inline
// rows, a list of URLs, a catalog file, a glob, a prefix or one object.
// Every object it reads or lists is opened through open. On failure it
// returns an error naming the source or the catalog row (a *Error for a
// catalog's content).
func Resolve(ctx context.Context, src Source, open Opener) (*List, error) {
	switch {
	case src.Rows != nil:
		if len(src.Rows) > src.maxChunks() {
			return nil, tooManyChunks("(LIST argument)", len(src.Rows), src.maxChunks())
		}
		return fromRows(src.Rows, "", "(LIST argument)", src.Keep, src.maxChunks())
	case src.URLs != nil:
		if len(src.URLs) == 0 {
			return nil, fmt.Errorf("remote_segments: %w: the LIST of URLs is empty", ErrNoChunks)
		}
		if len(src.URLs) > src.maxChunks() {
			return nil, tooManyChunks("(LIST argument)", len(src.URLs), src.maxChunks())
		}
		rows := make([]Row, len(src.URLs))
		for i, u := range src.URLs {
			rows[i] = Row{colURL: u}
		}
		return fromRows(rows, "", "(LIST argument)", src.Keep, src.maxChunks())
	}
	source := strings.TrimSpace(src.Path)
	if source == "" {
		return nil, fmt.Errorf("remote_segments: source is empty: give a path, glob, URL, catalog file or LIST")
	}
	if f := formatOf(source); f != 0 && !hasGlobMeta(source) {
		return readCatalog(ctx, open, source, f, src)
	}
	h, err := open(source)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	st, name := h.Store, h.Name
	parallel := src.Parallelism
	if parallel <= 0 {
		parallel = h.Scheduler.Parallelism()
	}
	parallel = min(parallel, h.Scheduler.Stats().Limit)
	var first func([]store.ObjectInfo)
	if src.First != nil {
		first = func(objs []store.ObjectInfo) {
			// Bind reads the first chunk and at most parallel - 1 more
			// ahead; four times that leaves room for a shard's. A page
			// of a million names (a server may send one) is not built
			// twice.
			objs = dropMarkers(objs)
			objs = objs[:min(len(objs), 4*parallel+1)]
			if l, err := listed(objs, source, st, src); len(objs) > 0 && err == nil {
				src.First(l)
			}
		}
	}
	var objs []store.ObjectInfo
	switch {
	case hasGlobMeta(name):
		objs, err = store.GlobFirst(ctx, st, name, parallel, first)
		objs = dropMarkers(objs)
		if err == nil && len(objs) == 0 {
			err = fmt.Errorf("%w: nothing matches %q", ErrNoChunks, source)
		}
	case strings.HasSuffix(name, "/"):
		objs, err = store.ListTreeFirst(ctx, st, name, parallel, first)
		objs = dropMarkers(objs)
		if err == nil && len(objs) == 0 {
			err = fmt.Errorf("%w: nothing under %q", ErrNoChunks, source)
		}
	default:
		// One object, or a folder named without its trailing slash.
		var size int64
		size, err = st.Size(ctx, name)
		if err == nil {
			objs = []store.ObjectInfo{{Name: name, Size: size}}
		} else if st.IsNotFound(err) {
			if l, lerr := store.ListTree(ctx, st, name+"/", parallel); lerr == nil {
				if l = dropMarkers(l); len(l) > 0 {
					objs, err = l, nil
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("remote_segments: %w", err)
	}
	return listed(objs, source, st, src)
}

// dropMarkers drops, in place, the folder markers of a listing: empty
// objects whose names end in '/', which S3's console (and the tools that
// mimic folders on S3) put where a folder is made. They are no chunk: a
// local copy of the same tree has folders there, and a scan would fail on
// the first ("the object is empty"), often the prefix's own ("ds/").
func dropMarkers(objs []store.ObjectInfo) []store.ObjectInfo {
	return slices.DeleteFunc(objs, func(o store.ObjectInfo) bool { return o.Size == 0 && strings.HasSuffix(o.Name, "/") })
}

// listed makes the list of the objects st listed for source.
func listed(objs []store.ObjectInfo, source string, st store.Store, src Source) (*List, error) {
	if len(objs) > src.maxChunks() {
		return nil, tooManyChunks(source, len(objs), src.maxChunks())
	}
	b := newListBuilder("", source, src.Keep, src.maxChunks())
	b.grow(len(objs))
	for _, o := range objs {
		if !src.Listed {
			o.Version = ""
		}
		if err := b.addObject(st.URL(o.Name), o.Size, o.Version); err != nil {
			return nil, err
		}
	}
	return b.finish()
}

// readCatalog fetches and parses a catalog file of at most src.maxBytes()
// bytes and src.maxChunks() rows.
func readCatalog(ctx context.Context, open Opener, source string, f Format, src Source) (*List, error) {
	h, err := open(source)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	st, name := h.Store, h.Name
	// The size a store reports (Content-Length, a HEAD) is not trusted:
	// the body is read to its end through a cap that fails past maxBytes.
	capped := &cappedStore{Store: st, max: src.maxBytes()}
	data, err := h.Scheduler.Fetch(ctx, []iosched.Request{{Store: capped, Name: name, Offset: 0, Length: -1}})
	if err != nil {
		return nil, &Error{Catalog: source, Row: -1, Err: err}
	}
	// A catalog named by a path resolves its relative rows as paths
	// (absolute: name is), as its absolute rows are taken; one named by a
	// URL, as URL references (resolveURL).
	base := source
	if !strings.Contains(base, "://") {
		base = name
	}
	chunks, err := parse(data[0], f, base, src.maxChunks(), src.Keep)
	var ce *Error
	if errors.As(err, &ce) {
		ce.Catalog = source
	}
	return chunks, err
}

// cappedStore is a store whose GET bodies fail with a *sizeError once they
// go past max bytes.
type cappedStore struct {
	store.Store
	max int64
}

func (s *cappedStore) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	body, err := s.Store.GetRange(ctx, name, off, length)
	if err != nil {
		return nil, err
	}
	return &cappedBody{body: body, left: s.max, max: s.max}, nil
}

// cappedBody passes on at most max bytes of body. When they are used up it
// reads one byte more on its own, and ends the read it was in with io.EOF
// if the body ended there, or a *sizeError if it went on: the reader never
// needs room for a byte past max to learn the body is too large.
type cappedBody struct {
	body      io.ReadCloser
	left, max int64
}

// LenHint passes on the length the store gave for the body (see
// store.LenHint), at most max: -1 when it gave none.
func (b *cappedBody) LenHint() int64 {
	if h, ok := b.body.(store.LenHint); ok && h.LenHint() >= 0 {
		return min(h.LenHint(), b.max)
	}
	return -1
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, b.probe()
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	if b.left == 0 && err == nil {
		err = b.probe()
	}
	return n, err
}

// probe reads one byte past the limit: io.EOF if there is none.
func (b *cappedBody) probe() error {
	var one [1]byte
	if _, err := io.ReadFull(b.body, one[:]); err != nil {
		return err
	}
	return &sizeError{max: b.max}
}

func (b *cappedBody) Close() error { return b.body.Close() }

// sizeError is the error of a catalog file larger than max bytes. It
// unwraps to ErrTooLarge, and to store.ErrUnsupported so that the
// scheduler does not retry it (store.Permanent): a retry reads as much.
type sizeError struct{ max int64 }

func (e *sizeError) Error() string {
	return fmt.Sprintf("%v: more than %d bytes (the most a catalog file may have)", ErrTooLarge, e.max)
}

func (e *sizeError) Unwrap() []error { return []error{ErrTooLarge, store.ErrUnsupported} }

func hasGlobMeta(p string) bool { return strings.ContainsAny(p, "*?[") }

// segmentOf is the value of the last "segment=<id>" element of the URL's
// path (see objectPath), or else the name of the object's parent folder.
func segmentOf(u string) string {
	p := objectPath(u)
	dirs := strings.Split(path.Dir(p), "/")
	for i := len(dirs) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(dirs[i], "segment="); ok {
			return v
		}
	}
	if d := path.Base(path.Dir(p)); d != "/" && d != "." {
		return d
	}
	return ""
}

// chunkIDOf is the object's name (see objectPath) without its extension.
func chunkIDOf(u string) string {
	b := path.Base(objectPath(u))
	return strings.TrimSuffix(b, path.Ext(b))
}

// chunkIDIn is chunkIDOf(folder + name), where folder is empty or ends in
// '/' before any query, and name holds no '/' before its query, without
// making that string: a catalog compares each row's chunk_id with it, and
// a million rows made a million strings (a sixth more peak RSS at bind).
func chunkIDIn(folder, name string) string {
	if i := strings.Index(folder, "://"); i >= 0 && !strings.EqualFold(folder[:i], "s3") {
		// As objectPath: an http(s) URL without its query and fragment,
		// a file:// or http(s):// URL's path decoded unless some escape
		// in it is not one.
		if s := strings.ToLower(folder[:i]); s == "http" || s == "https" {
			if strings.ContainsAny(folder, "?#") {
				return chunkIDOf(folder + name) // not made by a catalog's folders
			}
			if k := strings.IndexAny(name, "?#"); k >= 0 {
				if k == 0 {
					return chunkIDOf(folder + name) // the folder names it
				}
				name = name[:k]
			}
		}
		if d, err := url.PathUnescape(name); err == nil && validEscapes(folder) {
			name = d
		}
	}
	b := path.Base(name)
	return strings.TrimSuffix(b, path.Ext(b))
}

// validEscapes reports whether every '%' in s begins an escape of two hex
// digits, as url.PathUnescape requires.
func validEscapes(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return false
		}
		i += 2
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// objectPath is the path of the object u names, as its store reads it,
// for the ids made of it: a plain path, and an s3:// URL's key (after a
// '/'), as written; a file:// or http(s):// URL's path, after its host,
// decoded (an http(s) URL's without its query and fragment: cutQuery).
// So a folder "c#1" is "c#1" whether named by a path, a key or a URL
// ("c%231"; FileURL makes them so).
func objectPath(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	p := cutQuery(u)[i+3:]
	if j := strings.IndexByte(p, '/'); j >= 0 {
		p = p[j:]
	} else {
		p = "/" + p // no path: the host (a bucket) names it
	}
	if strings.EqualFold(u[:i], "s3") {
		return p
	}
	if d, err := url.PathUnescape(p); err == nil {
		p = d
	}
	return p
}
