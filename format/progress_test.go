package format_test

import (
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
)

// TestCopyProgress: Merge and RepairWith tell their Progress of every
// batch they read, counting one by one up to the batches of their inputs.
func TestCopyProgress(t *testing.T) {
	dir := t.TempDir()
	var ins []string
	batches := 0
	for i, n := range []int64{3000, 5500} {
		path := filepath.Join(dir, string(rune('a'+i))+".arrow")
		if err := formattest.WriteFile(path, n, nil, format.WriterOptions{BatchRows: 500}, 0); err != nil {
			t.Fatal(err)
		}
		r, err := format.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		batches += r.NumBatches()
		r.Close()
		ins = append(ins, path)
	}
	check := func(what string, calls [][2]int, want int) {
		t.Helper()
		if len(calls) != want {
			t.Errorf("%s: told of %d batches read, want %d", what, len(calls), want)
		}
		for i, c := range calls {
			if c != [2]int{i + 1, want} {
				t.Errorf("%s: call %d told %d of %d, want %d of %d", what, i, c[0], c[1], i+1, want)
				break
			}
		}
	}
	var calls [][2]int
	progress := func(read, of int) { calls = append(calls, [2]int{read, of}) }
	if _, err := format.Merge(filepath.Join(dir, "merged.arrow"), ins, format.MergeOptions{Progress: progress}); err != nil {
		t.Fatal(err)
	}
	check("merge", calls, batches)
	r, err := format.Open(ins[1])
	if err != nil {
		t.Fatal(err)
	}
	want := r.NumBatches()
	r.Close()
	calls = nil
	if _, err := format.RepairWith(ins[1], filepath.Join(dir, "fixed.arrow"), format.RepairOptions{Progress: progress}); err != nil {
		t.Fatal(err)
	}
	check("repair", calls, want)
}
