package scanner

import (
	"context"
	"fmt"
	"io"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

// One chunk, one version: a projected read of an IPC file takes its tail,
// then its batches' metadata and the scan's columns, in requests of their
// own (several at once where the columns lie apart). An object overwritten
// between two of them would give the chunk the footer of one version and
// batches of another, or batches of both: rows of neither. The scheduler
// keeps each range of one version (iosched.ErrChanged); pinnedStore keeps
// a chunk's ranges of one version between them: the first answer's, which
// every later answer must give, else the read fails (the range cannot be
// read again of the old version).

// pinnedStore is a remote store whose answers, for one chunk, must all
// give the version of the first.
type pinnedStore struct {
	store.Store
	rv  store.RangeVersioner
	v   store.Versioner
	pin iosched.VersionPin
}

// pinVersion returns st pinned to the version of its first answer, or st
// where it tells no versions (local files, which a scan reads in one
// piece or maps; their change is caught where they are read).
func pinVersion(st store.Store) store.Store {
	rv, ok1 := st.(store.RangeVersioner)
	v, ok2 := st.(store.Versioner)
	if !ok1 || !ok2 {
		return st
	}
	return &pinnedStore{Store: st, rv: rv, v: v}
}

// GetRange is GetRangeVersion without the version.
func (p *pinnedStore) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	body, _, err := p.GetRangeVersion(ctx, name, off, length)
	return body, err
}

// GetRangeVersion reads as the store does; an answer of another version
// than the chunk's first fails, naming both.
func (p *pinnedStore) GetRangeVersion(ctx context.Context, name string, off, length int64) (io.ReadCloser, string, error) {
	body, v, err := p.rv.GetRangeVersion(ctx, name, off, length)
	if err != nil {
		return body, v, err
	}
	if err := p.pin.Pin(v); err != nil {
		body.Close()
		return nil, "", fmt.Errorf("between the chunk's requests: %w", err)
	}
	return body, v, nil
}

// Version is the store's.
func (p *pinnedStore) Version(ctx context.Context, name string) (string, error) {
	return p.v.Version(ctx, name)
}
