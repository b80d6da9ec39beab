package format

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// stackCapture writes a capture of host with one event whose user stack
// is frames, in process pid, with the table tab.
func stackCapture(t *testing.T, path, host string, pid uint32, frames []uint64, tab *StackTable) {
	t.Helper()
	m := stackMeta()
	m.Host = host
	w, err := Create(path, m, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.AddStacks(tab)
	if err := w.Append(&Event{Time: m.StartBoot + 10, PID: pid, TID: pid, Comm: []byte("x"), Ints: []uint64{1, StackID(false, frames), 0}, Strs: make([][]byte, 3)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMergeStackObjects: each capture numbers its objects from 1, so the
// merge gives a second capture's objects ids of their own (or the id of
// the same object, by path and build id), and its mappings and symbols
// follow: merged before, capture b's stack was named after a's binary.
// Processes of one id on two hosts are noted.
func TestMergeStackObjects(t *testing.T) {
	dir := t.TempDir()
	fa, fb := []uint64{0x401010, 0x402020}, []uint64{0x401010, 0x7f0000001000}
	table := func(pid uint32, frames []uint64, path, build, fn string) *StackTable {
		return &StackTable{
			Stacks: []Stack{{ID: StackID(false, frames), Frames: frames}},
			Objects: []Object{{ID: 1, Path: path, BuildID: build},
				{ID: 2, Path: "/lib/libc.so.6", BuildID: "c0ffee"}},
			Maps: []Mapping{{PID: pid, Since: 5, Start: 0x400000, End: 0x500000, Object: 1},
				{PID: pid, Since: 5, Start: 0x7f0000000000, End: 0x7f0000100000, Object: 2}},
			Symbols: []Symbol{{Object: 1, Addr: 0x401000, Size: 0x100, Name: fn},
				{Object: 2, Addr: 0x1000, Size: 0x100, Name: "start_thread"}},
		}
	}
	a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	stackCapture(t, a, "h1", 7, fa, table(7, fa, "/bin/w", "aaaa", "work"))
	stackCapture(t, b, "h2", 7, fb, table(7, fb, "/bin/vn", "bbbb", "top"))
	out := filepath.Join(dir, "m.arrow")
	res, err := Merge(out, []string{a, b}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Relabeled) != 1 || !strings.Contains(res.Relabeled[0], "process ids 7 were taken on hosts h1, h2") {
		t.Errorf("notes: %q", res.Relabeled)
	}
	r, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tab, err := r.StackTable()
	if err != nil {
		t.Fatal(err)
	}
	path := map[uint32]string{}
	for _, o := range tab.Objects {
		if path[o.ID] != "" {
			t.Errorf("object id %d twice: %s and %s", o.ID, path[o.ID], o.Path)
		}
		path[o.ID] = o.Path
	}
	if len(tab.Objects) != 3 {
		t.Errorf("objects %+v, want /bin/w, /bin/vn and one libc", tab.Objects)
	}
	names := map[string]string{}
	for _, s := range tab.Symbols {
		names[s.Name] = path[s.Object]
	}
	if names["work"] != "/bin/w" || names["top"] != "/bin/vn" || names["start_thread"] != "/lib/libc.so.6" {
		t.Errorf("symbols in objects %v", names)
	}
	var mapped []string
	for _, m := range tab.Maps {
		mapped = append(mapped, path[m.Object])
	}
	if strings.Join(mapped, " ") != "/bin/w /lib/libc.so.6 /bin/vn" {
		t.Errorf("mappings of %q", mapped)
	}
}

// TestObjectIDs: without a build id, an object is the same only in
// captures of one host (rotated parts of one recording).
func TestObjectIDs(t *testing.T) {
	tab := func() *StackTable {
		return &StackTable{Objects: []Object{{ID: 1, Path: "/bin/app"}, {ID: 2, Path: "/lib/x.so", BuildID: "ab"}},
			Maps: []Mapping{{PID: 1, Object: 1}, {PID: 1, Object: 2}, {PID: 1, Object: 9}}, Symbols: []Symbol{{Object: 1, Name: "f"}}}
	}
	var n objectIDs
	first := tab()
	n.first(first, "h1")
	part, other := tab(), tab()
	n.renumber(part, "h1")
	n.renumber(other, "h2")
	if part.Objects[0].ID != 1 || part.Objects[1].ID != 2 || part.Maps[2].Object != math.MaxUint32 {
		t.Errorf("a part of the same host: %+v %+v", part.Objects, part.Maps)
	}
	if other.Objects[0].ID != 3 || other.Objects[1].ID != 2 || other.Maps[0].Object != 3 || other.Symbols[0].Object != 3 {
		t.Errorf("another host: %+v %+v %+v", other.Objects, other.Maps, other.Symbols)
	}
}

// TestObjectIDsSamePath: two objects of one path and no build id in one
// table (two containers' /app) stay two in the merge, in every part of a
// recording.
func TestObjectIDsSamePath(t *testing.T) {
	tab := func() *StackTable {
		return &StackTable{Objects: []Object{{ID: 2, Path: "/app"}, {ID: 1, Path: "/app"}},
			Maps: []Mapping{{PID: 1, Object: 1}, {PID: 2, Object: 2}}, Symbols: []Symbol{{Object: 1, Name: "one"}, {Object: 2, Name: "two"}}}
	}
	var n objectIDs
	n.first(tab(), "h")
	part := tab()
	n.renumber(part, "h")
	if part.Objects[0].ID != 2 || part.Objects[1].ID != 1 || part.Maps[0].Object != 1 || part.Symbols[1].Object != 2 {
		t.Errorf("a part: %+v %+v %+v", part.Objects, part.Maps, part.Symbols)
	}
	other := tab()
	n.renumber(other, "h2")
	if other.Objects[0].ID == other.Objects[1].ID || other.Objects[0].ID <= 2 || other.Objects[1].ID <= 2 {
		t.Errorf("another host's: %+v", other.Objects)
	}
}
