package format_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/format/formattest"
)

// selectedRows reads path decoding only cols (Reader.Select), with
// workers goroutines reading ahead, and returns each row as text: time,
// tid, probe, loss count, and the values of the field columns among cols.
func selectedRows(path string, cols []int, workers int) ([]string, error) {
	r, err := format.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	r.Select(cols)
	r.ReadAhead = workers
	var rows []string
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			var sb strings.Builder
			fmt.Fprintf(&sb, "%d %d %d", b.Time[i], b.TID[i], b.Probe[i])
			if n, ok := b.Lost(i); ok {
				fmt.Fprintf(&sb, " lost %d cpu %d", n, b.CPU[i])
			}
			for _, ci := range cols {
				if ci >= format.ColLost+1 {
					if c := b.Col(ci); c.Valid(i) {
						fmt.Fprintf(&sb, " %d", c.Int(i))
					}
				}
			}
			rows = append(rows, sb.String())
		}
	}
	return rows, r.Err()
}

// TestSelect checks that a reader decoding some columns, with and without
// reading ahead, reads what one decoding every column reads.
func TestSelect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	if err := formattest.WriteFile(path, 200_000, nil, format.WriterOptions{}, 997); err != nil {
		t.Fatal(err)
	}
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	arg2 := r.Column("rx.arg2")
	r.Close()
	cols := []int{format.ColTime, format.ColTID, arg2}
	want, err := selectedRows(path, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2, 5} {
		got, err := selectedRows(path, cols, workers)
		if err != nil {
			t.Fatal(err)
		}
		// want read every column and printed the fixed ones: got adds arg2.
		if len(got) != len(want) {
			t.Fatalf("%d workers: %d rows, want %d", workers, len(got), len(want))
		}
		every, err := selectedRows(path, cols, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != every[i] {
				t.Fatalf("%d workers: row %d is %q, want %q", workers, i, got[i], every[i])
			}
			if !strings.HasPrefix(got[i], want[i]) {
				t.Fatalf("%d workers: row %d is %q, every column read %q", workers, i, got[i], want[i])
			}
		}
	}
}

// TestSelectCorruptColumn flips a byte in the arg2 column's buffer of a
// batch: a pass that decodes arg2 fails, naming the batch and the column
// (its zstd checksum fails, or a length in it exceeds a limit), and a pass that does not decode arg2 reads
// every row, since nothing it answers from is damaged. This is the rule:
// an analysis verifies the columns it reads, and only those.
func TestSelectCorruptColumn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.arrow")
	if err := formattest.WriteFile(path, 40_000, nil, format.WriterOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	arg2 := r.Column("rx.arg2")
	r.Close()
	want, err := selectedRows(path, []int{format.ColTime, format.ColTID}, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Find a byte whose flip fails the arg2 column and only it.
	bad := filepath.Join(dir, "bad.arrow")
	found := false
	for off := len(data) / 3; off < len(data)*2/3 && !found; off += 97 {
		d := append([]byte(nil), data...)
		d[off] ^= 0x5a
		if err := os.WriteFile(bad, d, 0o600); err != nil {
			t.Fatal(err)
		}
		_, errAll := selectedRows(bad, []int{format.ColTime, format.ColTID, arg2}, 2)
		if errAll == nil || !strings.Contains(errAll.Error(), "rx.arg2") {
			continue
		}
		found = true
		if !errors.Is(errAll, format.ErrCorrupt) && !errors.Is(errAll, format.ErrLimit) || !strings.Contains(errAll.Error(), "batch ") {
			t.Errorf("reading arg2: %v, want ErrCorrupt or ErrLimit naming the batch", errAll)
		}
		got, err := selectedRows(bad, []int{format.ColTime, format.ColTID}, 2)
		if err != nil {
			t.Fatalf("flipped byte %d of arg2: reading time and tid failed: %v", off, err)
		}
		if len(got) != len(want) {
			t.Fatalf("flipped byte %d of arg2: %d rows of time and tid, want %d", off, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("flipped byte %d of arg2: row %d is %q, want %q", off, i, got[i], want[i])
			}
		}
	}
	if !found {
		t.Fatal("no byte of the middle third of the file fails the arg2 column alone")
	}
}
