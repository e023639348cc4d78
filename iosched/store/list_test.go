package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// endlessS3 is an S3 endpoint whose listing never ends: every page holds
// perPage keys and is truncated, with a continuation token of token(n) for
// page n. It counts the pages asked for.
func endlessS3(t *testing.T, perPage int, token func(n int64) string) (*httptest.Server, *atomic.Int64) {
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("list-type") != "2" {
			http.Error(w, "not a listing", http.StatusBadRequest)
			return
		}
		n := pages.Add(1)
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bkt</Name>`)
		for i := 0; i < perPage; i++ {
			fmt.Fprintf(&b, "<Contents><Key>ds/p%09d-%03d.arrow</Key><Size>1</Size></Contents>", n, i)
		}
		fmt.Fprintf(&b, "<KeyCount>%d</KeyCount><IsTruncated>true</IsTruncated><NextContinuationToken>%s</NextContinuationToken></ListBucketResult>", perPage, token(n))
		w.Header().Set("Content-Type", "application/xml")
		w.Write([]byte(b.String()))
	}))
	t.Cleanup(srv.Close)
	return srv, &pages
}

// TestListEndless: a listing that never ends fails with ErrTooMany after
// the bound on objects, or on pages when its pages are empty, and one that
// repeats its continuation token fails at once; none asks for a page past
// the bound.
func TestListEndless(t *testing.T) {
	leakCheck(t)
	defer store.SetListBounds(95, 20)()
	fresh := func(n int64) string { return fmt.Sprintf("t%d", n) }
	for _, tt := range []struct {
		name     string
		perPage  int
		token    func(int64) string
		want     string
		maxPages int64
	}{
		{"objects", 10, fresh, "too many objects: more than 95 in one listing", 10},
		{"empty pages", 0, fresh, "too many objects: a listing of more than 20 pages", 21},
		{"same token", 10, func(int64) string { return "again" }, `continuation token "again" is empty or the last page's`, 2},
		{"no token", 10, func(int64) string { return "" }, `continuation token "" is empty`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, pages := endlessS3(t, tt.perPage, tt.token)
			st, name := open(t, "s3://bkt/ds/", store.Options{S3Endpoint: srv.URL, S3AccessKeyID: "k", S3SecretAccessKey: "s", S3Region: "us-east-1"})
			defer st.Close()
			objs, err := st.List(context.Background(), name)
			if !strings.Contains(fmt.Sprint(err), tt.want) || !strings.Contains(err.Error(), "LIST s3://bkt/ds/") {
				t.Fatalf("%d objects, err = %v; want %q", len(objs), err, tt.want)
			}
			if tt.perPage > 0 && tt.token(1) == "t1" && !errors.Is(err, store.ErrTooMany) {
				t.Fatalf("err = %v, not ErrTooMany", err)
			}
			if got := pages.Load(); got > tt.maxPages {
				t.Fatalf("%d pages asked for, want at most %d", got, tt.maxPages)
			}
		})
	}
}

// TestListFileBound: a local listing stops at the bound on objects too;
// one at the bound is whole.
func TestListFileBound(t *testing.T) {
	leakCheck(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"a/1": {1}, "a/2": {2}, "b/3": {3}})
	st, name := open(t, dir+"/", store.Options{})
	defer st.Close()
	restore := store.SetListBounds(3, 3)
	objs, err := st.List(context.Background(), name)
	restore()
	if err != nil || len(objs) != 3 {
		t.Fatalf("at the bound: %d objects, %v", len(objs), err)
	}
	defer store.SetListBounds(2, 2)()
	objs, err = st.List(context.Background(), name)
	if !errors.Is(err, store.ErrTooMany) || !strings.Contains(err.Error(), "more than 2 in one listing") {
		t.Fatalf("past the bound: %d objects, err = %v", len(objs), err)
	}
	if _, err := store.Glob(context.Background(), st, name+"*/*"); !errors.Is(err, store.ErrTooMany) {
		t.Fatalf("a glob past the bound: err = %v", err)
	}
}
