package datagen

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// WriteBadInputs writes, under dir/bad, one example of every kind of bad
// input a scan must turn into an error naming the chunk or catalog row:
//
//	garbage.arrow      bytes that are no Arrow IPC at all
//	truncated.arrow    the first half of a valid IPC file
//	empty.arrow        zero bytes
//	mismatch/          two chunks whose schemas differ
//	empty-url.csv      a catalog whose second row has an empty url
//	malformed.json     a catalog that is not valid JSON
//	bad-scheme.csv     a catalog row with a scheme no store knows
//	bad-offset.csv     a catalog row whose range lies past the object's end
//	catalog.csv        a good catalog (relative urls, an offset/length pair)
//	two-chunks.arrows  two IPC streams back to back, addressed by catalog.csv
func WriteBadInputs(dir string) error {
	bad := filepath.Join(dir, "bad")
	if err := os.MkdirAll(filepath.Join(bad, "mismatch"), 0o755); err != nil {
		return err
	}
	good, err := chunkBytes(Schema, 10, true)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"garbage.arrow":   []byte("this is not an Arrow IPC file, it is a sentence that goes on for a while"),
		"truncated.arrow": good[:len(good)/2],
		"empty.arrow":     {},
		"empty-url.csv":   []byte("url,segment_id\nmismatch/a.arrow,a\n,b\n"),
		"malformed.json":  []byte(`[{"url": "mismatch/a.arrow"}, {"url": `),
		"bad-scheme.csv":  []byte("url\ngopher://example.invalid/x.arrow\n"),
		"bad-offset.csv":  []byte("url,offset,length\nmismatch/a.arrow,1000000,10\n"),
		"twice.csv":       []byte("url,url\nmismatch/a.arrow,garbage.arrow\n"),
		"twice.json":      []byte(`[{"url": "mismatch/a.arrow", "\u0075rl": "garbage.arrow"}]`),
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "y", Type: arrow.BinaryTypes.String}}, nil)
	mismatch, err := chunkBytes(other, 5, false)
	if err != nil {
		return err
	}
	files["mismatch/a.arrow"] = good
	files["mismatch/b.arrow"] = mismatch
	// Two streams in one object; the catalog gives each one's range.
	s1, err := chunkBytes(Schema, 7, false)
	if err != nil {
		return err
	}
	s2, err := chunkBytes(Schema, 5, false)
	if err != nil {
		return err
	}
	files["two-chunks.arrows"] = append(append([]byte{}, s1...), s2...)
	files["catalog.csv"] = []byte(fmt.Sprintf("url,segment_id,chunk_id,offset,length,num_rows\n"+
		"two-chunks.arrows,pair,first,0,%d,7\ntwo-chunks.arrows,pair,second,%d,%d,5\nmismatch/a.arrow,single,a,,,10\n",
		len(s1), len(s1), len(s2)))
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(bad, name), data, 0o644); err != nil {
			return err
		}
	}
	return writeEmptyCatalogs(bad)
}

// chunkBytes returns an IPC file or stream of rows rows of schema, every
// value derived from its row number.
func chunkBytes(schema *arrow.Schema, rows int, fileFormat bool) ([]byte, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for r := 0; r < rows; r++ {
		for i, f := range schema.Fields() {
			switch fb := b.Field(i).(type) {
			case *array.Int64Builder:
				fb.Append(int64(r))
			case *array.Int32Builder:
				fb.Append(int32(r))
			case *array.Float64Builder:
				fb.Append(float64(r) / 2)
			case *array.BooleanBuilder:
				fb.Append(r%2 == 0)
			case *array.StringBuilder:
				fb.Append(fmt.Sprintf("%s-%d", f.Name, r))
			default:
				b.Field(i).AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.CreateTemp("", "datagen-*.arrow")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	f.Close()
	if err := WriteChunk(f.Name(), []arrow.RecordBatch{rec}, fileFormat); err != nil {
		return nil, err
	}
	return os.ReadFile(f.Name())
}
