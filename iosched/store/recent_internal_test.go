package store

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRecentlyModified: an answer is recent (its bytes not to be cached
// under its version) when its Last-Modified is less than two seconds
// before its Date, after it, or either is missing or unreadable; an ETag
// vouches for the bytes only on a store whose tags change with every
// write (S3), and only a strong one.
func TestRecentlyModified(t *testing.T) {
	date := time.Date(2026, 6, 1, 12, 0, 10, 0, time.UTC)
	at := func(d time.Duration) string { return date.Add(d).Format(http.TimeFormat) }
	for _, c := range []struct {
		name               string
		etag, lm, dateHdr  string
		tagByContent, want bool
	}{
		{"the second of the answer", "", at(0), at(0), false, true},
		{"a second before", "", at(-time.Second), at(0), false, true},
		{"two seconds before", "", at(-2 * time.Second), at(0), false, false},
		{"an hour before", "", at(-time.Hour), at(0), false, false},
		{"after the answer (the clocks disagree)", "", at(time.Minute), at(0), false, true},
		{"no Date", "", at(-time.Hour), "", false, true},
		{"an unreadable Last-Modified", "", "yesterday", at(0), false, true},
		{"an unreadable Date", "", at(-time.Hour), "now", false, true},
		{"no Last-Modified, an ETag", `"abc"`, "", at(0), false, false},
		{"no Last-Modified, no ETag", "", "", at(0), false, false},
		{"an HTTP ETag (of the time, maybe), just written", `"5f0a-222"`, at(0), at(0), false, true},
		{"an HTTP ETag, written long before", `"5f0a-222"`, at(-time.Hour), at(0), false, false},
		{"an S3 ETag, just written", `"abc"`, at(0), at(0), true, false},
		{"a weak S3 ETag, just written", `W/"abc"`, at(0), at(0), true, true},
		{"no S3 ETag, just written", "", at(0), at(0), true, true},
	} {
		h := http.Header{}
		for k, v := range map[string]string{"ETag": c.etag, "Last-Modified": c.lm, "Date": c.dateHdr} {
			if v != "" {
				h.Set(k, v)
			}
		}
		if got := recentlyModified(h, c.tagByContent); got != c.want {
			t.Errorf("%s: recent %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRecentBody: the HTTP store marks the body of a recent answer
// (Recent), whole or a range, and a read to the end keeps its length
// hint; an answer long after its object's write is not marked. A HEAD
// and a GET give one version, in names of the HTTP store's own.
func TestRecentBody(t *testing.T) {
	written := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var after time.Duration
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", written.Add(after).Format(http.TimeFormat))
		http.ServeContent(w, r, "x", written, strings.NewReader("0123456789"))
	}))
	defer srv.Close()
	st, name, err := Open(srv.URL+"/x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for _, c := range []struct {
		after  time.Duration
		recent bool
	}{{500 * time.Millisecond, true}, {time.Hour, false}} {
		after = c.after
		head, err := st.(Versioner).Version(ctx, name)
		if err != nil || head == "" || head[:5] != "http:" {
			t.Fatalf("HEAD version %q, %v", head, err)
		}
		for _, r := range [][2]int64{{0, -1}, {2, 3}} {
			body, v, err := st.(RangeVersioner).GetRangeVersion(ctx, name, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			if Recent(body) != c.recent || v != head {
				t.Errorf("answer %v after the write, bytes %v: recent %v (want %v), version %q (HEAD %q)", c.after, r, Recent(body), c.recent, v, head)
			}
			if h, ok := body.(LenHint); r[1] < 0 && (!ok || h.LenHint() != 10) {
				t.Errorf("answer %v after the write, a read to the end: no length hint", c.after)
			}
			body.Close()
		}
	}
}
