package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLUsage: bpftape sql prints a query on stdout for each verb, its
// help teaches with examples for DuckDB, Spark and Trino, and bad input
// (no verb, an unknown one, a probe or field the capture lacks, wrong
// arguments) gets a one-line error and exit status 2.
func TestSQLUsage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pairs.arrow")
	writePairCapture(t, path)

	out, _, code := runCLI(t, "--help")
	if code != exitOK || !strings.Contains(out, "  sql ") {
		t.Errorf("bpftape --help does not list sql: %s", out)
	}
	for _, args := range [][]string{{"sql", "--help"}, {"sql", "latency", "--help"}} {
		out, errOut, code := runCLI(t, args...)
		if code != exitOK || errOut != "" {
			t.Fatalf("%q: exit %d: %s", args, code, errOut)
		}
		for _, want := range []string{"duckdb -c \"$(bpftape sql hist", "spark.sql(", "spark.sql.ansi.doubleQuotedIdentifiers",
			"trino --execute", "--table", "--path", "lost IS NULL", "slot 64"} {
			if !strings.Contains(out, want) {
				t.Errorf("%q lacks %q", args, want)
			}
		}
	}
	if out, _, _ := runCLI(t, "sql", "latency", "--help"); !strings.Contains(out, "  -u\n") || !strings.Contains(out, "  --key FIELD[,FIELD...]") {
		t.Errorf("sql latency --help lacks its flags:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"hist", path, "tick", "n"}, `"tick.n"`},
		{[]string{"count", path, "--by", "tid"}, "GROUP BY probe, tid"},
		{[]string{"latency", path, "f", "-u"}, "probe = 'f' THEN 1 ELSE -1"},
		{[]string{"latency", path, "f:return", "--table", "fleet"}, "FROM fleet"},
		{[]string{"requests", path, "tick", "n", "f:return", "retval", "--global"}, "PARTITION BY host ORDER BY time"},
	} {
		out, errOut, code := runCLI(t, append([]string{"sql"}, tc.args...)...)
		if code != exitOK || !strings.Contains(out, tc.want) || !strings.HasPrefix(out, "-- bpftape sql: ") {
			t.Errorf("sql %q: exit %d: %s\n%s", tc.args, code, errOut, out)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "want VERB CAP ARGS"},
		{[]string{"frob", path}, `"frob": unknown verb: want hist, count, latency or requests`},
		{[]string{"hist", path, "nope", "n"}, `no probe "nope"`},
		{[]string{"hist", path, "tick", "nope"}, `no field "nope"`},
		{[]string{"hist", path, "tick", "what"}, "tick.what is a string"},
		{[]string{"hist", path, "tick"}, "hist: want CAP PROBE FIELD, got 2 arguments"},
		{[]string{"latency", path, "g"}, `no probe "g:return" to pair with "g"`},
		{[]string{"latency", path, "f", "f:return", "-u", "-m"}, "-u and -m exclude each other"},
		{[]string{"count", path, "--table", "t", "--path", "p"}, "--table and --path exclude each other"},
		{[]string{"count", path, "--comm", `it's`}, "reads differently in Spark SQL"},
		{[]string{"count", path, "--frob"}, "unknown flag --frob"},
		{[]string{"hist", filepath.Join(t.TempDir(), "missing.arrow"), "tick", "n"}, "missing.arrow"},
	} {
		out, errOut, code := runCLI(t, append([]string{"sql"}, tc.args...)...)
		wantCode := exitUsage
		if strings.HasSuffix(tc.want, ".arrow") {
			wantCode = exitFailure // a file it cannot open
		}
		if code != wantCode || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) || !strings.HasPrefix(errOut, "bpftape sql: ") {
			t.Errorf("sql %q: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", tc.args, code, out, errOut, wantCode, tc.want)
		}
	}
}
