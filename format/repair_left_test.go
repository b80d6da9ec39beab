package format_test

import (
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil/hostile"
)

// TestRepairLeftOut checks that a repair which leaves out a corrupt batch
// says so in the capture it writes, with the events the input's footer
// counted and the output lacks, and that a second repair keeps the note.
func TestRepairLeftOut(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "corrupt.arrow")
	for _, c := range hostile.Captures() {
		if c.Name == "corrupt-batch" {
			if err := c.Write(in); err != nil {
				t.Fatal(err)
			}
		}
	}
	const want = "bpftape repair left out 1 corrupt batch of 4096 events (req 2048, req_ret 2048)"
	out := filepath.Join(dir, "fixed.arrow")
	res, err := format.Repair(in, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 1 || res.Left != want || res.Rows != 3*4096 {
		t.Fatalf("Repair: %d rows, skipped %v, left %q; want %d rows, 1 skipped, %q", res.Rows, res.Skipped, res.Left, 3*4096, want)
	}
	again := filepath.Join(dir, "again.arrow")
	if res, err = format.Repair(out, again); err != nil || res.Left != "" {
		t.Fatalf("a second repair: %v, left %q", err, res.Left)
	}
	for _, p := range []string{out, again} {
		r, err := format.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got := r.Meta.Extra[format.ExtraRepaired]
		r.Close()
		if got != want {
			t.Errorf("%s: %s %q, want %q", filepath.Base(p), format.ExtraRepaired, got, want)
		}
	}
}
