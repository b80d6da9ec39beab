package format_test

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// TestStackStreamSize measures what stacks cost in a capture on a
// profile-like stream: 1Mi samples from 16 threads, each with a user stack
// drawn from 2,000 unique ones of 8 to 40 frames and a kernel stack from
// 300, both Zipf-distributed (a few hot stacks, a long tail), with the
// stack table parts written as the stacks first appear. It logs the bytes
// per event of each column and of the rest of the file (the table parts
// are in the batches' metadata), against the 8 bytes a frame that storing
// every event's frames, as perf.data's callchains do, would take.
func TestStackStreamSize(t *testing.T) {
	const n = 1 << 20
	m := &format.Meta{Tool: "t", StartBoot: 1, Probes: []format.Probe{{Name: "profile", Kind: "profile", Fields: []format.Field{
		{Name: "kstack", Type: format.KernelStack}, {Name: "ustack", Type: format.UserStack},
	}}}}
	path := filepath.Join(t.TempDir(), "stacks.arrow")
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	mk := func(count int, kernel bool) [][]uint64 {
		st := make([][]uint64, count)
		for i := range st {
			f := make([]uint64, 8+rng.Intn(33))
			for j := range f {
				base := uint64(0x55d0_0000_0000)
				if kernel {
					base = 0xffff_ffff_8100_0000
				}
				f[j] = base + uint64(rng.Intn(1<<22))
			}
			st[i] = f
		}
		return st
	}
	user, kernel := mk(2000, false), mk(300, true)
	zu := rand.NewZipf(rng, 1.1, 1, uint64(len(user)-1))
	zk := rand.NewZipf(rng, 1.1, 1, uint64(len(kernel)-1))
	seen := map[uint64]bool{}
	var frames int64
	ev := format.Event{Comm: []byte("app"), Ints: make([]uint64, 2), Strs: make([][]byte, 2)}
	for i := 0; i < n; i++ {
		u, k := user[zu.Uint64()], kernel[zk.Uint64()]
		ids := [2]uint64{format.StackID(true, k), format.StackID(false, u)}
		for j, fr := range [][]uint64{k, u} {
			if !seen[ids[j]] {
				seen[ids[j]] = true
				w.AddStacks(&format.StackTable{Stacks: []format.Stack{{ID: ids[j], Kernel: j == 0, Frames: fr}}})
			}
		}
		frames += int64(len(u) + len(k))
		tid := uint32(100 + i%16)
		ev.Time, ev.CPU, ev.PID, ev.TID = int64(i)*62_500, uint16(i%2), 100, tid
		ev.Ints[0], ev.Ints[1] = ids[0], ids[1]
		if err := w.Append(&ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(columnBreakdown(w, st.Size(), n))
	t.Logf("inline frames would take %.1f bytes/event (8 a frame, %.1f frames an event)", float64(8*frames)/n, float64(frames)/n)
	per := float64(st.Size()) / n
	if per > 8 {
		t.Errorf("%.3f bytes an event, want at most 8", per)
	}
}
