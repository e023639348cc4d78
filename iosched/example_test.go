package iosched_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/remote-segments/remote_segments/iosched"
	"github.com/remote-segments/remote_segments/iosched/store"
)

func Example() {
	dir, _ := os.MkdirTemp("", "iosched-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "chunk.arrow"), []byte("hello, remote segments"), 0o644)

	// One Domains per process: one scheduler and one store per endpoint.
	domains := iosched.NewDomains(iosched.Options{})
	defer domains.Close()
	h, err := domains.Open(filepath.Join(dir, "chunk.arrow"), store.Options{}, iosched.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Release()
	data, err := h.Scheduler.Fetch(context.Background(), []iosched.Request{
		{Store: h.Store, Name: h.Name, Offset: 0, Length: 5, Priority: iosched.Priority{Query: 1, Seq: 0}},
		{Store: h.Store, Name: h.Name, Offset: 7, Length: 6, Priority: iosched.Priority{Query: 1, Seq: 1}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %s\n", data[0], data[1])
	// Output: hello remote
}

func ExampleBatch_Results() {
	dir, _ := os.MkdirTemp("", "iosched-example")
	defer os.RemoveAll(dir)
	for _, n := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(dir, n+".arrow"), []byte("chunk "+n), 0o644)
	}
	s := iosched.New(iosched.Options{Parallelism: 2})
	defer s.Close()
	st, prefix, _ := store.Open(dir+"/", store.Options{})
	defer st.Close()

	var reqs []iosched.Request
	for i, n := range []string{"a", "b", "c"} {
		reqs = append(reqs, iosched.Request{Store: st, Name: prefix + n + ".arrow", Length: 7,
			Priority: iosched.Priority{Query: 1, Seq: int64(i)}})
	}
	// Decode each chunk as soon as its bytes are in, on the caller's side.
	var decoded []string
	for r := range s.Submit(context.Background(), reqs).Results() {
		if r.Err != nil {
			fmt.Println(r.Err)
			return
		}
		decoded = append(decoded, fmt.Sprintf("%d:%s", r.Index, r.Data))
	}
	sort.Strings(decoded)
	fmt.Println(decoded)
	// Output: [0:chunk a 1:chunk b 2:chunk c]
}
