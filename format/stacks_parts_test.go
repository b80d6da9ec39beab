package format

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// oldStackPart is a part as the Writer encoded every part before it split
// large ones: json.Marshal of the whole, zstd, base64.
func oldStackPart(t *StackTable) string {
	js, err := json.Marshal(t)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(stackEnc().EncodeAll(js, nil))
}

// partJSON is the JSON of a part.
func partJSON(t *testing.T, part string) []byte {
	t.Helper()
	z, err := base64.StdEncoding.DecodeString(part)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zstd.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	js, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// oddTable holds every kind of entry, and what JSON escapes: HTML
// characters, control characters, bytes that are not UTF-8, nil and empty
// frames.
func oddTable() *StackTable {
	return &StackTable{
		Stacks:    []Stack{{ID: 1, Frames: nil}, {ID: 2, Kernel: true, Frames: []uint64{}}, {ID: 3, Frames: []uint64{0, 1<<64 - 1}}},
		Objects:   []Object{{ID: 1, Path: "/bin/<a>&b", BuildID: "ab"}, {ID: 2, Path: "[kernel]", Kernel: true, NoSymbols: "bad\xffutf8 \x1b]0;x\a"}},
		Maps:      []Mapping{{PID: 1, Since: -5, Start: 1, End: 2, Offset: 3, Object: 1, Bias: 1<<64 - 1}},
		Symbols:   []Symbol{{Object: 1, Addr: 4096, Size: 16, Name: "f\u2028<script>"}, {Object: 2, Addr: 1, Name: ""}},
		Processes: []ProcessNote{{PID: 9, Reason: "gone\n"}},
	}
}

// TestStackPartsFormat: a table that fits in one part is written exactly
// as before the Writer split large tables; one that does not is written
// in parts, each the JSON of a StackTable under the bound, which readers
// old (json.Unmarshal of each part) and new unite into the table.
func TestStackPartsFormat(t *testing.T) {
	for name, tab := range map[string]*StackTable{
		"odd":     oddTable(),
		"stacks":  {Stacks: bigTable(100).Stacks},
		"symbols": {Symbols: bigTable(100).Symbols},
		"big":     bigTable(10000),
	} {
		var parts []string
		if err := encodeStackParts(tab, maxPartJSON, func(p string) error { parts = append(parts, p); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(parts) != 1 || parts[0] != oldStackPart(tab) {
			t.Errorf("%s: %d parts, not the one part of before", name, len(parts))
		}
		if one, err := encodeStackTable(tab); err != nil || one != oldStackPart(tab) {
			t.Errorf("%s: encodeStackTable differs from before (%v)", name, err)
		}
	}
	if one, err := encodeStackTable(new(StackTable)); err != nil || one != oldStackPart(new(StackTable)) {
		t.Errorf("empty table: encodeStackTable differs from before (%v)", err)
	}
	if err := encodeStackParts(new(StackTable), maxPartJSON, func(string) error { t.Error("a part of an empty table"); return nil }); err != nil {
		t.Fatal(err)
	}

	tab := bigTable(1 << 14)
	tab.Add(oddTable())
	// An entry larger than a part goes in a part of its own.
	huge := Symbol{Object: 1, Addr: 1 << 40, Name: strings.Repeat("x", 100<<10)}
	tab.Symbols = append(tab.Symbols[:100], append([]Symbol{huge}, tab.Symbols[100:]...)...)
	const limit = 64 << 10
	var parts []string
	if err := encodeStackParts(tab, limit, func(p string) error { parts = append(parts, p); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(parts) < 10 {
		t.Fatalf("%d parts, want many", len(parts))
	}
	var cat StackTable // the parts' entries one after the other
	united := new(StackTable)
	var count stackCount
	for i, p := range parts {
		js := partJSON(t, p)
		old, err := unmarshalStackTable(p)
		if err != nil {
			t.Fatalf("part %d: json.Unmarshal: %v", i, err)
		}
		if len(js) > limit && !(len(old.Symbols) == 1 && old.Symbols[0] == huge && len(js) < len(huge.Name)+100) {
			t.Errorf("part %d: %d bytes of JSON, more than %d", i, len(js), limit)
		}
		if old.Empty() {
			t.Errorf("part %d is empty", i)
		}
		cat.Stacks = append(cat.Stacks, old.Stacks...)
		cat.Objects = append(cat.Objects, old.Objects...)
		cat.Maps = append(cat.Maps, old.Maps...)
		cat.Symbols = append(cat.Symbols, old.Symbols...)
		cat.Processes = append(cat.Processes, old.Processes...)
		got, err := decodeStackTable(p, &count)
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if !got.Equal(old) {
			t.Errorf("part %d: the reader and json.Unmarshal disagree", i)
		}
		united.Add(got)
	}
	if !cat.Equal(tab) {
		t.Error("the parts' entries, one after the other, are not the table's")
	}
	if !united.Equal(tab) {
		t.Error("the parts united are not the table")
	}

	// What compresses worst: names of random printable bytes. Each part is
	// within what base64 makes of its JSON and a little zstd framing.
	rng := rand.New(rand.NewSource(2))
	noise := new(StackTable)
	for i := 0; i < 6000; i++ {
		name := make([]byte, 1000)
		for j := range name {
			name[j] = byte('#' + rng.Intn('~'-'#'))
		}
		noise.Symbols = append(noise.Symbols, Symbol{Object: 1, Addr: uint64(i), Name: string(name)})
	}
	parts = nil
	if err := encodeStackParts(noise, maxPartJSON, func(p string) error { parts = append(parts, p); return nil }); err != nil {
		t.Fatal(err)
	}
	bound := base64.StdEncoding.EncodedLen(maxPartJSON + maxPartJSON>>10)
	for i, p := range parts {
		if len(p) > bound {
			t.Errorf("part %d of random names: %d bytes, more than %d", i, len(p), bound)
		}
	}
	if len(parts) != 2 {
		t.Errorf("%d parts of random names, want 2", len(parts))
	}
}

// TestStackPartsWhileAppending adds stacks as a recorder does, a few
// before each event, while the encoder writes the batches before: each
// batch takes the entries added since the last, which the encoder reads as
// the table grows (go test -race checks that it may).
func TestStackPartsWhileAppending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	w, err := Create(path, stackMeta(), WriterOptions{BatchRows: 8})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	want := new(StackTable)
	for i := 0; i < 5000; i++ {
		d := bigStacks(rng, 1+rng.Intn(3))
		d.Symbols = []Symbol{{Object: uint32(i % 7), Addr: uint64(i), Name: "f"}}
		if i%3 == 0 {
			d.Stacks = append(d.Stacks, want.Stacks[:min(len(want.Stacks), 2)]...) // known already
		}
		w.AddStacks(d)
		want.Add(d)
		if err := w.Append(&Event{Time: int64(i), PID: 7, TID: 7, Comm: []byte("x"), Ints: []uint64{uint64(i), d.Stacks[0].ID, 0}, Strs: make([][]byte, 3)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkStackCapture(t, "appended", path, want, true)
}

// bigStacks is a table of n stacks of 3 frames each, the ith one's frames
// drawn from rng, and its ids.
func bigStacks(rng *rand.Rand, n int) *StackTable {
	t := &StackTable{Stacks: make([]Stack, n)}
	frames := make([]uint64, 3*n)
	for i := range t.Stacks {
		f := frames[3*i : 3*i+3 : 3*i+3]
		for j := range f {
			f[j] = 0x55d0_0000_0000 + uint64(rng.Int63n(1<<32))
		}
		t.Stacks[i] = Stack{ID: StackID(false, f), Frames: f}
	}
	return t
}

// checkStackCapture checks a capture's stack table against want and its
// messages against the bound on their metadata, and with order that every
// row's stack is in the parts of its batch and of the batches before it.
func checkStackCapture(t *testing.T, name, path string, want *StackTable, order bool) {
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
	if !got.Equal(want) {
		t.Errorf("%s: stack table of %d stacks, %d mappings; want %d, %d, or not the same", name, len(got.Stacks), len(got.Maps), len(want.Stacks), len(want.Maps))
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A part of 4 MiB of incompressible JSON takes at most 5.4 MiB of
	// metadata (base64 is 4/3), and the rest of a message little.
	const bound = 6 << 20
	largest, parts := 0, 0
	for i := 0; i < r.ipc.NumBatches(); i++ {
		start, _ := r.ipc.BatchSpan(i)
		var head [8]byte
		if _, err := f.ReadAt(head[:], start); err != nil {
			t.Fatal(err)
		}
		n := int(binary.LittleEndian.Uint32(head[4:]))
		largest = max(largest, n)
		if n > bound || n > MaxMessageMeta {
			t.Errorf("%s: batch %d: %d bytes of message metadata, more than %d", name, i, n, bound)
		}
		if md, _ := r.ipc.BatchMetadata(i); md.FindKey(StackTableKey) >= 0 {
			parts++
		}
	}
	t.Logf("%s: %d batches, %d with a stack table part; largest message metadata %d bytes", name, r.ipc.NumBatches(), parts, largest)
	if !order {
		return
	}

	seen := map[uint64]bool{}
	var count stackCount
	col := r.Column("leaf.ustack")
	rows := 0
	for r.Next() {
		i := r.Batches() - 1
		md, err := r.ipc.BatchMetadata(i)
		if err != nil {
			t.Fatal(err)
		}
		if j := md.FindKey(StackTableKey); j >= 0 {
			part, err := decodeStackTable(md.Values()[j], &count)
			if err != nil {
				t.Fatalf("%s: batch %d: %v", name, i, err)
			}
			for _, s := range part.Stacks {
				seen[s.ID] = true
			}
		}
		b := r.Batch()
		for k := 0; k < b.Len; k++ {
			if id := uint64(b.Col(col).Int(k)); !seen[id] {
				t.Fatalf("%s: batch %d row %d: stack %#x not in the parts up to its batch", name, i, k, id)
			}
			rows++
		}
	}
	if r.Err() != nil || rows == 0 {
		t.Errorf("%s: %d rows (%v)", name, rows, r.Err())
	}
}

// TestLargeStackTable writes a table of a million stacks and then of
// 200,000 more, each needed by the rows after it, through a Writer that
// rotates to a second file, and checks that each file, the second without
// its footer, its repair and the merge of both read back whole, from
// messages of bounded metadata (in one part, the million stacks took
// 68.6 MiB, which no reader opens).
func TestLargeStackTable(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a table of a million stacks four times")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	big, more := bigStacks(rng, 1_000_000), bigStacks(rng, 200_000)
	want := new(StackTable)
	want.Add(big)
	want.Add(more)

	paths := []string{filepath.Join(dir, "0.arrow"), filepath.Join(dir, "1.arrow")}
	w, err := Create(paths[0], stackMeta(), WriterOptions{BatchRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	appendRows := func(tab *StackTable, n int) {
		for i := 0; i < n; i++ {
			id := tab.Stacks[rng.Intn(len(tab.Stacks))].ID
			if err := w.Append(&Event{Time: int64(i), PID: 7, TID: 7, Comm: []byte("x"), Ints: []uint64{uint64(i), id, 0}, Strs: make([][]byte, 3)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.AddStacks(big)
	appendRows(big, 250)
	w.AddStacks(more)
	appendRows(want, 250)
	out, err := os.OpenFile(paths[1], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Switch(out, nil); err != nil {
		t.Fatal(err)
	}
	appendRows(want, 250)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		checkStackCapture(t, filepath.Base(p), p, want, p == paths[0])
	}

	// The second file without its footer, as a killed recorder leaves it.
	b, err := os.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	_, end := r.ipc.BatchSpan(r.ipc.NumBatches() - 1)
	r.Close()
	cut := filepath.Join(dir, "cut.arrow")
	if err := os.WriteFile(cut, b[:end], 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := Open(cut); err != nil || !r.Recovered {
		t.Fatalf("cut file: %v, recovered %v", err, err == nil && r.Recovered)
	} else {
		r.Close()
	}
	checkStackCapture(t, "footerless", cut, want, true)

	fixed := filepath.Join(dir, "fixed.arrow")
	if _, err := Repair(cut, fixed); err != nil {
		t.Fatal(err)
	}
	checkStackCapture(t, "repaired", fixed, want, false)

	merged := filepath.Join(dir, "merged.arrow")
	if _, err := Merge(merged, paths, MergeOptions{Tool: "test"}); err != nil {
		t.Fatal(err)
	}
	checkStackCapture(t, "merged", merged, want, false)
}

// TestRepairStackTableNoRows: the stack table of a capture of no rows,
// which batches of no rows carry, reaches the repaired file.
func TestRepairStackTableNoRows(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.arrow")
	w, err := Create(path, stackMeta(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.AddStacks(oddTable())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// As JSON gives it back: not UTF-8 becomes U+FFFD.
	want, err := decodeStackTable(oldStackPart(oddTable()), nil)
	if err != nil {
		t.Fatal(err)
	}
	fixed := filepath.Join(dir, "fixed.arrow")
	if _, err := Repair(path, fixed); err != nil {
		t.Fatal(err)
	}
	r, err := Open(fixed)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := r.StackTable(); err != nil || !got.Equal(want) {
		t.Errorf("repaired table %+v (%v), want %+v", got, err, want)
	}
}
