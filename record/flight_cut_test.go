package record

import (
	"testing"

	"github.com/bpftape/bpftape/format"
)

// TestFlightCut: events appended as the drain loop appends them, with a
// snapshot due at 5,050 ms, some of its events read late (after later
// ones, as the rings are read out of order by a little): the snapshot
// holds every event up to its due time, late ones too, and none after.
func TestFlightCut(t *testing.T) {
	const ms = int64(1e6)
	m := &format.Meta{Tool: "t", StartBoot: 1, Window: &format.Window{Start: 1},
		Probes: []format.Probe{{Name: "p", Kind: "uprobe", Fields: []format.Field{{Name: "arg0", Type: format.Uint64}}}}}
	w, err := format.NewFlightWriter(m, format.WriterOptions{BatchRows: 100}, format.FlightOptions{Window: 10000 * ms, MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	f := &flight{w: w, pending: &pendingSnap{due: 5050 * ms}}
	var times []int64
	for i := int64(1); i <= 5300; i++ {
		times = append(times, i)
		if i%97 == 0 && i > 5000 && i < 5200 {
			times = append(times, 5050-i%40) // late: read after later events
		}
	}
	want := 0
	for _, tm := range times {
		if tm <= 5050 {
			want++
		}
		e := format.Event{Time: tm * ms, PID: 1, TID: 1, Comm: []byte("p"), Ints: []uint64{uint64(tm)}, Strs: make([][]byte, 1)}
		alone, err := f.cut(&e)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
		if alone {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := w.FlightSnapshot(f.pending.due)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rows != int64(want) || s.Meta.Window.End != 5050*ms {
		t.Errorf("snapshot of %d rows ending at %d; want the %d up to the due time, ending there (%d)", s.Rows, s.Meta.Window.End, want, 5050*ms)
	}
}
