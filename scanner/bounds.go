package scanner

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Pruning by the catalog's statistics: a filter that compares a chunk
// column with constants drops the chunks whose min_<col> / max_<col> show
// that none of their rows can match. It only ever drops chunks: the host
// still applies the filter to the rows of the chunks it keeps, and a chunk
// whose bounds are absent, NULL, or do not read as the column's type is
// kept.

// Op is the comparison a filter makes of a column with its constants.
type Op int

const (
	OpEqual        Op = iota + 1 // column = v
	OpLess                       // column < v
	OpLessEqual                  // column <= v
	OpGreater                    // column > v
	OpGreaterEqual               // column >= v
	OpIn                         // column IN (v, ...)
	OpBetween                    // column BETWEEN lo AND hi (both included)
)

// Flip is the comparison with its sides swapped: v op column is column
// op.Flip() v.
func (op Op) Flip() Op {
	switch op {
	case OpLess:
		return OpGreater
	case OpLessEqual:
		return OpGreaterEqual
	case OpGreater:
		return OpLess
	case OpGreaterEqual:
		return OpLessEqual
	}
	return op
}

// PruneByBounds drops, as Select does, the chunks whose catalog bounds of
// column prove that no row satisfies `column op values` (the constants as
// text, as DuckDB casts them to VARCHAR), and returns how many it dropped.
// It drops nothing, and returns an error, when column is not the plan's,
// its type has no order here (integers, floats, dates, timestamps and
// strings have), or a constant does not read as that type.
func (p *Plan) PruneByBounds(column string, op Op, values []string) (int, error) {
	i := p.Schema.FieldIndices(column)
	if len(i) != 1 {
		return 0, fmt.Errorf("remote_segments: no column %q to prune by", column)
	}
	typ := p.Schema.Field(i[0]).Type
	o, ok := orderOf(typ)
	if !ok {
		return 0, fmt.Errorf("remote_segments: column %q is %s: no order to prune it by", column, typ)
	}
	want := 1
	switch op {
	case OpIn:
		want = max(1, len(values))
	case OpBetween:
		want = 2
	}
	if len(values) != want {
		return 0, fmt.Errorf("remote_segments: %d constants for comparison %d, want %d", len(values), op, want)
	}
	consts := make([]any, len(values))
	for k, v := range values {
		c, ok := o.read(v)
		if !ok {
			return 0, fmt.Errorf("remote_segments: %q is not a %s", v, typ)
		}
		consts[k] = c
	}
	return p.Select(func(c *Chunk) bool {
		lo, hi := c.Bounds.Of(column)
		return o.mayMatch(lo, hi, op, consts)
	}), nil
}

// order reads values of one Arrow type and compares them.
type order struct {
	read func(v any) (any, bool) // a catalog value or a constant's text
	// readBound, if set, reads a catalog bound instead of read: side 0
	// the minimum, 1 the maximum.
	readBound func(v any, side int) (any, bool)
	compare   func(a, b any) int
}

// mayMatch reports whether a chunk whose column lies in [lo, hi] (catalog
// values; nil: unbounded on that side) may hold a row that satisfies
// `column op consts`.
func (o order) mayMatch(lo, hi any, op Op, consts []any) bool {
	min, minOK := o.bound(lo, 0)
	max, maxOK := o.bound(hi, 1)
	above := func(v any) bool { return minOK && o.compare(min, v) > 0 }    // every row > v
	below := func(v any) bool { return maxOK && o.compare(max, v) < 0 }    // every row < v
	atLeast := func(v any) bool { return minOK && o.compare(min, v) >= 0 } // every row >= v
	atMost := func(v any) bool { return maxOK && o.compare(max, v) <= 0 }  // every row <= v
	switch op {
	case OpEqual, OpIn:
		for _, v := range consts {
			if !above(v) && !below(v) {
				return true
			}
		}
		return false
	case OpLess:
		return !atLeast(consts[0])
	case OpLessEqual:
		return !above(consts[0])
	case OpGreater:
		return !atMost(consts[0])
	case OpGreaterEqual:
		return !below(consts[0])
	case OpBetween:
		return !below(consts[0]) && !above(consts[1])
	}
	return true
}

// bound reads a catalog bound of side (0 the minimum, 1 the maximum);
// false for none (absent, NULL, or not of the column's type): that side
// is unbounded.
func (o order) bound(v any, side int) (any, bool) {
	if v == nil {
		return nil, false
	}
	if o.readBound != nil {
		return o.readBound(v, side)
	}
	return o.read(v)
}

// orderOf is the order of values of type t; false for a type without one
// here.
func orderOf(t arrow.DataType) (order, bool) {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return order{read: readSigned, compare: compareAs[int64]}, true
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return order{read: readUnsigned, compare: compareAs[uint64]}, true
	case arrow.FLOAT32:
		return order{read: func(v any) (any, bool) {
			f, ok := readFloat(v)
			return float64(float32(f)), ok // the column's precision
		}, compare: compareAs[float64]}, true
	case arrow.FLOAT64:
		return order{read: func(v any) (any, bool) { return readFloat(v) }, compare: compareAs[float64]}, true
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		// DuckDB orders VARCHAR by its bytes, as strings.Compare does.
		return order{read: func(v any) (any, bool) { s, ok := v.(string); return s, ok }, compare: compareAs[string]}, true
	case arrow.DATE32:
		return order{read: func(v any) (any, bool) { return readDate(v, 1) }, compare: compareAs[int64]}, true
	case arrow.DATE64:
		return order{read: func(v any) (any, bool) { return readDate(v, 86400_000) }, compare: compareAs[int64]}, true
	case arrow.TIMESTAMP:
		unit, zoned := t.(*arrow.TimestampType).Unit, t.(*arrow.TimestampType).TimeZone != ""
		return order{
			read:      func(v any) (any, bool) { return readTimestamp(v, unit) },
			readBound: func(v any, side int) (any, bool) { return readTimestampBound(v, unit, zoned, side) },
			compare:   compareTimes,
		}, true
	}
	return order{}, false
}

func compareAs[T cmp.Ordered](a, b any) int { return cmp.Compare(a.(T), b.(T)) }

func compareTimes(a, b any) int { return a.(time.Time).Compare(b.(time.Time)) }

func readSigned(v any) (any, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case uint64:
		return int64(v), v <= math.MaxInt64
	case float64:
		return int64(v), v == math.Trunc(v) && math.Abs(v) < 1<<63
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n, err == nil
	}
	return nil, false
}

func readUnsigned(v any) (any, bool) {
	switch v := v.(type) {
	case int64:
		return uint64(v), v >= 0
	case uint64:
		return v, true
	case float64:
		return uint64(v), v == math.Trunc(v) && v >= 0 && v < 1<<64
	case string:
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		return n, err == nil
	}
	return nil, false
}

// readFloat reads a float; NaN is no bound (DuckDB orders it above every
// number, the catalog's writer may not have).
func readFloat(v any) (float64, bool) {
	var f float64
	switch v := v.(type) {
	case int64:
		f = float64(v)
	case uint64:
		f = float64(v)
	case float64:
		f = v
	case string:
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return f, !math.IsNaN(f)
}

// readDate reads a date in units of perDay since 1970-01-01 (days for
// DATE32, milliseconds for DATE64): an integer in those units, or text
// YYYY-MM-DD. A timestamp's text without an offset (a catalog that gives
// a date column's bounds as TIMESTAMP) reads as its day, which bounds the
// column's days on either side; one with an offset does not read, since
// its day depends on the time zone the dates were taken in.
func readDate(v any, perDay int64) (any, bool) {
	switch v := v.(type) {
	case int64, uint64, float64:
		return readSigned(v)
	case string:
		s := strings.TrimSpace(v)
		d, dateOnly, ok := parseTimestamp(s)
		if !dateOnly {
			if d, ok = parseNaiveTimestamp(s); !ok {
				return nil, false
			}
		}
		return int64(math.Floor(float64(d.Unix())/86400)) * perDay, true
	}
	return nil, false
}

// parseNaiveTimestamp reads a timestamp's text without an offset.
func parseNaiveTimestamp(s string) (time.Time, bool) {
	for _, layout := range naiveTimestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// naiveTimestampLayouts are the texts of a timestamp without an offset.
var naiveTimestampLayouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"}

// timestampLayouts are the texts of a timestamp a catalog or DuckDB gives:
// DuckDB's own (a space, an offset such as +00 or +05:30 for TIMESTAMPTZ),
// RFC 3339, and a date alone. A text without an offset is UTC.
var timestampLayouts = []string{
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	time.DateOnly,
}

// readTimestampBound reads a catalog bound of a timestamp column as
// readTimestamp does, except a date alone (YYYY-MM-DD, as a DATE bound
// reads): it bounds the whole day, so a maximum is the day's last
// instant, not its first; and of a column with a time zone, the day in
// any zone (14 hours more on either side), since the catalog does not say
// in which zone its dates were taken.
func readTimestampBound(v any, unit arrow.TimeUnit, zoned bool, side int) (any, bool) {
	s, ok := v.(string)
	if !ok {
		return readTimestamp(v, unit)
	}
	day, dateOnly, ok := parseTimestamp(strings.TrimSpace(s))
	if !ok || !dateOnly {
		return readTimestamp(v, unit)
	}
	const anyZone = 14 * time.Hour
	switch {
	case side == 0 && zoned:
		return day.Add(-anyZone), true
	case side == 1 && zoned:
		return day.Add(24*time.Hour + anyZone - time.Nanosecond), true
	case side == 1:
		return day.Add(24*time.Hour - time.Nanosecond), true
	}
	return day, true
}

// readTimestamp reads a timestamp: an integer in the column's unit since
// the epoch, or text.
func readTimestamp(v any, unit arrow.TimeUnit) (any, bool) {
	switch v := v.(type) {
	case int64, uint64, float64:
		n, ok := readSigned(v)
		if !ok {
			return nil, false
		}
		return arrow.Timestamp(n.(int64)).ToTime(unit), true
	case string:
		s := strings.TrimSpace(v)
		if t, _, ok := parseTimestamp(s); ok {
			return t, true
		}
		for _, layout := range timestampLayouts {
			if t, err := time.Parse(layout, s); err == nil {
				return t, true
			}
		}
	}
	return nil, false
}

// parseTimestamp reads the texts DuckDB and the catalog write, a date
// YYYY-MM-DD, then optionally a space or T, HH:MM:SS, up to nine
// fractional digits, and Z or an offset ±HH or ±HH:MM (none is UTC), as
// time.Parse with timestampLayouts would; dateOnly tells a date alone.
// It is the layouts' common case without their trials, each of which
// allocates its error when it fails: a pruned catalog reads two bounds a
// chunk for every filter. false for any other text (time.Parse may still
// read it).
func parseTimestamp(s string) (t time.Time, dateOnly, ok bool) {
	num := func(i, n int) (int, bool) { // the n digits at s[i:]
		if i+n > len(s) {
			return 0, false
		}
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 2)
	d, ok3 := num(8, 2)
	if !ok1 || !ok2 || !ok3 || s[4] != '-' || s[7] != '-' || mo < 1 || mo > 12 || d < 1 ||
		d > time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day() {
		return time.Time{}, false, false
	}
	if len(s) == 10 {
		return time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC), true, true
	}
	h, ok1 := num(11, 2)
	mi, ok2 := num(14, 2)
	sec, ok3 := num(17, 2)
	if !ok1 || !ok2 || !ok3 || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':' || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false, false
	}
	i, ns := 19, 0
	if i < len(s) && s[i] == '.' {
		i++
		digits := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if digits++; digits > 9 {
				return time.Time{}, false, false
			}
			ns = ns*10 + int(s[i]-'0')
		}
		if digits == 0 {
			return time.Time{}, false, false
		}
		for ; digits < 9; digits++ {
			ns *= 10
		}
	}
	var offset int // seconds east of UTC
	switch rest := s[i:]; {
	case rest == "" || rest == "Z":
	case (rest[0] == '+' || rest[0] == '-') && (len(rest) == 3 || len(rest) == 6 && rest[3] == ':'):
		oh, ok1 := num(i+1, 2)
		om, ok2 := 0, true
		if len(rest) == 6 {
			om, ok2 = num(i+4, 2)
		}
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return time.Time{}, false, false
		}
		if offset = oh*3600 + om*60; rest[0] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, false, false
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC).Add(-time.Duration(offset) * time.Second), false, true
}
