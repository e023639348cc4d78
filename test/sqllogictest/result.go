package sqllogictest

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// nullText is what the hosts print for SQL NULL (their .nullvalue).
const nullText = "NULL"

// Value is one result value as a host printed it; Null marks SQL NULL.
type Value struct {
	Text string
	Null bool
}

// render returns the value as sqllogictest files spell it.
func (v Value) render() string {
	switch {
	case v.Null:
		return nullText
	case v.Text == "":
		return "(empty)"
	}
	return v.Text
}

// realTolerance is the relative difference under which two values of an R
// column are equal.
const realTolerance = 1e-6

// checkQuery compares a query's rows with the record's expected result. It
// returns "" when they match, otherwise a description of the mismatch.
func checkQuery(rec *Record, rows [][]Value) string {
	actual := make([][]string, len(rows))
	for i, row := range rows {
		actual[i] = make([]string, len(row))
		for j, v := range row {
			actual[i][j] = v.render()
		}
	}
	// A single expected line <REGEX>:re or <!REGEX>:re matches the whole
	// result's text (rows on lines, values tab-separated), as for errors:
	// for output such as EXPLAIN's, whose layout is not the point.
	if len(rec.Expected) == 1 && (strings.HasPrefix(rec.Expected[0], "<REGEX>:") || strings.HasPrefix(rec.Expected[0], "<!REGEX>:")) {
		if msg := checkError(rec.Expected[0], joinRows(actual)); msg != "" {
			return "result " + strings.TrimPrefix(msg, "error ")
		}
		return ""
	}
	ncol := len(rec.Types)
	if len(actual) > 0 && len(actual[0]) != ncol {
		return fmt.Sprintf("wrong column count: query %s declares %d, the result has %d", rec.Types, ncol, len(actual[0])) +
			resultDiff(rec.Expected, actual)
	}

	expected := splitExpected(rec.Expected, ncol, len(actual))
	if rec.Sort == ValueSort {
		a, e := flatten(actual), flatten(expected)
		sort.Strings(a)
		sort.Strings(e)
		if !equalValues(a, e, nil) {
			return "values differ (valuesort)" + resultDiff(rec.Expected, actual)
		}
		return ""
	}
	if rec.Sort == RowSort {
		sortRows(actual)
		sortRows(expected)
	}
	if len(expected) == len(actual) {
		ok := true
		for i := range actual {
			if len(actual[i]) != len(expected[i]) || !equalValues(actual[i], expected[i], []byte(rec.Types)) {
				ok = false
				break
			}
		}
		if ok {
			return ""
		}
	}
	// Values that span lines: compare the text as a whole.
	if joinRows(actual) == strings.Join(rec.Expected, "\n") && rec.Sort == NoSort {
		return ""
	}
	if len(expected) != len(actual) {
		return fmt.Sprintf("wrong row count: expected %d, got %d", len(expected), len(actual)) + resultDiff(rec.Expected, actual)
	}
	return "result differs" + resultDiff(rec.Expected, actual)
}

// splitExpected splits expected lines into rows of values. When every line is
// a single value and there are exactly rows×columns of them, they are the
// original sqllogictest layout: one value per line, row after row.
func splitExpected(lines []string, ncol, nrow int) [][]string {
	if ncol > 1 && len(lines) == ncol*nrow {
		single := true
		for _, l := range lines {
			if strings.Contains(l, "\t") {
				single = false
				break
			}
		}
		if single {
			rows := make([][]string, nrow)
			for i := range rows {
				rows[i] = lines[i*ncol : (i+1)*ncol]
			}
			return rows
		}
	}
	rows := make([][]string, len(lines))
	for i, l := range lines {
		rows[i] = strings.Split(l, "\t")
	}
	return rows
}

func flatten(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

func sortRows(rows [][]string) {
	sort.SliceStable(rows, func(i, j int) bool {
		return strings.Join(rows[i], "\t") < strings.Join(rows[j], "\t")
	})
}

func joinRows(rows [][]string) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = strings.Join(r, "\t")
	}
	return strings.Join(lines, "\n")
}

// equalValues compares two rows value by value; types (may be nil) marks R
// columns, which compare numerically.
func equalValues(a, e []string, types []byte) bool {
	if len(a) != len(e) {
		return false
	}
	for i := range a {
		if a[i] == e[i] {
			continue
		}
		if i < len(types) && types[i] == 'R' && approxEqual(a[i], e[i]) {
			continue
		}
		return false
	}
	return true
}

func approxEqual(a, e string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(e, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if x == y || (math.IsNaN(x) && math.IsNaN(y)) {
		return true
	}
	scale := math.Max(math.Abs(x), math.Abs(y))
	return math.Abs(x-y) <= realTolerance*math.Max(scale, 1e-300)
}

// maxDiffLines bounds how many result lines a failure prints.
const maxDiffLines = 40

func resultDiff(expected []string, actual [][]string) string {
	var b strings.Builder
	b.WriteString("\n  expected:")
	writeLines(&b, expected)
	b.WriteString("\n  actual:")
	lines := make([]string, len(actual))
	for i, r := range actual {
		lines[i] = strings.Join(r, "\t")
	}
	writeLines(&b, lines)
	return b.String()
}

func writeLines(b *strings.Builder, lines []string) {
	if len(lines) == 0 {
		b.WriteString(" (no rows)")
		return
	}
	for i, l := range lines {
		if i == maxDiffLines {
			fmt.Fprintf(b, "\n    ... %d more", len(lines)-i)
			break
		}
		b.WriteString("\n    ")
		b.WriteString(l)
	}
}

// checkError matches an error message against a statement's expected message:
// a substring, <REGEX>:re (must match) or <!REGEX>:re (must not match). It
// returns "" on a match.
func checkError(want, got string) string {
	switch {
	case want == "":
		return ""
	case strings.HasPrefix(want, "<REGEX>:"):
		re, err := regexp.Compile("(?s)" + strings.TrimPrefix(want, "<REGEX>:"))
		if err != nil {
			return fmt.Sprintf("bad expected regex: %v", err)
		}
		if !re.MatchString(got) {
			return fmt.Sprintf("error does not match %s\n  error: %s", want, got)
		}
	case strings.HasPrefix(want, "<!REGEX>:"):
		re, err := regexp.Compile("(?s)" + strings.TrimPrefix(want, "<!REGEX>:"))
		if err != nil {
			return fmt.Sprintf("bad expected regex: %v", err)
		}
		if re.MatchString(got) {
			return fmt.Sprintf("error matches %s\n  error: %s", want, got)
		}
	default:
		if !strings.Contains(got, want) {
			return fmt.Sprintf("error does not contain the expected message\n  expected: %s\n  error: %s", want, got)
		}
	}
	return ""
}
