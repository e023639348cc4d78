// LanceDB contender of the W1 comparison, and of W2/W3, and the writer of
// their datasets:
//   node lance.mjs write s3://bucket/prefix/lance chunk-00.arrow …      (W1: one fragment per IPC file)
//   node lance.mjs write-one s3://bucket/prefix/lance chunk-0.arrow …  (W2/W3: all rows in one createTable:
//                                                                        LanceDB's own file layout)
//   node lance.mjs read  s3://bucket/prefix/lance                        (W1: sums over id, x, s, payload)
//   node lance.mjs w2-narrow|w2-wide s3://bucket/prefix/lance           (W2/W3: the datagen schema)
// The table is LANCE_TABLE (default w1).
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
const table = env.LANCE_TABLE || "w1";

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

// writeOne writes the rows of every file (IPC file or stream) in one
// createTable call, so that LanceDB lays them out as it would any table.
async function writeOne() {
  const db = await lancedb.connect(uri, { storageOptions });
  const batches = files.flatMap((f) => arrow.tableFromIPC(readFileSync(f)).batches);
  const tbl = await db.createTable(table, new arrow.Table(batches), { mode: "overwrite" });
  console.error(`lance: wrote ${await tbl.countRows()} rows to ${uri}/${table}`);
}

// validSum adds the valid values of a numeric column's data to acc (a
// number, or a bigint for int64).
function validSum(d, acc, big) {
  const v = d.values;
  const bm = d.nullBitmap;
  for (let i = 0; i < d.length; i++) {
    const j = d.offset + i;
    if (bm && bm.length > 0 && d.nullCount > 0 && !(bm[j >> 3] & (1 << (j & 7)))) continue;
    acc += big ? v[j] : Number(v[j]);
  }
  return acc;
}

// validCount counts the valid true values of a boolean column's data.
function trueCount(d) {
  let n = 0;
  const bm = d.nullBitmap;
  for (let i = 0; i < d.length; i++) {
    const j = d.offset + i;
    if (bm && bm.length > 0 && d.nullCount > 0 && !(bm[j >> 3] & (1 << (j & 7)))) continue;
    if (d.values[j >> 3] & (1 << (j & 7))) n++;
  }
  return n;
}

// readW2 streams the query's batches and sums x (narrow) or every column
// (wide), nulls left out, string lengths from the offsets of valid values.
async function readW2(wide) {
  const start = performance.now();
  const db = await lancedb.connect(uri, { storageOptions });
  const tbl = await db.openTable(table);
  const cols = wide ? ["x", "i", "d", "b", "s"] : ["x"];
  let rows = 0, sumX = 0n, sumI = 0, sumD = 0, trueB = 0, lenS = 0;
  for await (const batch of await tbl.query().select(cols).execute()) {
    rows += batch.numRows;
    for (const d of batch.getChild("x").data) sumX = validSum(d, sumX, true);
    if (!wide) continue;
    for (const d of batch.getChild("i").data) sumI = validSum(d, sumI, false);
    for (const d of batch.getChild("d").data) sumD = validSum(d, sumD, false);
    for (const d of batch.getChild("b").data) trueB += trueCount(d);
    for (const d of batch.getChild("s").data) {
      const o = d.valueOffsets;
      const bm = d.nullBitmap;
      for (let i = 0; i < d.length; i++) {
        const j = d.offset + i;
        if (bm && bm.length > 0 && d.nullCount > 0 && !(bm[j >> 3] & (1 << (j & 7)))) continue;
        lenS += Number(o[j + 1]) - Number(o[j]);
      }
    }
  }
  const ms = performance.now() - start;
  let line = `RESULT rows=${rows} sum_x=${sumX}`;
  if (wide) line += ` sum_i=${sumI} sum_d=${sumD.toFixed(2)} true_b=${trueB} len_s=${lenS}`;
  console.log(`${line} scan_ms=${ms.toFixed(1)}`);
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
else if (mode === "write-one") await writeOne();
else if (mode === "w2-narrow" || mode === "w2-wide") await readW2(mode === "w2-wide");
else if (mode === "read") await read();
else throw new Error(`unknown mode ${mode}`);
