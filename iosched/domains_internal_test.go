package iosched

import (
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/remote-segments/remote_segments/iosched/store"
)

// A local file's domain never hedges, even when its query asks for hedges;
// a remote one keeps the query's choice.
func TestLocalDomainsNoHedge(t *testing.T) {
	defer goleak.VerifyNone(t)
	d := NewDomains(Options{})
	defer d.Close()
	for _, c := range []struct {
		url    string
		tuning Options
		want   bool
	}{
		{filepath.Join(t.TempDir(), "a.arrow"), Options{}, true},
		{"file://" + filepath.Join(t.TempDir(), "b.arrow"), Options{RequestSize: 1 << 20}, true},
		{"http://127.0.0.1:1/a.arrow", Options{}, false},
		{"http://127.0.0.1:1/a.arrow", Options{NoHedge: true}, true},
	} {
		h, err := d.Open(c.url, store.Options{}, c.tuning)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Scheduler.o.NoHedge; got != c.want {
			t.Errorf("%s (%+v): NoHedge %v, want %v", c.url, c.tuning, got, c.want)
		}
		h.Release()
	}
}
