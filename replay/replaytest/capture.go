package replaytest

import (
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// Row is one row of a test capture: an event, or a loss record of Lost
// events of its Probe on its CPU at its Time when Lost is not 0.
type Row struct {
	format.Event
	Lost uint64
}

// Write writes a capture of m to a new file in tb's temporary folder, with
// the stack table st (when not nil) and rows in their order, in batches of
// batchRows (0: the writer's default), and returns its path.
func Write(tb testing.TB, m *format.Meta, st *format.StackTable, batchRows int, rows ...Row) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "capture.arrow")
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: batchRows})
	if err != nil {
		tb.Fatal(err)
	}
	if st != nil {
		w.AddStacks(st)
	}
	for i := range rows {
		r := &rows[i]
		if r.Lost != 0 {
			err = w.Lost(r.Probe, r.CPU, r.Time, r.Lost)
		} else {
			err = w.Append(&r.Event)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}
