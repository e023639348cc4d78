// Package remotesql adds remote_segments and remote_segments_stats to the
// database/sql connections of the DuckDB Go driver, from the same C
// implementation as the loadable extension and without loading it.
package remotesql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/remote-segments/remote_segments/cabi"
	"github.com/remote-segments/remote_segments/scanner"
	"github.com/remote-segments/remote_segments/sql/internal/staticapi"
)

// Option configures NewConnector.
type Option func(*config)

type config struct {
	connInit    func(driver.ExecerContext) error
	tuneLimit   bool
	memoryLimit int64
	limitSet    bool
}

// WithMemoryLimit gives the scans of the connector's database a memory limit
// of their own, bytes, instead of the program's one: the parent of every
// scan's budget, so concurrent queries together hold at most bytes. Without
// it the database shares the program's limit with every other database
// remotesql serves (REMOTE_SEGMENTS_MEMORY_LIMIT, else a quarter of the
// machine's memory). NewConnector fails if bytes is not positive.
func WithMemoryLimit(bytes int64) Option {
	return func(c *config) { c.memoryLimit, c.limitSet = bytes, true }
}

// WithConnInit runs fn on every new connection after the functions are
// registered, as the connInitFn of duckdb.NewConnector does; an error from
// fn fails the connection.
func WithConnInit(fn func(execer driver.ExecerContext) error) Option {
	return func(c *config) { c.connInit = fn }
}

// WithMemoryLimitTuning lets the scans set the Go runtime's soft memory limit
// (debug.SetMemoryLimit) to the budgets of the running scans plus 64 MiB, and
// to no limit when none runs, as the loadable extension does. Without it the
// program's own memory limit and GOGC stay untouched. Use it only in a
// program that sets no memory limit of its own.
func WithMemoryLimitTuning() Option {
	return func(c *config) { c.tuneLimit = true }
}

// NewConnector returns a DuckDB connector whose every connection has
// remote_segments and remote_segments_stats registered. dsn is that of
// duckdb.NewConnector ("" for an in-memory database).
//
// The driver must be github.com/duckdb/duckdb-go/v2 v2.10506.0 (DuckDB
// 1.5.6): remotesql reaches the driver's raw connection, which the driver
// does not export. Cancelling the context of a query stops its scans: queued
// requests are dropped, running ones abort, and the scans' budgets return to
// zero. The scans share the program's memory limit, or the database's own
// (WithMemoryLimit).
// The program's garbage-collector settings are left alone unless
// WithMemoryLimitTuning is given.
//
// It fails with ErrDriver when the program's DuckDB driver is not the
// supported version (checked on a scratch in-memory connection), and with
// the driver's error when the database cannot be opened. Close the connector
// (sql.DB.Close does) to close the database.
func NewConnector(dsn string, opts ...Option) (driver.Connector, error) {
	c, _, err := newConnector(dsn, opts...)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newConnector is NewConnector, also returning what registers the functions.
func newConnector(dsn string, opts ...Option) (*duckdb.Connector, *registrar, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if err := selfCheck(); err != nil {
		return nil, nil, err
	}
	reg := &registrar{tuneLimit: cfg.tuneLimit}
	if cfg.limitSet {
		if cfg.memoryLimit <= 0 {
			return nil, nil, fmt.Errorf("remotesql: WithMemoryLimit(%d): the limit must be positive", cfg.memoryLimit)
		}
		reg.process = programProcess().WithMemoryLimit(cfg.memoryLimit)
	}
	c, err := duckdb.NewConnector(dsn, func(execer driver.ExecerContext) error {
		rc, err := accessConn(execer)
		if err != nil {
			return err
		}
		if err := reg.register(rc); err != nil {
			return err
		}
		if cfg.connInit != nil {
			return cfg.connInit(execer)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return c, reg, nil
}

// Register adds remote_segments and remote_segments_stats to the database of
// conn, a connection of the DuckDB Go driver; every connection of that
// database sees them. Registering on a database that has them already does
// nothing. As with NewConnector, the scans stop when the context of their
// query is cancelled, and share the program's memory limit
// (REMOTE_SEGMENTS_MEMORY_LIMIT, else a quarter of the machine's memory).
//
// It fails with ErrDriver when conn is not a connection of the supported
// driver version, with an error naming REMOTE_SEGMENTS_MEMORY_LIMIT when that
// is malformed, and with DuckDB's error when registration fails.
func Register(ctx context.Context, conn *sql.Conn) error {
	rc, err := checkConn(conn)
	if err != nil {
		return err
	}
	var present bool
	if err := conn.QueryRowContext(ctx,
		"SELECT count(*) > 0 FROM duckdb_functions() WHERE function_name = 'remote_segments'").Scan(&present); err != nil {
		return fmt.Errorf("remotesql: looking for remote_segments: %w", err)
	}
	if present {
		return nil
	}
	return conn.Raw(func(any) error {
		return (&registrar{}).register(rc)
	})
}

// selfCheck runs the functional check of the connection accessor on a
// scratch in-memory database: the driver's layout does not depend on the
// database, and the check must pass before any pointer read is used.
func selfCheck() error {
	if err := checkBuild(); err != nil {
		return err
	}
	probe, err := duckdb.NewConnector("", nil)
	if err != nil {
		return fmt.Errorf("remotesql: opening a scratch database: %w", err)
	}
	db := sql.OpenDB(probe) // Close closes probe too
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("remotesql: opening a scratch connection: %w", err)
	}
	defer conn.Close()
	_, err = checkConn(conn)
	return err
}

// programProcess is the program's one scanner.Process, made at its first
// use: its store domains and its registry of scans serve every database the
// program opens. It has no memory limit of its own; the databases' limits
// are derived from it (programLimited, WithMemoryLimit).
var programProcess = sync.OnceValue(func() *scanner.Process { return scanner.NewProcess(0) })

// programLimited is programProcess with the program's memory limit
// (REMOTE_SEGMENTS_MEMORY_LIMIT, or a quarter of physical memory): the
// ceiling of every scan of every database without a limit of its own.
var programLimited = sync.OnceValues(func() (*scanner.Process, error) {
	limit, err := scanner.DefaultMemoryLimit()
	if err != nil {
		return nil, err
	}
	return programProcess().WithMemoryLimit(limit), nil
})

// registrar registers the functions once per database: DuckDB keeps table
// functions in the database's catalog, shared by its connections.
type registrar struct {
	tuneLimit bool
	process   *scanner.Process // the database's own memory limit; nil: the program's
	mu        sync.Mutex
	done      bool
}

func (r *registrar) register(rc rawConn) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil
	}
	if err := cabi.UseAPI(staticapi.Table()); err != nil {
		return err
	}
	// DuckDB's sandbox settings are read through C API v1.5.6, which the
	// linked engine has (checkBuild): the scans honour them as the
	// extension's do. The same version check as the extension's entry point.
	table, n := staticapi.SettingsTable()
	if err := cabi.UseSettingsAPI(staticapi.LibraryVersion(), table, n); err != nil {
		return fmt.Errorf("remotesql: %w", err)
	}
	proc := r.process
	if proc == nil {
		var err error
		if proc, err = programLimited(); err != nil {
			return fmt.Errorf("remotesql: %w", err)
		}
	}
	h := cabi.Host{Process: proc, TuneMemoryLimit: r.tuneLimit, Statements: statements{contexts: rc.contexts}}
	if err := cabi.Register(rc.con, h); err != nil {
		return fmt.Errorf("remotesql: %w", err)
	}
	r.done = true
	return nil
}
