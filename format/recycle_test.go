package format_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// TestRecycleStrings checks that a reader reusing the memory of the
// string columns (Recycle, RecycleStrings), with and without reading
// ahead, reads the comms and string fields a reader that keeps every
// batch reads, when each row is read before the next Next: comms and
// strings short enough for their string view and longer ones, in many
// batches.
func TestRecycleStrings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := &format.Meta{Host: "h", StartBoot: 1, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "p", Kind: "usdt", Spec: "p=U:/bin/x:p:s", Fields: []format.Field{
			{Name: "s", Type: format.String}, {Name: "n", Type: format.Uint64}}}}}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		comm := fmt.Sprintf("c%d", i%7)
		if i%3 == 0 {
			comm = fmt.Sprintf("long-comm-%05d", i) // past a view's 12 bytes
		}
		e := format.Event{Time: int64(10 + i), PID: 1, TID: 1, Comm: []byte(comm),
			Ints: []uint64{0, uint64(i)}, Strs: [][]byte{[]byte(strings.Repeat("x", i%40) + fmt.Sprint(i)), nil}}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(recycle bool, ahead int) []string {
		r, err := format.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.Recycle, r.RecycleStrings, r.ReadAhead = recycle, recycle, ahead
		s := r.Column("p.s")
		var rows []string
		for r.Next() {
			b := r.Batch()
			for i := range b.Len {
				rows = append(rows, b.Comm(i)+" "+b.Col(s).Str(i))
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	want := read(false, 0)
	if len(want) != 5000 {
		t.Fatalf("%d rows", len(want))
	}
	for _, ahead := range []int{0, 2, 4} {
		got := read(true, ahead)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("read ahead %d: row %d is %q, want %q", ahead, i, got[i], want[i])
			}
		}
	}
}

// TestRecycleAllocates checks that a reader that reuses batch memory
// (Recycle, reading ahead) allocates buffers for the batches it has out
// at once, not for every batch it reads, with loss records in some
// batches and none in most (a batch's lost column is then its validity
// bitmap alone, which must go back to the pool with the rest).
func TestRecycleAllocates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := &format.Meta{Host: "h", StartBoot: 1, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "p", Kind: "usdt", Spec: "p=U:/bin/x:p:n", Fields: []format.Field{{Name: "n", Type: format.Uint64}}}}}
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const batches, rows = 180, 32 << 10
	for i := range batches * rows {
		if i%(7*rows) == 100 {
			if err := w.Lost(0, 0, int64(10+i), 1); err != nil {
				t.Fatal(err)
			}
		}
		e := format.Event{Time: int64(10 + i), PID: 1, TID: 1, Comm: []byte("c"), Ints: []uint64{uint64(i % 3)}}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const ahead = 2
	r.Recycle, r.ReadAhead = true, ahead
	r.Select([]int{format.ColTime, r.Column("p.n")})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var n int
	for r.Next() {
		n += r.Batch().Len
	}
	runtime.ReadMemStats(&after)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if n < batches*rows {
		t.Fatalf("%d rows read, want at least %d", n, batches*rows)
	}
	// The bound follows from the read-ahead's depth, not from timing
	// (which decoder takes which batch depends on the scheduler). Each
	// of the ahead decoders fills batches from a pool of its own, and
	// at most 2*ahead+1 batches are out of the pools at once: those
	// decoded ahead (startAhead's tokens let 2 × workers be) and the one
	// Next hands out. A batch out holds at most four 8-byte columns
	// (time, p.n, the 2-byte probe column in a buffer the pool may hand
	// out at 4 times its size, the lost values of a batch with loss
	// records) and five bitmaps. Beside them: the bookkeeping of each
	// batch read (under 4 KiB) and the decoders' own state (under 1 MiB).
	// A reader that recycled nothing would allocate 180 batches' worth;
	// one that kept the p.n column of each batch, 80 more.
	perBatch := uint64(rows * (8 + 8 + 2)) // what a batch decodes
	outBatch := uint64(rows*4*8 + 5*rows/8)
	want := ahead*(2*ahead+1)*outBatch + batches*4<<10 + 1<<20
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d batches read, %.1f batches' worth of memory allocated, at most %.1f", batches,
		float64(got)/float64(perBatch), float64(want)/float64(perBatch))
	if got > want {
		t.Errorf("reading %d batches allocated %d bytes, %.1f batches' worth; want at most %d, %.1f",
			batches, got, float64(got)/float64(perBatch), want, float64(want)/float64(perBatch))
	}
}
