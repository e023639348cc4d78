package remotesql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"

	"github.com/duckdb/duckdb-go/v2"

	remotesql "github.com/remote-segments/remote_segments/sql"
)

// Open a database whose connections all have remote_segments, and query a
// folder of Arrow IPC chunks.
func Example() {
	connector, err := remotesql.NewConnector("") // in memory; or a file path
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	rows, err := db.Query(`SELECT segment_id, count(*), sum(x)
		FROM remote_segments('testdata/chunks/**/*.arrow')
		GROUP BY ALL ORDER BY segment_id`)
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var segment string
		var n, sum int64
		if err := rows.Scan(&segment, &n, &sum); err != nil {
			log.Fatal(err)
		}
		fmt.Println(segment, n, sum)
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// s0 717 4697963
	// s1 717 -33580514
}

// Add the functions to a connection of a database opened by other code.
func ExampleRegister() {
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	if err := remotesql.Register(ctx, conn); err != nil {
		log.Fatal(err)
	}
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM remote_segments('testdata/chunks/')").Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n)
	// Output: 1434
}

// Read from S3 (or any S3-compatible server) with explicit credentials; they
// never appear in errors, statistics or traces. Without them the AWS default
// chain (environment, shared config) is used.
func Example_s3() {
	connector, err := remotesql.NewConnector("")
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	var n int64
	err = db.QueryRow(`SELECT count(*) FROM remote_segments('s3://bucket/dataset/**/*.arrow',
			s3_endpoint := ?, s3_region := ?, s3_access_key_id := ?, s3_secret_access_key := ?)`,
		"http://127.0.0.1:7070", "us-east-1", "my-key-id", "my-secret").Scan(&n)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n)
}

// Every scan of the process, running or recently finished, is a row of
// remote_segments_stats().
func Example_stats() {
	connector, err := remotesql.NewConnector("")
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	const source = "testdata/chunks/segment=s1/"
	var n int64
	if err := db.QueryRow("SELECT count(*) FROM remote_segments(?)", source).Scan(&n); err != nil {
		log.Fatal(err)
	}
	var state string
	var chunks, rows, inUse int64
	err = db.QueryRow(`SELECT state, chunks, rows, budget_in_use FROM remote_segments_stats()
		WHERE source = ? ORDER BY scan_id DESC LIMIT 1`, source).Scan(&state, &chunks, &rows, &inUse)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d chunks, %d rows, %d budget bytes still held\n", state, chunks, rows, inUse)
	// Output: done: 2 chunks, 717 rows, 0 budget bytes still held
}

// A query's context bounds its scans: when it is cancelled (a deadline, a
// client that went away), queued requests are dropped, running ones abort,
// and the query returns the context's error.
func Example_cancel() {
	connector, err := remotesql.NewConnector("")
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // here before the query starts; any time during it works the same
	var n int64
	err = db.QueryRowContext(ctx, "SELECT count(*) FROM remote_segments('testdata/chunks/')").Scan(&n)
	fmt.Println(errors.Is(err, context.Canceled))
	// Output: true
}
