#!/usr/bin/env node
// Independent-reader interop check for bpftape's Parquet exports.
//
// Usage: node duckdb.js PARQUET [FIELD] [--values=PROBE.FIELD...]
//
// Reads PARQUET (a file, or a glob over a hive-partitioned folder such as
// 'fleet/*/*/*.parquet', read with hive_partitioning and union_by_name) with
// DuckDB and prints one JSON object on stdout:
//
//   {"rows": N, "columns": {name: duckdb type}, "per_probe": {probe: rows},
//    "per_host": {host: rows}, "hist": {probe: {slot: count}}, "lost": N,
//    "meta": {"host": ..., "probes": [names]} | null}
//
// Loss records (rows whose `lost` column is non-null, when there is one) are
// left out of per_probe, per_host and hist; "lost" sums them. per_host is {}
// without a host column.
//
// hist is BCC's log2 histogram of the integer column FIELD per probe,
// computed in SQL: slot = bpf_log2l(v) = 1 for v in {0, 1}, else the bit
// length of v; a negative signed value, taken as u64 as BCC takes it, is in
// slot 64. The slot is counted exactly with integer comparisons against 2^k.
//
// With --values=PROBE.FIELD (repeatable), "values" maps each such column to
// its values as strings, in file order, on PROBE's events: the query a user
// writes, SELECT "PROBE.FIELD" FROM t WHERE probe = 'PROBE'.
//
// meta is the capture's metadata that bpftape keeps in the Parquet footer
// under the key "bpftape" (the first file's, for a glob).
"use strict";

function fail(msg, code = 1) {
  process.stderr.write(`duckdb.js: ${msg}\n`);
  process.exit(code);
}

let duckdb;
try {
  duckdb = require("@duckdb/node-api");
} catch (e) {
  fail(`cannot load @duckdb/node-api (run ./install.sh first): ${e.message}`);
}

const sqlString = (s) => `'${String(s).replace(/'/g, "''")}'`;
const ident = (s) => `"${String(s).replace(/"/g, '""')}"`;

const SIGNED = new Set(["TINYINT", "SMALLINT", "INTEGER", "BIGINT"]);
const UNSIGNED = new Set(["UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"]);

// slotSQL is BCC's log2 slot of column c as an exact integer expression.
function slotSQL(c, type) {
  const terms = ["1"];
  if (UNSIGNED.has(type)) {
    const v = `${ident(c)}::UBIGINT`;
    for (let k = 1n; k <= 63n; k++) terms.push(`(${v} >= ${1n << k}::UBIGINT)::INTEGER`);
    return `(${terms.join(" + ")})`;
  }
  const v = `${ident(c)}::BIGINT`;
  for (let k = 1n; k <= 62n; k++) terms.push(`(${v} >= ${1n << k}::BIGINT)::INTEGER`);
  return `CASE WHEN ${v} < 0 THEN 64 ELSE ${terms.join(" + ")} END`;
}

const num = (v) => (typeof v === "bigint" ? (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString()) : v);

async function main(argv) {
  const valueCols = argv.filter((a) => a.startsWith("--values=")).map((a) => a.slice("--values=".length));
  argv = argv.filter((a) => !a.startsWith("--values="));
  if (argv.length < 1 || argv.length > 2 || argv[0] === "-h" || argv[0] === "--help") {
    fail("usage: node duckdb.js PARQUET [FIELD] [--values=PROBE.FIELD...]", 2);
  }
  const [path, field] = argv;
  const glob = /[*?[]/.test(path);
  const src = glob
    ? `read_parquet(${sqlString(path)}, hive_partitioning = true, union_by_name = true)`
    : `read_parquet(${sqlString(path)})`;
  const inst = await duckdb.DuckDBInstance.create(":memory:");
  const db = await inst.connect();
  const all = async (q) => (await db.runAndReadAll(q)).getRowObjects();

  const columns = {};
  for (const r of await all(`DESCRIBE SELECT * FROM ${src}`)) columns[r.column_name] = r.column_type;
  if (!("probe" in columns)) throw new Error(`${path}: no probe column`);
  const events = "lost" in columns ? `(SELECT * FROM ${src} WHERE lost IS NULL)` : src;

  const rows = num((await all(`SELECT count(*) AS n FROM ${src}`))[0].n);
  let lost = 0;
  if ("lost" in columns) lost = num((await all(`SELECT coalesce(sum(lost), 0)::UBIGINT AS n FROM ${src}`))[0].n);

  const per_probe = {};
  for (const r of await all(`SELECT probe::VARCHAR AS p, count(*) AS n FROM ${events} GROUP BY 1 ORDER BY 1`)) {
    per_probe[r.p] = num(r.n);
  }
  const per_host = {};
  if ("host" in columns) {
    for (const r of await all(`SELECT coalesce(host::VARCHAR, '') AS h, count(*) AS n FROM ${events} GROUP BY 1 ORDER BY 1`)) {
      per_host[r.h] = num(r.n);
    }
  }
  const hist = {};
  if (field !== undefined) {
    const type = columns[field];
    if (!SIGNED.has(type) && !UNSIGNED.has(type)) throw new Error(`column ${field} has type ${type}, want an integer`);
    const q = `SELECT probe::VARCHAR AS p, ${slotSQL(field, type)} AS slot, count(*) AS n
      FROM ${events} WHERE ${ident(field)} IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2`;
    for (const r of await all(q)) (hist[r.p] ??= {})[String(r.slot)] = num(r.n);
  }

  const values = {};
  for (const c of valueCols) {
    if (!(c in columns)) throw new Error(`${path}: no column ${c}`);
    const probe = c.slice(0, c.lastIndexOf("."));
    const q = `SELECT ${ident(c)}::VARCHAR AS v FROM ${events} WHERE probe = ${sqlString(probe)}`;
    values[c] = (await all(q)).map((r) => r.v);
  }

  let meta = null;
  const kv = await all(`SELECT decode(value) AS v FROM parquet_kv_metadata(${sqlString(path)})
    WHERE decode(key) = 'bpftape' LIMIT 1`);
  if (kv.length > 0) {
    const m = JSON.parse(kv[0].v);
    meta = { host: m.host, probes: m.probes.map((p) => p.name) };
  }
  process.stdout.write(`${JSON.stringify({ rows, columns, per_probe, per_host, hist, lost, values, meta })}\n`);
}

main(process.argv.slice(2)).catch((e) => fail(e && e.message ? e.message : String(e)));
