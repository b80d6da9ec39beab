//go:build interop

package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
)

// stacksDuckDB runs the query a user writes on an exported stack column,
// SELECT "leaf.ustack", count(*) ... GROUP BY 1, in DuckDB, and prints
// {"type": the column's DuckDB type, "rows": [[value, count]...]}.
const stacksDuckDB = `
const duckdb = require("@duckdb/node-api");
(async () => {
  const [path, col] = process.argv.slice(1);
  const src = "read_parquet('" + path.replace(/'/g, "''") + "')";
  const id = '"' + col.replace(/"/g, '""') + '"';
  const db = await (await duckdb.DuckDBInstance.create(":memory:")).connect();
  const type = (await db.runAndReadAll("DESCRIBE SELECT " + id + " FROM " + src)).getRowObjects()[0].column_type;
  const rows = (await db.runAndReadAll("SELECT " + id + ", count(*) FROM " + src + " GROUP BY 1")).getRows();
  process.stdout.write(JSON.stringify({ type, rows: rows.map(([v, n]) => [v === null ? null : String(v), String(n)]) }));
})().catch((e) => { process.stderr.write(String(e && e.message ? e.message : e) + "\n"); process.exit(1); });
`

// stacksPolars does the same with nodejs-polars: readParquet, then
// groupBy(col).agg(len()).
const stacksPolars = `
const pl = require("nodejs-polars");
try {
  const [path, col] = process.argv.slice(1);
  const df = pl.readParquet(path);
  const g = df.groupBy(col).agg(pl.len().alias("n")).toRecords();
  process.stdout.write(JSON.stringify({ type: String(df.schema[col]), rows: g.map((r) => [r[col] === null ? null : String(r[col]), String(r.n)]) }));
} catch (e) { process.stderr.write(String(e && e.message ? e.message : e) + "\n"); process.exit(1); }
`

type stackReaderOut struct {
	Type string       `json:"type"`
	Rows [][2]*string `json:"rows"`
}

// runStackReader runs one of the scripts above in the interop folder,
// where its npm modules are.
func runStackReader(t *testing.T, node, interop, name, script, path, col string) stackReaderOut {
	t.Helper()
	dir, err := filepath.Abs(interop)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", script, path, col)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s on %s: %v\n%s", name, filepath.Base(path), err, msg)
	}
	var r stackReaderOut
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s output %q: %v", name, out, err)
	}
	return r
}

// folded writes a reader's groups as bpftape stacks writes stacks, "FRAMES
// COUNT" a line, sorted; a null group is "<null> COUNT".
func (r stackReaderOut) folded() string {
	var lines []string
	for _, row := range r.Rows {
		v := "<null>"
		if row[0] != nil {
			v = *row[0]
		}
		n := "<null>"
		if row[1] != nil {
			n = *row[1]
		}
		lines = append(lines, v+" "+n)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

// TestInteropStacksParquet records leaf's user stack on every call of the
// chain workload, exports it to Parquet, and groups the events by their
// stack column in DuckDB and in polars, engines that share no code with
// bpftape: both see one utf8 stack, main;top;mid;leaf, on all 5000 events,
// exactly what bpftape stacks prints; so does the CSV export. With
// --stack-ids the column is the uint64 id instead.
func TestInteropStacksParquet(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	node, interop := interopNode(t)
	dir := t.TempDir()
	exe := buildChain(t, dir)
	const n = 5000
	capPath := filepath.Join(dir, "leaf.arrow")
	if out, errOut, code := runCLI(t, "record", "-o", capPath, "-c", fmt.Sprintf("%s %d", exe, n),
		fmt.Sprintf("leaf=u:%s:leaf(ustack)", exe)); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	stacks, errOut, code := runCLI(t, "stacks", capPath)
	if want := fmt.Sprintf("main;top;mid;leaf %d\n", n); code != 0 || stacks != want {
		t.Fatalf("stacks: exit %d\n got %q\nwant %q\n%s", code, stacks, want, errOut)
	}

	pq := filepath.Join(dir, "leaf.parquet")
	if _, errOut, code := runCLI(t, "export", capPath, "-f", "parquet", "-o", pq); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	} else if strings.Contains(errOut, "note:") {
		t.Errorf("export: notes: %s", errOut)
	}
	for _, rd := range []struct{ name, script, typ string }{
		{"duckdb", stacksDuckDB, "VARCHAR"},
		{"polars", stacksPolars, "DataType(String)"},
	} {
		got := runStackReader(t, node, interop, rd.name, rd.script, pq, "leaf.ustack")
		if got.Type != rd.typ {
			t.Errorf("%s: leaf.ustack has type %s, want %s", rd.name, got.Type, rd.typ)
		}
		if f := got.folded(); f != stacks {
			t.Errorf("%s: GROUP BY leaf.ustack\n%s\nbpftape stacks\n%s", rd.name, f, stacks)
		}
	}

	// The CSV export groups the same.
	out, errOut, code := runCLI(t, "export", capPath, "-f", "csv")
	if code != 0 {
		t.Fatalf("export csv: exit %d: %s", code, errOut)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, h := range recs[0] {
		if h == "leaf.ustack" {
			col = i
		}
	}
	counts := map[string]int{}
	for _, rec := range recs[1:] {
		counts[rec[col]]++
	}
	if len(counts) != 1 || counts["main;top;mid;leaf"] != n {
		t.Errorf("csv: leaf.ustack values %v, want main;top;mid;leaf %d times", counts, n)
	}

	// --stack-ids: the id, as a UBIGINT, on every event.
	ids := filepath.Join(dir, "ids.parquet")
	if _, errOut, code := runCLI(t, "export", capPath, "-f", "parquet", "--stack-ids", "-o", ids); code != 0 {
		t.Fatalf("export --stack-ids: exit %d: %s", code, errOut)
	}
	got := runStackReader(t, node, interop, "duckdb", stacksDuckDB, ids, "leaf.ustack")
	if got.Type != "UBIGINT" || len(got.Rows) != 1 || got.Rows[0][0] == nil || *got.Rows[0][0] == "0" ||
		got.Rows[0][1] == nil || *got.Rows[0][1] != fmt.Sprint(n) {
		t.Errorf("duckdb on the --stack-ids export: %s %s", got.Type, got.folded())
	}
}
