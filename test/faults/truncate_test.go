package faults

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/remote-segments/remote_segments/iosched/store/storetest"
	"github.com/remote-segments/remote_segments/test/datagen"
	"github.com/remote-segments/remote_segments/test/sqllogictest"
)

// Local chunks are read into buffers, or with local_mmap from mappings of
// their files (scanner/mmap.go), which another process may change while
// DuckDB copies from them. TestChangedDuringScan is the matrix
//
//	change {truncate to half, overwrite with 0xff}
//	× codec {none, LZ4, ZSTD} × format {IPC file, stream}
//	× column kind {int64, utf8, fixed_size_binary(32), bool, dictionary(utf8)}
//	× host {CLI + the C API v1.2.0 file, CLI + the 2.0 edition, the Go-driver host}
//	× local_mmap {true, false}
//
// (the sample of `make test` maps in two thirds of its runs, the path with
// more ways to go wrong, and reads in the rest).
//
// Each run scans four chunks of one cell (four files holding the same chunk:
// two columns, x int64 and v of the cell's kind, 16 batches, over the
// scanner's mapMin so that it is mapped where the kind allows it), DuckDB hashing every row
// slowly, and changes every chunk file as soon as the scan opens (or,
// every other run, closes) its second chunk: the change races with the
// mapping, the copy out of it, the decode and DuckDB's copy. A run is
// acceptable when
//   - the query fails with an error naming a chunk of the run (its file
//     URL) and, for a truncation, saying the file was truncated during the
//     scan (or that the chunk's range lies outside the file now: a chunk
//     read after the truncation); for an overwrite, any decode error
//     (offsets, lengths, metadata) will do; or
//   - the query answers: for a truncation the answer must be right
//     (count and sum of x), since the pages still there hold the same
//     bytes and a page that is gone faults. An overwrite may change values
//     without making them invalid (a fixed-width column, a bool, the
//     strings' bytes): that cannot be detected and is acceptable (the
//     file changed), so after an overwrite only "no crash, next query
//     answers" holds;
//
// and, either way, the process lives: no death, no hang, no Go runtime
// message ("nil pointer", "runtime error", "fatal error", a traceback)
// in the error or anywhere in its output, the next query in the same
// process (an intact chunk) answers right, and no mapping of the changed
// files is left.
//
// make test runs a sample, each codec × format × kind × host once (the
// change and the moment alternating); make stress-truncate runs every
// cell -truncate.runs times and prints the outcomes per cell.

var (
	truncateRuns = flag.Int("truncate.runs", 0, "runs of every cell of TestChangedDuringScan (change × codec × format × kind × host); "+
		"0: make test's sample, each codec × format × kind × host once")
	truncateReport = flag.String("truncate.report", "", "with -truncate.runs, rewrite the truncation section of this file (test/RELIABILITY.md)")
)

const (
	changeChunks  = 4 // files, all holding the same chunk
	changeBatches = 16
	// changeBudget holds about two chunks: the scan reads ahead of
	// DuckDB's copy, but not to the end.
	changeBudget = "3MiB"
)

// fileChange is what another process does to the chunk files.
type fileChange int

const (
	truncateHalf fileChange = iota
	overwriteFF
)

func (c fileChange) String() string { return [...]string{"truncate", "overwrite"}[c] }

func (c fileChange) apply(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if c == truncateHalf {
		return os.Truncate(path, info.Size()/2)
	}
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer w.Close()
	_, err = w.WriteAt(bytes.Repeat([]byte{0xff}, int(info.Size())), 0) // every offset and length -1
	return err
}

// columnKind is the type of the column v beside x.
type columnKind int

const (
	kindInt64 columnKind = iota
	kindUTF8
	kindFSB32
	kindBool
	kindDict
)

var columnKinds = []columnKind{kindInt64, kindUTF8, kindFSB32, kindBool, kindDict}

func (k columnKind) String() string {
	return [...]string{"int64", "utf8", "fixed_size_binary(32)", "bool", "dictionary(utf8)"}[k]
}

// rows is a chunk's row count: about 1.5 MiB of values, a multiple of
// changeBatches.
func (k columnKind) rows() int {
	return [...]int{98304, 20480, 38400, 192000, 129024}[k]
}

// repeat is how many times each row's text is hashed: about the same work
// per chunk for every kind, enough that DuckDB's copy of a chunk takes far
// longer than changing the files.
func (k columnKind) repeat() int {
	return [...]int{8, 8, 5, 4, 2}[k]
}

var dictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

func (k columnKind) arrowType() arrow.DataType {
	return [...]arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, &arrow.FixedSizeBinaryType{ByteWidth: 32},
		arrow.FixedWidthTypes.Boolean, dictType}[k]
}

// changeData is one kind's chunk (every file of a run holds it): its
// batches, count(*) and sum(x).
type changeData struct {
	schema     *arrow.Schema
	recs       []arrow.RecordBatch
	rows, sumX int64
}

const hexDigits = "0123456789abcdef"

func randomText(rng *rand.Rand) string {
	b := make([]byte, 16+rng.IntN(97))
	for i := range b {
		b[i] = hexDigits[rng.IntN(16)]
	}
	return string(b)
}

// makeChangeData makes kind's chunk (released with the test).
func makeChangeData(t *testing.T, kind columnKind) changeData {
	t.Helper()
	mem := memory.DefaultAllocator
	rng := rand.New(rand.NewPCG(uint64(kind)+1, 0x7c))
	d := changeData{schema: arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: kind.arrowType()}}, nil),
		rows: int64(kind.rows())}
	var dict arrow.Array
	if kind == kindDict {
		b := array.NewStringBuilder(mem)
		for range 1000 {
			b.Append(randomText(rng))
		}
		dict = b.NewArray()
		defer dict.Release()
	}
	per := kind.rows() / changeBatches
	for range changeBatches {
		xb := array.NewInt64Builder(mem)
		var v arrow.Array
		switch kind {
		case kindInt64:
			b := array.NewInt64Builder(mem)
			for range per {
				b.Append(rng.Int64())
			}
			v = b.NewArray()
		case kindUTF8:
			b := array.NewStringBuilder(mem)
			for range per {
				b.Append(randomText(rng))
			}
			v = b.NewArray()
		case kindFSB32:
			b := array.NewFixedSizeBinaryBuilder(mem, &arrow.FixedSizeBinaryType{ByteWidth: 32})
			var w [32]byte
			for range per {
				for i := 0; i < 32; i += 8 {
					binary.LittleEndian.PutUint64(w[i:], rng.Uint64())
				}
				b.Append(w[:])
			}
			v = b.NewArray()
		case kindBool:
			b := array.NewBooleanBuilder(mem)
			for range per {
				b.Append(rng.IntN(2) == 1)
			}
			v = b.NewArray()
		case kindDict:
			b := array.NewInt32Builder(mem)
			for range per {
				b.Append(int32(rng.IntN(dict.Len())))
			}
			idx := b.NewArray()
			v = array.NewDictionaryArray(dictType, idx, dict)
			idx.Release()
		}
		for range per {
			x := rng.Int64N(1 << 40)
			xb.Append(x)
			d.sumX += x
		}
		xs := xb.NewArray()
		d.recs = append(d.recs, array.NewRecordBatch(d.schema, []arrow.Array{xs, v}, int64(per)))
		xs.Release()
		v.Release()
	}
	t.Cleanup(func() { datagen.ReleaseAll(d.recs) })
	return d
}

// encode returns the chunk's IPC bytes in format.
func (d changeData) encode(t *testing.T, format datagen.IPCFormat) []byte {
	t.Helper()
	data, err := datagen.EncodeIPC(d.schema, d.recs, format)
	if err != nil {
		t.Fatal(err)
	}
	// Over the scanner's mapMin (1 MiB), with room for its rounding.
	if len(data) < 5<<18 {
		t.Fatalf("%s %s: a chunk of %d bytes would not be mapped", d.schema.Field(1).Type, format.Name(), len(data))
	}
	return data
}

// changeHost is one host of the matrix, started (and restarted after a
// crash) on demand.
type changeHost struct {
	name string
	host sqllogictest.Host
	ext  string
	c    *cli
}

func (h *changeHost) session(t *testing.T) *cli {
	if h.c == nil || h.c.dead {
		h.c = startHost(t, h.host, h.ext, "GORACE=halt_on_error=1")
		if r := h.c.exec("SET threads = 2", time.Minute); r.err != "" {
			t.Fatalf("%s: %s", h.name, r.err)
		}
	}
	return h.c
}

// changeCell is one cell of the matrix.
type changeCell struct {
	host   string
	change fileChange
	format datagen.IPCFormat
	kind   columnKind
	mapped bool // local_mmap
}

func (c changeCell) String() string {
	how := "read"
	if c.mapped {
		how = "mapped"
	}
	return fmt.Sprintf("%s %s %s %s %s %s", c.host, c.change, formatName(c.format), c.format.Codec, c.kind, how)
}

func formatName(f datagen.IPCFormat) string {
	if f.File {
		return "file"
	}
	return "stream"
}

// changeTally counts the outcomes of a cell's runs.
type changeTally struct {
	runs, failed, answered, crashes, violations int
	byWording                                   map[string]int // the failed runs' errors, paths and numbers masked
}

// runtimeWords are what the Go runtime says when a fault or a bug reaches
// it; none may appear in a host's output.
var runtimeWords = []string{"nil pointer", "runtime error", "fatal error", "goroutine ", "panic:", "signal SIGBUS", "signal SIGSEGV",
	"unexpected fault address", "unexpected signal", "DATA RACE"}

// changeWordings are the messages a failed run may give for each change
// (beside the chunk's URL): a fault on a mapping, in the scanner's words
// or the C copy's ("... truncated during the scan"), a range that is past
// the file's end now, or a read that met the end early.
var changeWordings = map[fileChange][]string{
	truncateHalf: {"truncated during the scan", "range outside of the object", "unexpected EOF"},
	overwriteFF:  nil, // any decode error: see the file comment
}

// TestChangedDuringScan runs the matrix (see above).
func TestChangedDuringScan(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // runs last: registered first (the watches' goroutines, the hosts' readers)
	root := repoRoot(t)
	duckdb := filepath.Join(root, ".tools/bin/duckdb")
	ext, extV2, gohost := filepath.Join(root, "build/release/remote_segments.duckdb_extension"),
		filepath.Join(root, "build/release/v2.0.0/remote_segments.duckdb_extension"), filepath.Join(root, "build/host/gohost")
	for _, p := range []string{duckdb, ext, extV2, gohost} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: run `make tools release build/host/gohost`", err)
		}
	}
	hosts := []*changeHost{
		{name: "cli", host: sqllogictest.CLIHost(duckdb), ext: ext},
		{name: "cli-v2", host: sqllogictest.CLIv2Host(duckdb, extV2), ext: extV2},
		{name: "go", host: sqllogictest.GoHost(gohost), ext: ext},
	}
	runs := *truncateRuns
	tallies := map[changeCell]*changeTally{}
	var order []changeCell
	start := time.Now()
	n := 0
	for _, kind := range columnKinds {
		data := makeChangeData(t, kind)
		for _, codec := range []datagen.Codec{datagen.CodecNone, datagen.CodecLZ4, datagen.CodecZSTD} {
			for _, file := range []bool{true, false} {
				format := datagen.IPCFormat{File: file, Codec: codec}
				chunk := data.encode(t, format)
				intact := t.TempDir()
				if err := os.WriteFile(filepath.Join(intact, "chunk-0.arrow"), chunk, 0o644); err != nil {
					t.Fatal(err)
				}
				for hi, h := range hosts {
					for _, change := range []fileChange{truncateHalf, overwriteFF} {
						for _, mapped := range []bool{true, false} {
							cell := changeCell{host: h.name, change: change, format: format, kind: kind, mapped: mapped}
							k := runs
							if runs == 0 { // the sample: one change of the two, mapped in two runs of three
								k = 0
								if int(change) == (n+hi)%2 && mapped == ((n+hi)%3 != 0) {
									k = 1
								}
							}
							if k == 0 {
								continue
							}
							tl := tallies[cell]
							if tl == nil {
								tl = &changeTally{byWording: map[string]int{}}
								tallies[cell] = tl
								order = append(order, cell)
							}
							for run := range k {
								runChange(t, h, cell, data, chunk, intact, (n/2+hi+run)%2 == 1, tl)
							}
							if runs > 0 { // progress, for a long stress run
								t.Logf("%s: %d runs, %d failed cleanly, %d answered, %d crashes, %d other violations (%v)",
									cell, tl.runs, tl.failed, tl.answered, tl.crashes, tl.violations, time.Since(start).Round(time.Second))
							}
						}
					}
				}
				n++
			}
		}
	}
	t.Logf("%d cells in %v", len(order), time.Since(start).Round(time.Second))
	table := changeTable(order, tallies)
	t.Log("\n" + table)
	if runs == 0 {
		// The sample must have reached the paths it is about: some run of
		// each change failed on a chunk (else the changes all landed after
		// the scans and the test proves nothing).
		for _, change := range []fileChange{truncateHalf, overwriteFF} {
			failed := 0
			for cell, tl := range tallies {
				if cell.change == change {
					failed += tl.failed
				}
			}
			if failed == 0 {
				t.Errorf("no %s run failed: every change landed after its scan", change)
			}
		}
	}
	if *truncateReport != "" {
		if runs == 0 {
			t.Fatal("-truncate.report needs -truncate.runs")
		}
		writeChangeSection(t, *truncateReport, runs, order, tallies, time.Since(start))
	}
}

// runChange runs one scan of cell's data with its change and checks the
// outcome (see the file comment); atClose picks the moment: after the
// second chunk was read or mapped (its file closed), else as it is opened.
func runChange(t *testing.T, h *changeHost, cell changeCell, data changeData, chunk []byte, intact string, atClose bool, tl *changeTally) {
	t.Helper()
	tl.runs++
	c := h.session(t)
	dir, err := os.MkdirTemp(t.TempDir(), "run")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var files []string
	for i := range changeChunks {
		f := filepath.Join(dir, fmt.Sprintf("chunk-%d.arrow", i))
		if err := os.WriteFile(f, chunk, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	violation := func(format string, args ...any) {
		tl.violations++
		t.Errorf("%s: "+format, append([]any{cell}, args...)...)
	}
	before := len(c.output())
	crash := func(err error) {
		tl.crashes++
		t.Errorf("%s: %v\nthe host's whole output since the run began:\n%s", cell, err, c.output()[before:])
	}
	mask := uint32(unix.IN_OPEN)
	if atClose {
		mask = unix.IN_CLOSE_NOWRITE
	}
	w, err := watchChunks(dir, mask)
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan bool, 1)
	go func() {
		// The second chunk: the first may be read at bind.
		for name := range w.events {
			if !strings.HasPrefix(name, "chunk-") || name == "chunk-0.arrow" {
				continue // the directory (the glob), or bind's read
			}
			for _, f := range append([]string{filepath.Join(dir, name)}, files...) {
				if err := cell.change.apply(f); err != nil {
					t.Error(err)
				}
			}
			changed <- true
			break
		}
		close(changed)
		for range w.events {
		}
	}()
	query := fmt.Sprintf("SELECT count(*), sum(x), max(md5(repeat(CAST(v AS VARCHAR) || x, %d))) FROM remote_segments('%s/*.arrow', memory_budget := '%s', local_mmap := %t)",
		cell.kind.repeat(), dir, changeBudget, cell.mapped)
	r, qerr := c.try(query, 3*time.Minute)
	w.close()
	didChange := <-changed
	if *truncateRuns == 0 {
		t.Logf("%s (at %s): %v, %s", cell, map[bool]string{false: "open", true: "close"}[atClose], r.took.Round(time.Millisecond), firstLine(r.err))
	}
	if qerr != nil {
		crash(qerr)
		return
	}
	out := c.output()[before:]
	for _, word := range runtimeWords {
		if strings.Contains(out, word) {
			violation("the host printed the Go runtime's %q: %s", word, out)
		}
	}
	switch {
	case r.err != "":
		tl.failed++
		tl.byWording[maskedWording(r.err, dir)]++
		if !strings.Contains(r.err, "file://"+dir+"/chunk-") {
			violation("the error does not name a chunk of %s: %s", dir, r.err)
		}
		if want := changeWordings[cell.change]; want != nil && !containsAny(r.err, want) {
			violation("the error says none of %q: %s", want, r.err)
		}
	case !didChange:
		tl.answered++
		violation("the scan answered before its second chunk was read: the files were not changed during it")
	default:
		tl.answered++
		if len(r.rows) != 1 || len(r.rows[0]) != 3 {
			violation("the query answered %q", r.rows)
			break
		}
		if got, want := r.rows[0][0]+"|"+r.rows[0][1], fmt.Sprintf("%d|%d", changeChunks*data.rows, changeChunks*data.sumX); cell.change == truncateHalf && got != want {
			violation("after a truncation the query answered count and sum %s, want %s", got, want)
		}
	}
	next, err := c.try(fmt.Sprintf("SELECT count(*), sum(x) FROM remote_segments('%s/chunk-0.arrow')", intact), time.Minute)
	if err != nil {
		crash(err)
		return
	}
	if want := fmt.Sprintf("%d|%d", data.rows, data.sumX); next.err != "" || len(next.rows) != 1 || strings.Join(next.rows[0], "|") != want {
		violation("the next query answered %q (error %q), want %s", next.rows, next.err, want)
	}
	if n := storetest.Mappings(t, c.cmd.Process.Pid, dir); n != 0 {
		violation("%d mappings of the changed chunks left after the query", n)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// maskedWording is the first line of a run's error with the run's
// directory and the numbers masked, to count the kinds of error.
func maskedWording(msg, dir string) string {
	line, _, _ := strings.Cut(msg, "\n")
	line = strings.ReplaceAll(line, dir, "DIR")
	var b strings.Builder
	digits := false
	for _, r := range line {
		if r >= '0' && r <= '9' {
			if !digits {
				b.WriteByte('N')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(r)
	}
	return b.String()
}

// chunkWatch reports the names of the files of one directory that are
// opened or closed (inotify): a scan's progress, seen from outside.
type chunkWatch struct {
	f      *os.File
	events chan string
	done   sync.WaitGroup
}

func watchChunks(dir string, mask uint32) (*chunkWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &chunkWatch{f: os.NewFile(uintptr(fd), "inotify"), events: make(chan string, 64)} // non-blocking: Close ends a Read
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		defer close(w.events)
		buf := make([]byte, 64<<10)
		for {
			n, err := w.f.Read(buf)
			if err != nil {
				return
			}
			for p := 0; p+unix.SizeofInotifyEvent <= n; {
				l := int(binary.NativeEndian.Uint32(buf[p+12:]))
				name := string(bytes.TrimRight(buf[p+unix.SizeofInotifyEvent:p+unix.SizeofInotifyEvent+l], "\x00"))
				p += unix.SizeofInotifyEvent + l
				select {
				case w.events <- name:
				default: // the reader has what it needs
				}
			}
		}
	}()
	return w, nil
}

func (w *chunkWatch) close() {
	w.f.Close()
	w.done.Wait()
}

// changeTable is the outcome of every cell, one row each.
func changeTable(order []changeCell, tallies map[changeCell]*changeTally) string {
	var b strings.Builder
	b.WriteString("| host | change | format | codec | column | local_mmap | runs | query failed cleanly | answered | crashes | other violations |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	var total changeTally
	wordings := map[string]int{}
	for _, c := range order {
		tl := tallies[c]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %t | %d | %d | %d | %d | %d |\n", c.host, c.change, formatName(c.format), c.format.Codec, c.kind, c.mapped,
			tl.runs, tl.failed, tl.answered, tl.crashes, tl.violations)
		total.runs, total.failed, total.answered = total.runs+tl.runs, total.failed+tl.failed, total.answered+tl.answered
		total.crashes, total.violations = total.crashes+tl.crashes, total.violations+tl.violations
		for w, k := range tl.byWording {
			wordings[c.change.String()+": "+w] += k
		}
	}
	fmt.Fprintf(&b, "| all | | | | | | %d | %d | %d | %d | %d |\n", total.runs, total.failed, total.answered, total.crashes, total.violations)
	b.WriteString("\nThe failed runs' errors (first line; the run's directory is DIR, numbers N):\n\n")
	keys := make([]string, 0, len(wordings))
	for w := range wordings {
		keys = append(keys, w)
	}
	sort.Slice(keys, func(i, j int) bool {
		return wordings[keys[i]] > wordings[keys[j]] || wordings[keys[i]] == wordings[keys[j]] && keys[i] < keys[j]
	})
	for _, w := range keys {
		fmt.Fprintf(&b, "- %d × %s\n", wordings[w], strings.ReplaceAll(w, "|", `\|`))
	}
	return b.String()
}

// truncateSectionMark starts the truncation section of test/RELIABILITY.md,
// which `make stress-truncate` writes and the fault matrix keeps.
const truncateSectionMark = "<!-- truncate: written by `make stress-truncate` (TestChangedDuringScan -truncate.runs) -->"

// writeChangeSection rewrites the truncation section of the report at path:
// from its mark to the fuzzing section's (or the end).
func writeChangeSection(t *testing.T, path string, runs int, order []changeCell, tallies map[changeCell]*changeTally, took time.Duration) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	text := string(old)
	head, tail := text, ""
	if i := strings.Index(text, fuzzSectionMark); i >= 0 {
		head, tail = text[:i], text[i:]
	}
	if i := strings.Index(head, truncateSectionMark); i >= 0 {
		head = head[:i]
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(head, "\n") + "\n\n" + truncateSectionMark + "\n## Truncation matrix\n\n")
	b.WriteString("The last `make stress-truncate` (" + strconv.Itoa(runs) + " runs of every cell, " + took.Round(time.Minute).String() + ", " +
		time.Now().UTC().Format("2006-01-02") + ", on a machine shared with other jobs): TestChangedDuringScan\n" +
		"(test/faults/truncate_test.go, whose comment gives the rules) scans four local files holding one chunk of\n" +
		"about 1.5 MiB (16 batches, x int64 and a column of the row's kind; with local_mmap, mapped where the kind allows), hashing every row\n" +
		"slowly, and another process truncates every chunk file to half or overwrites it with 0xff as the scan\n" +
		"opens or has read its second chunk. **Query failed cleanly**: an error naming the chunk's file URL (for\n" +
		"a truncation: the file changed or was truncated, or its range lies past the end); **answered**: the\n" +
		"right count and sum after a truncation, any answer after an overwrite; **crashes**: the host died or\n" +
		"hung; **other violations**: a Go runtime message, an error not naming the chunk, a wrong answer to the\n" +
		"next query (an intact chunk), a mapping left behind (a failed run with a violation counts in both). In `make test` each codec × format × column ×\n" +
		"host runs once (one change, mapped in two runs of three).\n\n")
	b.WriteString(changeTable(order, tallies))
	if tail != "" {
		b.WriteString("\n" + tail)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
