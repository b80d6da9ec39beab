package rows

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
)

// TestWalk checks that events pass the whole filter, loss records its time
// window only, and that every loss record is tallied whatever the filter.
func TestWalk(t *testing.T) {
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
	c, err := replay.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var events, losses int
	f := &replay.Filter{PIDs: []uint32{2}, From: 20 * time.Millisecond, To: 60 * time.Millisecond}
	err = Walk(c, f, func(b *format.Batch, i int, lost bool) error {
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
	if events != 20 || losses != 4 || c.Losses.Total != 30 || c.Events != 90 {
		t.Errorf("%d events, %d loss records; tally %d lost, %d events", events, losses, c.Losses.Total, c.Events)
	}
}
