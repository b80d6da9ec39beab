package format

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFieldPointer checks that a field marked as an address keeps the mark
// through a capture's schema and footer, that its column stays a uint64,
// and that metadata written without the mark reads as before.
func TestFieldPointer(t *testing.T) {
	m := testMeta()
	m.Probes[1].Fields[0].Pointer = true // strs.arg0, a uint64
	for _, cut := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "c.arrow")
		w, err := Create(path, m, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(&Event{Time: 2000, Probe: 1, Comm: []byte("x"), Ints: []uint64{0x7ffd12345678, 0, 0}, Strs: [][]byte{nil, []byte("a"), []byte("b")}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if cut {
			// The schema's copy of the metadata: a file without footer.
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			path = filepath.Join(t.TempDir(), "cut.arrow")
			if err := os.WriteFile(path, data[:len(data)-16], 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		p := &r.Meta.Probes[1]
		if !p.Fields[0].Pointer || p.Fields[0].Type != Uint64 {
			t.Errorf("cut %v: strs.arg0 is %+v, want a uint64 marked as a pointer", cut, p.Fields[0])
		}
		for pi, q := range r.Meta.Probes {
			for fi, f := range q.Fields {
				if f.Pointer && (pi != 1 || fi != 0) {
					t.Errorf("cut %v: %s.%s marked as a pointer", cut, q.Name, f.Name)
				}
			}
		}
		var got uint64
		for r.Next() {
			b := r.Batch()
			for i := 0; i < b.Len; i++ {
				got = uint64(b.Col(r.Column(p.Fields[0].Column)).Int(i))
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		if got != 0x7ffd12345678 {
			t.Errorf("cut %v: strs.arg0 read %#x", cut, got)
		}
		r.Close()
	}

	// The mark is left out of a field without it, and metadata without it
	// (an older capture's) reads as unmarked.
	b, err := json.Marshal(Field{Name: "n", Type: Uint64, Column: "p.n"})
	if err != nil || strings.Contains(string(b), "pointer") {
		t.Errorf("unmarked field: %s, %v", b, err)
	}
	b, err = json.Marshal(Field{Name: "n", Type: Uint64, Column: "p.n", Pointer: true})
	if err != nil || !strings.Contains(string(b), `"pointer":true`) {
		t.Errorf("marked field: %s, %v", b, err)
	}
	old := `{"schema_version":2,"tool":"bpftape v0.1","probes":[{"name":"a","fields":[{"name":"nc","type":"uint64","column":"a.nc"}]}]}`
	dm, err := decodeMeta(old)
	if err != nil || dm.Probes[0].Fields[0].Pointer {
		t.Errorf("metadata without the mark: %+v, %v", dm, err)
	}
}

// TestMergeKeepsPointer: a merged capture's fields keep their address mark.
func TestMergeKeepsPointer(t *testing.T) {
	m := testMeta()
	m.Probes[1].Fields[0].Pointer = true
	dir := t.TempDir()
	var inputs []string
	for _, host := range []string{"a", "b"} {
		m.Host = host
		path := filepath.Join(dir, host+".arrow")
		w, err := Create(path, m, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(&Event{Time: 2000, Probe: 1, Comm: []byte("x"), Ints: []uint64{0x7ffd12345678, 0, 0}, Strs: [][]byte{nil, []byte("a"), []byte("b")}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, path)
	}
	out := filepath.Join(dir, "merged.arrow")
	if _, err := Merge(out, inputs, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, p := range r.Meta.Probes {
		for fi, f := range p.Fields {
			if want := p.Name == m.Probes[1].Name && fi == 0; f.Pointer != want {
				t.Errorf("merged %s.%s: Pointer %v, want %v", p.Name, f.Name, f.Pointer, want)
			}
		}
	}
}
