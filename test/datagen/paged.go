package datagen

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// PagedObjects is how many objects WritePaged writes: more than the 1,000
// names of one S3 listing page.
const PagedObjects = 1003

// WritePaged writes, under dir/paged, PagedObjects one-row IPC files
// segment=s<i/100>/c<i>.arrow (i zero-padded to four digits) whose column x
// is i, alternately IPC files and streams: a glob over them on S3 is
// listed in two pages.
func WritePaged(dir string) error {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for i := range PagedObjects {
		seg := filepath.Join(dir, "paged", fmt.Sprintf("segment=s%02d", i/100))
		if err := os.MkdirAll(seg, 0o755); err != nil {
			return err
		}
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.Append(int64(i))
		col := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
		col.Release()
		err := WriteChunk(filepath.Join(seg, fmt.Sprintf("c%04d.arrow", i)), []arrow.RecordBatch{rec}, i%2 == 0)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
