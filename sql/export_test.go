package remotesql

import (
	"database/sql"
	"database/sql/driver"
	"testing"

	"github.com/duckdb/duckdb-go/v2"
)

// OpenDB opens c as an *sql.DB that is closed when the test ends.
func OpenDB(t testing.TB, c driver.Connector) *sql.DB {
	t.Helper()
	db := sql.OpenDB(c)
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

// PlainDB opens an in-memory database of the DuckDB driver without
// remotesql's functions, closed when the test ends.
func PlainDB(t testing.TB) *sql.DB {
	t.Helper()
	c, err := duckdb.NewConnector("", nil)
	if err != nil {
		t.Fatal(err)
	}
	return OpenDB(t, c)
}
