package format_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// TestWork checks that Reader.Work sees every batch, selected columns
// decoded, and that Worked hands its result on with the batch it was
// computed from, in file order, with and without reading ahead and with
// recycled memory; that Worked is nil without Work; and that a panic in
// Work fails the pass as a corrupt batch, named, not the process.
func TestWork(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := &format.Meta{Host: "h", StartBoot: 1, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "p", Kind: "usdt", Spec: "p=U:/bin/x:p:n", Fields: []format.Field{{Name: "n", Type: format.Uint64}}}}}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 97})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for i := range n {
		e := format.Event{Time: int64(10 + i), PID: 1, TID: uint32(i % 5), Comm: []byte("c"), Ints: []uint64{uint64(i)}}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	type sum struct{ index, rows, total int }
	for _, ahead := range []int{0, 1, 2, 4} {
		for _, recycle := range []bool{false, true} {
			t.Run(fmt.Sprintf("ahead%d-recycle%v", ahead, recycle), func(t *testing.T) {
				r, err := format.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				col := r.Column("p.n")
				r.Select([]int{col})
				r.ReadAhead, r.Recycle = ahead, recycle
				r.Work = func(b *format.Batch) any {
					s := sum{index: b.Index, rows: b.Len}
					for i := range b.Len {
						s.total += int(b.Col(col).Int(i))
					}
					return s
				}
				total, batches := 0, 0
				for r.Next() {
					s, ok := r.Worked().(sum)
					if !ok || s.index != r.Batch().Index || s.index != batches || s.rows != r.Batch().Len {
						t.Fatalf("batch %d: Worked %+v (%v), batch %d of %d rows", batches, r.Worked(), ok, r.Batch().Index, r.Batch().Len)
					}
					total += s.total
					batches++
				}
				if err := r.Err(); err != nil {
					t.Fatal(err)
				}
				if want := n * (n - 1) / 2; total != want || batches < n/97 {
					t.Errorf("total %d over %d batches, want %d over at least %d", total, batches, want, n/97)
				}

				// Work unset for the next pass: nothing is worked.
				r.Work = nil
				r.Rewind()
				for r.Next() {
					if r.Worked() != nil {
						t.Fatalf("batch %d: Worked %v without Work", r.Batch().Index, r.Worked())
					}
				}

				// A panic fails the pass at its batch.
				r.Work = func(b *format.Batch) any {
					if b.Index == 3 {
						panic("boom")
					}
					return nil
				}
				r.Rewind()
				read := 0
				for r.Next() {
					read++
				}
				var be *format.BatchError
				if err := r.Err(); !errors.Is(err, format.ErrCorrupt) || !errors.As(err, &be) || be.Batch != 3 || read != 3 {
					t.Errorf("after a panic in Work: %d batches read, error %v; want 3, ErrCorrupt at batch 3", read, err)
				}
			})
		}
	}
}
