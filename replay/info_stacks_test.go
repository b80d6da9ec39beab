package replay

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil/hostile"
	"github.com/bpftape/bpftape/internal/usage"
)

// writeInfoCapture writes a capture of one probe with fields fields and,
// when table is not nil, that stack table; ids are the stack ids of its
// events' stack fields.
func writeInfoCapture(t *testing.T, fields []format.Field, table *format.StackTable, ids []uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := &format.Meta{Host: "h", Kernel: "6.1", StartBoot: 1000, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "leaf", Kind: "uprobe", Spec: "leaf=u:/bin/x:leaf", Fields: fields},
	}}
	w, err := format.Create(path, m, format.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if table != nil {
		w.AddStacks(table)
	}
	for i, id := range ids {
		e := format.Event{Time: 2000 + int64(i), PID: 7, TID: 7, Comm: []byte("x"), Ints: make([]uint64, len(fields)), Strs: make([][]byte, len(fields))}
		for k := range fields {
			e.Ints[k] = id
		}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func runInfo(t *testing.T, path string) (string, map[string]json.RawMessage) {
	t.Helper()
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var text, js bytes.Buffer
	if _, _, err := Info(c, false, &text); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Info(c, true, &js); err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(js.Bytes(), &obj); err != nil {
		t.Fatal(err)
	}
	return text.String(), obj
}

// TestInfoStacks: info counts the stack table, in a line and in its JSON,
// and prints the stack fields' types; a capture without stacks has
// neither the line nor the key.
func TestInfoStacks(t *testing.T) {
	user := []uint64{0x401005, 0x402005, 0x403000}
	kern := []uint64{0xffffffff81000010}
	uid, kid := format.StackID(false, user), format.StackID(true, kern)
	table := &format.StackTable{
		Stacks:  []format.Stack{{ID: uid, Frames: user}, {ID: kid, Kernel: true, Frames: kern}, {ID: 5, Frames: user[:1]}},
		Objects: []format.Object{{ID: 1, Path: "/bin/x"}, {ID: 2, Path: "/lib/libc.so.6"}, {ID: 3, Path: "[kernel]", Kernel: true}},
		Maps: []format.Mapping{
			{PID: 7, Since: 1000, Start: 0x400000, End: 0x500000, Object: 1},
			{PID: 7, Since: 1000, Start: 0x7f0000, End: 0x800000, Object: 2},
			{PID: 9, Since: 1500, Start: 0x400000, End: 0x500000, Object: 1},
		},
		Symbols: []format.Symbol{
			{Object: 1, Addr: 0x401000, Size: 16, Name: "main"}, {Object: 1, Addr: 0x402000, Size: 16, Name: "top"},
			{Object: 1, Addr: 0x403000, Size: 16, Name: "leaf"}, {Object: 2, Addr: 0x7f1000, Name: "read"},
			{Object: 3, Addr: 0xffffffff81000000, Name: "do_sys"},
		},
		Processes: []format.ProcessNote{{PID: 11, Reason: "exited before its mappings were read"}},
	}
	fields := []format.Field{{Name: "ustack", Type: format.UserStack}, {Name: "kstack", Type: format.KernelStack}}
	text, obj := runInfo(t, writeInfoCapture(t, fields, table, []uint64{uid, uid, 0}))
	want := "stacks:       3 unique (2 user, 1 kernel), 3 objects, 5 symbols, 2 processes mapped, 1 process without mappings\n"
	if !strings.Contains(text, want) {
		t.Errorf("info lacks %q:\n%s", want, text)
	}
	if !strings.Contains(text, "fields ustack ustack, kstack kstack\n") {
		t.Errorf("info: stack fields' types:\n%s", text)
	}
	var si StackInfo
	if err := json.Unmarshal(obj["stacks"], &si); err != nil {
		t.Fatalf("info --json stacks %s: %v", obj["stacks"], err)
	}
	if wantSI := (StackInfo{Unique: 3, User: 2, Kernel: 1, Objects: 3, Symbols: 5, Processes: 2, Unmapped: 1}); si != wantSI {
		t.Errorf("info --json stacks %+v, want %+v", si, wantSI)
	}

	// One stack, one process, as the chain workload records it.
	one := &format.StackTable{Stacks: table.Stacks[:1], Objects: table.Objects[:2], Maps: table.Maps[:2], Symbols: table.Symbols}
	text, _ = runInfo(t, writeInfoCapture(t, fields[:1], one, []uint64{uid}))
	if want := "stacks:       1 unique (1 user, 0 kernel), 2 objects, 5 symbols, 1 process mapped\n"; !strings.Contains(text, want) {
		t.Errorf("info lacks %q:\n%s", want, text)
	}

	// A stack field but no stack taken: the line, with zeros.
	text, obj = runInfo(t, writeInfoCapture(t, fields[:1], nil, []uint64{0}))
	if want := "stacks:       0 unique (0 user, 0 kernel), 0 objects, 0 symbols, 0 processes mapped\n"; !strings.Contains(text, want) || obj["stacks"] == nil {
		t.Errorf("info of a capture whose stacks are all missing lacks %q:\n%s", want, text)
	}

	// No stacks: no line, no key.
	text, obj = runInfo(t, writeInfoCapture(t, []format.Field{{Name: "arg0", Type: format.Uint64}}, nil, []uint64{1}))
	if strings.Contains(text, "stacks:") {
		t.Errorf("info of a capture without stacks:\n%s", text)
	}
	if _, ok := obj["stacks"]; ok {
		t.Errorf("info --json of a capture without stacks has stacks: %s", obj["stacks"])
	}
}

// TestInfoStacksMalformed: a stack table that does not decode is reported
// on the stacks line; info itself still works.
func TestInfoStacksMalformed(t *testing.T) {
	fields := []format.Field{{Name: "ustack", Type: format.UserStack}}
	table := &format.StackTable{Stacks: []format.Stack{{ID: 1, Frames: []uint64{0x401000}}}}
	path := writeInfoCapture(t, fields, table, []uint64{1})
	if err := hostile.BreakStackTable(path); err != nil {
		t.Fatal(err)
	}
	text, obj := runInfo(t, path)
	if !strings.Contains(text, "stacks:       unreadable: batch ") || !strings.Contains(text, format.ErrStackTable.Error()) {
		t.Errorf("info of a capture with a malformed stack table:\n%s", text)
	}
	var si StackInfo
	if err := json.Unmarshal(obj["stacks"], &si); err != nil || si.Error == "" {
		t.Errorf("info --json stacks %s (%v): want an error", obj["stacks"], err)
	}
}

// TestIntegerFieldKind: an analysis that needs an integer field, given a
// stack, says it is a stack, naming the field.
func TestIntegerFieldKind(t *testing.T) {
	fields := []format.Field{{Name: "ustack", Type: format.UserStack}}
	table := &format.StackTable{Stacks: []format.Stack{{ID: 1, Frames: []uint64{0x401000}}}}
	c, err := Open(writeInfoCapture(t, fields, table, []uint64{1}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := c.Meta().Probes[0].Name
	_, histErr := Hist(c, HistOptions{Probe: p, Field: "ustack"}, io.Discard)
	_, reqErr := NewRequestTotals(c, RequestsOptions{ItemProbe: p, ItemField: "ustack", EndProbe: p, EndField: "ustack"}, nil)
	_, cmpErr := NewComparison(&Side{Capture: c, Probe: p, Field: "ustack"}, &Side{Capture: c, Probe: p, Field: "ustack"})
	for _, err := range []error{histErr, reqErr, cmpErr} {
		if err == nil || !strings.Contains(err.Error(), p+".ustack is a stack: ") || !usage.Is(err) {
			t.Errorf("%v: want a usage error saying %s.ustack is a stack", err, p)
		}
	}
}

// TestNoStackCountsEvents: the events whose stack id the table lacks are
// counted one by one, not once per id, as are those with no stack at all.
func TestNoStackCountsEvents(t *testing.T) {
	fields := []format.Field{{Name: "ustack", Type: format.UserStack}}
	table := &format.StackTable{Stacks: []format.Stack{{ID: 1, Frames: []uint64{0x401000}}}}
	c, err := Open(writeInfoCapture(t, fields, table, []uint64{2, 2, 1, 3, 2, 0, 0}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, _, err := Stacks(c, StacksOptions{Probe: "leaf"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Events != 1 || r.NoStack != 6 || r.Total != 1 {
		t.Errorf("%d events on a stack, %d without, total %d; want 1, 6 and 1", r.Events, r.NoStack, r.Total)
	}
	var notes strings.Builder
	r.Notes(&notes)
	if !strings.Contains(notes.String(), "note: 6 events of leaf have no stack") {
		t.Errorf("notes: %q", notes.String())
	}
}
