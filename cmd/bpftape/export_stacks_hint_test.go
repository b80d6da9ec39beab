package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil/hostile"
)

// TestExportStackTableHint: an export that fails on a malformed stack
// table suggests --stack-ids only to the formats that take it; the
// others fail without the hint.
func TestExportStackTableHint(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.arrow")
	m := &format.Meta{Host: "h", StartBoot: 1000, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "leaf", Kind: "uprobe", Spec: "leaf=u:/bin/x:leaf(ustack)", Fields: []format.Field{{Name: "ustack", Type: format.UserStack}}},
	}}
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.AddStacks(&format.StackTable{Stacks: []format.Stack{{ID: 1, Frames: []uint64{0x401000}}}})
	for i := range 10 {
		if err := w.Append(&format.Event{Time: 2000 + int64(i), PID: 7, TID: 7, Comm: []byte("x"), Ints: []uint64{1}, Strs: make([][]byte, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := hostile.BreakStackTable(path); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"csv", "jsonl", "parquet", "arrow"} {
		_, errOut, code := runCLI(t, "export", path, "-f", f, "-o", filepath.Join(dir, "out."+f))
		hint := strings.Contains(errOut, "--stack-ids exports the stack ids")
		if code != exitFailure || !strings.Contains(errOut, "stack table") || hint != (f != "arrow") {
			t.Errorf("export -f %s: exit %d, %q; want %d, the stack table named, the hint %v", f, code, errOut, exitFailure, f != "arrow")
		}
	}
}
