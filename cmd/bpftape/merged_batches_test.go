package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// TestMergedSmallBatches runs the verbs that analyse each batch where it is
// decoded and merge the parts in file order on a capture of 7-row batches:
// loss records at batch edges and inside batches, runs of equal values and
// calls that span batches, two threads, and an entry probe whose return
// the report pairs by name. Each must print what it prints with every
// column decoded row by row (checkEveryColumn), and so must the passes in
// file order of maps too large for a part per batch.
func TestMergedSmallBatches(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "small.arrow")
	m := &format.Meta{Host: "h", Kernel: "6.1.0-18-amd64", Tool: "bpftape test", StartBoot: 7e9,
		StartWall: time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC),
		Probes: []format.Probe{
			{Name: "work", Kind: "uprobe", Spec: "u:/bin/w:work(arg0)", Target: "/bin/w", Fields: []format.Field{{Name: "arg0", Type: format.Uint64}}},
			{Name: "work:return", Kind: "uretprobe", Spec: "ur:/bin/w:work", Target: "/bin/w", Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
			{Name: "tick", Kind: "usdt", Spec: "U:/bin/w:app:tick(arg0)", Target: "/bin/w", Fields: []format.Field{{Name: "arg0", Type: format.Int32}}},
		}}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 7})
	if err != nil {
		t.Fatal(err)
	}
	tm := m.StartBoot + 1e6
	rows := 0
	ev := func(p uint16, tid uint32, v uint64) {
		tm += 1000 + int64(v%7)*300
		if err := w.Append(&format.Event{Time: tm, PID: 100, TID: tid, Probe: p, Comm: []byte("worker-thread-long"), Ints: []uint64{v}}); err != nil {
			t.Fatal(err)
		}
		rows++
		// A loss record after some batch's last row, and inside others.
		if rows%21 == 7 || rows%17 == 3 {
			if err := w.Lost(p, 0, tm, uint64(rows%5+1)); err != nil {
				t.Fatal(err)
			}
			rows++
		}
	}
	for i := range 400 {
		tid := uint32(101 + i%2)
		// Runs of equal sizes, longer than a batch.
		size := uint64(64 << (i / 9 % 6))
		ev(0, tid, size)
		if i%5 == 0 {
			ev(2, tid, uint64(i%3))
		}
		ev(1, tid, size/2)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkEveryColumn(t, dir, [][]string{
		{"heatmap", path, "work", "arg0", "-o", "-"},
		{"heatmap", path, "work", "arg0", "--rows", "5", "-o", "-"},
		{"compare", path, "work", "arg0", "work:return", "retval"},
		{"compare", path, "work", "arg0", "tick", "arg0", "--json"},
		{"report", path, "-o", "-"},
		// Maps of more cells than a part per batch may have
		// (heatmap.MaxPartCells): filled in file order.
		{"heatmap", path, "work", "arg0", "--rows", "4096", "-o", "-"},
		{"report", path, "--cols", "2000", "-o", "-"},
		{"hist", path, "work", "arg0"},
		{"latency", path, "work", "work:return"},
		{"requests", path, "tick", "arg0", "work:return", "retval"},
		{"count", path, "--by", "comm"},
	})
}
