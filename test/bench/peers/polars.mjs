// Polars (nodejs-polars) contender of the W1 comparison:
//   node polars.mjs ipc|parquet s3://bucket/prefix/*.ext
// Sums every column with the streaming engine and prints one RESULT line.
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

const start = performance.now();
let lf;
if (format === "ipc") {
  lf = pl.scanIPC(source);
} else if (format === "parquet") {
  lf = pl.scanParquet(source, { cloudOptions });
} else {
  throw new Error(`unknown format ${format}`);
}
// str.lengths() does not resolve in a lazy sum in 0.25.2 unless cast first.
const strLen = (c) => pl.col(c).str.lengths().cast(pl.UInt64).sum().alias(`len_${c}`);
const df = lf
  .select(
    pl.col("id").count().alias("rows"),
    pl.col("id").sum().alias("sum_id"),
    pl.col("x").sum().alias("sum_x"),
    strLen("s"),
    strLen("payload"),
  )
  .collectSync({ engine: "streaming" });
const ms = performance.now() - start;
const row = df.toRecords()[0];
console.log(
  `RESULT rows=${row.rows} sum_id=${row.sum_id} sum_x=${Number(row.sum_x).toFixed(1)} ` +
    `len_s=${row.len_s} len_payload=${row.len_payload} scan_ms=${ms.toFixed(1)}`,
);
