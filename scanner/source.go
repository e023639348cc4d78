package scanner

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ErrNoChunks is returned when a source resolves to no chunk at all.
var ErrNoChunks = errors.New("no chunks")

// resolveSource turns the source argument into catalog rows. This version
// knows local paths, file:// URLs, globs and directories (prefixes).
func resolveSource(source string) ([]Chunk, error) {
	if source == "" {
		return nil, fmt.Errorf("remote_segments: source is empty: give a path, glob, URL or catalog")
	}
	p, err := localPath(source)
	if err != nil {
		return nil, err
	}
	var files []string
	switch {
	case hasGlobMeta(p):
		files, err = globLocal(p)
		if err != nil {
			return nil, fmt.Errorf("remote_segments: glob %q: %w", source, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("remote_segments: %w: nothing matches %q", ErrNoChunks, source)
		}
	default:
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("remote_segments: %s: %w", source, unwrapPathError(err))
		}
		if st.IsDir() {
			files, err = walkFiles(p, func(string) bool { return true })
			if err != nil {
				return nil, fmt.Errorf("remote_segments: list %q: %w", source, err)
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("remote_segments: %w: directory %q holds no files", ErrNoChunks, source)
			}
		} else {
			files = []string{p}
		}
	}
	chunks := make([]Chunk, len(files))
	for i, f := range files {
		chunks[i] = Chunk{
			URL:          f,
			SegmentID:    segmentOf(f),
			ChunkID:      chunkIDOf(f),
			Length:       -1,
			NumRows:      -1,
			DecodedBytes: -1,
			Row:          i,
		}
	}
	return chunks, nil
}

// unwrapPathError drops the *fs.PathError wrapper whose text repeats the path.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// localPath maps a plain path or file:// URL to a filesystem path.
func localPath(source string) (string, error) {
	if !strings.Contains(source, "://") {
		return source, nil
	}
	u, err := url.Parse(source)
	if err != nil {
		return "", fmt.Errorf("remote_segments: source %q: %w", source, err)
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("remote_segments: source %q: unsupported scheme %q (this build reads file:// and local paths)", source, u.Scheme)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("remote_segments: source %q: file URL with host %q; use file:///abs/path", source, u.Host)
	}
	return u.Path, nil
}

func hasGlobMeta(p string) bool { return strings.ContainsAny(p, "*?[") }

// globLocal expands a pattern where * ? [..] match within one path element and
// ** matches any number of elements. Matches come back sorted.
func globLocal(pattern string) ([]string, error) {
	pattern = filepath.Clean(pattern)
	parts := strings.Split(pattern, string(filepath.Separator))
	// The walk starts at the longest literal prefix.
	lit := 0
	for lit < len(parts) && !hasGlobMeta(parts[lit]) {
		lit++
	}
	root := strings.Join(parts[:lit], string(filepath.Separator))
	if root == "" {
		root = string(filepath.Separator)
		if !filepath.IsAbs(pattern) {
			root = "."
		}
	}
	rest := parts[lit:]
	for _, seg := range rest {
		if _, err := filepath.Match(seg, ""); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return walkFiles(root, func(rel string) bool {
		return matchSegments(rest, strings.Split(rel, string(filepath.Separator)))
	})
}

// walkFiles lists the regular files under root whose path relative to root
// keep accepts, sorted.
func walkFiles(root string, keep func(rel string) bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if keep(rel) {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegments(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := filepath.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// segmentOf is the value of the last "segment=<id>" element of the path, or
// else the name of the object's parent folder.
func segmentOf(p string) string {
	p = filepath.ToSlash(p)
	dirs := strings.Split(path.Dir(p), "/")
	for i := len(dirs) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(dirs[i], "segment="); ok {
			return v
		}
	}
	return path.Base(path.Dir(p))
}

// chunkIDOf is the object's name without its extension.
func chunkIDOf(p string) string {
	b := path.Base(filepath.ToSlash(p))
	return strings.TrimSuffix(b, path.Ext(b))
}
