package store

import (
	"context"
	"strings"
	"testing"
)

// panickyLister is a local store whose listings panic, as a parser bug
// met by a hostile page would.
type panickyLister struct{ *fileStore }

func (panickyLister) listKeys(context.Context, keyQuery, *listBound) (keyList, error) {
	panic("a page the parser choked on")
}

// TestListingPanicIsAnError: a panic in a listing's goroutine fails the
// listing with an error naming it; it does not end the process (without
// guarded, this test binary dies).
func TestListingPanicIsAnError(t *testing.T) {
	_, err := listTree(context.Background(), panickyLister{newFileStore()}, "ds/", nil, 4, nil)
	if err == nil || !strings.Contains(err.Error(), "panic") || !strings.Contains(err.Error(), "a page the parser choked on") {
		t.Fatalf("listTree over a panicking listing = %v, want an error naming the panic", err)
	}
	if err := guarded(func() error { return nil })(); err != nil {
		t.Errorf("guarded of a function that returns nil = %v", err)
	}
}
