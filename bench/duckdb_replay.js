#!/usr/bin/env node
// DuckDB's side of the replay verbs benchmark (bench/driver/verbs.go): the
// questions bpftape's verbs answer, asked in SQL of the Parquet export of
// the same capture, each query timed (wall and this process's CPU).
//
// Usage: node duckdb_replay.js PARQUET ENTRY FIELD RETURN REPEATS THREADS [TEMPDIR]
//
// Needs @duckdb/node-api (testdata/interop/node_modules: the driver sets
// NODE_PATH). Prints one JSON object a line on stdout:
//
//   {"duckdb": VERSION, "threads": N}        the setting the queries ran with
//   {"q": NAME, "wall": [s...], "cpu": [s...], "rows": N}   per question
//   {"maxrss_kb": N}                          at the end
//
// The questions (NAME):
//   count       events per probe                 (bpftape count)
//   count_comm  events per probe and comm        (bpftape count --by comm)
//   hist        log2 histogram of ENTRY.FIELD    (bpftape hist)
//   latency     entry/return pairs on one thread: LEAD over (PARTITION BY tid
//               ORDER BY time), an ENTRY followed by a RETURN, log2 histogram
//               of the durations                 (bpftape latency)
//   heatmap     (time - start) / step by log2 slot of ENTRY.FIELD, 100
//               columns over the span (two passes, as bpftape heatmap)
//
// CPU is process.cpuUsage() around each query: every thread of the process
// (DuckDB's workers included). The log2 slot is BCC's: 1 for values below
// 2, else floor(log2(v)) + 1 (exact for the sizes and durations here).
"use strict";

function fail(msg, code = 1) {
  process.stderr.write(`duckdb_replay.js: ${msg}\n`);
  process.exit(code);
}

let duckdb;
try {
  duckdb = require("@duckdb/node-api");
} catch (e) {
  fail(`cannot load @duckdb/node-api (NODE_PATH=testdata/interop/node_modules): ${e.message}`);
}

const sqlString = (s) => `'${String(s).replace(/'/g, "''")}'`;
const ident = (s) => `"${String(s).replace(/"/g, '""')}"`;
const slot = (v) => `CASE WHEN ${v} < 2 THEN 1 ELSE CAST(floor(log2(${v})) AS INTEGER) + 1 END`;

async function main(argv) {
  if (argv.length < 6 || argv.length > 7) {
    fail("usage: node duckdb_replay.js PARQUET ENTRY FIELD RETURN REPEATS THREADS [TEMPDIR]", 2);
  }
  const [path, entry, field, ret] = argv;
  const repeats = Number(argv[4]);
  const threads = Number(argv[5]);
  const t = `read_parquet(${sqlString(path)})`;
  const v = ident(`${entry}.${field}`);
  const e = sqlString(entry);
  const r = sqlString(ret);

  const inst = await duckdb.DuckDBInstance.create(":memory:");
  const db = await inst.connect();
  const all = async (q) => (await db.runAndReadAll(q)).getRowObjects();
  await db.run(`SET threads = ${threads}`);
  if (argv[6]) await db.run(`SET temp_directory = ${sqlString(argv[6])}`);
  const set = await all(`SELECT current_setting('threads') AS threads, version() AS version`);
  const out = (o) =>
    process.stdout.write(JSON.stringify(o, (k, x) => (typeof x === "bigint" ? Number(x) : x)) + "\n");
  out({ duckdb: set[0].version, threads: set[0].threads });

  const questions = [
    ["count", `SELECT probe, count(*) AS n FROM ${t} GROUP BY probe`],
    ["count_comm", `SELECT probe, comm, count(*) AS n FROM ${t} GROUP BY probe, comm`],
    ["hist", `SELECT ${slot(v)} AS slot, count(*) AS n FROM ${t} WHERE probe = ${e} GROUP BY slot`],
    [
      "latency",
      `SELECT ${slot("d")} AS slot, count(*) AS n FROM (
         SELECT nt - time AS d FROM (
           SELECT probe, time, LEAD(probe) OVER w AS np, LEAD(time) OVER w AS nt
           FROM ${t} WHERE probe IN (${e}, ${r})
           WINDOW w AS (PARTITION BY tid ORDER BY time))
         WHERE probe = ${e} AND np = ${r})
       GROUP BY slot`,
    ],
    [
      "heatmap",
      `WITH b AS (SELECT min(time) AS t0, (max(time) - min(time)) // 100 + 1 AS step FROM ${t})
       SELECT (time - t0) // step AS col, ${slot(v)} AS slot, count(*) AS n
       FROM ${t}, b WHERE probe = ${e} GROUP BY col, slot`,
    ],
  ];
  for (const [name, sql] of questions) {
    const res = { q: name, wall: [], cpu: [], rows: 0 };
    for (let i = 0; i < repeats; i++) {
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      const rows = await all(sql);
      const wall = Number(process.hrtime.bigint() - t0) / 1e9;
      const c = process.cpuUsage(c0);
      res.wall.push(wall);
      res.cpu.push((c.user + c.system) / 1e6);
      res.rows = rows.length;
    }
    out(res);
  }
  out({ maxrss_kb: process.resourceUsage().maxRSS });
}

main(process.argv.slice(2)).catch((e) => fail(e.stack || String(e)));
