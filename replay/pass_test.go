package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// writeLossy writes 100 rows at 1 ms steps in batches of 7: every tenth a
// loss record of 3 events, the others events of pid 1 and 2 in turn.
func writeLossy(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := &format.Meta{Host: "h", StartBoot: 1000, StartWall: time.Unix(0, 0), Probes: []format.Probe{{Name: "p", Kind: "tracepoint", Spec: "t:a:b"}}}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		tm := 1000 + int64(i)*int64(time.Millisecond)
		if i%10 == 0 {
			w.Lost(0, 0, tm, 3)
			continue
		}
		w.Append(&format.Event{Time: tm, PID: uint32(1 + i%2), TID: 1, Comm: []byte("c")})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWalk checks that events pass the whole filter, loss records its time
// window only, and that every loss record is tallied whatever the filter.
func TestWalk(t *testing.T) {
	c, err := Open(writeLossy(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var events, losses int
	f := &RowFilter{PIDs: []uint32{2}, From: 20 * time.Millisecond, To: 60 * time.Millisecond}
	p, err := c.Walk(f, func(b *format.Batch, i int, lost bool) error {
		if lost {
			losses++
		} else {
			events++
			if b.PID[i] != 2 {
				t.Errorf("event of pid %d", b.PID[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Rows 20..59: loss records at 20, 30, 40, 50; events of pid 2 at odd i.
	if events != 20 || losses != 4 || p.Losses.Total != 30 || p.Events != 90 {
		t.Errorf("%d events, %d loss records; tally %d lost, %d events", events, losses, p.Losses.Total, p.Events)
	}
}

// TestPasses checks that a capture reads the same in every pass, each from
// its first batch with tallies of its own, also after its path is removed,
// and that Scan, Walk and Hist count one pass each.
func TestPasses(t *testing.T) {
	path := writeLossy(t)
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	scan := func() (*Pass, []int64) {
		var times []int64
		p, err := c.Scan(&RowFilter{PIDs: []uint32{1}}, func(b *format.Batch, i int) { times = append(times, b.Time[i]) })
		if err != nil {
			t.Fatal(err)
		}
		return p, times
	}
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	batches := 0
	for r.Next() {
		batches++
	}
	r.Close()
	// Events of pid 1: even rows, but for every tenth.
	p1, t1 := scan()
	if p1.Events != 90 || p1.Losses.Total != 30 || len(t1) != 40 || p1.Batches != batches {
		t.Errorf("first pass: %d events, %d lost, %d batches, %d passed the filter", p1.Events, p1.Losses.Total, p1.Batches, len(t1))
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	p2, t2 := scan()
	if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(t1, t2) {
		t.Errorf("second pass differs:\n%+v\n%+v", p1, p2)
	}
	if _, err := Hist(c, HistOptions{Probe: "p", Field: "nope"}, &bytes.Buffer{}); err == nil {
		t.Error("hist of a field the probe does not have")
	}
	if _, err := c.Walk(nil, func(*format.Batch, int, bool) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if c.Passes() != 3 {
		t.Errorf("%d passes, want 3 (a hist that fails before reading makes none)", c.Passes())
	}
	var notes bytes.Buffer
	p2.Notes(&notes)
	if want := "WARNING: " + path + ": 30 events were lost"; !bytes.HasPrefix(notes.Bytes(), []byte(want)) {
		t.Errorf("notes %q, want %q...", notes.String(), want)
	}
	var none *Pass
	none.Notes(&notes) // an analysis that failed before reading
}
