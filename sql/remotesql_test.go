package remotesql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	remotesql "github.com/remote-segments/remote_segments/sql"
	"github.com/remote-segments/remote_segments/test/datagen"
)

func leakCheck(t *testing.T) { t.Cleanup(func() { goleak.VerifyNone(t) }) }

// waitTimeout bounds every wait for something the test caused; reaching it
// fails the test.
const waitTimeout = 20 * time.Second

func openDB(t *testing.T, opts ...remotesql.Option) *sql.DB {
	t.Helper()
	c, err := remotesql.NewConnector("", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return remotesql.OpenDB(t, c)
}

func writeData(t *testing.T, spec datagen.Spec) (string, []datagen.SegmentStats) {
	t.Helper()
	dir := t.TempDir()
	stats, err := datagen.Write(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "chunks"), stats
}

type segmentSums struct {
	rows, sumX, sumI int64
	sumD             float64
	lenS             int64
}

func querySums(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, source string) (map[string]segmentSums, error) {
	rows, err := q.QueryContext(ctx, `
		SELECT segment_id, count(*), coalesce(sum(x), 0), coalesce(sum(i), 0), coalesce(sum(d), 0), coalesce(sum(length(s)), 0)
		FROM remote_segments(?) GROUP BY ALL`, source)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := map[string]segmentSums{}
	for rows.Next() {
		var seg string
		var s segmentSums
		if err := rows.Scan(&seg, &s.rows, &s.sumX, &s.sumI, &s.sumD, &s.lenS); err != nil {
			return nil, err
		}
		got[seg] = s
	}
	return got, rows.Err()
}

func checkSums(got map[string]segmentSums, want []datagen.SegmentStats) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d segments, want %d: %v", len(got), len(want), got)
	}
	for _, w := range want {
		g := got[w.Segment]
		ws := segmentSums{rows: w.Rows, sumX: w.SumX, sumI: w.SumI, sumD: w.SumD, lenS: w.LenS}
		if g != ws {
			return fmt.Errorf("segment %s: got %+v, want %+v", w.Segment, g, ws)
		}
	}
	return nil
}

func TestNewConnectorQueriesLocalFiles(t *testing.T) {
	leakCheck(t)
	src, want := writeData(t, datagen.DefaultSpec)
	db := openDB(t)
	got, err := querySums(context.Background(), db, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSums(got, want); err != nil {
		t.Fatal(err)
	}
}

func TestRegister(t *testing.T) {
	leakCheck(t)
	src, want := writeData(t, datagen.DefaultSpec)
	db := remotesql.PlainDB(t)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	if _, err := querySums(ctx, conn, src); err == nil || !strings.Contains(err.Error(), "remote_segments does not exist") {
		t.Fatalf("before Register: got %v, want an error saying remote_segments does not exist", err)
	}
	if err := remotesql.Register(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if err := remotesql.Register(ctx, conn); err != nil {
		t.Fatalf("registering twice: %v", err)
	}
	got, err := querySums(ctx, conn, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSums(got, want); err != nil {
		t.Fatal(err)
	}
	// The functions live in the database's catalog: another connection has them.
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got, err = querySums(ctx, other, src); err != nil {
		t.Fatalf("another connection: %v", err)
	}
	if err := checkSums(got, want); err != nil {
		t.Fatal(err)
	}
}

// TestManyGoroutines runs queries from many goroutines at once through one
// *sql.DB (its connection pool), each checking its answer.
func TestManyGoroutines(t *testing.T) {
	leakCheck(t)
	src, want := writeData(t, datagen.DefaultSpec)
	db := openDB(t)
	const goroutines, queries = 12, 3
	errs := make(chan error, goroutines*queries)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for q := range queries {
				got, err := querySums(context.Background(), db, src)
				if err == nil {
					err = checkSums(got, want)
				}
				if err != nil {
					errs <- fmt.Errorf("goroutine %d query %d: %w", g, q, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var running, held int64
	if err := db.QueryRow(`SELECT count(*) FILTER (state = 'running'), coalesce(sum(budget_in_use), 0)
		FROM remote_segments_stats() WHERE source = ?`, src).Scan(&running, &held); err != nil {
		t.Fatal(err)
	}
	if running != 0 || held != 0 {
		t.Errorf("after every query: %d scans running, %d budget bytes held; want 0 and 0", running, held)
	}
}

// slowServer serves dir over HTTP; requests for the paths in block wait until
// the request is cancelled, reporting on started and aborted. When a test
// fails, its cleanup ends the waiting requests with an error, so that the
// test ends too.
type slowServer struct {
	*httptest.Server
	started, aborted chan string
	release          chan struct{}
}

func newSlowServer(t *testing.T, dir string, block func(path string) bool) *slowServer {
	s := &slowServer{started: make(chan string, 1024), aborted: make(chan string, 1024), release: make(chan struct{})}
	files := http.FileServer(http.Dir(dir))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !block(r.URL.Path) {
			files.ServeHTTP(w, r)
			return
		}
		s.started <- r.URL.Path
		select {
		case <-r.Context().Done():
			s.aborted <- r.URL.Path
		case <-s.release:
			http.Error(w, "test over", http.StatusForbidden)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// releaseOnFailure ends the waiting requests when the test has failed; call
// it after everything whose cleanup waits for the requests (an *sql.DB).
func (s *slowServer) releaseOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			close(s.release)
		}
	})
}

// hangingCatalog writes a dataset of 2 segments × 4 chunks with a CSV
// catalog, serves it over HTTP with the chunks for which hang is true never
// answering, and returns the server and the catalog's URL.
func hangingCatalog(t *testing.T, hang func(path string) bool) (*slowServer, string, int) {
	dir := t.TempDir()
	spec := datagen.DefaultSpec
	spec.Segments, spec.ChunksPerSegment = 2, 4
	if _, err := datagen.Write(dir, spec); err != nil {
		t.Fatal(err)
	}
	var catalog strings.Builder
	catalog.WriteString("url,segment_id\n")
	for s := range spec.Segments {
		for c := range spec.ChunksPerSegment {
			fmt.Fprintf(&catalog, "chunks/segment=s%d/chunk-%d.arrow,s%d\n", s, c, s)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.csv"), []byte(catalog.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := newSlowServer(t, dir, func(p string) bool { return strings.HasSuffix(p, ".arrow") && hang(p) })
	return srv, srv.URL + "/catalog.csv", spec.Segments * spec.ChunksPerSegment
}

// cancelWhileHanging runs a count(*) over source, cancels its context once a
// request hangs at srv, and checks that the query ends with the cancellation
// and that every request that reached the server is aborted (none waits for
// the 10-minute request timeout).
func cancelWhileHanging(t *testing.T, db *sql.DB, srv *slowServer, source string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var n int64
		done <- db.QueryRowContext(ctx, "SELECT count(*) FROM remote_segments(?, max_parallel_io := 4, request_timeout := '10m')", source).Scan(&n)
	}()
	inFlight := 0
	select {
	case <-srv.started:
		inFlight++
	case err := <-done:
		t.Fatalf("the query ended before any request hung: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("no request reached the server")
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !(errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "context canceled")) {
			t.Fatalf("query after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the query did not end after its context was cancelled")
	}
	for inFlight += len(srv.started); inFlight > 0; inFlight-- {
		select {
		case <-srv.aborted:
		case <-time.After(waitTimeout):
			t.Fatalf("%d requests still in flight after the cancel", inFlight)
		}
	}
}

// TestCancelStopsScan cancels a query while its scan waits for requests that
// never answer: the query ends with the cancellation, every request in flight
// is aborted, and the scan gives its whole budget back.
func TestCancelStopsScan(t *testing.T) {
	leakCheck(t)
	// The catalog and the first chunk (read at bind for the schema) answer;
	// every other chunk hangs.
	srv, source, total := hangingCatalog(t, func(p string) bool { return p != "/chunks/segment=s0/chunk-0.arrow" })
	db := openDB(t)
	srv.releaseOnFailure(t)
	cancelWhileHanging(t, db, srv, source)

	var state string
	var held, chunks int64
	if err := db.QueryRow(`SELECT state, budget_in_use, chunks FROM remote_segments_stats() WHERE source = ?`, source).Scan(&state, &held, &chunks); err != nil {
		t.Fatal(err)
	}
	if state != "cancelled" || held != 0 {
		t.Errorf("the scan after the cancel: state %q, %d budget bytes held; want cancelled and 0", state, held)
	}
	if chunks >= int64(total) {
		t.Errorf("the scan delivered %d chunks, every one; the hanging ones cannot have been", chunks)
	}
}

// TestCancelStopsBind cancels a query while its bind waits for the first
// chunk (read for the schema): the query ends, the request is aborted, and no
// scan started.
func TestCancelStopsBind(t *testing.T) {
	leakCheck(t)
	srv, source, _ := hangingCatalog(t, func(string) bool { return true })
	db := openDB(t)
	srv.releaseOnFailure(t)
	cancelWhileHanging(t, db, srv, source)

	var scans int64
	if err := db.QueryRow(`SELECT count(*) FROM remote_segments_stats() WHERE source = ?`, source).Scan(&scans); err != nil {
		t.Fatal(err)
	}
	if scans != 0 {
		t.Errorf("%d scans of %s after a cancelled bind, want none", scans, source)
	}
}

// TestGCSettingsStayTheProgrammers checks that scans leave the program's
// memory limit alone, unless asked (WithMemoryLimitTuning).
func TestGCSettingsStayTheProgrammers(t *testing.T) {
	leakCheck(t)
	src, want := writeData(t, datagen.DefaultSpec)
	const limit = 3 << 30
	old := debug.SetMemoryLimit(limit)
	defer debug.SetMemoryLimit(old)

	got, err := querySums(context.Background(), openDB(t), src)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSums(got, want); err != nil {
		t.Fatal(err)
	}
	if l := debug.SetMemoryLimit(-1); l != limit {
		t.Errorf("after a scan the memory limit is %d, want the program's %d", l, int64(limit))
	}

	// Opted in, the scans set it (and clear it when none runs).
	if _, err := querySums(context.Background(), openDB(t, remotesql.WithMemoryLimitTuning()), src); err != nil {
		t.Fatal(err)
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Errorf("with WithMemoryLimitTuning, after the scans the memory limit is %d, want none (%d)", l, int64(math.MaxInt64))
	}
}

// Each database lists its own scans: a scan in one database is not in the
// remote_segments_stats() of another database of the same program (its
// source and error are that database's users' business).
func TestStatsListOnlyTheDatabasesOwnScans(t *testing.T) {
	leakCheck(t)
	src, _ := writeData(t, datagen.DefaultSpec)
	a, b := openDB(t), openDB(t)
	count := func(db *sql.DB) (n int) {
		t.Helper()
		if err := db.QueryRow(`SELECT count(*) FROM remote_segments_stats() WHERE source LIKE '%' || ? || '%'`, src).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count(b)
	if _, err := querySums(context.Background(), a, src); err != nil {
		t.Fatal(err)
	}
	if got := count(a); got != 1 {
		t.Errorf("database a lists %d scans of %s, want its 1", got, src)
	}
	if got := count(b); got != before {
		t.Errorf("database b lists %d scans of %s after a's scan, want %d: another database's scan", got, src, before)
	}
}
