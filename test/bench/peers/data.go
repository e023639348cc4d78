package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/remote-segments/remote_segments/test/datagen"
	"github.com/remote-segments/remote_segments/test/s3server"
)

// w1Schema is the schema of the W1 rows: two fixed-width columns, a short
// string and a long one (the payload, 192–256 bytes, 224 on average).
var w1Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64},
	{Name: "s", Type: arrow.BinaryTypes.String},
	{Name: "payload", Type: arrow.BinaryTypes.String},
}, nil)

// answer is what every contender prints: the row count and a sum over every
// column (string columns by their lengths in bytes). x is a multiple of 0.5
// below 2048, so its sum is exact in float64 in any order.
type answer struct {
	Rows       int64   `json:"rows"`
	SumID      int64   `json:"sum_id"`
	SumX       float64 `json:"sum_x"`
	LenS       int64   `json:"len_s"`
	LenPayload int64   `json:"len_payload"`
}

func (a answer) String() string {
	return fmt.Sprintf("rows=%d sum_id=%d sum_x=%.1f len_s=%d len_payload=%d", a.Rows, a.SumID, a.SumX, a.LenS, a.LenPayload)
}

// dataset is one W1 dataset on local disk and, under the same name, on the
// S3 server.
type dataset struct {
	Name      string `json:"name"` // "w1-<rows>x<chunks>": the key prefix in the bucket and the folder under work
	Rows      int64  `json:"rows"`
	Chunks    int    `json:"chunks"`
	IPCBytes  int64  `json:"ipc_bytes"`
	Expected  answer `json:"expected"`
	dir       string // work/<name>
	ipcDir    string
	parquet   string // glob of the local Parquet files
	nativeDB  string // DuckDB database with table t
	parquetSz int64
	lanceSz   int64
}

const bucket = "peers"

func (d *dataset) ipcPrefix() string     { return d.Name + "/ipc/" }
func (d *dataset) parquetPrefix() string { return d.Name + "/parquet/" }
func (d *dataset) lanceURI() string      { return "s3://" + bucket + "/" + d.Name + "/lance" }

// makeDataset writes the Arrow IPC chunks under work unless a complete set
// (with its meta.json) is there, and returns the dataset with its expected
// answer, computed while writing.
func makeDataset(work string, rows int64, chunks int) (*dataset, error) {
	name := fmt.Sprintf("w1-%dx%d", rows, chunks)
	d := &dataset{Name: name, Rows: rows, Chunks: chunks, dir: filepath.Join(work, name)}
	d.ipcDir = filepath.Join(d.dir, "ipc")
	d.parquet = filepath.Join(d.dir, "parquet", "*.parquet")
	d.nativeDB = filepath.Join(d.dir, "native.duckdb")
	meta := filepath.Join(d.dir, "meta.json")
	if b, err := os.ReadFile(meta); err == nil {
		if err := json.Unmarshal(b, d); err == nil {
			return d, nil
		}
	}
	logf("writing %d rows in %d Arrow IPC chunks under %s", rows, chunks, d.ipcDir)
	os.RemoveAll(d.dir)
	if err := os.MkdirAll(d.ipcDir, 0o755); err != nil {
		return nil, err
	}
	rng := rand.NewChaCha8([32]byte{'w', '1'})
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	raw := make([]byte, 256)
	per := rows / int64(chunks)
	for c := range chunks {
		from, to := int64(c)*per, int64(c+1)*per
		if c == chunks-1 {
			to = rows
		}
		var recs []arrow.RecordBatch
		for b := from; b < to; b += 64 << 10 {
			n := min(64<<10, to-b)
			bld := array.NewRecordBuilder(memory.DefaultAllocator, w1Schema)
			ids, xs := bld.Field(0).(*array.Int64Builder), bld.Field(1).(*array.Float64Builder)
			ss, ps := bld.Field(2).(*array.StringBuilder), bld.Field(3).(*array.StringBuilder)
			ps.ReserveData(int(n) * 224)
			for r := b; r < b+n; r++ {
				x := float64(r%4096) * 0.5
				s := "v" + strconv.FormatInt(r%100000, 10)
				plen := 192 + int(r%65)
				rng.Read(raw[:plen])
				for i := range plen {
					raw[i] = alphabet[raw[i]&63]
				}
				ids.Append(r)
				xs.Append(x)
				ss.Append(s)
				ps.BinaryBuilder.Append(raw[:plen])
				d.Expected.Rows++
				d.Expected.SumID += r
				d.Expected.SumX += x
				d.Expected.LenS += int64(len(s))
				d.Expected.LenPayload += int64(plen)
			}
			recs = append(recs, bld.NewRecordBatch())
			bld.Release()
		}
		path := filepath.Join(d.ipcDir, chunkName(c, "arrow"))
		err := datagen.WriteChunk(path, recs, true)
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			return nil, err
		}
		st, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		d.IPCBytes += st.Size()
	}
	b, _ := json.MarshalIndent(d, "", "  ")
	return d, os.WriteFile(meta, b, 0o644)
}

func chunkName(c int, ext string) string { return fmt.Sprintf("chunk-%02d.%s", c, ext) }

// makeLocalCopies writes the same rows as zstd Parquet files (one per chunk)
// and as a native DuckDB table, through the DuckDB CLI, unless present.
func makeLocalCopies(d *dataset, duckdb, ext string) error {
	pqDir := filepath.Dir(d.parquet)
	stamp := filepath.Join(pqDir, ".complete")
	if _, err := os.Stat(stamp); err != nil {
		logf("writing the Parquet copy under %s", pqDir)
		os.RemoveAll(pqDir)
		if err := os.MkdirAll(pqDir, 0o755); err != nil {
			return err
		}
		var sql strings.Builder
		fmt.Fprintf(&sql, "LOAD '%s';\n", ext)
		for c := range d.Chunks {
			fmt.Fprintf(&sql, "COPY (SELECT id, x, s, payload FROM remote_segments('%s', ordered := true)) TO '%s' (FORMAT parquet, COMPRESSION zstd);\n",
				filepath.Join(d.ipcDir, chunkName(c, "arrow")), filepath.Join(pqDir, chunkName(c, "parquet")))
		}
		if out, err := duckdbCmd(duckdb, "", sql.String()).CombinedOutput(); err != nil {
			return fmt.Errorf("duckdb: writing Parquet: %v\n%s", err, out)
		}
		os.WriteFile(stamp, nil, 0o644)
	}
	if _, err := os.Stat(d.nativeDB + ".complete"); err != nil {
		logf("writing the native DuckDB table %s", d.nativeDB)
		os.Remove(d.nativeDB)
		os.Remove(d.nativeDB + ".wal")
		sql := fmt.Sprintf("CREATE TABLE t AS SELECT id, x, s, payload FROM read_parquet('%s');\nCHECKPOINT;\n", d.parquet)
		if out, err := duckdbCmd(duckdb, d.nativeDB, sql).CombinedOutput(); err != nil {
			return fmt.Errorf("duckdb: writing the native table: %v\n%s", err, out)
		}
		os.WriteFile(d.nativeDB+".complete", nil, 0o644)
	}
	d.parquetSz = dirSize(pqDir)
	return nil
}

// duckdbCmd runs the CLI on db (in memory when empty) with sql on stdin.
func duckdbCmd(duckdb, db, sql string) *exec.Cmd {
	args := []string{"-unsigned", "-csv", "-noheader"}
	if db != "" {
		args = append(args, db)
	}
	cmd := exec.Command(duckdb, args...)
	cmd.Stdin = strings.NewReader(sql)
	cmd.Env = append(os.Environ(), "DUCKDB_AGENT_MODE=0")
	return cmd
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// upload puts the IPC and Parquet files on the server unless every object
// is already there with its size, and writes the Lance dataset through the
// LanceDB script unless its marker object exists.
func upload(ctx context.Context, srv *s3server.Server, d *dataset, node *nodeEnv) error {
	if err := srv.CreateBucket(ctx, bucket); err != nil && !bucketExists(ctx, srv) {
		return err
	}
	sizes := map[string]int64{}
	p := s3.NewListObjectsV2Paginator(srv.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(d.Name + "/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list s3://%s/%s: %w", bucket, d.Name, err)
		}
		for _, o := range page.Contents {
			sizes[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	for c := range d.Chunks {
		for _, f := range []struct{ local, key string }{
			{filepath.Join(d.ipcDir, chunkName(c, "arrow")), d.ipcPrefix() + chunkName(c, "arrow")},
			{filepath.Join(filepath.Dir(d.parquet), chunkName(c, "parquet")), d.parquetPrefix() + chunkName(c, "parquet")},
		} {
			st, err := os.Stat(f.local)
			if err != nil {
				return err
			}
			if sizes[f.key] == st.Size() {
				continue
			}
			data, err := os.ReadFile(f.local)
			if err != nil {
				return err
			}
			if err := srv.PutObject(ctx, bucket, f.key, data); err != nil {
				return err
			}
		}
	}
	marker := d.Name + "/lance.complete"
	if _, ok := sizes[marker]; !ok {
		logf("writing the Lance dataset %s through LanceDB", d.lanceURI())
		var files []string
		for c := range d.Chunks {
			files = append(files, filepath.Join(d.ipcDir, chunkName(c, "arrow")))
		}
		cmd := node.command("lance.mjs", append([]string{"write", d.lanceURI()}, files...)...)
		cmd.Env = append(cmd.Env, s3Env(srv)...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("writing the Lance dataset: %w", err)
		}
		if err := srv.PutObject(ctx, bucket, marker, nil); err != nil {
			return err
		}
	}
	d.lanceSz = dirSize(filepath.Join(srv.Dir, bucket, d.Name, "lance"))
	return nil
}

func bucketExists(ctx context.Context, srv *s3server.Server) bool {
	_, err := srv.Client().HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	return err == nil
}

// s3Env is the environment every child gets: the endpoint and credentials
// of srv under the names the AWS SDKs, object_store (Polars, LanceDB) and
// the peer scripts read.
func s3Env(srv *s3server.Server) []string {
	return []string{
		"AWS_ENDPOINT_URL=" + srv.Endpoint,
		"AWS_ACCESS_KEY_ID=" + srv.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + srv.SecretKey,
		"AWS_REGION=" + srv.Region,
		"AWS_DEFAULT_REGION=" + srv.Region,
		"AWS_ALLOW_HTTP=true",
		"AWS_VIRTUAL_HOSTED_STYLE_REQUEST=false",
	}
}

// warm reads every file of dir once, so that no contender pays for the
// first read from disk into the page cache.
func warm(dir string) error {
	buf := make([]byte, 1<<20)
	return filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyBuffer(io.Discard, f, buf)
		return err
	})
}
