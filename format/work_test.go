package format_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// checkWorkPanic reads r from its first batch with a Work that panics at
// batch 3, and wants Next to panic with a *format.WorkPanic for it.
func checkWorkPanic(t *testing.T, r *format.Reader) {
	t.Helper()
	r.Work = func(b *format.Batch) any {
		if b.Index == 3 {
			panic("boom")
		}
		return nil
	}
	r.Rewind()
	read := 0
	func() {
		defer func() {
			p := recover()
			wp, ok := p.(*format.WorkPanic)
			if !ok || wp.Batch != 3 || wp.Value != "boom" || !strings.Contains(wp.Error(), "work_test.go") || read != 3 {
				t.Errorf("after %d batches, Next panicked with %v; want a *WorkPanic of batch 3 after 3", read, p)
			}
		}()
		for r.Next() {
			read++
		}
		t.Errorf("read %d batches and stopped (Err %v, RecoverErr %v): want a panic", read, r.Err(), r.RecoverErr)
	}()
	r.Work = nil
}

// TestWorkPanicFooterless checks that a panic in Work on a capture
// without its footer is raised too, not taken for the cut the file ends
// at (the pass would end there with no error).
func TestWorkPanicFooterless(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	writeWorkCapture(t, path, 5000)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.arrow")
	if err := os.WriteFile(cut, data[:len(data)*2/3], 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ahead := range []int{0, 2} {
		r, err := format.Open(cut)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Recovered {
			t.Fatal("the cut capture is not read as footerless")
		}
		r.ReadAhead = ahead
		checkWorkPanic(t, r)
		r.Close()
	}
}

// writeWorkCapture writes n events of one probe with a field n, in
// batches of 97 rows.
func writeWorkCapture(t *testing.T, path string, n int) {
	t.Helper()
	m := &format.Meta{Host: "h", StartBoot: 1, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "p", Kind: "usdt", Spec: "p=U:/bin/x:p:n", Fields: []format.Field{{Name: "n", Type: format.Uint64}}}}}
	w, err := format.Create(path, m, format.WriterOptions{BatchRows: 97})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		e := format.Event{Time: int64(10 + i), PID: 1, TID: uint32(i % 5), Comm: []byte("c"), Ints: []uint64{uint64(i)}}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWork checks that Reader.Work sees every batch, selected columns
// decoded, and that Worked hands its result on with the batch it was
// computed from, in file order, with and without reading ahead and with
// recycled memory; that Worked is nil without Work; and that a panic in
// Work is raised again by Next (checkWorkPanic).
func TestWork(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	const n = 5000
	writeWorkCapture(t, path, n)
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

				// A panic is the analysis's: Next raises it again, with
				// the batch, on the goroutine that called it.
				checkWorkPanic(t, r)
			})
		}
	}
}
