#!/usr/bin/env node
// Independent-reader interop check for bpftape capture files.
//
// Usage: node read.js FILE.arrow [FIELD] [--values=PROBE.FIELD...] [--sum=COLUMN...]
//
// Reads an Arrow IPC *file* (any body compression nodejs-polars supports)
// with nodejs-polars and prints one JSON object on stdout:
//
//   {"rows": N, "columns": [...], "dtypes": {name: dtype},
//    "per_probe": {probe: rows}, "hist": {probe: {slot: count}}, "lost": N,
//    "time_sum": "S"}
//
// time_sum (only for a file with a "time" column) is the sum of every
// row's time, as a u64 that wraps, in decimal:
// a check that polars decodes the time column's zstd frames, which bpftape
// writes with an encoder of its own, to the same values.
//
// Loss records (rows whose nullable `lost` column is non-null) are excluded
// from per_probe and hist; "lost" is the sum of `lost` over them. "rows"
// counts every row, loss records included.
//
// hist is BCC's log2 histogram of the integer column FIELD, per probe, over
// the non-null values of non-loss rows: slot = bpf_log2l(v) = 1 for v in
// {0, 1}, else the bit length of v (floor(log2 v) + 1). As in BCC, the value
// is taken as a u64, so a negative signed value lands in slot 64. Only probes
// with at least one value appear in hist; without FIELD, hist is {}.
//
// With --values=PROBE.FIELD (repeatable), "values" maps each such column to
// its values as strings, in file order, on PROBE's events: the query a user
// writes, df.filter(pl.col("probe") == PROBE).select("PROBE.FIELD").
//
// With --sum=COLUMN (repeatable), "sums" maps each such integer column to
// the sum of its non-null values over every row, as a u64 that wraps, in
// decimal, as time_sum: a check that polars decodes the frames bpftape's
// own encoders write for columns in runs (tid, cpu) to the same values.
//
// Errors go to stderr with a non-zero exit status (2 for usage errors).
"use strict";

const fs = require("node:fs");

function fail(msg, code = 1) {
  process.stderr.write(`read.js: ${msg}\n`);
  process.exit(code);
}

let pl;
try {
  pl = require("nodejs-polars");
} catch (e) {
  fail(`cannot load nodejs-polars (run ./install.sh first): ${e.message}`);
}

// "DataType(List(DataType(Int64)))" -> "List(Int64)"; plain types -> variant.
function dtypeName(dt) {
  const s = String(dt);
  const tag = "DataType(";
  let out = "";
  const closers = []; // for each open paren: true if it belongs to a DataType( wrapper
  for (let i = 0; i < s.length; ) {
    if (s.startsWith(tag, i)) {
      closers.push(true);
      i += tag.length;
      continue;
    }
    const c = s[i++];
    if (c === "(") {
      closers.push(false);
      out += c;
    } else if (c === ")") {
      if (!closers.pop()) out += c;
    } else {
      out += c;
    }
  }
  return out || dt.variant;
}

// JSON-safe integer: polars hands 64-bit integers back as BigInt.
function jsonInt(v) {
  if (typeof v === "bigint") {
    return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)
      ? Number(v)
      : v.toString();
  }
  return v;
}

const INT_TYPES = new Set(["Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"]);

// Expression for BCC's log2 slot of an integer column, computed exactly with
// integer comparisons against 2^k (no float log2, which rounds 2^k-1 up to k
// for large k): slot = 1 + #{k in 1..63 : v >= 2^k}.
//
// Every literal is cast to the column's integer type: nodejs-polars turns a
// JS number into a Float64 literal, and a Float64 operand makes polars compare
// in Float64, which cannot tell 2^63-1 from 2^63. Expr.reinterpret() is no use
// for the signed case either: it is a map() whose output type the planner does
// not know, so its comparisons with u64 literals get supercast to Float64 too.
function log2SlotExpr(name, variant) {
  const one = pl.lit(1).cast(pl.Int32);
  if (variant.startsWith("UInt")) {
    const v = variant === "UInt64" ? pl.col(name) : pl.col(name).cast(pl.UInt64);
    let slot = one;
    for (let k = 1n; k <= 63n; k++) {
      slot = slot.add(v.gtEq(pl.lit(1n << k).cast(pl.UInt64)).cast(pl.Int32));
    }
    return slot;
  }
  // Signed: a negative value, taken as u64 like BCC does, has bit 63 set.
  const v = variant === "Int64" ? pl.col(name) : pl.col(name).cast(pl.Int64);
  let slot = one;
  for (let k = 1n; k <= 62n; k++) {
    slot = slot.add(v.gtEq(pl.lit(1n << k).cast(pl.Int64)).cast(pl.Int32));
  }
  return pl
    .when(v.lt(pl.lit(0).cast(pl.Int64)))
    .then(pl.lit(64).cast(pl.Int32))
    .otherwise(slot);
}

function main(argv) {
  const valueCols = argv.filter((a) => a.startsWith("--values=")).map((a) => a.slice("--values=".length));
  const sumCols = argv.filter((a) => a.startsWith("--sum=")).map((a) => a.slice("--sum=".length));
  argv = argv.filter((a) => !a.startsWith("--values=") && !a.startsWith("--sum="));
  if (argv.length < 1 || argv.length > 2 || argv[0] === "-h" || argv[0] === "--help") {
    fail("usage: node read.js FILE.arrow [FIELD] [--values=PROBE.FIELD...] [--sum=COLUMN...]", 2);
  }
  const [file, field] = argv;

  // readIPC only treats a string as a path when it ends in ".ipc"; anything
  // else would be parsed as inline IPC bytes, so always pass a Buffer.
  const buf = fs.readFileSync(file);
  const df = pl.readIPC(buf);

  const columns = df.columns;
  const schema = df.schema;
  const dtypes = {};
  for (const c of columns) dtypes[c] = dtypeName(schema[c]);

  if (!columns.includes("probe")) throw new Error(`${file}: no "probe" column`);

  let events = df;
  let lost = 0;
  if (columns.includes("lost")) {
    if (!INT_TYPES.has(schema.lost.variant)) {
      throw new Error(`"lost" column has dtype ${dtypes.lost}, want an integer type`);
    }
    // Sum over an all-null column is 0 in polars.
    lost = jsonInt(df.select(pl.col("lost").cast(pl.UInt64).sum()).getColumn("lost").get(0) ?? 0);
    events = df.filter(pl.col("lost").isNull());
  }

  // The probe column arrives as Categorical (Arrow dictionary) or String.
  const probeKey = pl.col("probe").cast(pl.String).alias("probe");

  const per_probe = {};
  const counts = events
    .select(probeKey)
    .groupBy("probe")
    .agg(pl.len().alias("n"))
    .sort("probe");
  for (const r of counts.toRecords()) per_probe[String(r.probe)] = jsonInt(r.n);

  const hist = {};
  if (field !== undefined) {
    if (!columns.includes(field)) throw new Error(`${file}: no column ${JSON.stringify(field)}`);
    const variant = schema[field].variant;
    if (!INT_TYPES.has(variant)) {
      throw new Error(`column ${JSON.stringify(field)} has dtype ${dtypes[field]}, want an integer type`);
    }
    const h = events
      .filter(pl.col(field).isNotNull())
      .select(probeKey, log2SlotExpr(field, variant).alias("slot"))
      .groupBy(["probe", "slot"])
      .agg(pl.len().alias("n"))
      .sort(["probe", "slot"]);
    for (const r of h.toRecords()) {
      const p = String(r.probe);
      (hist[p] ??= {})[String(r.slot)] = jsonInt(r.n);
    }
  }

  const values = {};
  for (const c of valueCols) {
    if (!columns.includes(c)) throw new Error(`${file}: no column ${JSON.stringify(c)}`);
    const probe = c.slice(0, c.lastIndexOf("."));
    const col = events.filter(pl.col("probe").cast(pl.String).eq(pl.lit(probe))).getColumn(c);
    values[c] = col.toArray().map((v) => (v === null || v === undefined ? null : String(v)));
  }

  // Computed and printed as strings in polars: Series.get truncates an
  // Int64 to 32 bits in nodejs-polars.
  const time_sum = columns.includes("time")
    ? df.select(pl.col("time").cast(pl.UInt64).sum().cast(pl.String)).getColumn("time").toArray()[0]
    : undefined;

  const sums = {};
  for (const c of sumCols) {
    if (!columns.includes(c)) throw new Error(`${file}: no column ${JSON.stringify(c)}`);
    if (!INT_TYPES.has(schema[c].variant)) throw new Error(`column ${JSON.stringify(c)} has dtype ${dtypes[c]}, want an integer type`);
    sums[c] = df.select(pl.col(c).cast(pl.UInt64).sum().cast(pl.String)).getColumn(c).toArray()[0];
  }

  const out = { rows: df.height, columns, dtypes, per_probe, hist, lost, values, time_sum, sums };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

try {
  main(process.argv.slice(2));
} catch (e) {
  fail(e && e.message ? e.message : String(e));
}
