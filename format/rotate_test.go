package format

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// TestSwitch continues a capture in a second and third file: each is a
// complete capture holding the rows appended while it was current.
func TestSwitch(t *testing.T) {
	dir := t.TempDir()
	m := testMeta()
	w, err := Create(filepath.Join(dir, "0.arrow"), m, WriterOptions{BatchRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(4))
	var want [3][]rowWant
	for part := 0; part < 3; part++ {
		if part > 0 {
			f, err := os.OpenFile(filepath.Join(dir, string(rune('0'+part))+".arrow"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Switch(f, nil); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 250+part; i++ {
			e := randEvent(rng, m, int64(i))
			if err := w.Append(&e); err != nil {
				t.Fatal(err)
			}
			want[part] = append(want[part], rowWant{ev: e})
		}
		if err := w.Lost(1, 0, 7, 3); err != nil {
			t.Fatal(err)
		}
		want[part] = append(want[part], rowWant{ev: Event{Time: 7, Probe: 1}, lost: 3, isLost: true})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := w.Stats.Events.Load(); n != 753 {
		t.Errorf("Stats.Events %d, want 753", n)
	}
	for part := 0; part < 3; part++ {
		r, got := readAll(t, filepath.Join(dir, string(rune('0'+part))+".arrow"))
		if r.Recovered {
			t.Errorf("part %d has no footer", part)
		}
		checkRows(t, testMeta(), got, want[part])
	}
}
