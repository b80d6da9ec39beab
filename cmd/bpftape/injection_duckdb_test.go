//go:build interop

package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/internal/testutil/hostile"
)

// TestInjectionDuckDB exports TestInjection's capture (terminal escapes,
// forged lines, formulas and bytes that are not UTF-8 in its command
// names, string field, probe name, host and command line) to Parquet, which
// DuckDB opens, reading every row.
func TestInjectionDuckDB(t *testing.T) {
	bin, _ := bpftapeBin(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "injection.arrow")
	if err := hostile.Named("injection").Write(path); err != nil {
		t.Fatal(err)
	}
	node, interop := interopNode(t)
	pq := filepath.Join(dir, "x.parquet")
	if r := runBin(t, exec.Command(bin, "export", path, "--format", "parquet", "-o", pq)); r.code != exitOK {
		t.Fatalf("parquet export: exit %d", r.code)
	}
	got := runReader(t, node, filepath.Join(interop, "duckdb.js"), pq)
	if got.Rows != uint64(3*len(hostile.Injections)) {
		t.Errorf("DuckDB read %d rows, want %d", got.Rows, 3*len(hostile.Injections))
	}
}
