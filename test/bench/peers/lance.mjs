// LanceDB contender of the W1 comparison, and the writer of its dataset:
//   node lance.mjs write s3://bucket/prefix/lance chunk-00.arrow …   (one fragment per IPC file)
//   node lance.mjs read  s3://bucket/prefix/lance
// The S3 server comes from the AWS_* environment, passed as storageOptions.
// read streams the record batches of a full-table query (execute(), not
// toArrow(), which would materialize the table) and sums every column,
// string columns by their offsets.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const lancedb = require("@lancedb/lancedb");
const arrow = require("apache-arrow");

const [mode, uri, ...files] = process.argv.slice(2);
const env = process.env;
const storageOptions = {
  endpoint: env.AWS_ENDPOINT_URL,
  aws_access_key_id: env.AWS_ACCESS_KEY_ID,
  aws_secret_access_key: env.AWS_SECRET_ACCESS_KEY,
  region: env.AWS_REGION,
  allow_http: "true",
  virtual_hosted_style_request: "false",
};
const table = "w1";

async function write() {
  const db = await lancedb.connect(uri, { storageOptions });
  let tbl;
  for (const f of files) {
    const data = arrow.tableFromIPC(readFileSync(f));
    if (!tbl) {
      tbl = await db.createTable(table, data, { mode: "overwrite" });
    } else {
      await tbl.add(data);
    }
  }
  console.error(`lance: wrote ${await tbl.countRows()} rows to ${uri}/${table}`);
}

// stringBytes returns the bytes of a string column's values in data.
function stringBytes(data) {
  const o = data.valueOffsets;
  return Number(o[data.offset + data.length]) - Number(o[data.offset]);
}

async function read() {
  const start = performance.now();
  const db = await lancedb.connect(uri, { storageOptions });
  const tbl = await db.openTable(table);
  let rows = 0, sumX = 0, lenS = 0, lenP = 0;
  let idLo = 0, idHi = 0; // int64 ids summed as two 32-bit halves: exact below 2^53
  for await (const batch of await tbl.query().select(["id", "x", "s", "payload"]).execute()) {
    rows += batch.numRows;
    for (const d of batch.getChild("id").data) {
      const w = new Uint32Array(d.values.buffer, d.values.byteOffset + d.offset * 8, d.length * 2);
      for (let i = 0; i < w.length; i += 2) {
        idLo += w[i];
        idHi += w[i + 1];
      }
    }
    for (const d of batch.getChild("x").data) {
      const v = d.values;
      for (let i = d.offset; i < d.offset + d.length; i++) sumX += v[i];
    }
    for (const d of batch.getChild("s").data) lenS += stringBytes(d);
    for (const d of batch.getChild("payload").data) lenP += stringBytes(d);
  }
  const ms = performance.now() - start;
  const sumID = BigInt(idLo) + (BigInt(idHi) << 32n);
  console.log(
    `RESULT rows=${rows} sum_id=${sumID} sum_x=${sumX.toFixed(1)} len_s=${lenS} len_payload=${lenP} scan_ms=${ms.toFixed(1)}`,
  );
}

if (mode === "write") await write();
else if (mode === "read") await read();
else throw new Error(`unknown mode ${mode}`);
