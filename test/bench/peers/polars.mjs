// Polars (nodejs-polars) contender of the W1 comparison, and of W2/W3:
//   node polars.mjs ipc|parquet s3://bucket/prefix/*.ext      (W1: sums over id, x, s, payload)
//   node polars.mjs w2-narrow|w2-wide s3://bucket/prefix/*.arrow (W2/W3: the datagen schema)
// Sums with the streaming engine and prints one RESULT line.
// The S3 server comes from the AWS_* environment (scanIPC ignores
// cloudOptions in 0.25.2); scanParquet gets the same through cloudOptions.
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const pl = require("nodejs-polars");

const [format, source] = process.argv.slice(2);
const env = process.env;
const cloudOptions = {
  aws_endpoint_url: env.AWS_ENDPOINT_URL,
  aws_access_key_id: env.AWS_ACCESS_KEY_ID,
  aws_secret_access_key: env.AWS_SECRET_ACCESS_KEY,
  aws_region: env.AWS_REGION,
  aws_allow_http: "true",
  aws_virtual_hosted_style_request: "false",
};

// str.lengths() does not resolve in a lazy sum in 0.25.2 unless cast first.
const strLen = (c, as) => pl.col(c).str.lengths().cast(pl.UInt64).sum().alias(as);

const start = performance.now();
let line;
if (format === "ipc" || format === "parquet") {
  const lf = format === "ipc" ? pl.scanIPC(source) : pl.scanParquet(source, { cloudOptions });
  const row = lf
    .select(
      pl.col("id").count().alias("rows"),
      pl.col("id").sum().alias("sum_id"),
      pl.col("x").sum().alias("sum_x"),
      strLen("s", "len_s"),
      strLen("payload", "len_payload"),
    )
    .collectSync({ engine: "streaming" })
    .toRecords()[0];
  line = `rows=${row.rows} sum_id=${row.sum_id} sum_x=${Number(row.sum_x).toFixed(1)} len_s=${row.len_s} len_payload=${row.len_payload}`;
} else if (format === "w2-narrow" || format === "w2-wide") {
  // The narrow query reads x only: rows are its values plus its nulls.
  const aggs = [
    pl.col("x").count().cast(pl.Int64).alias("nonnull"),
    pl.col("x").nullCount().cast(pl.Int64).alias("nulls"),
    pl.col("x").sum().alias("sum_x"),
  ];
  if (format === "w2-wide") {
    aggs.push(
      pl.col("i").cast(pl.Int64).sum().alias("sum_i"),
      pl.col("d").sum().alias("sum_d"),
      pl.col("b").cast(pl.UInt64).sum().alias("true_b"),
      strLen("s", "len_s"),
    );
  }
  const row = pl.scanIPC(source).select(...aggs).collectSync({ engine: "streaming" }).toRecords()[0];
  line = `rows=${Number(row.nonnull) + Number(row.nulls)} sum_x=${row.sum_x}`;
  if (format === "w2-wide") {
    line += ` sum_i=${row.sum_i} sum_d=${Number(row.sum_d).toFixed(2)} true_b=${row.true_b} len_s=${row.len_s}`;
  }
} else {
  throw new Error(`unknown format ${format}`);
}
const ms = performance.now() - start;
console.log(`RESULT ${line} scan_ms=${ms.toFixed(1)}`);
