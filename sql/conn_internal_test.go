package remotesql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
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

// TestScansShareTheMemoryLimit runs many queries at once through one *sql.DB
// under a small WithMemoryLimit: every answer is right, every scan's budget
// is capped by the limit, the limit's budget was used by the scans and holds
// nothing once they are done.
func TestScansShareTheMemoryLimit(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const limit = 1 << 20
	c, reg, err := newConnector("", WithMemoryLimit(limit))
	if err != nil {
		t.Fatal(err)
	}
	db := OpenDB(t, c)
	const source = "testdata/chunks/"
	// remote_segments_stats() shows every scan of the process: this test's
	// are the ones after the newest scan so far.
	var before int64
	if err := db.QueryRow("SELECT coalesce(max(scan_id), 0) FROM remote_segments_stats()").Scan(&before); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			var n, sum int64
			err := db.QueryRow("SELECT count(*), sum(x) FROM remote_segments(?)", source).Scan(&n, &sum)
			if err == nil && (n != 1434 || sum != 4697963-33580514) {
				err = fmt.Errorf("count %d, sum %d; want 1434, %d", n, sum, 4697963-33580514)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	var scans, maxCap int64
	if err := db.QueryRow("SELECT count(*), max(budget_cap) FROM remote_segments_stats() WHERE scan_id > ?", before).Scan(&scans, &maxCap); err != nil {
		t.Fatal(err)
	}
	if scans != 8 || maxCap > limit {
		t.Errorf("%d scans, the largest budget cap %d; want 8, at most the limit %d", scans, maxCap, limit)
	}
	st := reg.process.Memory.Stats()
	if st.Peak == 0 || st.InUse != 0 {
		t.Errorf("the shared limit: peak %d, in use %d after the scans; want some, then 0", st.Peak, st.InUse)
	}
	if _, err := NewConnector("", WithMemoryLimit(0)); err == nil {
		t.Error("WithMemoryLimit(0) was accepted")
	}
}
