package format

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func stackMeta() *Meta {
	m := testMeta()
	m.Probes = []Probe{{Name: "leaf", Kind: "uprobe", Spec: "u:/bin/x:leaf(arg0, ustack, kstack)", Fields: []Field{
		{Name: "arg0", Type: Uint64}, {Name: "ustack", Type: UserStack}, {Name: "kstack", Type: KernelStack},
	}}}
	return m
}

// TestStackTableRoundTrip writes stacks in three batches, each table part
// ahead of the first event that needs it, and reads the united table back
// from the complete file, from the same file without its footer, and from
// each part of a rotated capture.
func TestStackTableRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.arrow")
	w, err := Create(path, stackMeta(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want StackTable
	for b := 0; b < 3; b++ {
		frames := []uint64{0x401000 + uint64(b), 0x402000, 0x403000}
		id := StackID(false, frames)
		part := &StackTable{
			Stacks:  []Stack{{ID: id, Frames: frames}},
			Objects: []Object{{ID: 1, Path: "/bin/x", BuildID: "abcd"}},
			Maps:    []Mapping{{PID: 7, Since: 5, Start: 0x400000, End: 0x500000, Object: 1}},
			Symbols: []Symbol{{Object: 1, Addr: 0x401000 + uint64(b), Size: 1, Name: "f" + string(rune('a'+b))}},
		}
		w.AddStacks(part)
		want.Add(part)
		for i := 0; i < 10; i++ {
			if err := w.Append(&Event{Time: int64(100*b + i), PID: 7, TID: 7, Comm: []byte("x"), Ints: []uint64{uint64(i), id, 0}, Strs: make([][]byte, 3)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// A part added after the last event still reaches the file.
	last := &StackTable{Processes: []ProcessNote{{PID: 9, Reason: "exited before its mappings were read"}}}
	w.AddStacks(last)
	want.Add(last)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(want.Stacks) != 3 || len(want.Objects) != 1 || len(want.Maps) != 1 || len(want.Symbols) != 3 {
		t.Fatalf("Add kept %d stacks, %d objects, %d maps, %d symbols; want 3, 1, 1, 3", len(want.Stacks), len(want.Objects), len(want.Maps), len(want.Symbols))
	}
	check := func(name, path string) {
		t.Helper()
		r, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer r.Close()
		got, err := r.StackTable()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("%s: stack table\n got %+v\nwant %+v", name, got, &want)
		}
		n, col := 0, r.Column("leaf.ustack")
		for r.Next() {
			b := r.Batch()
			for i := 0; i < b.Len; i++ {
				if id := uint64(b.Col(col).Int(i)); id != 0 && !hasStack(got, id) {
					t.Errorf("%s: row %d: stack %#x is not in the table", name, n, id)
				}
				n++
			}
		}
		if r.Err() != nil || n != 30 {
			t.Errorf("%s: %d rows (%v), want 30", name, n, r.Err())
		}
	}
	check("complete", path)

	// Without its footer (a killed recorder), minus the zero-row batch
	// carrying the last part, which the cut removes.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := Open(path)
	start, _ := r.ipc.BatchSpan(r.ipc.NumBatches() - 1)
	r.Close()
	cut := filepath.Join(dir, "cut.arrow")
	if err := os.WriteFile(cut, b[:start], 0o600); err != nil {
		t.Fatal(err)
	}
	want.Processes = nil
	check("footerless", cut)
}

func hasStack(t *StackTable, id uint64) bool {
	for _, s := range t.Stacks {
		if s.ID == id {
			return true
		}
	}
	return false
}

// TestStackTableHostile: a part that is not base64, not zstd, not JSON or
// holds a stack longer than MaxFrames is ErrStackTable, never a panic.
func TestStackTableHostile(t *testing.T) {
	long := &StackTable{Stacks: []Stack{{ID: 1, Frames: make([]uint64, MaxFrames+1)}}}
	enc, err := encodeStackTable(long)
	if err != nil {
		t.Fatal(err)
	}
	notJSON := stackEnc.EncodeAll([]byte("{not json"), nil)
	for name, s := range map[string]string{
		"not base64": "%%%",
		"not zstd":   "aGVsbG8=",
		"not json":   base64.StdEncoding.EncodeToString(notJSON),
		"too long":   enc,
	} {
		if _, err := decodeStackTable(s); err == nil || !errors.Is(err, ErrStackTable) {
			t.Errorf("%s: %v, want ErrStackTable", name, err)
		}
	}
}

// TestStackIDIsFNV1a: StackID is FNV-1a over a kind byte and the frames'
// little-endian bytes, as hash/fnv computes it; ids in captures depend on it.
func TestStackIDIsFNV1a(t *testing.T) {
	for _, tc := range []struct {
		kernel bool
		frames []uint64
	}{{false, nil}, {true, nil}, {false, []uint64{0x401000, 0x7f0011223344}}, {true, []uint64{0xffffffff81000000, 1, 0}}} {
		h := fnv.New64a()
		var b [8]byte
		if tc.kernel {
			b[0] = 1
		}
		h.Write(b[:1])
		for _, f := range tc.frames {
			binary.LittleEndian.PutUint64(b[:], f)
			h.Write(b[:])
		}
		if got, want := StackID(tc.kernel, tc.frames), h.Sum64(); got != want {
			t.Errorf("StackID(%v, %x) = %#x, want %#x", tc.kernel, tc.frames, got, want)
		}
	}
}
