package remotesql

import (
	"context"
	"errors"
	"testing"

	"github.com/duckdb/duckdb-go/v2"
	"go.uber.org/goleak"

	"github.com/remote-segments/remote_segments/cabi"
	"github.com/remote-segments/remote_segments/sql/internal/staticapi"
)

func TestAccessConnChecksTheConnection(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	for _, dc := range []any{nil, (*duckdb.Conn)(nil), "a string", &duckdb.Conn{}} {
		if _, err := accessConn(dc); !errors.Is(err, ErrDriver) {
			t.Errorf("accessConn(%#v): %v, want ErrDriver", dc, err)
		}
	}
}

func TestCheckConnAgreesWithTheDriver(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	db := PlainDB(t)
	ctx := context.Background()
	// Two connections: the ids differ, and each pointer read gives its own.
	var ids []uint64
	for range 2 {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		rc, err := checkConn(conn)
		if err != nil {
			t.Fatal(err)
		}
		id, err := duckdb.ConnId(conn)
		if err != nil {
			t.Fatal(err)
		}
		if got := staticapi.ConnectionID(rc.con); got != id {
			t.Fatalf("connection id %d for the pointer read, the driver says %d", got, id)
		}
		ids = append(ids, id)
	}
	if ids[0] == ids[1] {
		t.Errorf("two connections have the same id %d", ids[0])
	}
}

func TestUseAPIRefusesAnotherLayout(t *testing.T) {
	table, n := staticapi.Table()
	if n != 357 {
		t.Errorf("the static table has %d functions; C API v1.2.0 has 357", n)
	}
	for _, bad := range []int{0, n - 1, n + 1} {
		if err := cabi.UseAPI(table, bad); !errors.Is(err, cabi.ErrAPISize) {
			t.Errorf("UseAPI(table, %d): %v, want ErrAPISize", bad, err)
		}
	}
	if err := cabi.UseAPI(table, n); err != nil {
		t.Fatal(err)
	}
}

// TestRegisterTwice checks what cabi.Register's doc says of a second
// registration on one database (which Register and NewConnector avoid): it
// succeeds, and the function still answers.
func TestRegisterTwice(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	conn, err := PlainDB(t).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc, err := checkConn(conn)
	if err != nil {
		t.Fatal(err)
	}
	if err := cabi.UseAPI(staticapi.Table()); err != nil {
		t.Fatal(err)
	}
	if err := cabi.Register(rc.con, cabi.Host{}); err != nil {
		t.Fatal(err)
	}
	if err := cabi.Register(rc.con, cabi.Host{}); err != nil {
		t.Fatalf("second registration: %v", err)
	}
	var n int64
	if err := conn.QueryRowContext(context.Background(), "SELECT count(*) FROM remote_segments('testdata/chunks/')").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1434 {
		t.Fatalf("count(*) = %d after registering twice, want 1434", n)
	}
}
