package format_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
)

// readPass reads every batch of r and sums what a pass sees.
func readPass(t *testing.T, r *format.Reader) (rows int, timeSum int64, raw int64, recoverErr string) {
	t.Helper()
	for r.Next() {
		b := r.Batch()
		rows += len(b.Time)
		for _, v := range b.Time {
			timeSum += v
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.RecoverErr != nil {
		recoverErr = r.RecoverErr.Error()
	}
	return rows, timeSum, r.RawBytes, recoverErr
}

// TestRewind: one open reader reads a capture twice alike, with and
// without its footer, and reads a column again after a rewind, with
// batches decoded ahead.
func TestRewind(t *testing.T) {
	dir := t.TempDir()
	whole := filepath.Join(dir, "c.arrow")
	if err := formattest.WriteFile(whole, 200_000, nil, format.WriterOptions{BatchRows: 4096}, 1000); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.arrow")
	if err := os.WriteFile(cut, b[:len(b)*2/3], 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{whole, cut} {
		r, err := format.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		n1, s1, raw1, rec1 := readPass(t, r)
		r.Rewind()
		n2, s2, raw2, rec2 := readPass(t, r)
		if n1 == 0 || n1 != n2 || s1 != s2 || raw1 != raw2 || rec1 != rec2 {
			t.Errorf("%s: first pass %d rows (time sum %d, %d raw bytes, recovery %q), second %d (%d, %d, %q)",
				filepath.Base(path), n1, s1, raw1, rec1, n2, s2, raw2, rec2)
		}
		if (path == cut) != r.Recovered || (path == cut) != (rec1 != "") {
			t.Errorf("%s: recovered %v, recovery %q", filepath.Base(path), r.Recovered, rec1)
		}
		r.Rewind()
		r.Select([]int{format.ColTime})
		r.ReadAhead = 3
		n3, s3, _, rec3 := readPass(t, r)
		if n3 != n1 || s3 != s1 || rec3 != rec1 {
			t.Errorf("%s: a pass of the time column, read ahead, read %d rows (time sum %d, recovery %q), the passes %d (%d, %q)",
				filepath.Base(path), n3, s3, rec3, n1, s1, rec1)
		}
		r.Close()
	}
}
