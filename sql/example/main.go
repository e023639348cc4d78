// Command example queries a directory of Arrow IPC chunks with
// remote_segments from a Go program, through database/sql and the DuckDB Go
// driver, and prints the scan's statistics.
//
//	make demo   # writes build/demo-data
//	go run ./sql/example build/demo-data/chunks
//
// The argument is any remote_segments source: a directory, a glob, a catalog
// file, or an s3:// or https:// URL.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/signal"

	remotesql "github.com/remote-segments/remote_segments/sql"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: example SOURCE   (e.g. build/demo-data/chunks)")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run(source string) error {
	// Ctrl-C cancels the query, and with it the scan's requests.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	connector, err := remotesql.NewConnector("")
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	rows, err := db.QueryContext(ctx, `
		SELECT segment_id, count(*) AS rows, sum(x) AS sum_x
		FROM remote_segments(?, max_parallel_io := 8)
		GROUP BY ALL ORDER BY segment_id`, source)
	if err != nil {
		return err
	}
	defer rows.Close()
	fmt.Println("segment_id  rows  sum_x")
	for rows.Next() {
		var seg string
		var n int64
		var sum sql.NullInt64
		if err := rows.Scan(&seg, &n, &sum); err != nil {
			return err
		}
		fmt.Println(seg, n, sum.Int64)
	}
	if err := rows.Err(); err != nil {
		return err
	}

	var state string
	var requests, wireBytes, budgetPeak int64
	err = db.QueryRowContext(ctx, `
		SELECT state, requests, wire_bytes, budget_peak
		FROM remote_segments_stats() ORDER BY scan_id DESC LIMIT 1`).Scan(&state, &requests, &wireBytes, &budgetPeak)
	if err != nil {
		return err
	}
	fmt.Printf("scan: %s, %d requests, %d bytes read, budget peak %d bytes\n", state, requests, wireBytes, budgetPeak)
	return nil
}
