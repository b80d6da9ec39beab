package format

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/klauspost/compress/zstd"

	"github.com/bpftape/bpftape/internal/testutil"
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
		if !got.Equal(&want) {
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

// encodeJSON is a part holding js as it is, JSON or not: zstd, base64.
func encodeJSON(js []byte) string {
	return base64.StdEncoding.EncodeToString(stackEnc().EncodeAll(js, nil))
}

// TestStackTableHostile: a part that is not base64, not zstd or not the
// JSON of a table is ErrStackTable, never a panic; one over a limit is
// ErrLimit, naming the limit.
func TestStackTableHostile(t *testing.T) {
	long := &StackTable{Stacks: []Stack{{ID: 1, Frames: make([]uint64, MaxFrames+1)}}}
	enc, err := encodeStackTable(long)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{
		"not base64":       "%%%",
		"not zstd":         "aGVsbG8=",
		"not json":         encodeJSON([]byte("{not json")),
		"empty":            encodeJSON(nil),
		"array":            encodeJSON([]byte("[]")),
		"number":           encodeJSON([]byte("7")),
		"cut":              encodeJSON([]byte(`{"stacks":[{"id":1}`)),
		"two tables":       encodeJSON([]byte(`{} {}`)),
		"trailing":         encodeJSON([]byte(`{}]`)),
		"stacks object":    encodeJSON([]byte(`{"stacks":{}}`)),
		"maps number":      encodeJSON([]byte(`{"maps":3}`)),
		"entry type":       encodeJSON([]byte(`{"stacks":[{"id":"x"}]}`)),
		"negative frame":   encodeJSON([]byte(`{"stacks":[{"id":1,"frames":[-1]}]}`)),
		"key not string":   encodeJSON([]byte(`{1:2}`)),
		"unknown too deep": encodeJSON([]byte(`{"x":` + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + `}`)),
	} {
		if _, err := decodeStackTable(s, nil); err == nil || !errors.Is(err, ErrStackTable) || errors.Is(err, ErrLimit) {
			t.Errorf("%s: %v, want ErrStackTable", name, err)
		}
	}
	for name, tc := range map[string]struct {
		part, limit string
	}{
		"too many frames": {enc, "format.MaxFrames"},
		"long entry":      {encodeJSON([]byte(`{"symbols":[{"name":"` + strings.Repeat("x", 2*MaxStackEntryBytes) + `"}]}`)), "format.MaxStackEntryBytes"},
		"long space":      {encodeJSON([]byte(`{"maps":[{}` + strings.Repeat(" ", 4*MaxStackEntryBytes) + `]}`)), "format.MaxStackEntryBytes"},
	} {
		if _, err := decodeStackTable(tc.part, nil); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.limit) {
			t.Errorf("%s: %v, want ErrLimit naming %s", name, err, tc.limit)
		}
	}
}

// TestStackTableDecodeAsUnmarshal: a part decodes as json.Unmarshal
// decodes it into a StackTable, the old way, for what writers write and
// for what JSON allows beyond it.
func TestStackTableDecodeAsUnmarshal(t *testing.T) {
	for _, js := range []string{
		`{}`, `null`, ` {} `, `{"stacks":[]}`, `{"stacks":null,"maps":[]}`,
		`{"stacks":[{"id":1,"kernel":true,"frames":[1,2,18446744073709551615]},{"id":2,"frames":null},null,{}]}`,
		`{"Stacks":[{"ID":3,"Frames":[4]}],"MAPS":[{"pid":1,"since_ns":-5,"start":1,"end":2,"offset":3,"object":4,"bias":5}]}`,
		`{"objects":[{"id":1,"path":"/bin/\u00e9\n","build_id":"ab","kernel":true,"no_symbols":"stripped"}],"processes":[{"pid":9,"reason":"gone"}]}`,
		`{"symbols":[{"object":1,"addr":4096,"size":16,"name":"main","extra":[1,{"a":null}]}],"future":{"x":[1,2,{"y":"z"}],"n":1e999},"also":"s"}`,
		`{"stacks":[{"id":1,"frames":[1],"id":5}]}`,
	} {
		got, err := decodeStackTable(encodeJSON([]byte(js)), nil)
		if err != nil {
			t.Errorf("%s: %v", js, err)
			continue
		}
		var want StackTable
		if err := json.Unmarshal([]byte(js), &want); err != nil {
			t.Fatalf("%s: json.Unmarshal: %v", js, err)
		}
		if !got.Equal(&want) {
			t.Errorf("%s:\n got %+v\nwant %+v", js, got, &want)
		}
	}
	// And a table the writer wrote, in full.
	want := bigTable(1000)
	enc, err := encodeStackTable(want)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeStackTable(enc, nil); err != nil || !got.Equal(want) {
		t.Errorf("a table of 1,000 stacks does not read back (%v)", err)
	}
}

// emptyEntries is the JSON of a part of n empty entries ({}) of kind.
func emptyEntries(kind string, n int) []byte {
	var b bytes.Buffer
	b.Grow(3*n + 16)
	b.WriteString(`{"` + kind + `":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{}")
	}
	b.WriteString("]}")
	return b.Bytes()
}

// allocated returns the bytes f allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestStackTableBomb: a part of empty mappings, 3 bytes of JSON and 56 of
// memory each, is refused at MaxStackMaps, naming it, having allocated
// less than twice what MaxStackMaps mappings take; a part of empty
// entries of every kind, each kind within its count, is refused at
// MaxStackTableMemory.
func TestStackTableBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes millions of entries")
	}
	bomb := encodeJSON(emptyEntries("maps", MaxStackMaps+1000))
	var err error
	alloc := allocated(func() { _, err = decodeStackTable(bomb, nil) })
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d mappings (format.MaxStackMaps)", MaxStackMaps)) {
		t.Errorf("a part of %d empty mappings: %v, want ErrLimit naming format.MaxStackMaps", MaxStackMaps+1000, err)
	}
	budget := uint64(MaxStackMaps * unsafe.Sizeof(Mapping{}))
	if alloc > 2*budget {
		t.Errorf("refusing %d empty mappings allocated %s, more than twice the %s they take at the limit", MaxStackMaps+1000, sizeStr(alloc), sizeStr(budget))
	}
	t.Logf("refusing %d empty mappings (%s of zstd) allocated %s", MaxStackMaps+1000, sizeStr(uint64(len(bomb))), sizeStr(alloc))

	// Every kind, each within its count: 80 + 64 + 112 MiB of stacks,
	// objects and mappings, then symbols past MaxStackTableMemory.
	js := []byte(`{`)
	for _, k := range []struct {
		kind string
		n    int
	}{{"stacks", MaxStacks}, {"objects", MaxStackObjects}, {"maps", MaxStackMaps}, {"symbols", 1000}} {
		if len(js) > 1 {
			js = append(js, ',')
		}
		e := emptyEntries(k.kind, k.n)
		js = append(js, e[1:len(e)-1]...)
	}
	js = append(js, '}')
	all := encodeJSON(js)
	alloc = allocated(func() { _, err = decodeStackTable(all, nil) })
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "(format.MaxStackTableMemory)") {
		t.Errorf("a part of empty entries of every kind: %v, want ErrLimit naming format.MaxStackTableMemory", err)
	}
	// Each entry is decoded into a chunk and copied once, into its
	// part's slice, and the decoders take a few MiB of buffers.
	if alloc > 2*MaxStackTableMemory+32<<20 {
		t.Errorf("refusing empty entries of every kind allocated %s, more than twice MaxStackTableMemory and 32 MiB", sizeStr(alloc))
	}
	t.Logf("refusing empty entries of every kind (%s of zstd) allocated %s", sizeStr(uint64(len(all))), sizeStr(alloc))
}

// TestStackTableLimitAcrossParts: the limits hold over the parts of a
// table, not each, and count the entries decoded, not those kept: 8 parts
// of 300,000 empty mappings, each within the limits, are refused at the
// part that goes past MaxStackMaps, with SkipCorrupt too (a limit is not
// corruption, as for Next). A malformed part, with SkipCorrupt, is left
// out and counts for nothing.
func TestStackTableLimitAcrossParts(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes millions of entries")
	}
	const parts, per = 8, 300_000
	over := MaxStackMaps / per // the index of the part that goes over
	write := func(name string, parts, malformed int) string {
		path := filepath.Join(t.TempDir(), name)
		w, err := Create(path, stackMeta(), WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		part := encodeJSON(emptyEntries("maps", per))
		for p := 0; p < parts; p++ {
			if p == malformed {
				// Valid up to its last byte.
				js := emptyEntries("maps", per)
				w.AddForgedStackPart(encodeJSON(js[:len(js)-1]))
			} else {
				w.AddForgedStackPart(part)
			}
			if err := w.Append(&Event{Time: int64(p), PID: 7, TID: 7, Comm: []byte("x"), Ints: make([]uint64, 3), Strs: make([][]byte, 3)}); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	read := func(path string, skip bool) (*StackTable, []error, error) {
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.SkipCorrupt = skip
		tab, err := r.StackTable()
		return tab, r.Skipped, err
	}
	path := write("over.arrow", parts, -1)
	for _, skip := range []bool{false, true} {
		_, _, err := read(path, skip)
		if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), fmt.Sprintf("batch %d: stack table: ", over+1)) || !strings.Contains(err.Error(), "(format.MaxStackMaps)") {
			t.Errorf("%d parts of %d mappings (SkipCorrupt %v): %v, want ErrLimit naming format.MaxStackMaps at batch %d", parts, per, skip, err, over+1)
		}
	}
	// Of 7 parts, one malformed after its entries were counted: left
	// out, uncounted, and the 6 others are within the limits.
	tab, skipped, err := read(write("malformed.arrow", over+1, 2), true)
	if err != nil || len(skipped) != 1 || !errors.Is(skipped[0], ErrStackTable) || len(tab.Maps) != per {
		// The first part is kept as it is (see Add), the ones after it
		// add nothing new.
		t.Fatalf("a malformed part with SkipCorrupt: %v, skipped %v, want 1", err, skipped)
	}
}

// TestMergeStackTableLimits: Merge refuses inputs whose stack tables,
// each within the limits, unite into one over a limit, which no reader
// would read; inputs that share their entries unite within them.
func TestMergeStackTableLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes a million entries")
	}
	dir := t.TempDir()
	// notes writes a capture whose table holds n process notes from pid.
	notes := func(name string, pid, n int) string {
		var b bytes.Buffer
		b.WriteString(`{"processes":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"pid":%d}`, pid+i)
		}
		b.WriteString(`]}`)
		path := filepath.Join(dir, name)
		w, err := Create(path, stackMeta(), WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.AddForgedStackPart(encodeJSON(b.Bytes()))
		if err := w.Append(&Event{Time: 1, PID: 7, TID: 7, Comm: []byte("x"), Ints: make([]uint64, 3), Strs: make([][]byte, 3)}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const n = 600_000
	a, b := notes("a.arrow", 0, n), notes("b.arrow", n-100_000, n)
	_, err := Merge(filepath.Join(dir, "ab.arrow"), []string{a, b}, MergeOptions{Tool: "t"})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "merged stack table: ") || !strings.Contains(err.Error(), "(format.MaxStackProcesses)") {
		t.Errorf("merging %d and %d process notes: %v, want ErrLimit naming format.MaxStackProcesses", n, n, err)
	}
	aa := filepath.Join(dir, "aa.arrow")
	if _, err := Merge(aa, []string{a, a}, MergeOptions{Tool: "t"}); err != nil {
		t.Fatalf("merging a capture with itself: %v", err)
	}
	r, err := Open(aa)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if tab, err := r.StackTable(); err != nil || len(tab.Processes) != n {
		t.Errorf("merged with itself: %v, %d process notes, want %d", err, len(tab.Processes), n)
	}
}

// TestStackTableAddLinear: adding parts costs time in the parts, not in
// the table. A part of a million mappings then 3,000 parts of one (or
// none) take one key of each entry (not 3,000 times the table's, as
// indexing the table anew at each part did), and Add keeps one index.
func TestStackTableAddLinear(t *testing.T) {
	const big, small = 1_000_000, 3000
	var s keySet[Mapping, uint32]
	keys := 0
	key := func(m *Mapping) uint32 { keys++; return m.PID }
	have := make([]Mapping, big)
	for i := range have {
		have[i].PID = uint32(i)
	}
	have = s.add(nil, have, key, nil)
	for i := 0; i < small; i++ {
		have = s.add(have, []Mapping{{PID: uint32(big + i/2)}}, key, nil) // each new one twice
		have = s.add(have, nil, key, nil)
	}
	if want := big + small; keys != want || len(have) != big+small/2 {
		t.Errorf("%d keys taken for %d entries and %d parts; want %d, and %d entries, not %d", keys, big, small, want, big+small/2, len(have))
	}

	// Through Add: the index is built once and kept.
	tab := new(StackTable)
	tab.Add(&StackTable{Maps: have[:big], Processes: []ProcessNote{{PID: 1}}})
	tab.Add(&StackTable{Maps: []Mapping{{PID: big}}})
	m := reflect.ValueOf(tab.index.maps.first).UnsafePointer()
	for i := 0; i < small; i++ {
		tab.Add(&StackTable{Maps: []Mapping{{PID: uint32(big + i)}}})
		tab.Add(&StackTable{})
	}
	if reflect.ValueOf(tab.index.maps.first).UnsafePointer() != m || len(tab.Maps) != big+small {
		t.Errorf("the index was built again, or %d mappings, want %d", len(tab.Maps), big+small)
	}
}

// TestKeySetCollisions: entries whose keys (hashes) are the same but that
// are not are all kept, and the same ones dropped, with a key that makes
// every entry collide.
func TestKeySetCollisions(t *testing.T) {
	var s keySet[Mapping, uint64]
	key := func(*Mapping) uint64 { return 7 }
	same := func(a, b *Mapping) bool { return *a == *b }
	have := s.add(nil, []Mapping{{PID: 1}, {PID: 2}, {PID: 1}}, key, same)
	have = s.add(have, []Mapping{{PID: 3}, {PID: 2}, {PID: 3}, {PID: 4}}, key, same)
	want := []Mapping{{PID: 1}, {PID: 2}, {PID: 3}, {PID: 4}}
	if !slices.Equal(have, want) {
		t.Errorf("got %v, want %v", have, want)
	}
	// Indexed anew from a slice that holds an entry twice.
	have = s.add(append(slices.Clone(have), Mapping{PID: 2}), []Mapping{{PID: 5}, {PID: 2}}, key, same)
	if want = append(want, Mapping{PID: 2}, Mapping{PID: 5}); !slices.Equal(have, want) {
		t.Errorf("got %v, want %v", have, want)
	}
}

// oldAdd is Add as it was, indexing t anew for every part: the oracle
// of what Add keeps.
func oldAdd(t, d *StackTable) {
	if d == nil {
		return
	}
	if len(t.Stacks) == 0 && len(t.Objects) == 0 && len(t.Maps) == 0 && len(t.Symbols) == 0 && len(t.Processes) == 0 {
		t.Stacks = slices.Clone(d.Stacks)
		t.Objects = slices.Clone(d.Objects)
		t.Maps = slices.Clone(d.Maps)
		t.Symbols = slices.Clone(d.Symbols)
		t.Processes = slices.Clone(d.Processes)
		return
	}
	t.Stacks = oldAddNew(t.Stacks, d.Stacks, func(s Stack) uint64 { return s.ID })
	t.Objects = oldAddNew(t.Objects, d.Objects, func(o Object) uint32 { return o.ID })
	t.Maps = oldAddNew(t.Maps, d.Maps, func(m Mapping) Mapping { return m })
	t.Symbols = oldAddNew(t.Symbols, d.Symbols, func(s Symbol) symbolKey { return symbolKey{s.Object, s.Addr} })
	t.Processes = oldAddNew(t.Processes, d.Processes, func(p ProcessNote) uint32 { return p.PID })
}

func oldAddNew[E any, K comparable](have, add []E, key func(E) K) []E {
	seen := make(map[K]bool, len(have))
	for _, e := range have {
		seen[key(e)] = true
	}
	for _, e := range add {
		if k := key(e); !seen[k] {
			seen[k] = true
			have = append(have, e)
		}
	}
	return have
}

// randomPart is a part of up to n entries of each kind drawn from few
// keys, so that parts repeat entries of the table and of themselves: some
// with a key seen but other fields not (which Add drops, but for mappings).
func randomPart(rng *rand.Rand, n int) *StackTable {
	d := new(StackTable)
	for i := rng.Intn(n + 1); i > 0; i-- {
		d.Stacks = append(d.Stacks, Stack{ID: uint64(rng.Intn(20)), Kernel: rng.Intn(2) == 0, Frames: []uint64{uint64(rng.Intn(3))}})
	}
	for i := rng.Intn(n + 1); i > 0; i-- {
		d.Objects = append(d.Objects, Object{ID: uint32(rng.Intn(10)), Path: fmt.Sprint("/o", rng.Intn(3))})
	}
	for i := rng.Intn(n + 1); i > 0; i-- {
		d.Maps = append(d.Maps, Mapping{PID: uint32(rng.Intn(4)), Start: uint64(rng.Intn(4)), Object: uint32(rng.Intn(2))})
	}
	for i := rng.Intn(n + 1); i > 0; i-- {
		d.Symbols = append(d.Symbols, Symbol{Object: uint32(rng.Intn(3)), Addr: uint64(rng.Intn(8)), Name: fmt.Sprint("f", rng.Intn(3))})
	}
	for i := rng.Intn(n + 1); i > 0; i-- {
		d.Processes = append(d.Processes, ProcessNote{PID: uint32(rng.Intn(6)), Reason: fmt.Sprint("r", rng.Intn(2))})
	}
	return d
}

// TestStackTableAddAsBefore: Add keeps what the old Add kept, in the same
// order (the first of entries with one key wins; into an empty table a
// part is copied as it is), over random parts with duplicates, also when
// the table's slices are changed between calls other than by Add.
func TestStackTableAddAsBefore(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for run := 0; run < 300; run++ {
		var got, want StackTable
		for i := rng.Intn(30); i >= 0; i-- {
			d := randomPart(rng, 6)
			got.Add(d)
			oldAdd(&want, d)
			switch rng.Intn(12) {
			case 0: // appended to
				e := Stack{ID: uint64(rng.Intn(40))}
				got.Stacks, want.Stacks = append(got.Stacks, e), append(want.Stacks, e)
			case 1: // truncated
				n := rng.Intn(len(got.Symbols) + 1)
				got.Symbols, want.Symbols = got.Symbols[:n], want.Symbols[:n]
			case 2: // replaced
				got.Maps, want.Maps = slices.Clone(got.Maps), slices.Clone(want.Maps)
			case 3: // emptied
				got, want = StackTable{index: got.index}, StackTable{}
			}
			if !got.Equal(&want) {
				t.Fatalf("run %d: after %+v\n got %+v\nwant %+v", run, d, &got, &want)
			}
		}
	}
}

// bigTable is a table of n stacks of 4 to 12 frames, n/2 symbols, n/20
// mappings and 5,000 objects.
func bigTable(n int) *StackTable {
	rng := rand.New(rand.NewSource(1))
	t := &StackTable{}
	for i := 0; i < n; i++ {
		kernel := i%4 == 0
		f := make([]uint64, 4+rng.Intn(9))
		base := uint64(0x55d0_0000_0000)
		if kernel {
			base = 0xffff_ffff_8100_0000
		}
		for j := range f {
			f[j] = base + uint64(rng.Intn(1<<24))
		}
		t.Stacks = append(t.Stacks, Stack{ID: StackID(kernel, f), Kernel: kernel, Frames: f})
	}
	for i := 0; i < min(n, 5000); i++ {
		t.Objects = append(t.Objects, Object{ID: uint32(i + 1), Path: fmt.Sprintf("/usr/lib/x86_64-linux-gnu/libobj%d.so.1", i), BuildID: fmt.Sprintf("%040x", rng.Uint64())})
	}
	for i := 0; i < n/20; i++ {
		t.Maps = append(t.Maps, Mapping{PID: uint32(1000 + i/50), Since: int64(i), Start: 0x55d0_0000_0000 + uint64(i)<<20, End: 0x55d0_0000_0000 + uint64(i+1)<<20, Offset: 0x1000, Object: uint32(1 + i%5000), Bias: 0x55d0_0000_0000})
	}
	for i := 0; i < n/2; i++ {
		t.Symbols = append(t.Symbols, Symbol{Object: uint32(1 + i%5000), Addr: 0x1000 + uint64(i)*64, Size: 64, Name: fmt.Sprintf("_ZN7example9namespace8function%dEv", i)})
	}
	for i := 0; i < 100; i++ {
		t.Processes = append(t.Processes, ProcessNote{PID: uint32(90000 + i), Reason: "exited before its mappings were read"})
	}
	return t
}

// unmarshalStackTable decodes a part as decodeStackTable did before it
// decoded as it read: all the JSON, then json.Unmarshal.
func unmarshalStackTable(s string) (*StackTable, error) {
	z, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	dec, err := zstd.NewReader(bytes.NewReader(z), zstd.WithDecoderMaxMemory(MaxStackTableBytes), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	js, err := io.ReadAll(io.LimitReader(dec, MaxStackTableBytes+1))
	if err != nil {
		return nil, err
	}
	t := new(StackTable)
	return t, json.Unmarshal(js, t)
}

// BenchmarkDecodeStackTable decodes a part of a big table (a million
// stacks of 4 to 12 frames, half a million symbols: 134 MiB of JSON, about
// 150 MiB decoded) and a small one (16 stacks, as a batch of a recorder
// carries), as it is now (stream) and as it was (all the JSON, then
// json.Unmarshal).
//
//	go test -run '^$' -bench DecodeStackTable -benchtime 3x -count 5 ./format/
func BenchmarkDecodeStackTable(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1M", 1 << 20}, {"16", 16}} {
		enc, err := encodeStackTable(bigTable(size.n))
		if err != nil {
			b.Fatal(err)
		}
		for _, bc := range []struct {
			name   string
			decode func(string) (*StackTable, error)
		}{
			{"stream", func(s string) (*StackTable, error) { return decodeStackTable(s, nil) }},
			{"unmarshal", unmarshalStackTable},
		} {
			b.Run(size.name+"/"+bc.name, func(b *testing.B) {
				b.ReportAllocs()
				cpu := testutil.CPUTime()
				for i := 0; i < b.N; i++ {
					if _, err := bc.decode(enc); err != nil {
						b.Fatal(err)
					}
				}
				// CPU time, GC's included, is steadier than wall time on
				// a busy machine.
				b.ReportMetric(float64(testutil.CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkStackTableParts reads the table of a capture whose first batch
// carries a part of a million mappings and whose 3,000 batches after it
// carry a part of one each: what re-indexing the table at every part
// made take minutes.
//
//	go test -run '^$' -bench StackTableParts -benchtime 3x ./format/
func BenchmarkStackTableParts(b *testing.B) {
	path := filepath.Join(b.TempDir(), "parts.arrow")
	w, err := Create(path, stackMeta(), WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	big := &StackTable{Maps: make([]Mapping, 1_000_000)}
	for i := range big.Maps {
		big.Maps[i].PID = uint32(i)
	}
	for i := 0; i <= 3000; i++ {
		part, err := encodeStackTable(big)
		if err != nil {
			b.Fatal(err)
		}
		w.AddForgedStackPart(part)
		big = &StackTable{Maps: []Mapping{{PID: uint32(1_000_000 + i)}}}
		if err := w.Append(&Event{Time: int64(i), PID: 7, TID: 7, Comm: []byte("x"), Ints: make([]uint64, 3), Strs: make([][]byte, 3)}); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testutil.CPUTime()
	defer func() { b.ReportMetric(float64(testutil.CPUTime()-cpu)/float64(b.N), "cpu-ns/op") }()
	for i := 0; i < b.N; i++ {
		r, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		tab, err := r.StackTable()
		r.Close()
		if err != nil || len(tab.Maps) != 1_003_000 {
			b.Fatalf("%v, %d mappings", err, len(tab.Maps))
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
