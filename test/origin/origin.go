// Package origin serves a folder over HTTP as an origin whose ETags vouch
// for the bytes: each file's tag is a hash of its content, as S3 gives,
// and no Last-Modified time is sent. Over HTTP the store caches an answer
// whose Last-Modified time is moments before its Date under no version
// (its ETag may be made of that time, as nginx's is): the tests of the
// cache that write their files just before they read them serve them so.
package origin

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
)

// Tagged serves dir, a file with an ETag of its content.
func Tagged(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(r.URL.Path))); err == nil {
			h := sha256.Sum256(data)
			w.Header().Set("ETag", `"`+hex.EncodeToString(h[:8])+`"`)
		}
		files.ServeHTTP(noModTime{w}, r)
	})
}

// noModTime drops the Last-Modified header the file server sets.
type noModTime struct{ http.ResponseWriter }

func (w noModTime) WriteHeader(code int) {
	w.Header().Del("Last-Modified")
	w.ResponseWriter.WriteHeader(code)
}

func (w noModTime) Write(b []byte) (int, error) {
	w.Header().Del("Last-Modified") // before an implicit WriteHeader(200)
	return w.ResponseWriter.Write(b)
}
