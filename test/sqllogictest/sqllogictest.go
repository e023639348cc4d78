// Package sqllogictest runs DuckDB's sqllogictest files against DuckDB host processes (the DuckDB CLI and build/host/duckdb_host), one process per file.
//
// # Format
//
// The format is the one of DuckDB's test/sql/*.test files. Lines starting with
// '#' between records are comments; the header comments "# name:",
// "# description:" and "# group:" are kept in [File]. Records are separated by
// blank lines:
//
//	statement ok|error|maybe      the SQL follows; for error/maybe an optional
//	<SQL>                         "----" line and the expected message follow:
//	----                          a substring of the error, or <REGEX>:re, or
//	<expected error>              <!REGEX>:re (must not match)
//
//	query <types> [nosort|rowsort|valuesort] [label]
//	<SQL>
//	----
//	<row: values separated by tabs>
//
//	require <extension>           skip the rest of the file if the extension
//	                              cannot be loaded; "require remote_segments"
//	                              needs the ${EXT} file to exist
//	require-env NAME [VALUE]      skip the rest of the file unless set
//	skipif|onlyif <host>          condition for the next record; <host> is a
//	                              host name ("cli", "engine") or "duckdb" (both)
//	mode skip|unskip              skip the records in between
//	loop VAR FROM TO / foreach VAR V1 V2 ... / endloop
//	                              repeat the records in between with ${VAR}
//	                              (concurrentloop/concurrentforeach run in order)
//	restart                       restart the host process (in-memory state is lost)
//	load PATH                     no-op: every session is an in-memory database
//	sleep N [unit]                pause
//	halt                          stop the file
//
// Before a record runs, ${NAME} is replaced by the value of NAME in the
// variables passed to [Run] (EXT is the extension's path, DATA the data
// directory) and __TEST_DIR__ by a fresh directory for the file. A ${NAME}
// without a value fails the record.
//
// # Results
//
// Both hosts print every value cast to VARCHAR (DuckDB's own text rendering,
// as the CLI's list mode prints it). Before comparison, SQL NULL becomes NULL
// and the empty string becomes (empty). Values are compared as strings, except
// in R columns, where two numbers within a relative 1e-6 are equal. The
// expected rows may also be given one value per line (the original
// sqllogictest layout). A query whose values span lines (a value holding a
// newline) passes when the text of all rows, tab-separated, equals the
// expected text.
package sqllogictest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Kind is the kind of a record.
type Kind int

const (
	Statement  Kind = iota // statement ok|error|maybe
	Query                  // query <types> [sort] [label]
	Require                // require <extension>
	RequireEnv             // require-env NAME [VALUE]
	Restart                // restart
	Load                   // load PATH (no-op)
	Sleep                  // sleep N [unit]
	Halt                   // halt
	HostEnv                // host-env NAME VALUE
)

func (k Kind) String() string {
	switch k {
	case Statement:
		return "statement"
	case Query:
		return "query"
	case Require:
		return "require"
	case RequireEnv:
		return "require-env"
	case Restart:
		return "restart"
	case Load:
		return "load"
	case Sleep:
		return "sleep"
	case Halt:
		return "halt"
	case HostEnv:
		return "host-env"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Expect is what a statement record expects.
type Expect int

const (
	ExpectOK    Expect = iota // statement ok
	ExpectError               // statement error
	ExpectMaybe               // statement maybe: either succeeds or fails with the expected message
)

// SortMode is how a query record's rows are ordered before comparison.
type SortMode int

const (
	NoSort    SortMode = iota // rows compared in result order
	RowSort                   // rows sorted as text
	ValueSort                 // all values sorted individually
)

// Record is one test record.
type Record struct {
	Kind Kind
	Line int // 1-based line of the record's first line in its file

	SQL string // Statement, Query

	Expect       Expect // Statement
	ErrorMessage string // Statement: expected message ("" = any), lines joined by "\n"

	Types    string   // Query: one letter per column (I, T, R, ...)
	Sort     SortMode // Query
	Label    string   // Query: accepted and ignored
	Expected []string // Query: expected result lines
	HasRows  bool     // Query: the record had a "----" line

	Args []string // Require, RequireEnv, HostEnv, Load, Sleep: the words after the keyword

	SkipIf []string // skipif conditions that precede the record
	OnlyIf []string // onlyif conditions that precede the record
	Skip   bool     // inside mode skip
}

// File is a parsed test file.
type File struct {
	Path        string
	Name        string // from "# name:"
	Description string // from "# description:"
	Group       string // from "# group:"
	Records     []Record
}

// ParseError is a syntax error in a test file.
type ParseError struct {
	Path string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("sqllogictest: %s:%d: %s", e.Path, e.Line, e.Msg)
}

// ParseFile reads and parses the test file at path. On failure, returns an
// error (a *ParseError for syntax errors) and no file.
func ParseFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sqllogictest: %w", err)
	}
	defer f.Close()
	return Parse(path, f)
}

// Parse parses a test file read from r; path names it in errors. On failure,
// returns an error (a *ParseError for syntax errors) and no file.
func Parse(path string, r io.Reader) (*File, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sqllogictest: reading %s: %w", path, err)
	}
	p := &parser{path: path, lines: lines, file: &File{Path: path}}
	recs, err := p.block(0)
	if err != nil {
		return nil, err
	}
	p.file.Records = recs
	return p.file, nil
}

type parser struct {
	path  string
	lines []string
	i     int // next line
	file  *File
	skip  bool // inside mode skip
}

func (p *parser) errorf(line int, format string, args ...any) error {
	return &ParseError{Path: p.path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// block parses records until EOF (depth 0) or the endloop that closes a loop
// (depth > 0), which it consumes.
func (p *parser) block(depth int) ([]Record, error) {
	var recs []Record
	var skipIf, onlyIf []string
	for p.i < len(p.lines) {
		lineNo := p.i + 1
		line := p.lines[p.i]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			p.i++
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			p.header(trimmed)
			p.i++
			continue
		}
		fields := strings.Fields(trimmed)
		p.i++
		switch fields[0] {
		case "skipif", "onlyif":
			if len(fields) < 2 {
				return nil, p.errorf(lineNo, "%s needs a condition", fields[0])
			}
			if fields[0] == "skipif" {
				skipIf = append(skipIf, fields[1])
			} else {
				onlyIf = append(onlyIf, fields[1])
			}
			continue
		case "mode":
			if len(fields) < 2 {
				return nil, p.errorf(lineNo, "mode needs an argument")
			}
			switch fields[1] {
			case "skip":
				p.skip = true
			case "unskip":
				p.skip = false
			}
			// Other modes (output_result, debug, ...) only change DuckDB's
			// runner output: ignored.
			continue
		case "endloop":
			if depth == 0 {
				return nil, p.errorf(lineNo, "endloop without loop")
			}
			return recs, nil
		case "loop", "concurrentloop", "foreach", "concurrentforeach":
			body, err := p.block(depth + 1) // fails unless an endloop closes it
			if err != nil {
				return nil, err
			}
			expanded, err := p.expand(lineNo, fields, body)
			if err != nil {
				return nil, err
			}
			recs = append(recs, expanded...)
			skipIf, onlyIf = nil, nil
			continue
		}
		rec, err := p.record(lineNo, fields)
		if err != nil {
			return nil, err
		}
		rec.SkipIf, rec.OnlyIf, rec.Skip = skipIf, onlyIf, p.skip
		skipIf, onlyIf = nil, nil
		recs = append(recs, rec)
	}
	if depth > 0 {
		return nil, p.errorf(len(p.lines), "loop without endloop")
	}
	return recs, nil
}

func (p *parser) header(comment string) {
	body := strings.TrimSpace(strings.TrimPrefix(comment, "#"))
	for _, h := range []struct {
		key string
		dst *string
	}{{"name:", &p.file.Name}, {"description:", &p.file.Description}, {"group:", &p.file.Group}} {
		if strings.HasPrefix(body, h.key) && *h.dst == "" {
			*h.dst = strings.TrimSpace(strings.TrimPrefix(body, h.key))
		}
	}
}

// expand repeats body once per loop value, replacing ${VAR}.
func (p *parser) expand(lineNo int, fields []string, body []Record) ([]Record, error) {
	var name string
	var values []string
	switch fields[0] {
	case "loop", "concurrentloop":
		if len(fields) != 4 {
			return nil, p.errorf(lineNo, "usage: %s VAR FROM TO", fields[0])
		}
		from, err1 := strconv.Atoi(fields[2])
		to, err2 := strconv.Atoi(fields[3])
		if err1 != nil || err2 != nil {
			return nil, p.errorf(lineNo, "loop bounds must be integers")
		}
		name = fields[1]
		for v := from; v < to; v++ {
			values = append(values, strconv.Itoa(v))
		}
	default:
		if len(fields) < 3 {
			return nil, p.errorf(lineNo, "usage: %s VAR VALUE...", fields[0])
		}
		name, values = fields[1], fields[2:]
	}
	var out []Record
	for _, v := range values {
		r := strings.NewReplacer("${"+name+"}", v)
		for _, rec := range body {
			rec.SQL = r.Replace(rec.SQL)
			rec.ErrorMessage = r.Replace(rec.ErrorMessage)
			rec.Expected = replaceAll(r, rec.Expected)
			rec.Args = replaceAll(r, rec.Args)
			out = append(out, rec)
		}
	}
	return out, nil
}

func replaceAll(r *strings.Replacer, in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = r.Replace(s)
	}
	return out
}

// bodyLines returns the lines from the current one up to a blank line (or
// "----" when stopAtDashes), consuming them (not the blank line).
func (p *parser) bodyLines(stopAtDashes bool) (lines []string, dashes bool) {
	for p.i < len(p.lines) {
		line := p.lines[p.i]
		if strings.TrimSpace(line) == "" {
			return lines, false
		}
		p.i++
		if stopAtDashes && strings.TrimSpace(line) == "----" {
			return lines, true
		}
		lines = append(lines, line)
	}
	return lines, false
}

func (p *parser) record(lineNo int, fields []string) (Record, error) {
	rec := Record{Line: lineNo}
	switch fields[0] {
	case "statement":
		rec.Kind = Statement
		if len(fields) < 2 {
			return rec, p.errorf(lineNo, "statement needs ok, error or maybe")
		}
		switch fields[1] {
		case "ok":
			rec.Expect = ExpectOK
		case "error":
			rec.Expect = ExpectError
		case "maybe":
			rec.Expect = ExpectMaybe
		default:
			return rec, p.errorf(lineNo, "unknown statement expectation %q", fields[1])
		}
		sql, dashes := p.bodyLines(true)
		if len(sql) == 0 {
			return rec, p.errorf(lineNo, "statement without SQL")
		}
		rec.SQL = strings.Join(sql, "\n")
		if dashes {
			if rec.Expect == ExpectOK {
				return rec, p.errorf(lineNo, "statement ok cannot have an expected result")
			}
			msg, _ := p.bodyLines(false)
			rec.ErrorMessage = strings.TrimSpace(strings.Join(msg, "\n"))
		}
	case "query":
		rec.Kind = Query
		if len(fields) < 2 {
			return rec, p.errorf(lineNo, "query needs column types")
		}
		rec.Types = fields[1]
		for _, f := range fields[2:] {
			switch f {
			case "nosort":
				rec.Sort = NoSort
			case "rowsort":
				rec.Sort = RowSort
			case "valuesort":
				rec.Sort = ValueSort
			default:
				if rec.Label != "" {
					return rec, p.errorf(lineNo, "unexpected %q after query label", f)
				}
				rec.Label = f
			}
		}
		sql, dashes := p.bodyLines(true)
		if len(sql) == 0 {
			return rec, p.errorf(lineNo, "query without SQL")
		}
		rec.SQL = strings.Join(sql, "\n")
		rec.HasRows = dashes
		if dashes {
			rec.Expected, _ = p.bodyLines(false)
		}
	case "require":
		rec.Kind = Require
		if len(fields) < 2 {
			return rec, p.errorf(lineNo, "require needs an extension name")
		}
		rec.Args = fields[1:]
	case "require-env":
		rec.Kind = RequireEnv
		if len(fields) < 2 || len(fields) > 3 {
			return rec, p.errorf(lineNo, "usage: require-env NAME [VALUE]")
		}
		rec.Args = fields[1:]
	case "host-env":
		// Sets NAME=VALUE (after ${...} substitution) in the environment of
		// every host process the file starts, wherever the record stands:
		// for settings a host reads once per process.
		rec.Kind = HostEnv
		if len(fields) != 3 {
			return rec, p.errorf(lineNo, "usage: host-env NAME VALUE")
		}
		rec.Args = fields[1:]
	case "restart":
		rec.Kind = Restart
	case "load", "reconnect":
		// load: every session is an in-memory database; reconnect: a new
		// connection to the same database changes nothing the tests see.
		rec.Kind = Load
		rec.Kind = Load
		rec.Args = fields[1:]
	case "sleep":
		rec.Kind = Sleep
		if len(fields) < 2 {
			return rec, p.errorf(lineNo, "usage: sleep N [unit]")
		}
		if _, err := sleepDuration(fields[1:]); err != nil {
			return rec, p.errorf(lineNo, "%v", err)
		}
		rec.Args = fields[1:]
	case "halt":
		rec.Kind = Halt
	default:
		return rec, p.errorf(lineNo, "unknown record type %q", fields[0])
	}
	return rec, nil
}

// sleepDuration parses the arguments of a sleep record: N [second(s)|
// millisecond(s)|microsecond(s)|nanosecond(s)]; the default unit is seconds.
func sleepDuration(args []string) (time.Duration, error) {
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 0 {
		return 0, errors.New("sleep needs a non-negative integer")
	}
	unit := time.Second
	if len(args) > 1 {
		switch strings.TrimSuffix(args[1], "s") {
		case "second":
		case "millisecond":
			unit = time.Millisecond
		case "microsecond":
			unit = time.Microsecond
		case "nanosecond":
			unit = time.Nanosecond
		default:
			return 0, fmt.Errorf("unknown sleep unit %q", args[1])
		}
	}
	return time.Duration(n) * unit, nil
}
