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
	"path"
	"strings"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// ErrNoChunks is returned when a source resolves to no chunk at all.
var ErrNoChunks = errors.New("no chunks")

// Source names what a scan reads: Rows (inline catalog rows) if non-nil,
// else URLs if non-nil, else Path (a catalog file, glob, prefix or object
// URL).
type Source struct {
	Path string
	Rows []Row
	URLs []string
}

// Opener returns a hold on rawURL's store domain (its scheduler and store,
// and the object's name in it), or an error that refuses the URL. The
// caller releases the hold.
type Opener func(rawURL string) (*iosched.Hold, error)

// Resolve turns src into chunks, in catalog order: inline rows, a list of
// URLs, a catalog file, a glob, a prefix or one object. Every object it
// reads or lists is opened through open. On failure it returns an error
// naming the source or the catalog row (a *Error for a catalog's content).
func Resolve(ctx context.Context, src Source, open Opener) ([]Chunk, error) {
	switch {
	case src.Rows != nil:
		return FromRows(src.Rows, "", "(LIST argument)")
	case src.URLs != nil:
		if len(src.URLs) == 0 {
			return nil, fmt.Errorf("remote_segments: %w: the LIST of URLs is empty", ErrNoChunks)
		}
		rows := make([]Row, len(src.URLs))
		for i, u := range src.URLs {
			rows[i] = Row{colURL: u}
		}
		return FromRows(rows, "", "(LIST argument)")
	}
	source := strings.TrimSpace(src.Path)
	if source == "" {
		return nil, fmt.Errorf("remote_segments: source is empty: give a path, glob, URL, catalog file or LIST")
	}
	if f := formatOf(source); f != 0 && !hasGlobMeta(source) {
		return readCatalog(ctx, open, source, f)
	}
	h, err := open(source)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	st, name := h.Store, h.Name
	var objs []store.ObjectInfo
	switch {
	case hasGlobMeta(name):
		objs, err = store.Glob(ctx, st, name)
		if err == nil && len(objs) == 0 {
			err = fmt.Errorf("%w: nothing matches %q", ErrNoChunks, source)
		}
	case strings.HasSuffix(name, "/"):
		objs, err = st.List(ctx, name)
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
			if listed, lerr := st.List(ctx, name+"/"); lerr == nil && len(listed) > 0 {
				objs, err = listed, nil
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("remote_segments: %w", err)
	}
	chunks := make([]Chunk, len(objs))
	for i, o := range objs {
		u := st.URL(o.Name)
		chunks[i] = Chunk{URL: u, SegmentID: segmentOf(u), ChunkID: chunkIDOf(u),
			Length: -1, Size: o.Size, NumRows: -1, DecodedBytes: -1, Row: i}
	}
	return chunks, nil
}

// readCatalog fetches and parses a catalog file.
func readCatalog(ctx context.Context, open Opener, source string, f Format) ([]Chunk, error) {
	h, err := open(source)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	st, name := h.Store, h.Name
	data, err := h.Scheduler.Fetch(ctx, []iosched.Request{{Store: st, Name: name, Offset: 0, Length: -1}})
	if err != nil {
		return nil, &Error{Catalog: source, Row: -1, Err: err}
	}
	base := source
	if !strings.Contains(base, "://") {
		base = st.URL(name) // an absolute file:// URL, so relative rows resolve
	}
	chunks, err := Parse(data[0], f, base)
	var ce *Error
	if errors.As(err, &ce) {
		ce.Catalog = source
	}
	return chunks, err
}

func hasGlobMeta(p string) bool { return strings.ContainsAny(p, "*?[") }

// segmentOf is the value of the last "segment=<id>" element of the URL's
// path, or else the name of the object's parent folder.
func segmentOf(u string) string {
	p := u
	if i := strings.Index(p, "://"); i >= 0 {
		p = p[i+3:]
		if j := strings.IndexByte(p, '/'); j >= 0 {
			p = p[j:]
		}
	}
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
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

// chunkIDOf is the object's name without its extension.
func chunkIDOf(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	b := path.Base(u)
	return strings.TrimSuffix(b, path.Ext(b))
}
