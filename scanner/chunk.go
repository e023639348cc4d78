package scanner

import (
	"fmt"

	"github.com/remote-segments/remote_segments/iosched/store"
	"github.com/remote-segments/remote_segments/scanner/arrowipc"
	"github.com/remote-segments/remote_segments/scanner/catalog"
)

// Chunk is one row of the catalog (see catalog.Chunk).
type Chunk = catalog.Chunk

// Chunks is a plan's chunks (see catalog.List).
type Chunks = catalog.List

// Row is one catalog row given inline (see catalog.Row).
type Row = catalog.Row

// ErrBadChunk is wrapped by every error that comes from a chunk's content
// (truncated or garbage IPC, a schema that does not match the scan).
var ErrBadChunk = arrowipc.ErrMalformed

// ChunkError names the chunk (catalog row and URL) an error came from.
type ChunkError struct {
	Chunk *Chunk
	Err   error
}

func (e *ChunkError) Error() string {
	return fmt.Sprintf("remote_segments: chunk %s (catalog row %d): %v", store.RedactURL(e.Chunk.URL), e.Chunk.Row, e.Err)
}

func (e *ChunkError) Unwrap() error { return e.Err }

// RedactURL is u as this module's errors, stats and traces show it
// (store.RedactURL): a query string, which may carry a presigned signature,
// becomes REDACTED, and a password is dropped.
func RedactURL(u string) string { return store.RedactURL(u) }
