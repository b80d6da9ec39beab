//go:build interop

package main

import (
	"path/filepath"
	"testing"
)

// TestExportRedactPolars opens TestExportRedact's redacted capture in
// nodejs-polars, an independent reader: every event and loss record is
// there, a row each, with the loss total.
func TestExportRedactPolars(t *testing.T) {
	dir := t.TempDir()
	in, _, perProbe, lost := redactInput(t, dir)
	var events uint64
	for _, n := range perProbe {
		events += n
	}
	red := filepath.Join(dir, "redacted-zstd.arrow")
	if _, errOut, code := runCLI(t, "export", in, "--format", "arrow", "--redact", "--compress", "zstd", "-o", red); code != 0 {
		t.Fatalf("export --redact: exit %d: %s", code, errOut)
	}
	pl := readPolars(t, red)
	if pl.Lost != lost || pl.PerProbe["open"] != perProbe["open"] || pl.PerProbe["openat"] != perProbe["openat"] || pl.Rows != events+5 {
		t.Errorf("polars reads %+v; want %v, %d lost", pl, perProbe, lost)
	}
}
