package remotesql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/remote-segments/remote_segments/sql/internal/staticapi"
)

// The driver and bindings versions whose unexported connection layout the
// accessor below was written against. Any other version is refused: the
// layout is not part of the driver's API.
const (
	driverModule    = "github.com/duckdb/duckdb-go/v2"
	driverVersion   = "v2.10506.0" // DuckDB 1.5.6
	bindingsModule  = "github.com/duckdb/duckdb-go-bindings"
	bindingsVersion = "v0.10506.0"
	engineVersion   = "v1.5.6" // what the bindings link
)

// ErrDriver means the program's DuckDB driver is not the one remotesql can
// reach into: another version, a replaced module, or a connection whose
// layout differs from the expected one. The message says which.
var ErrDriver = errors.New("remotesql: unsupported DuckDB driver")

// checkBuild checks that the program was built with exactly the pinned
// driver and bindings modules, and links the DuckDB they bring.
func checkBuild() error {
	if v := staticapi.LibraryVersion(); v != engineVersion {
		return fmt.Errorf("%w: the program links DuckDB %s; remotesql needs %s (%s %s)", ErrDriver, v, engineVersion, driverModule, driverVersion)
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Errorf("%w: the program has no build information, so the driver's version cannot be checked", ErrDriver)
	}
	if len(info.Deps) == 0 && info.Main.Path != "" {
		// go test records no dependencies in test binaries; the engine
		// version above, the accessor's layout checks and its id check
		// still run.
		return nil
	}
	return checkDeps(info.Deps)
}

// checkDeps checks that deps hold exactly the pinned driver and bindings
// versions, not replaced.
func checkDeps(deps []*debug.Module) error {
	want := map[string]string{driverModule: driverVersion, bindingsModule: bindingsVersion}
	for _, dep := range deps {
		v, ok := want[dep.Path]
		if !ok {
			continue
		}
		if dep.Replace != nil {
			return fmt.Errorf("%w: %s is replaced by %s %s; remotesql needs %s %s", ErrDriver, dep.Path, dep.Replace.Path, dep.Replace.Version, dep.Path, v)
		}
		if dep.Version != v {
			return fmt.Errorf("%w: the program uses %s %s; remotesql needs %s (require it in go.mod)", ErrDriver, dep.Path, dep.Version, v)
		}
		delete(want, dep.Path)
	}
	for path, v := range want {
		return fmt.Errorf("%w: %s %s is not in the program's build information", ErrDriver, path, v)
	}
	return nil
}

// rawConn is what the accessor reads from a *duckdb.Conn.
type rawConn struct {
	con      unsafe.Pointer // the duckdb_connection
	contexts *sync.Map      // the connector's statement contexts, by connection id
}

// accessConn reads the unexported duckdb_connection and the store of
// statement contexts of a driver connection. It checks every field it reads
// by name and type, and fails with ErrDriver on anything unexpected; it never
// reads memory it has not checked. The caller must hold the connection (a
// connector's init function, or (*sql.Conn).Raw).
func accessConn(driverConn any) (rawConn, error) {
	c, ok := driverConn.(*duckdb.Conn)
	if !ok || c == nil {
		return rawConn{}, fmt.Errorf("%w: the connection is a %T, not a *duckdb.Conn", ErrDriver, driverConn)
	}
	v := reflect.ValueOf(c).Elem()

	conn := v.FieldByName("conn")
	if !conn.IsValid() || conn.Type() != reflect.TypeFor[mapping.Connection]() {
		return rawConn{}, fmt.Errorf("%w: duckdb.Conn has no field conn of type mapping.Connection", ErrDriver)
	}
	ptr, ok := conn.Type().FieldByName("Ptr")
	if !ok || ptr.Type != reflect.TypeFor[unsafe.Pointer]() || conn.Type().NumField() != 1 {
		return rawConn{}, fmt.Errorf("%w: mapping.Connection is not a struct{Ptr unsafe.Pointer}", ErrDriver)
	}
	mc := *(*mapping.Connection)(unsafe.Pointer(conn.UnsafeAddr()))
	if mc.Ptr == nil {
		return rawConn{}, fmt.Errorf("%w: the connection is closed", ErrDriver)
	}

	store := v.FieldByName("ctxStore")
	if !store.IsValid() || store.Kind() != reflect.Pointer || store.Type().Elem().Name() != "contextStore" ||
		store.Type().Elem().PkgPath() != driverModule {
		return rawConn{}, fmt.Errorf("%w: duckdb.Conn has no field ctxStore of type *duckdb.contextStore", ErrDriver)
	}
	m, ok := store.Type().Elem().FieldByName("m")
	if !ok || m.Type != reflect.TypeFor[sync.Map]() || store.Type().Elem().NumField() != 1 {
		return rawConn{}, fmt.Errorf("%w: duckdb.contextStore is not a struct{m sync.Map}", ErrDriver)
	}
	sp := *(*unsafe.Pointer)(unsafe.Pointer(store.UnsafeAddr()))
	if sp == nil {
		return rawConn{}, fmt.Errorf("%w: the connection has no context store", ErrDriver)
	}
	return rawConn{con: mc.Ptr, contexts: (*sync.Map)(unsafe.Add(sp, m.Offset))}, nil
}

// checkConn is the functional cross-check of accessConn on one connection:
// the id DuckDB reports for the pointer read must be the driver's own
// duckdb.ConnId. It returns the connection's rawConn.
func checkConn(conn *sql.Conn) (rawConn, error) {
	if err := checkBuild(); err != nil {
		return rawConn{}, err
	}
	want, err := duckdb.ConnId(conn)
	if err != nil {
		return rawConn{}, fmt.Errorf("remotesql: the connection's id: %w", err)
	}
	var rc rawConn
	err = conn.Raw(func(dc any) error {
		var err error
		if rc, err = accessConn(dc); err != nil {
			return err
		}
		if got := staticapi.ConnectionID(rc.con); got != want {
			return fmt.Errorf("%w: DuckDB reports connection id %d for the pointer read, the driver says %d", ErrDriver, got, want)
		}
		return nil
	})
	return rc, err
}

// statements implements cabi.Statements over the driver's store of
// statement contexts: the driver puts each statement's context there, under
// its connection's id, while it prepares and executes the statement.
type statements struct{ contexts *sync.Map }

func (s statements) BindConnection(bind unsafe.Pointer) uint64 {
	return staticapi.BindConnectionID(bind)
}

func (s statements) Context(conn uint64) context.Context {
	if conn == staticapi.NoConnection {
		return context.Background()
	}
	if v, ok := s.contexts.Load(conn); ok {
		if ctx, ok := v.(context.Context); ok {
			return ctx
		}
	}
	return context.Background()
}
