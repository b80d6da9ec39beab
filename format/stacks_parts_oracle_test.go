package format_test

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/bpftape/bpftape/format"
)

// TestStackPartsArrowOracle: a capture whose stack table goes in several
// parts, carried by batches of no rows among the batches of events, reads
// the same with Arrow Go's reader as with ours, in each codec, whole, cut
// short and repaired.
func TestStackPartsArrowOracle(t *testing.T) {
	dir := t.TempDir()
	m := func() *format.Meta {
		return &format.Meta{Tool: "t", StartBoot: 1, Probes: []format.Probe{{Name: "leaf", Kind: "uprobe", Spec: "u:/bin/x:leaf(arg0, ustack)",
			Fields: []format.Field{{Name: "arg0", Type: format.Uint64}, {Name: "ustack", Type: format.UserStack}}}}}
	}
	for _, comp := range []format.Compression{format.Zstd, format.LZ4, format.None} {
		path := filepath.Join(dir, string(comp)+".arrow")
		w, err := format.Create(path, m(), format.WriterOptions{Compression: comp, BatchRows: 50})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(1))
		for round := 0; round < 3; round++ {
			// About 10 MiB of JSON: three parts.
			tab := &format.StackTable{Stacks: make([]format.Stack, 100_000)}
			for i := range tab.Stacks {
				f := []uint64{uint64(rng.Int63()), uint64(rng.Int63()), uint64(rng.Int63())}
				tab.Stacks[i] = format.Stack{ID: format.StackID(false, f), Frames: f}
			}
			w.AddStacks(tab)
			for i := 0; i < 120; i++ {
				e := format.Event{Time: int64(1000*round + i), PID: 7, TID: 7, Comm: []byte("x"), Ints: []uint64{uint64(i), tab.Stacks[i].ID}, Strs: make([][]byte, 2)}
				if err := w.Append(&e); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		// The first, empty, 8 of events and at least 2 of no rows a round.
		n := w.Stats.Batches.Load()
		if n < 1+8+3*2 {
			t.Errorf("%s: %d batches, want at least %d", comp, n, 1+8+3*2)
		}
		t.Logf("%s: %d batches", comp, n)
		compareWithArrow(t, string(comp), path)

		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cut := path + ".cut"
		if err := os.WriteFile(cut, b[:len(b)-200], 0o600); err != nil {
			t.Fatal(err)
		}
		compareWithArrow(t, string(comp)+"/cut", cut)
		fixed := path + ".repaired"
		if _, err := format.Repair(cut, fixed); err != nil {
			t.Fatal(err)
		}
		compareWithArrow(t, string(comp)+"/repaired", fixed)
		r, err := format.Open(fixed)
		if err != nil {
			t.Fatal(err)
		}
		tab, err := r.StackTable()
		r.Close()
		if err != nil || len(tab.Stacks) != 300_000 {
			t.Errorf("%s: repaired table of %d stacks (%v), want 300,000", comp, len(tab.Stacks), err)
		}
	}
}
