package replay

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bpftape/bpftape/format"
)

// answers is what info and count print of a capture, with their notes,
// the exported fields of the Passes they return, and how many passes
// read its batches.
type answers struct {
	text   string
	passes int
}

// passFacts prints what a Pass found, for comparison.
func passFacts(p *Pass) string {
	if p == nil {
		return "nil pass\n"
	}
	return fmt.Sprintf("events %d losses %+v times %d/%d batches %d raw %d recovered %v %v\n",
		p.Events, p.Losses, p.Times.Early, p.Times.Backward, p.Batches, p.RawBytes, p.Recovered, p.RecoverErr)
}

// ask runs info (text, JSON) and count (every probe, --zeros, a pattern,
// JSON) on the capture at path.
func ask(t *testing.T, path string) answers {
	t.Helper()
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b bytes.Buffer
	note := func(p *Pass, err error) {
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b.WriteString(passFacts(p))
		p.Notes(&b)
	}
	for _, js := range []bool{false, true} {
		_, p, err := Info(c, js, &b)
		note(p, err)
	}
	m := c.Meta()
	for _, o := range []CountOptions{{}, {Zeros: true}, {Probes: []string{m.Probes[0].Name}, Zeros: true}, {JSON: true}, {JSON: true, Zeros: true}} {
		rows, p, err := Count(c, o, &b)
		fmt.Fprintf(&b, "%+v\n", rows)
		note(p, err)
	}
	return answers{b.String(), c.Passes()}
}

// counted matches the counts in a footer's metadata.
var counted = regexp.MustCompile(`"counts":\{"batches":[0-9]+,"raw_bytes":([0-9]+),"(stack_parts":[0-9]+,")?events":([0-9]+)`)

// editFooter rewrites the capture at path with the counts of its footer
// changed by edit, the bytes of the match of counted, which must keep
// their length (the footer is a flatbuffer).
func editFooter(t *testing.T, path string, edit func(m []byte, sub [][]int)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	all := counted.FindAllSubmatchIndex(data, -1)
	if len(all) != 1 {
		t.Fatalf("%s: %d footer counts", path, len(all))
	}
	loc := all[0]
	m := data[loc[0]:loc[1]]
	n := len(m)
	var sub [][]int
	for i := 2; i < len(loc); i += 2 {
		sub = append(sub, []int{loc[i] - loc[0], loc[i+1] - loc[0]})
	}
	edit(m, sub)
	if len(m) != n {
		t.Fatal("edit changed the length")
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// noCounts renames the footer's counts key: what the file holds is the
// same, but it is read as a capture without counts, by its batches.
func noCounts(m []byte, _ [][]int) { copy(m, `"xounts"`) }

// checkFooterAnswers wants info and count to answer from the footer of
// the capture at path, and to print what they print when they read it.
func checkFooterAnswers(t *testing.T, path string) string {
	t.Helper()
	got := ask(t, path)
	if got.passes != 0 {
		t.Errorf("%s: %d passes over the batches, want none: the footer has the counts", path, got.passes)
	}
	want := askScanned(t, path, noCounts)
	if want.passes == 0 {
		t.Fatalf("%s: read without counts, no pass over the batches", path)
	}
	if got.text != want.text {
		t.Errorf("%s: from the footer:\n%s\nfrom the batches:\n%s", path, got.text, want.text)
	}
	return got.text
}

// askScanned asks a copy of the capture at path whose footer's counts
// were changed by edit, in its place (info and count print the path).
func askScanned(t *testing.T, path string, edit func(m []byte, sub [][]int)) answers {
	t.Helper()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile(path, orig, 0o600)
	editFooter(t, path, edit)
	return ask(t, path)
}

// footerMeta is a capture's metadata whose window opens after it started.
func footerMeta(probes []format.Probe) *format.Meta {
	return &format.Meta{Tool: "t", Host: "h", Kernel: "k", CommandLine: []string{"bpftape", "record"},
		StartBoot: 5e9, StartWall: time.Unix(1700000000, 0), Window: &format.Window{Start: 5e9 + 3, End: 90e9},
		Probes: probes}
}

var footerProbes = []format.Probe{
	{Name: "read", Kind: "uprobe", Spec: "u:/bin/app:read", Target: "/bin/app", Fields: []format.Field{{Name: "size", Type: format.Uint64}}},
	{Name: "read_ret", Kind: "uretprobe", Spec: "ur:/bin/app:read", Fields: []format.Field{{Name: "retval", Type: format.Int64}, {Name: "path", Type: format.String}}},
	{Name: "idle", Kind: "tracepoint", Spec: "t:sched:idle", Filter: "pid == 1"},
	{Name: "open", Kind: "kprobe", Spec: "k:do_open"},
}

// writeFooterCapture writes n rows of footerProbes to path: events of all
// probes but idle, some more than 1 s before the one before them, and loss
// records on several CPUs (one of 0 events), from t0 on.
func writeFooterCapture(t *testing.T, path string, w *format.Writer, rng *rand.Rand, n int, t0 int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		tm := t0 + int64(i)*50e6
		switch {
		case i%11 == 5:
			if err := w.Lost(uint16(i%2*3), uint16(i%3), tm, uint64(i%5)); err != nil {
				t.Fatal(err)
			}
			continue
		case i%17 == 16:
			tm -= 3e9
		}
		p := []uint16{0, 1, 3}[rng.Intn(3)]
		e := format.Event{Time: tm, CPU: uint16(rng.Intn(4)), PID: 40, TID: uint32(40 + rng.Intn(3)), Comm: []byte("app"), Probe: p}
		nf := len(footerProbes[p].Fields)
		e.Ints, e.Strs = make([]uint64, nf), make([][]byte, nf)
		for f := range nf {
			e.Ints[f] = rng.Uint64() % 100000
			e.Strs[f] = []byte(strings.Repeat("p", rng.Intn(30)))
		}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
}

func createFooterCapture(t *testing.T, path string, comp format.Compression, n int, t0 int64) {
	t.Helper()
	w, err := format.Create(path, footerMeta(footerProbes), format.WriterOptions{Compression: comp, BatchRows: 13})
	if err != nil {
		t.Fatal(err)
	}
	writeFooterCapture(t, path, w, rand.New(rand.NewSource(int64(n))), n, t0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFooterAnswers checks that info and count answer from the footer of
// the captures the writer writes, printing what they print when they read
// the batches: several probes, one without events, loss records, times
// going back, an empty capture, a stack table, each compression, rotated
// parts, a merge of them and a repaired file.
func TestFooterAnswers(t *testing.T) {
	dir := t.TempDir()
	for _, comp := range []format.Compression{format.Zstd, format.LZ4, format.None} {
		path := filepath.Join(dir, string(comp)+".arrow")
		createFooterCapture(t, path, comp, 300, 10e9)
		text := checkFooterAnswers(t, path)
		for _, want := range []string{"events were lost", ": 0 events are timed before the capture started and [1-9]", "\nidle +tracepoint +0 +0  t:sched:idle\n"} {
			if !regexp.MustCompile(want).MatchString(text) {
				t.Errorf("%s: the answers lack %q: the capture does not test what it should:\n%s", comp, want, text)
			}
		}
	}
	empty := filepath.Join(dir, "empty.arrow")
	createFooterCapture(t, empty, format.Zstd, 0, 10e9)
	checkFooterAnswers(t, empty)

	// A stack table, and a capture with one but no stack field.
	table := &format.StackTable{
		Stacks:  []format.Stack{{ID: format.StackID(false, []uint64{0x401000}), Frames: []uint64{0x401000}}},
		Objects: []format.Object{{ID: 1, Path: "/bin/app"}},
		Maps:    []format.Mapping{{PID: 7, Since: 1, Start: 0x400000, End: 0x500000, Object: 1}},
		Symbols: []format.Symbol{{Object: 1, Addr: 0x401000, Size: 16, Name: "f"}},
	}
	for _, probes := range [][]format.Probe{
		{{Name: "s", Kind: "uprobe", Fields: []format.Field{{Name: "ustack", Type: format.UserStack}}}},
		{{Name: "s", Kind: "uprobe"}},
	} {
		c := writeCaptureStacks(t, probes, table, []row{{probe: 0, tid: 1, t: 2000, ints: []uint64{table.Stacks[0].ID}}, {probe: 0, tid: 1, t: 3000}})
		text := checkFooterAnswers(t, c.Name)
		if !strings.Contains(text, "stacks:       1 unique") {
			t.Errorf("stack capture: no stack line:\n%s", text)
		}
	}

	// Rotated parts, and their merge.
	w, err := format.Create(filepath.Join(dir, "part0.arrow"), footerMeta(footerProbes), format.WriterOptions{BatchRows: 16})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	var parts []string
	for part := range 3 {
		path := filepath.Join(dir, fmt.Sprintf("part%d.arrow", part))
		parts = append(parts, path)
		if part > 0 {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Switch(f, nil); err != nil {
				t.Fatal(err)
			}
		}
		writeFooterCapture(t, path, w, rng, 90+20*part, 10e9+int64(part)*10e9)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		checkFooterAnswers(t, p)
	}
	merged := filepath.Join(dir, "merged.arrow")
	if _, err := format.Merge(merged, parts, format.MergeOptions{Tool: "t"}); err != nil {
		t.Fatal(err)
	}
	checkFooterAnswers(t, merged)
	repaired := filepath.Join(dir, "repaired.arrow")
	if _, err := format.Repair(parts[1], repaired); err != nil {
		t.Fatal(err)
	}
	checkFooterAnswers(t, repaired)
}

// TestFooterAnswersScanned checks the captures whose counts info and
// count do not take: a footerless copy and a capture with events timed
// before it started, read as before; and footers whose counts do not
// hold together or do not decode, read as a capture without counts is.
func TestFooterAnswersScanned(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.arrow")
	createFooterCapture(t, path, format.Zstd, 200, 10e9)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := askScanned(t, path, noCounts)

	forged := map[string]func(m []byte, sub [][]int){
		// One more event than the probes have, in as many digits.
		"events": func(m []byte, sub [][]int) {
			d := m[sub[2][1]-1]
			m[sub[2][1]-1] = "1234567890"[d-'0']
		},
		// A string for a number.
		"raw bytes": func(m []byte, sub [][]int) {
			m[sub[0][0]], m[sub[0][1]-1] = '"', '"'
		},
	}
	for name, edit := range forged {
		got := askScanned(t, path, edit)
		if got.passes == 0 || got.text != want.text {
			t.Errorf("%s forged: %d passes, answers\n%s\nwant\n%s", name, got.passes, got.text, want.text)
		}
	}

	// A footerless copy: read by its complete batches, as before.
	cut := filepath.Join(dir, "cut.arrow")
	n := int(uint32(data[len(data)-10]) | uint32(data[len(data)-9])<<8 | uint32(data[len(data)-8])<<16 | uint32(data[len(data)-7])<<24)
	if err := os.WriteFile(cut, data[:len(data)-10-n-200], 0o600); err != nil {
		t.Fatal(err)
	}
	got := ask(t, cut)
	if got.passes == 0 || !strings.Contains(got.text, "recovered:    complete batches recovered from a file without footer") ||
		!strings.Contains(got.text, "NOTE: "+cut+" has no footer") {
		t.Errorf("footerless copy: %d passes, answers:\n%s", got.passes, got.text)
	}

	// Events timed more than 1 s before the window opened: the counts do
	// not say how many, and the batches are read.
	early := filepath.Join(dir, "early.arrow")
	createFooterCapture(t, early, format.Zstd, 100, 3e9)
	if got := ask(t, early); got.passes == 0 || !regexp.MustCompile(`WARNING: .*early.arrow: [1-9][0-9]* events are timed before the capture started`).MatchString(got.text) {
		t.Errorf("early events: %d passes, answers:\n%s", got.passes, got.text)
	}
	// A filter, or --by: the batches are read.
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	if _, _, err := Count(c, CountOptions{By: "tid"}, &out); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Count(c, CountOptions{Rows: RowFilter{TIDs: []uint32{41}}}, &out); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Count(c, CountOptions{Rows: RowFilter{From: time.Second}}, &out); err != nil {
		t.Fatal(err)
	}
	if c.Passes() != 3 {
		t.Errorf("counts with --by or a filter: %d passes, want 3", c.Passes())
	}
}
