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

	"github.com/duckdb/duckdb-go/v2"

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
			if complete(pending.String()) {
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
	args := splitArgs(line[1:])
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
		sh.colSep = unescape(args[1])
		if len(args) >= 3 {
			sh.rowSep = unescape(args[2])
		}
	case cmd == "nullvalue" && len(args) == 2:
		sh.null = args[1]
	case cmd == "mode" && len(args) == 2 && args[1] == "list":
	case (cmd == "headers" || cmd == "header") && len(args) == 2:
		sh.header = args[1] == "on" || args[1] == "1"
	case cmd == "version":
		sh.printVersion()
	default:
		sh.report(fmt.Errorf("unknown command or invalid arguments: %q", cmd))
	}
	return true
}

// runSQL runs the statements of text in order, stopping at the first error.
func (sh *shell) runSQL(text string) {
	for _, stmt := range statements(text) {
		if err := sh.runStatement(stmt); err != nil {
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
	body := strings.TrimSpace(stripComments(stmt))
	if m := loadExtension.FindStringSubmatch(body); m != nil && strings.HasPrefix(filepath.Base(m[1]), "remote_segments.") {
		if _, err := os.Stat(m[1]); err != nil {
			return fmt.Errorf("IO Error: Extension %q not found", m[1])
		}
		return remotesql.Register(sh.ctx, sh.conn)
	}
	keyword := strings.ToUpper(firstWord(body))
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

// firstWord returns the first keyword of a statement, past opening parentheses.
func firstWord(s string) string {
	s = strings.TrimLeft(s, "( \t\n\r")
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
	})
	if end < 0 {
		return s
	}
	return s[:end]
}

// A piece of SQL text: code, a quoted string or identifier, or a comment.
type piece struct {
	text string
	kind byte // 'c' code, 'q' quoted, '-' comment
	open bool // a quote or block comment that the text ends inside
}

// pieces cuts text into code, quotes and comments.
func pieces(text string) []piece {
	var out []piece
	code := 0 // start of the current code piece
	flush := func(end int) {
		if end > code {
			out = append(out, piece{text: text[code:end], kind: 'c'})
		}
	}
	for i := 0; i < len(text); {
		var end int
		var kind byte
		switch {
		case text[i] == '\'' || text[i] == '"':
			kind, end = 'q', strings.IndexByte(text[i+1:], text[i])
			if end >= 0 {
				end += i + 2
			}
		case strings.HasPrefix(text[i:], "--"):
			kind, end = '-', strings.IndexByte(text[i:], '\n')
			if end < 0 {
				end = len(text) // a line comment ends with the text
			} else {
				end += i
			}
		case strings.HasPrefix(text[i:], "/*"):
			kind, end = '-', strings.Index(text[i+2:], "*/")
			if end >= 0 {
				end += i + 4
			}
		default:
			i++
			continue
		}
		flush(i)
		p := piece{kind: kind}
		if end < 0 {
			end, p.open = len(text), true
		}
		p.text = text[i:end]
		out = append(out, p)
		i, code = end, end
	}
	flush(len(text))
	return out
}

// complete reports whether text ends a statement: its last code character is
// a ';' and no quote or block comment is left open (what the CLI waits for).
func complete(text string) bool {
	last := byte(0)
	for _, p := range pieces(text) {
		switch {
		case p.open:
			return false
		case p.kind == 'q':
			last = 0
		case p.kind == 'c':
			if t := strings.TrimSpace(p.text); t != "" {
				last = t[len(t)-1]
			}
		}
	}
	return last == ';'
}

// statements splits text at each ';' in code; parts that hold only white
// space and comments are left out.
func statements(text string) []string {
	var out []string
	var cur strings.Builder
	end := func() {
		if strings.TrimSpace(stripComments(cur.String())) != "" {
			out = append(out, cur.String())
		}
		cur.Reset()
	}
	for _, p := range pieces(text) {
		if p.kind != 'c' {
			cur.WriteString(p.text)
			continue
		}
		parts := strings.Split(p.text, ";")
		for i, part := range parts {
			cur.WriteString(part)
			if i < len(parts)-1 {
				end()
			}
		}
	}
	end()
	return out
}

// stripComments returns text with every comment replaced by a space.
func stripComments(text string) string {
	var b strings.Builder
	for _, p := range pieces(text) {
		if p.kind == '-' {
			b.WriteByte(' ')
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

// splitArgs splits a dot command's arguments: "..." with backslash escapes
// resolved, '...' literal, others up to white space.
func splitArgs(line string) []string {
	var args []string
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(line) && line[j] != c {
				if c == '"' && line[j] == '\\' && j+1 < len(line) {
					j++
				}
				j++
			}
			arg := line[i+1 : min(j, len(line))]
			if c == '"' {
				arg = unescape(arg)
			}
			args = append(args, arg)
			i = j + 1
		default:
			j := strings.IndexAny(line[i:], " \t")
			if j < 0 {
				j = len(line) - i
			}
			args = append(args, line[i:i+j])
			i += j
		}
	}
	return args
}

// unescape resolves \t \n \r \\ \" \' and \NNN (octal).
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; {
		case c == 't':
			b.WriteByte('\t')
		case c == 'n':
			b.WriteByte('\n')
		case c == 'r':
			b.WriteByte('\r')
		case c >= '0' && c <= '7':
			v := 0
			for k := 0; k < 3 && i < len(s) && s[i] >= '0' && s[i] <= '7'; k++ {
				v = v*8 + int(s[i]-'0')
				i++
			}
			i--
			b.WriteByte(byte(v))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
