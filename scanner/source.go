package scanner

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

// domains holds the process's schedulers and stores, one per store domain,
// shared by every scan.
var domains = iosched.NewDomains(iosched.Options{})

// openObject returns a hold on rawURL's domain: its scheduler and store,
// and the object's name in it. The caller releases it when done. A URL the
// host's sandbox does not admit (Config.Admit) is refused before any store
// is opened.
func openObject(rawURL string, cfg *Config) (*iosched.Hold, error) {
	if cfg.Admit != nil {
		if err := cfg.Admit(rawURL); err != nil {
			return nil, fmt.Errorf("remote_segments: %w", err)
		}
	}
	h, err := domains.OpenTuned(rawURL, cfg.Store, cfg.schedulerOptions())
	if err != nil {
		return nil, fmt.Errorf("remote_segments: %w", err)
	}
	return h, nil
}

// resolveSource turns the scan's source into catalog rows: inline rows, a
// list of URLs, a catalog file, a glob, a prefix or one object.
func resolveSource(ctx context.Context, cfg *Config) ([]Chunk, error) {
	switch {
	case cfg.Rows != nil:
		return ChunksFromRows(cfg.Rows, "", "(LIST argument)")
	case cfg.URLs != nil:
		if len(cfg.URLs) == 0 {
			return nil, fmt.Errorf("remote_segments: %w: the LIST of URLs is empty", ErrNoChunks)
		}
		rows := make([]Row, len(cfg.URLs))
		for i, u := range cfg.URLs {
			rows[i] = Row{colURL: u}
		}
		return ChunksFromRows(rows, "", "(LIST argument)")
	}
	source := strings.TrimSpace(cfg.Source)
	if source == "" {
		return nil, fmt.Errorf("remote_segments: source is empty: give a path, glob, URL, catalog file or LIST")
	}
	if f := catalogFormatOf(source); f != 0 && !hasGlobMeta(source) {
		return readCatalog(ctx, cfg, source, f)
	}
	h, err := openObject(source, cfg)
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
func readCatalog(ctx context.Context, cfg *Config, source string, f CatalogFormat) ([]Chunk, error) {
	h, err := openObject(source, cfg)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	st, name := h.Store, h.Name
	data, err := h.Scheduler.Fetch(ctx, []iosched.Request{{Store: st, Name: name, Offset: 0, Length: -1}})
	if err != nil {
		return nil, &CatalogError{Catalog: source, Row: -1, Err: err}
	}
	base := source
	if !strings.Contains(base, "://") {
		base = st.URL(name) // an absolute file:// URL, so relative rows resolve
	}
	chunks, err := ParseCatalog(data[0], f, base)
	var ce *CatalogError
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
