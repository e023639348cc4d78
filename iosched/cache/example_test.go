package cache_test

import (
	"fmt"
	"os"

	"github.com/remote-segments/remote_segments/iosched/cache"
)

// A range is stored under its object's version, found again under the same
// version only, and its bytes checked as they are read.
func Example() {
	dir, _ := os.MkdirTemp("", "cache-example-")
	defer os.RemoveAll(dir)
	c, err := cache.Open(dir, 1<<20)
	if err != nil {
		fmt.Println(err)
		return
	}
	k := cache.Key{Object: "s3://bucket/a.arrow", Version: `etag:"1"`, Offset: 0, Length: 5}
	c.Put(k, []byte("hello"))

	e, ok := c.Lookup(k)
	data := make([]byte, e.Length)
	f, _ := os.Open(e.Path)
	f.ReadAt(data, e.Offset)
	f.Close()
	fmt.Println(ok, string(data), c.Check(e, data) == nil)

	k.Version = `etag:"2"` // the object was overwritten
	_, ok = c.Lookup(k)
	fmt.Println(ok)
	// Output:
	// true hello true
	// false
}
