package format

import (
	"os"

	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/ipc"
)

// TestFlightSnapshot records 10,000 events 1 ms apart through a flight
// writer of a 2-s window and 100-row batches: a snapshot at the last
// event holds every event of whole batches from about 2 s before it, and
// nothing older than the batch that straddles the window's start; it is
// an ordinary capture, stack table included, and says the window it
// covers.
func TestFlightSnapshot(t *testing.T) {
	m := &Meta{Tool: "t", StartBoot: 1, Window: &Window{Start: 1},
		Probes: []Probe{{Name: "leaf", Kind: "uprobe", Fields: []Field{{Name: "arg0", Type: Uint64}, {Name: "ustack", Type: UserStack}}}}}
	const ms = int64(1e6)
	w, err := NewFlightWriter(m, WriterOptions{BatchRows: 100}, FlightOptions{Window: 2000 * ms, MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	frames := []uint64{0x401000, 0x402000}
	table := &StackTable{Stacks: []Stack{{ID: StackID(false, frames), Frames: frames}}, Objects: []Object{{ID: 1, Path: "/bin/app"}}}
	w.AddStacks(table)
	const n = 10000
	for i := 1; i <= n; i++ {
		e := Event{Time: int64(i) * ms, PID: 7, TID: 7, Comm: []byte("app"), Ints: []uint64{uint64(i), table.Stacks[0].ID}, Strs: make([][]byte, 2)}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	s, err := w.FlightSnapshot(n * ms)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "snap.arrow")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Recovered {
		t.Fatal("snapshot has no footer")
	}
	var got []uint64
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			v := uint64(b.Col(7).Int(i))
			got = append(got, v)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	// Events 8000..10000 are the window [8 s, 10 s]; batches are 100
	// events, so the first kept one starts at 7901 (its last event, 8000,
	// is inside the window).
	if len(got) == 0 || got[0] != 7901 || got[len(got)-1] != n || len(got) != n-7900 {
		t.Fatalf("snapshot holds events %d..%d (%d), want 7901..%d", got[0], got[len(got)-1], len(got), n)
	}
	for i := range got {
		if got[i] != got[0]+uint64(i) {
			t.Fatalf("event %d is %d: missing events", i, got[i])
		}
	}
	win := r.Meta.Window
	if win == nil || win.Start != 7900*ms+1 || win.End != n*ms {
		t.Fatalf("window %+v, want [%d, %d]", win, 7900*ms+1, n*ms)
	}
	// Arrow's own reader takes it through its footer.
	af, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer af.Close()
	fr, err := ipc.NewFileReader(af)
	if err != nil {
		t.Fatalf("Arrow Go: %v", err)
	}
	defer fr.Close()
	rows := int64(0)
	for i := 0; i < fr.NumRecords(); i++ {
		rec, err := fr.Record(i)
		if err != nil {
			t.Fatalf("Arrow Go: batch %d: %v", i, err)
		}
		rows += rec.NumRows()
	}
	if rows != int64(len(got)) {
		t.Fatalf("Arrow Go read %d rows, want %d", rows, len(got))
	}
	st, err := r.StackTable()
	if err != nil || len(st.Stacks) != 1 || len(st.Objects) != 1 {
		t.Fatalf("stack table %+v, %v", st, err)
	}
	if fs := s.Batches; fs != 21 {
		t.Errorf("snapshot of %d batches, want 21", fs)
	}
	// The ring keeps flightLag (1 s, 10 batches) past the window.
	if st := w.FlightStats(); st.Dropped != 69 || st.BySize != 0 {
		t.Errorf("stats %+v: want 69 dropped by time", st)
	}
}

// TestFlightSnapshotEnd: a snapshot due before the newest events (a
// trigger's --after period over, seen by the recorder later) takes the
// batches that begin by its end, reaching a whole window back from there:
// the events after it, in batches of their own, are left out.
func TestFlightSnapshotEnd(t *testing.T) {
	m := &Meta{Tool: "t", StartBoot: 1, Window: &Window{Start: 1}, Probes: []Probe{{Name: "p", Kind: "uprobe", Fields: []Field{{Name: "arg0", Type: Uint64}}}}}
	const ms = int64(1e6)
	w, err := NewFlightWriter(m, WriterOptions{BatchRows: 100}, FlightOptions{Window: 2000 * ms, MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	// Events 1 ms apart to 5 s; the batch is cut after 5,050 (the due
	// time, as the recorder cuts it), then 300 ms more.
	for i := int64(1); i <= 5350; i++ {
		e := Event{Time: i * ms, PID: 1, TID: 1, Comm: []byte("p"), Ints: []uint64{uint64(i)}, Strs: make([][]byte, 1)}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
		if i == 5050 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := w.FlightSnapshot(5050 * ms)
	if err != nil {
		t.Fatal(err)
	}
	// Whole batches: 2901..3000 is older than the window [3.05 s, 5.05 s],
	// 3001..3100 reaches into it; 5051.. begin after its end.
	if win := s.Meta.Window; win.Start != 3000*ms+1 || win.End != 5050*ms || s.Rows != 5050-3000 {
		t.Errorf("snapshot of %d rows, window [%d, %d]; want 2050 rows, [%d, %d]", s.Rows, win.Start, win.End, 3000*ms+1, 5050*ms)
	}
}

// TestFlightMaxBytes: past MaxBytes the oldest batches go, though inside
// the window, and the snapshot's window starts after them.
func TestFlightMaxBytes(t *testing.T) {
	m := &Meta{Tool: "t", StartBoot: 1, Probes: []Probe{{Name: "p", Kind: "uprobe", Fields: []Field{{Name: "arg0", Type: Uint64}}}}}
	w, err := NewFlightWriter(m, WriterOptions{BatchRows: 100, Compression: None}, FlightOptions{Window: 1 << 62, MaxBytes: 20000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5000; i++ {
		e := Event{Time: int64(i), PID: 1, TID: 1, Comm: []byte("p"), Ints: []uint64{uint64(i)}, Strs: make([][]byte, 1)}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	s, err := w.FlightSnapshot(5000)
	if err != nil {
		t.Fatal(err)
	}
	st := w.FlightStats()
	if st.Bytes > 20000+s.Bytes/int64(s.Batches) || st.BySize == 0 || s.Rows >= 5000 || s.Rows%100 != 0 {
		t.Fatalf("stats %+v, snapshot of %d rows %d bytes: want at most 20000 bytes, whole batches", st, s.Rows, s.Bytes)
	}
	if want := 5000 - s.Rows + 1; s.Meta.Window.Start != want {
		t.Fatalf("window starts at %d, want %d", s.Meta.Window.Start, want)
	}
}
