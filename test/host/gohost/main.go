// Command gohost is the Go-driver host of the SQL tests: a small shell over
// database/sql with the DuckDB Go driver (github.com/duckdb/duckdb-go/v2,
// DuckDB 1.5.6) and remotesql, speaking the subset of the DuckDB CLI's line
// protocol that test/sqllogictest drives every host with (see
// test/host/duckdb_host.c):
//
//	SQL lines              accumulated until a line ends a statement with ';'
//	.read FILE             run every statement of FILE
//	.print ARG...          print the arguments and a newline
//	.output ?FILE?         send output to FILE (e.g. /dev/stderr), or stdout again
//	.separator COL ?ROW?   column and row separators (backslash escapes allowed)
//	.nullvalue TEXT        text printed for NULL
//	.mode list, .headers on|off, .version, .quit, .exit
//	.timer on|off          after each statement, its time as the CLI prints it
//	                       ("Run Time (s): real 0.123 ..."), for the benchmarks
//
// The database is in memory and has no remote_segments at start. A statement
// LOAD '<path>/remote_segments.duckdb_extension' does what loading the
// extension does in the other hosts, the Go way: remotesql.Register on the
// session's connection (a Go program cannot load the extension, a second Go
// runtime). Every other statement runs as written. With -tune-memory-limit
// the database comes from remotesql.NewConnector with WithMemoryLimitTuning
// instead (for benchmarks: the functions exist from the start).
//
// Rows are printed in list mode with every value cast to VARCHAR by DuckDB,
// as the CLI prints them: a statement that returns rows is run as
// SELECT CAST(COLUMNS(*) AS VARCHAR) FROM (statement). A failing statement
// prints its error on stderr and stops the rest of its input unit. Exit
// status: 0, or 1 when any command failed.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/remote-segments/remote_segments/test/host/gohost/sqltext"

	remotesql "github.com/remote-segments/remote_segments/sql"
)

func main() {
	version := flag.Bool("version", false, "print the DuckDB version and exit")
	flag.Bool("unsigned", true, "accepted for the CLI's sake; nothing is loaded")
	tuned := flag.Bool("tune-memory-limit", false, "open the database with remotesql.NewConnector(\"\", remotesql.WithMemoryLimitTuning()): "+
		"the functions are there from the start (LOAD does nothing more) and the scans set Go's memory limit, as the extension does")
	flag.Parse()
	os.Exit(run(*version, *tuned))
}

func run(version, tuned bool) int {
	ctx := context.Background()
	var connector driver.Connector
	var err error
	if tuned {
		connector, err = remotesql.NewConnector("", remotesql.WithMemoryLimitTuning())
	} else {
		connector, err = duckdb.NewConnector("", nil)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gohost: cannot open the database:", err)
		return 2
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gohost: cannot connect:", err)
		return 2
	}
	defer conn.Close()
	sh := &shell{ctx: ctx, conn: conn, out: os.Stdout, colSep: "|", rowSep: "\n", null: "NULL"}
	if version {
		sh.printVersion()
		return 0
	}
	sh.loop(os.Stdin)
	if sh.out != os.Stdout {
		sh.out.Close()
	}
	if sh.errors > 0 {
		return 1
	}
	return 0
}

type shell struct {
	ctx    context.Context
	conn   *sql.Conn
	out    *os.File
	colSep string
	rowSep string
	null   string
	header bool
	timer  bool
	errors int
}

// loop reads commands and SQL lines until EOF or .quit.
func (sh *shell) loop(in io.Reader) {
	r := bufio.NewReader(in)
	var pending strings.Builder
	for {
		line, err := r.ReadString('\n')
		if line == "" && err != nil {
			break
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case pending.Len() == 0 && strings.HasPrefix(line, "."):
			if !sh.dot(line) {
				return
			}
		case pending.Len() > 0 || strings.TrimSpace(line) != "":
			pending.WriteString(line)
			pending.WriteByte('\n')
			if sqltext.Complete(pending.String()) {
				sh.runSQL(pending.String())
				pending.Reset()
			}
		}
		if err != nil {
			break
		}
	}
	if pending.Len() > 0 {
		sh.runSQL(pending.String())
	}
}

// report prints an error message on stderr, in DuckDB's "<Kind> Error: " form.
func (sh *shell) report(err error) {
	msg := err.Error()
	if !errorLine.MatchString(msg) {
		msg = "Error: " + msg
	}
	fmt.Fprintln(os.Stderr, msg)
	sh.errors++
}

var errorLine = regexp.MustCompile(`(?m)^(?:[A-Za-z][A-Za-z_ ]*)?Error: `)

func (sh *shell) printVersion() {
	var v string
	if err := sh.conn.QueryRowContext(sh.ctx, "SELECT library_version FROM pragma_version()").Scan(&v); err != nil {
		sh.report(err)
		return
	}
	fmt.Fprintln(sh.out, v)
}

// dot runs one dot command; it returns false for .quit and .exit.
func (sh *shell) dot(line string) bool {
	args := sqltext.SplitArgs(line[1:])
	if len(args) == 0 {
		return true
	}
	switch cmd := args[0]; {
	case cmd == "quit" || cmd == "exit":
		return false
	case cmd == "print":
		fmt.Fprintln(sh.out, strings.Join(args[1:], " "))
	case cmd == "read" && len(args) == 2:
		text, err := os.ReadFile(args[1])
		if err != nil {
			sh.report(fmt.Errorf("cannot open %q: %w", args[1], err))
			return true
		}
		sh.runSQL(string(text))
	case cmd == "output":
		if sh.out != os.Stdout {
			sh.out.Close()
		}
		sh.out = os.Stdout
		if len(args) >= 2 && args[1] != "stdout" {
			f, err := os.OpenFile(args[1], os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				sh.report(fmt.Errorf("cannot open output: %w", err))
			} else {
				sh.out = f
			}
		}
	case cmd == "separator" && len(args) >= 2:
		sh.colSep = sqltext.Unescape(args[1])
		if len(args) >= 3 {
			sh.rowSep = sqltext.Unescape(args[2])
		}
	case cmd == "nullvalue" && len(args) == 2:
		sh.null = args[1]
	case cmd == "mode" && len(args) == 2 && args[1] == "list":
	case (cmd == "headers" || cmd == "header") && len(args) == 2:
		sh.header = args[1] == "on" || args[1] == "1"
	case cmd == "timer" && len(args) == 2:
		sh.timer = args[1] == "on" || args[1] == "1"
	case cmd == "version":
		sh.printVersion()
	default:
		sh.report(fmt.Errorf("unknown command or invalid arguments: %q", cmd))
	}
	return true
}

// runSQL runs the statements of text in order, stopping at the first error.
func (sh *shell) runSQL(text string) {
	for _, stmt := range sqltext.Statements(text) {
		start := time.Now()
		err := sh.runStatement(stmt)
		if sh.timer {
			fmt.Fprintf(sh.out, "Run Time (s): real %.3f\n", time.Since(start).Seconds())
		}
		if err != nil {
			sh.report(err)
			return
		}
	}
}

// loadExtension matches LOAD of the remote_segments extension file.
var loadExtension = regexp.MustCompile(`(?is)^LOAD\s+'([^']*)'$`)

// Statements that return rows; the keyword that starts them.
var (
	selectLike = map[string]bool{"SELECT": true, "FROM": true, "WITH": true, "VALUES": true, "TABLE": true,
		"DESCRIBE": true, "SUMMARIZE": true, "SHOW": true, "PIVOT": true, "UNPIVOT": true}
	otherRows = map[string]bool{"PRAGMA": true, "CALL": true, "EXPLAIN": true}
)

func (sh *shell) runStatement(stmt string) error {
	body := strings.TrimSpace(sqltext.StripComments(stmt))
	if m := loadExtension.FindStringSubmatch(body); m != nil && strings.HasPrefix(filepath.Base(m[1]), "remote_segments.") {
		if _, err := os.Stat(m[1]); err != nil {
			return fmt.Errorf("IO Error: Extension %q not found", m[1])
		}
		return remotesql.Register(sh.ctx, sh.conn)
	}
	keyword := strings.ToUpper(sqltext.FirstWord(body))
	switch {
	case selectLike[keyword]:
		return sh.printRows("SELECT CAST(COLUMNS(*) AS VARCHAR) FROM (\n" + stmt + "\n)")
	case otherRows[keyword]:
		return sh.printRows(stmt)
	default:
		_, err := sh.conn.ExecContext(sh.ctx, stmt)
		return err
	}
}

// printRows runs query and prints its rows in list mode.
func (sh *shell) printRows(query string) error {
	rows, err := sh.conn.QueryContext(sh.ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	var b strings.Builder
	if sh.header {
		b.WriteString(strings.Join(cols, sh.colSep))
		b.WriteString(sh.rowSep)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			if i > 0 {
				b.WriteString(sh.colSep)
			}
			switch v := v.(type) {
			case nil:
				b.WriteString(sh.null)
			case []byte:
				b.Write(v)
			default:
				fmt.Fprint(&b, v)
			}
		}
		b.WriteString(sh.rowSep)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	_, err = io.WriteString(sh.out, b.String())
	return err
}
