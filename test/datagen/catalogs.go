package datagen

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeEmptyCatalogs writes, into bad (WriteBadInputs' folder), catalogs
// with no rows in every format, and one whose optional columns are all
// NULL:
//
//	empty-arrow-go.parquet  arrow-go's empty table: one row group of 0 rows
//	                        whose column chunks hold no data page
//	nulls-arrow-go.parquet  one row, mismatch/a.arrow, every other column NULL
//	empty.csv               zero bytes
//	empty-header.csv        a header and no rows
//	empty.json              []
//	empty.jsonl             blank lines
func writeEmptyCatalogs(bad string) error {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "url", Type: arrow.BinaryTypes.String},
		{Name: "segment_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "offset", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "length", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "num_rows", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	empty := b.NewRecordBatch()
	defer empty.Release()
	b.Field(0).(*array.StringBuilder).Append("mismatch/a.arrow")
	for f := 1; f < len(schema.Fields()); f++ {
		b.Field(f).AppendNull()
	}
	nulls := b.NewRecordBatch()
	defer nulls.Release()
	files := map[string][]byte{
		"empty.csv":        {},
		"empty-header.csv": []byte("url,segment_id,offset,length\n"),
		"empty.json":       []byte("[]\n"),
		"empty.jsonl":      []byte("\n\n"),
	}
	for name, rec := range map[string]arrow.RecordBatch{"empty-arrow-go.parquet": empty, "nulls-arrow-go.parquet": nulls} {
		var buf bytes.Buffer
		w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
		if err != nil {
			return err
		}
		if err := w.Write(rec); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		files[name] = buf.Bytes()
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(bad, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
