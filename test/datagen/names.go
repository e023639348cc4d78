package datagen

import (
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// NameDirs are the folders of WriteNames, each holding x.arrow (ten rows
// of x, from NameFirst[dir]) and cat.csv, a catalog naming it by the
// relative URL "x.arrow". Each name is one that reads as another once
// taken as a URL: "p%41" decodes to "pA", a sibling whose x.arrow has the
// same length and other values; "c#1" ends its path at '#' (a fragment),
// leaving names/x.arrow; "sp ace" must be escaped.
var NameDirs = []string{"p%41", "pA", "c#1", "sp ace"}

// NameFirst is the first x of each folder's x.arrow ("" the file
// names/x.arrow itself); its ten rows sum to 10*first + 45.
var NameFirst = map[string]int64{"p%41": 1, "pA": 101, "c#1": 201, "sp ace": 301, "": 901}

// WriteNames writes, under dir/names, objects whose folder names have
// characters that a URL gives a meaning to (see NameDirs): a listing's
// objects, a catalog's location and the rows resolved against it must
// read the objects so named, never the ones their names decode to.
func WriteNames(dir string) error {
	names := filepath.Join(dir, "names")
	if err := writeTen(filepath.Join(names, "x.arrow"), NameFirst[""]); err != nil {
		return err
	}
	for _, d := range NameDirs {
		sub := filepath.Join(names, d)
		if err := writeTen(filepath.Join(sub, "x.arrow"), NameFirst[d]); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(sub, "cat.csv"), []byte("url\nx.arrow\n"), 0o644); err != nil {
			return err
		}
	}
	// Catalogs whose relative rows name the folders: rel.csv "p%41/x.arrow"
	// (read as a URL reference: pA's), relhash.csv "c#1/x.arrow" (read as
	// one: names/c, which does not exist).
	if err := os.WriteFile(filepath.Join(names, "rel.csv"), []byte("url\np%41/x.arrow\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(names, "relhash.csv"), []byte("url\nc#1/x.arrow\n"), 0o644)
}

// WriteLinks writes dir/links, a folder of symbolic links beside a file,
// as datasets assembled from links (git-annex, a Hugging Face cache) are:
// a.arrow (NameFirst["pA"]'s rows), b.arrow a link to names/x.arrow,
// sub a link to the folder names/pA, gone.arrow a link to nothing. A glob
// or prefix over it lists a.arrow and b.arrow, as DuckDB's glob does (a
// link to a folder under ** is not followed); WriteNames must run first.
func WriteLinks(dir string) error {
	links := filepath.Join(dir, "links")
	if err := os.RemoveAll(links); err != nil {
		return err
	}
	if err := writeTen(filepath.Join(links, "a.arrow"), NameFirst["pA"]); err != nil {
		return err
	}
	for name, to := range map[string]string{"b.arrow": "../names/x.arrow", "sub": "../names/pA", "gone.arrow": "../names/gone.arrow"} {
		if err := os.Symlink(to, filepath.Join(links, name)); err != nil {
			return err
		}
	}
	return nil
}

// writeTen writes an IPC file of one batch of ten rows of x (int64, no
// nulls) from first: files of any first have the same length.
func writeTen(path string, first int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	for i := range int64(10) {
		rb.Field(0).(*array.Int64Builder).Append(first + i)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	return WriteChunk(path, []arrow.RecordBatch{rec}, true)
}
