//go:build interop

package main

// interopTests is true in a test binary built with -tags interop (make
// test), which holds the tests that compare bpftape with Chromium,
// nodejs-polars, DuckDB, BCC and bpftrace: the tests built either way run
// their cross-checks with those tools only then.
const interopTests = true
