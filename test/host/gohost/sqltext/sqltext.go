// Package sqltext cuts the text the SQL test runner sends a host into
// statements and dot-command arguments, as the DuckDB CLI does.
package sqltext

import "strings"

// FirstWord returns the first keyword of a statement, past opening parentheses.
func FirstWord(s string) string {
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

// Complete reports whether text ends a statement: its last code character is
// a ';' and no quote or block comment is left open (what the CLI waits for).
func Complete(text string) bool {
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

// Statements splits text at each ';' in code; parts that hold only white
// space and comments are left out.
func Statements(text string) []string {
	var out []string
	var cur strings.Builder
	end := func() {
		if strings.TrimSpace(StripComments(cur.String())) != "" {
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

// StripComments returns text with every comment replaced by a space.
func StripComments(text string) string {
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

// SplitArgs splits a dot command's arguments: "..." with backslash escapes
// resolved, '...' literal, others up to white space.
func SplitArgs(line string) []string {
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
				arg = Unescape(arg)
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

// Unescape resolves \t \n \r \\ \" \' and \NNN (octal).
func Unescape(s string) string {
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
