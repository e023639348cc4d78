package store

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A ListObjectsV2 page is read by listPage below, not by encoding/xml or
// the SDK's decoder (which is encoding/xml): those take tens of
// microseconds an object, and a glob of a million objects would spend
// half a minute of CPU decoding its listing. listPage reads the few
// elements a listing needs and skips the rest, and refuses what a
// listing never holds (a DOCTYPE, an unknown entity, mismatched tags)
// rather than guess.

// s3Page is what one ListObjectsV2 answer says.
type s3Page struct {
	objects   []ObjectInfo // Name is the key, without the bucket
	prefixes  []string     // CommonPrefixes
	truncated bool
	next      string // NextContinuationToken
}

// maxListDepth bounds the nesting of a listing's elements (it has three
// levels).
const maxListDepth = 16

// parseListPage reads a ListObjectsV2 answer (a ListBucketResult
// document). Its errors say what in the document is wrong.
func parseListPage(doc []byte) (s3Page, error) {
	var (
		p       s3Page
		stack   [maxListDepth]string
		depth   int
		text    []byte // the text of the element open at depth, if kept
		keep    bool   // whether text is collected: a leaf listPage reads
		open    openEntry
		sawRoot bool
	)
	i := 0
	for i < len(doc) {
		lt := bytes.IndexByte(doc[i:], '<')
		if lt < 0 {
			if depth == 0 && len(bytes.TrimSpace(doc[i:])) > 0 {
				return s3Page{}, errors.New("text after the document's end")
			}
			break
		}
		if keep {
			var err error
			if text, err = appendText(text, doc[i:i+lt]); err != nil {
				return s3Page{}, err
			}
		} else if depth == 0 && len(bytes.TrimSpace(doc[i:i+lt])) > 0 {
			return s3Page{}, errors.New("text outside the document's element")
		}
		i += lt
		rest := doc[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("<?")):
			end := bytes.Index(rest, []byte("?>"))
			if end < 0 {
				return s3Page{}, errors.New("an unterminated <?")
			}
			i += end + 2
		case bytes.HasPrefix(rest, []byte("<!--")):
			end := bytes.Index(rest[4:], []byte("-->"))
			if end < 0 {
				return s3Page{}, errors.New("an unterminated comment")
			}
			i += 4 + end + 3
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			end := bytes.Index(rest[9:], []byte("]]>"))
			if end < 0 {
				return s3Page{}, errors.New("an unterminated CDATA section")
			}
			if keep {
				text = append(text, rest[9:9+end]...)
			}
			i += 9 + end + 3
		case bytes.HasPrefix(rest, []byte("<!")):
			// A DOCTYPE could define entities; a listing has none.
			return s3Page{}, errors.New("a DOCTYPE or other declaration")
		case bytes.HasPrefix(rest, []byte("</")):
			gt := bytes.IndexByte(rest, '>')
			if gt < 0 {
				return s3Page{}, errors.New("an unterminated end tag")
			}
			name := localName(string(bytes.TrimSpace(rest[2:gt])))
			if depth == 0 || stack[depth-1] != name {
				return s3Page{}, fmt.Errorf("an end tag </%s> that closes nothing open", printable(name, 64))
			}
			i += gt + 1
			if err := closeElement(&p, &open, stack[:depth], text, keep); err != nil {
				return s3Page{}, err
			}
			depth--
			text, keep = text[:0], false
		default:
			gt := tagEnd(rest)
			if gt < 0 {
				return s3Page{}, errors.New("an unterminated start tag")
			}
			tag := rest[1:gt]
			selfClosing := len(tag) > 0 && tag[len(tag)-1] == '/'
			if selfClosing {
				tag = tag[:len(tag)-1]
			}
			nameEnd := bytes.IndexAny(tag, " \t\r\n")
			if nameEnd < 0 {
				nameEnd = len(tag)
			}
			name := localName(string(tag[:nameEnd]))
			if name == "" {
				return s3Page{}, errors.New("a start tag without a name")
			}
			i += gt + 1
			if depth == 0 {
				if sawRoot {
					return s3Page{}, errors.New("a second document element")
				}
				if name != "ListBucketResult" {
					return s3Page{}, fmt.Errorf("a <%s> document, not a ListBucketResult", printable(name, 64))
				}
				sawRoot = true
			}
			if depth == maxListDepth {
				return s3Page{}, fmt.Errorf("elements nested more than %d deep", maxListDepth)
			}
			stack[depth] = name
			depth++
			if depth == 2 && name == "Contents" {
				open = openEntry{size: -1}
			}
			if depth == 2 && name == "CommonPrefixes" {
				open.prefixes = len(p.prefixes)
			}
			keep = leaf(stack[:depth]) != ""
			text = text[:0]
			if selfClosing {
				if err := closeElement(&p, &open, stack[:depth], nil, keep); err != nil {
					return s3Page{}, err
				}
				depth--
				keep = false
			}
		}
	}
	if !sawRoot || depth != 0 {
		return s3Page{}, errors.New("the document ends before its element does")
	}
	return p, nil
}

// leaf names the element path stack ends at when listPage reads its text
// ("" when it does not).
func leaf(stack []string) string {
	switch len(stack) {
	case 2:
		switch stack[1] {
		case "IsTruncated", "NextContinuationToken":
			return stack[1]
		}
	case 3:
		switch stack[1] + "/" + stack[2] {
		case "Contents/Key", "Contents/Size", "Contents/ETag", "CommonPrefixes/Prefix":
			return stack[1] + "/" + stack[2]
		}
	}
	return ""
}

// openEntry is what the open Contents or CommonPrefixes element has said
// so far.
type openEntry struct {
	key      string
	size     int64 // -1 until its Size
	etag     string
	haveKey  bool
	prefixes int // len(s3Page.prefixes) when the CommonPrefixes began
}

// closeElement records what the element ending at the top of stack says,
// text being its text when kept.
func closeElement(p *s3Page, e *openEntry, stack []string, text []byte, kept bool) error {
	if kept {
		switch leaf(stack) {
		case "IsTruncated":
			switch strings.TrimSpace(string(text)) {
			case "true":
				p.truncated = true
			case "false":
				p.truncated = false
			default:
				return fmt.Errorf("IsTruncated %q", printable(string(text), 16))
			}
		case "NextContinuationToken":
			p.next = string(text)
		case "Contents/Key":
			if !utf8.Valid(text) {
				return errors.New("a key that is not UTF-8")
			}
			e.key, e.haveKey = string(text), true
		case "Contents/Size":
			n, err := strconv.ParseInt(strings.TrimSpace(string(text)), 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("an object size %q", printable(string(text), 32))
			}
			e.size = n
		case "Contents/ETag":
			e.etag = strings.TrimSpace(string(text))
		case "CommonPrefixes/Prefix":
			if !utf8.Valid(text) {
				return errors.New("a prefix that is not UTF-8")
			}
			p.prefixes = append(p.prefixes, string(text))
		}
	}
	if len(stack) == 2 && stack[1] == "CommonPrefixes" && e.prefixes == len(p.prefixes) {
		return errors.New("a CommonPrefixes without its Prefix")
	}
	if len(stack) == 2 && stack[1] == "Contents" {
		if !e.haveKey || e.size < 0 {
			return errors.New("an object without its Key or Size")
		}
		p.objects = append(p.objects, ObjectInfo{Name: e.key, Size: e.size, Version: listedVersion(e.etag)})
	}
	return nil
}

// tagEnd returns the index in b (which starts with '<') of the '>' that
// ends the start tag, past quoted attribute values, or -1.
func tagEnd(b []byte) int {
	var quote byte
	for j := 1; j < len(b); j++ {
		switch c := b[j]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return j
		case c == '<':
			return -1
		}
	}
	return -1
}

// localName drops a namespace prefix ("s3:Key" is Key).
func localName(name string) string {
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// appendText appends the character data raw to text, its entity and
// character references replaced.
func appendText(text, raw []byte) ([]byte, error) {
	for {
		amp := bytes.IndexByte(raw, '&')
		if amp < 0 {
			return append(text, raw...), nil
		}
		text = append(text, raw[:amp]...)
		raw = raw[amp:]
		semi := bytes.IndexByte(raw, ';')
		if semi < 0 || semi > 12 {
			return nil, errors.New("an unterminated entity reference")
		}
		ref := string(raw[1:semi])
		raw = raw[semi+1:]
		switch ref {
		case "amp":
			text = append(text, '&')
		case "lt":
			text = append(text, '<')
		case "gt":
			text = append(text, '>')
		case "quot":
			text = append(text, '"')
		case "apos":
			text = append(text, '\'')
		default:
			var n uint64
			var err error
			switch {
			case strings.HasPrefix(ref, "#x"):
				n, err = strconv.ParseUint(ref[2:], 16, 32)
			case strings.HasPrefix(ref, "#"):
				n, err = strconv.ParseUint(ref[1:], 10, 32)
			default:
				return nil, fmt.Errorf("an unknown entity &%s;", printable(ref, 12))
			}
			if err != nil || n == 0 || n > utf8.MaxRune || !utf8.ValidRune(rune(n)) {
				return nil, fmt.Errorf("a character reference &%s; that names no character", printable(ref, 12))
			}
			text = utf8.AppendRune(text, rune(n))
		}
	}
}
