package remotesql

import (
	"context"
	"database/sql/driver"
	"errors"
	"runtime/debug"
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

func TestCheckDeps(t *testing.T) {
	drv := &debug.Module{Path: driverModule, Version: driverVersion}
	bindings := &debug.Module{Path: bindingsModule, Version: bindingsVersion}
	other := &debug.Module{Path: "golang.org/x/sync", Version: "v0.25.0"}
	if err := checkDeps([]*debug.Module{other, drv, bindings}); err != nil {
		t.Fatalf("the pinned versions: %v", err)
	}
	for name, deps := range map[string][]*debug.Module{
		"newer driver":      {{Path: driverModule, Version: "v2.10600.0"}, bindings},
		"older bindings":    {drv, {Path: bindingsModule, Version: "v0.10500.0"}},
		"replaced driver":   {{Path: driverModule, Version: driverVersion, Replace: &debug.Module{Path: "../fork"}}, bindings},
		"no driver":         {bindings, other},
		"no bindings":       {drv},
		"no modules at all": nil,
	} {
		if err := checkDeps(deps); !errors.Is(err, ErrDriver) {
			t.Errorf("%s: %v, want ErrDriver", name, err)
		}
	}
}

func TestWithConnInit(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	c, err := NewConnector("", WithConnInit(func(e driver.ExecerContext) error {
		_, err := e.ExecContext(context.Background(), "SET VARIABLE greeting = 'hello'", nil)
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	var got string
	var n int64
	if err := OpenDB(t, c).QueryRow("SELECT getvariable('greeting'), (SELECT count(*) FROM remote_segments('testdata/chunks/'))").Scan(&got, &n); err != nil {
		t.Fatal(err)
	}
	if got != "hello" || n != 1434 {
		t.Errorf("got %q and %d rows, want the init's 'hello' and 1434 rows", got, n)
	}

	failing := errors.New("init failed")
	c, err = NewConnector("", WithConnInit(func(driver.ExecerContext) error { return failing }))
	if err != nil {
		t.Fatal(err)
	}
	if err := OpenDB(t, c).Ping(); !errors.Is(err, failing) {
		t.Errorf("Ping with a failing init: %v, want its error", err)
	}
}
