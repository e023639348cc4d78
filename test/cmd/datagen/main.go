// Command datagen writes a sample dataset of Arrow IPC chunks and its expected
// aggregates (expected.csv) into a folder; with -types also a dataset with one
// column per Arrow type and DuckDB's text of every value (types_expected.csv),
// the bad inputs, a few large IPC files (large/) and eight ZSTD IPC files
// that decode to ten times their size (compressed/); with -compressed N
// only N ZSTD files that decode to about ten times their size.
//
//	go run ./test/cmd/datagen -out build/demo-data
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/remote-segments/remote_segments/test/datagen"
)

func main() {
	out := flag.String("out", "build/demo-data", "folder to write the dataset into (replaced)")
	spec := datagen.DefaultSpec
	flag.IntVar(&spec.Segments, "segments", spec.Segments, "number of segments")
	flag.IntVar(&spec.ChunksPerSegment, "chunks", spec.ChunksPerSegment, "chunks per segment")
	flag.IntVar(&spec.RowsPerChunk, "rows", spec.RowsPerChunk, "rows in a segment's first chunk (each next one has 517 more)")
	types := flag.Bool("types", false, "also write the types dataset (one column per Arrow type) and the bad inputs")
	compressed := flag.Int("compressed", 0, "write only this many ZSTD IPC files that decode to about ten times their size (datagen.DefaultCompressed)")
	flag.Parse()
	if *compressed > 0 {
		writeCompressed(*out, *compressed)
		return
	}
	if err := os.RemoveAll(*out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stats, err := datagen.Write(*out, spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "datagen:", err)
		os.Exit(1)
	}
	var rows int64
	for _, s := range stats {
		rows += s.Rows
	}
	fmt.Printf("datagen: wrote %d segments x %d chunks (%d rows) to %s\n", spec.Segments, spec.ChunksPerSegment, rows, *out)
	if *types {
		if err := datagen.WriteTypes(*out); err != nil {
			fmt.Fprintln(os.Stderr, "datagen:", err)
			os.Exit(1)
		}
		fmt.Printf("datagen: wrote the types dataset (%d rows, every Arrow type) to %s/types\n", datagen.TypesRows, *out)
		if err := datagen.WriteArrowTypes(*out); err != nil {
			fmt.Fprintln(os.Stderr, "datagen:", err)
			os.Exit(1)
		}
		fmt.Printf("datagen: wrote the arrow_types dataset (%d rows in each of %d formats) to %s/arrow_types\n", datagen.ArrowTypesRows, len(datagen.IPCFormats()), *out)
		if err := datagen.WriteBadInputs(*out); err != nil {
			fmt.Fprintln(os.Stderr, "datagen:", err)
			os.Exit(1)
		}
		fmt.Printf("datagen: wrote bad inputs to %s/bad\n", *out)
		if err := datagen.WriteEdgeInputs(*out); err != nil {
			fmt.Fprintln(os.Stderr, "datagen:", err)
			os.Exit(1)
		}
		fmt.Printf("datagen: wrote edge-case inputs to %s/edge\n", *out)
		if err := datagen.WriteNames(*out); err != nil {
			fmt.Fprintln(os.Stderr, "datagen:", err)
			os.Exit(1)
		}
		fmt.Printf("datagen: wrote objects whose names a URL would read otherwise to %s/names\n", *out)
		if err := datagen.WriteLinks(*out); err != nil {
			fmt.Fprintln(os.Stderr, "datagen:", err)
			os.Exit(1)
		}
		fmt.Printf("datagen: wrote a folder of symbolic links to %s/links\n", *out)
		if err := datagen.WritePaged(*out); err != nil {
			fmt.Fprintln(os.Stderr, "datagen:", err)
			os.Exit(1)
		}
		fmt.Printf("datagen: wrote %d one-row objects (two S3 listing pages) to %s/paged\n", datagen.PagedObjects, *out)
		if err := datagen.WriteLarge(*out); err != nil {
			fmt.Fprintln(os.Stderr, "datagen:", err)
			os.Exit(1)
		}
		fmt.Printf("datagen: wrote %d large IPC files to %s/large\n", datagen.LargeChunks, *out)
		spec := datagen.Compressed{Chunks: 8, Rows: 60_000}
		if _, _, err := datagen.WriteCompressed(filepath.Join(*out, "compressed"), spec); err != nil {
			fmt.Fprintln(os.Stderr, "datagen:", err)
			os.Exit(1)
		}
		fmt.Printf("datagen: wrote %d ZSTD IPC files of %d rows to %s/compressed\n", spec.Chunks, spec.Rows, *out)
	}
}

func writeCompressed(out string, chunks int) {
	spec := datagen.DefaultCompressed
	spec.Chunks = chunks
	if err := os.RemoveAll(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	wire, decoded, err := datagen.WriteCompressed(out, spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "datagen:", err)
		os.Exit(1)
	}
	fmt.Printf("datagen: wrote %d compressed chunks of %d rows to %s (%d bytes, %d decoded)\n", chunks, spec.Rows, out, wire, decoded)
}
