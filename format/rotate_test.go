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

// TestProjected: the size Projected gives for a file before its last
// batches are written is within a tenth of the size the file has when
// closed, in the first file and, from the rows of the file before, in the
// next one after Switch, where no batch has been written yet.
func TestProjected(t *testing.T) {
	dir := t.TempDir()
	m := testMeta()
	w, err := Create(filepath.Join(dir, "0.arrow"), m, WriterOptions{BatchRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if w.FileRows() != 0 {
		t.Errorf("FileRows %d before any row", w.FileRows())
	}
	rng := rand.New(rand.NewSource(5))
	appendRows := func(n int) {
		for i := 0; i < n; i++ {
			e := randEvent(rng, m, int64(i))
			if err := w.Append(&e); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendRows(20500)
	if w.FileRows() != 20500 {
		t.Errorf("FileRows %d, want 20500", w.FileRows())
	}
	first := w.Projected(0)
	f, err := os.OpenFile(filepath.Join(dir, "1.arrow"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Switch(f, nil); err != nil {
		t.Fatal(err)
	}
	if w.FileRows() != 0 {
		t.Errorf("FileRows %d after Switch", w.FileRows())
	}
	appendRows(900) // less than a batch: nothing of the new file written
	second := w.Projected(0)
	if more := w.Projected(1000); more <= second {
		t.Errorf("Projected: %d bytes with 1000 rows more, %d without", more, second)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for i, p := range []int64{first, second} {
		st, err := os.Stat(filepath.Join(dir, string(rune('0'+i))+".arrow"))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("file %d: projected %d bytes, closed %d", i, p, st.Size())
		if d := p - st.Size(); d > st.Size()/10 || -d > st.Size()/10 {
			t.Errorf("file %d: projected %d bytes, closed with %d", i, p, st.Size())
		}
	}
}
