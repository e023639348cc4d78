package scanner

import (
	"context"
	"errors"
	"fmt"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/scanner/catalog"
)

// ErrNoChunks is returned when a source resolves to no chunk at all.
var ErrNoChunks = catalog.ErrNoChunks

// ErrNoProcess is returned by Bind and Resolve for a Config without a
// Process: the host makes one when it loads and passes it to every scan.
var ErrNoProcess = errors.New("scanner: Config.Process is nil (the host makes one Process when it loads, see NewProcess)")

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
	h, err := cfg.Process.domains.Open(rawURL, cfg.Store, cfg.schedulerOptions())
	if err != nil {
		return nil, fmt.Errorf("remote_segments: %w", err)
	}
	return h, nil
}

// resolveSource lists the chunks of cfg's source (catalog.Resolve) that
// cfg.Keep keeps, opening every object through cfg's domains and sandbox.
func resolveSource(ctx context.Context, cfg *Config) (*Chunks, error) {
	if cfg.Process == nil {
		return nil, ErrNoProcess
	}
	src := catalog.Source{Path: cfg.Source, Rows: cfg.Rows, URLs: cfg.URLs, Keep: cfg.Keep, Parallelism: cfg.MaxParallelIO,
		Listed: cfg.CacheDir != "", First: cfg.firstListed}
	return catalog.Resolve(ctx, src, func(rawURL string) (*iosched.Hold, error) { return openObject(rawURL, cfg) })
}
