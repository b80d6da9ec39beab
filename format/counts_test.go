package format

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/bpftape/bpftape/format/arrowipc"
)

// scanCounts tallies what reading every batch of path finds, apart from
// the Writer's tally: what the footer's counts must be.
func scanCounts(t *testing.T, path string) *Counts {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := &Counts{}
	for _, p := range r.Meta.Probes {
		c.Probes = append(c.Probes, ProbeCounts{Name: p.Name})
	}
	for i := 0; i < r.ipc.NumBatches(); i++ {
		md, err := r.ipc.BatchMetadata(i)
		if err != nil {
			t.Fatal(err)
		}
		if md.FindKey(StackTableKey) >= 0 {
			c.StackParts++
		}
	}
	cpus := map[uint16]*CPULosses{}
	latest, seen := int64(0), false
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			t, p := b.Time[i], &c.Probes[b.Probe[i]]
			if n, ok := b.Lost(i); ok {
				if c.LossRecords == 0 || t < c.LossFirst {
					c.LossFirst = t
				}
				if c.LossRecords == 0 || t > c.LossLast {
					c.LossLast = t
				}
				c.LossRecords++
				p.LossRecords++
				p.Lost = AddCount(p.Lost, n)
				l := cpus[b.CPU[i]]
				if l == nil {
					l = &CPULosses{CPU: b.CPU[i]}
					cpus[b.CPU[i]] = l
				}
				l.LossRecords++
				l.Lost = AddCount(l.Lost, n)
				continue
			}
			if p.Events == 0 || t < p.First {
				p.First = t
			}
			if p.Events == 0 || t > p.Last {
				p.Last = t
			}
			p.Events++
			if c.Events == 0 || t < c.First {
				c.First = t
			}
			if c.Events == 0 || t > c.Last {
				c.Last = t
			}
			c.Events++
			if seen && t < latest && uint64(latest)-uint64(t) > uint64(CountsBackwardNs) {
				c.Backward++
			}
			if !seen || t > latest {
				latest, seen = t, true
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	c.Batches, c.RawBytes = r.Batches(), r.RawBytes
	for _, k := range slices.Sorted(func(yield func(uint16) bool) {
		for k := range cpus {
			if !yield(k) {
				return
			}
		}
	}) {
		c.CPUs = append(c.CPUs, *cpus[k])
	}
	return c
}

// footerCounts returns Reader.Counts of path.
func footerCounts(t *testing.T, path string) (*Counts, error) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Meta.Counts != nil {
		t.Errorf("%s: the Meta read has counts", path)
	}
	return r.Counts()
}

// checkCounts wants the footer's counts of path to be what reading it finds.
func checkCounts(t *testing.T, path string) *Counts {
	t.Helper()
	got, err := footerCounts(t, path)
	if err != nil || got == nil {
		t.Fatalf("%s: footer counts %v, %v", path, got, err)
	}
	if want := scanCounts(t, path); !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s: footer counts\n%s\nread\n%s", path, g, w)
	}
	return got
}

// countsMeta is a probe table with a string field and a probe that
// records nothing.
func countsMeta() *Meta {
	m := seedMeta()
	m.StartBoot = 1000
	m.Probes = append(m.Probes, Probe{Name: "idle", Kind: "uprobe", Fields: []Field{{Name: "x", Type: Uint8}}})
	return m
}

// writeCounted writes n rows into path: events of the first two probes of
// countsMeta (never the third), some timed 2 s before the latest, and loss
// records on several CPUs, one of 0 events.
func writeCounted(t *testing.T, path string, comp Compression, n, batchRows int) {
	t.Helper()
	m := countsMeta()
	w, err := Create(path, m, WriterOptions{Compression: comp, BatchRows: batchRows})
	if err != nil {
		t.Fatal(err)
	}
	appendCounted(t, w, rand.New(rand.NewSource(int64(n))), n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendCounted(t *testing.T, w *Writer, rng *rand.Rand, n int) {
	t.Helper()
	m := w.Meta()
	for i := 0; i < n; i++ {
		tm := int64(i)*100e6 + 5000
		switch {
		case i%9 == 4:
			if err := w.Lost(uint16(i%2), uint16(i%5), tm, uint64(i%4)); err != nil {
				t.Fatal(err)
			}
			continue
		case i%13 == 12:
			tm -= 2e9 // back by more than a second
		}
		e := randEvent(rng, &Meta{Probes: m.Probes[:2]}, tm)
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCountsWriter checks the footer's counts against what reading the
// file finds, in each compression, with loss records, a probe without
// events, times going back, batches of one row and of many, an empty
// capture and a stack table; the schema at the start has none.
func TestCountsWriter(t *testing.T) {
	dir := t.TempDir()
	for _, comp := range []Compression{Zstd, LZ4, None} {
		for _, rows := range []int{1, 7, 1000} {
			path := filepath.Join(dir, string(comp)+".arrow")
			writeCounted(t, path, comp, 200, rows)
			c := checkCounts(t, path)
			if c.Events == 0 || c.LossRecords == 0 || c.Backward == 0 || len(c.CPUs) < 2 || c.Probes[2].Events != 0 {
				t.Errorf("%s, %d rows a batch: the capture lacks what it tests: %+v", comp, rows, c)
			}
		}
	}
	empty := filepath.Join(dir, "empty.arrow")
	writeCounted(t, empty, Zstd, 0, 5)
	if c := checkCounts(t, empty); c.Events != 0 || c.Batches != 1 || c.CPUs != nil {
		t.Errorf("empty capture: %+v", c)
	}
	st := filepath.Join(dir, "stacks.arrow")
	if _, err := stackSeed(st); err != nil {
		t.Fatal(err)
	}
	if c := checkCounts(t, st); c.StackParts == 0 {
		t.Errorf("stack capture: no stack table parts counted: %+v", c)
	}
	// A large stack table goes in parts ahead of the batch that needs it.
	big := filepath.Join(dir, "bigstacks.arrow")
	writeBigStacks(t, big)
	if c := checkCounts(t, big); c.StackParts < 2 || c.Batches <= c.StackParts {
		t.Errorf("large stack table: %+v", c)
	}

	// The stream's schema has no counts: a footerless file has none.
	data, err := os.ReadFile(filepath.Join(dir, "zstd.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.arrow")
	if err := os.WriteFile(cut, streamPart(data), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Open(cut)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	md := r.Schema.Metadata()
	if !r.Recovered || strings.Contains(md.Values()[md.FindKey(MetadataKey)], `"counts"`) {
		t.Errorf("footerless file: recovered %v, metadata %s", r.Recovered, md.Values()[md.FindKey(MetadataKey)])
	}
	if c, err := r.Counts(); c != nil || err != nil {
		t.Errorf("footerless file: counts %+v, %v", c, err)
	}
}

// writeBigStacks writes a capture whose stack table is larger than a part.
func writeBigStacks(t *testing.T, path string) {
	t.Helper()
	m := &Meta{Tool: "t", StartBoot: 1, Probes: []Probe{{Name: "leaf", Kind: "uprobe", Fields: []Field{{Name: "ustack", Type: UserStack}}}}}
	w, err := Create(path, m, WriterOptions{BatchRows: 50})
	if err != nil {
		t.Fatal(err)
	}
	var table StackTable
	name := strings.Repeat("n", 1000)
	for i := 0; i < 2*maxPartJSON/1000+10; i++ {
		table.Symbols = append(table.Symbols, Symbol{Object: 1, Addr: uint64(i) * 16, Size: 16, Name: name})
	}
	frames := []uint64{0x401000}
	table.Stacks = []Stack{{ID: StackID(false, frames), Frames: frames}}
	table.Objects = []Object{{ID: 1, Path: "/bin/app"}}
	w.AddStacks(&table)
	for i := 0; i < 120; i++ {
		e := Event{Time: int64(i + 1), PID: 7, TID: 7, Comm: []byte("app"), Ints: []uint64{table.Stacks[0].ID}, Strs: make([][]byte, 1)}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCountsRotateMergeRepair checks the counts of the files that Switch,
// Merge and Repair write: each describes its own rows, not its inputs'.
func TestCountsRotateMergeRepair(t *testing.T) {
	dir := t.TempDir()
	m := countsMeta()
	w, err := Create(filepath.Join(dir, "0.arrow"), m, WriterOptions{BatchRows: 16})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	var parts []string
	for part := 0; part < 3; part++ {
		path := filepath.Join(dir, string(rune('0'+part))+".arrow")
		parts = append(parts, path)
		if part > 0 {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Switch(f, func(m *Meta) {
				// A caller's counts are the Writer's to replace.
				m.Counts = &Counts{Events: 12345}
			}); err != nil {
				t.Fatal(err)
			}
		}
		appendCounted(t, w, rng, 100+part*37)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var events uint64
	for _, p := range parts {
		events += checkCounts(t, p).Events
	}
	merged := filepath.Join(dir, "merged.arrow")
	if _, err := Merge(merged, parts, MergeOptions{Writer: WriterOptions{BatchRows: 40}}); err != nil {
		t.Fatal(err)
	}
	if c := checkCounts(t, merged); c.Events != events {
		t.Errorf("merged: %d events, want %d", c.Events, events)
	}
	mr, err := Open(merged)
	if err != nil {
		t.Fatal(err)
	}
	mj, _ := json.Marshal(mr.Meta)
	mr.Close()
	if len(mr.Meta.Inputs) != 3 || bytes.Contains(mj, []byte(`"counts"`)) {
		t.Errorf("merged meta: %d inputs, counts copied: %s", len(mr.Meta.Inputs), mj)
	}

	// Repair of a complete file, whose metadata has the counts of other
	// batches (the stack table moves), and of a footerless one.
	st := filepath.Join(dir, "stacks.arrow")
	if _, err := stackSeed(st); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.arrow")
	if err := os.WriteFile(cut, streamPart(data)[:len(streamPart(data))-100], 0o600); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{st, parts[0], cut} {
		out := in + ".repaired"
		res, err := Repair(in, out)
		if err != nil {
			t.Fatal(err)
		}
		c := checkCounts(t, out)
		if c.Events+c.LossRecords != uint64(res.Rows) {
			t.Errorf("%s repaired: %d rows counted, Repair copied %d", in, c.Events+c.LossRecords, res.Rows)
		}
		r, err := Open(out)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
}

// TestCountsMetaIgnored checks that a Writer writes its own counts over
// those of the Meta it is given, and that the schema at the start of the
// file has none.
func TestCountsMetaIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := countsMeta()
	m.Counts = &Counts{Events: 99}
	w, err := Create(path, m, WriterOptions{BatchRows: 4})
	if err != nil {
		t.Fatal(err)
	}
	appendCounted(t, w, rand.New(rand.NewSource(2)), 20)
	w.Meta().Counts = &Counts{Events: 98}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, path)
}

// rewriteFooter copies the batches of the capture in to out, as they are,
// with edit's footer metadata (it gets the writer's).
func rewriteFooter(t *testing.T, in, out string, edit func(js string) string) {
	t.Helper()
	r, err := Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pw := newPosWriter(f)
	codec, copts := ipcCodec(Compression(r.Meta.Compression))
	md := r.Schema.Metadata()
	i := md.FindKey(MetadataKey)
	vals := slices.Clone(md.Values())
	start, err := schemaCounts(r.Schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := arrowipc.NewWriter(pw, start, r.Meta.ProbeNames(), codec, copts...)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		if err := fw.WriteBatch(r.batch.Len, r.batch.data); err != nil {
			t.Fatal(err)
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	vals[i] = edit(vals[i])
	fw.SetFooterMetadata(arrow.NewMetadata(md.Keys(), vals))
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pw.Flush(); err != nil {
		t.Fatal(err)
	}
}

// editCounts returns an edit of a footer's metadata that changes its counts.
func editCounts(t *testing.T, change func(c map[string]any)) func(string) string {
	return func(js string) string {
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(js))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		c, _ := m["counts"].(map[string]any)
		change(c)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

// TestCountsForged checks that counts that do not hold together are
// refused, with the capture still open and readable, whatever they are;
// that counts consistent with themselves are taken (what the writer
// wrote: they are not checked against the batches); and that a file
// rewritten with the writer's counts kept is taken.
func TestCountsForged(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.arrow")
	writeCounted(t, good, Zstd, 200, 16)
	want := checkCounts(t, good)
	probe := func(i int) func(c map[string]any) map[string]any {
		return func(c map[string]any) map[string]any { return c["probes"].([]any)[i].(map[string]any) }
	}
	set := func(get func(map[string]any) map[string]any, k string, v any) func(map[string]any) {
		return func(c map[string]any) { get(c)[k] = v }
	}
	self := func(c map[string]any) map[string]any { return c }
	cpu0 := func(c map[string]any) map[string]any { return c["cpu_losses"].([]any)[0].(map[string]any) }
	refused := map[string]func(c map[string]any){
		"events":          set(self, "events", want.Events+1),
		"probe events":    set(probe(0), "events", want.Probes[0].Events+1),
		"idle probe":      set(probe(2), "first_ns", 5),
		"batches":         set(self, "batches", want.Batches+1),
		"negative batch":  set(self, "batches", -1),
		"raw bytes":       set(self, "raw_bytes", 10),
		"huge raw":        set(self, "raw_bytes", int64(math.MaxInt64)),
		"stack parts":     set(self, "stack_parts", want.Batches+1),
		"first after":     set(self, "first_ns", want.Last+1),
		"probe first":     set(probe(1), "first_ns", want.Probes[1].Last+1),
		"backward":        set(self, "backward", want.Events),
		"loss first":      set(self, "loss_first_ns", want.LossLast+1),
		"loss records":    set(self, "loss_records", want.LossRecords+1),
		"probe lost":      set(probe(0), "lost", want.Probes[0].Lost+1),
		"cpu lost":        set(cpu0, "lost", want.CPUs[0].Lost+1),
		"cpu records":     set(cpu0, "loss_records", 0),
		"cpu order":       func(c map[string]any) { l := c["cpu_losses"].([]any); l[0], l[1] = l[1], l[0] },
		"probe name":      set(probe(1), "name", "other"),
		"probe order":     func(c map[string]any) { l := c["probes"].([]any); l[0], l[1] = l[1], l[0] },
		"probes missing":  func(c map[string]any) { c["probes"] = c["probes"].([]any)[:2] },
		"probes null":     func(c map[string]any) { c["probes"] = nil },
		"string":          set(self, "events", "many"),
		"negative events": set(self, "events", -1),
		"float":           set(self, "events", 1.5),
		"overflow": func(c map[string]any) {
			probe(0)(c)["events"] = uint64(math.MaxUint64)
			probe(1)(c)["events"] = 2
			c["events"] = 1
		},
		"no events": func(c map[string]any) {
			for _, p := range c["probes"].([]any) {
				p.(map[string]any)["events"] = 0
			}
			c["events"] = 0
		},
	}
	for name, change := range refused {
		out := filepath.Join(dir, "forged.arrow")
		rewriteFooter(t, good, out, editCounts(t, change))
		if c, err := footerCounts(t, out); c != nil || err == nil {
			t.Errorf("%s: counts taken: %+v", name, c)
		}
		if _, _, err := readEverything(out); err != nil {
			t.Errorf("%s: the forged file does not read: %v", name, err)
		}
	}
	// Counts of another type than an object: the capture opens.
	for name, edit := range map[string]func(string) string{
		"number": func(js string) string {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(js), &m); err != nil {
				t.Fatal(err)
			}
			m["counts"] = json.RawMessage(`7`)
			b, _ := json.Marshal(m)
			return string(b)
		},
		"key case": func(js string) string { return strings.Replace(js, `"counts":{`, `"Counts":{"events":"x",`, 1) },
	} {
		out := filepath.Join(dir, "forged.arrow")
		rewriteFooter(t, good, out, edit)
		if c, err := footerCounts(t, out); c != nil || err == nil {
			t.Errorf("%s: counts taken: %+v", name, c)
		}
	}
	// A consistent lie is taken: the footer is what the writer wrote.
	out := filepath.Join(dir, "lie.arrow")
	rewriteFooter(t, good, out, editCounts(t, func(c map[string]any) {
		probe(0)(c)["events"] = want.Probes[0].Events - 1
		probe(1)(c)["events"] = want.Probes[1].Events + 1
	}))
	if c, err := footerCounts(t, out); c == nil || err != nil || c.Probes[1].Events != want.Probes[1].Events+1 {
		t.Errorf("consistent counts refused: %+v, %v", c, err)
	}
	// The batches copied as they are, the writer's counts kept: taken.
	rewriteFooter(t, good, out, func(js string) string { return js })
	checkCounts(t, out)
}

// TestCountsSeeds checks the fuzz seeds: the forged one is refused, every
// other one written whole has the counts that reading it finds.
func TestCountsSeeds(t *testing.T) {
	dir := t.TempDir()
	for name, data := range fuzzSeeds(t) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := footerCounts(t, path)
		switch {
		case strings.HasPrefix(name, "counts-forged"):
			if c != nil || err == nil {
				t.Errorf("seed %s: forged counts taken", name)
			}
		case strings.Contains(name, "footerless") || strings.Contains(name, "cut"):
			if c != nil || err != nil {
				t.Errorf("seed %s: counts %+v, %v", name, c, err)
			}
		default:
			checkCounts(t, path)
		}
	}
}

// FuzzCounts opens arbitrary bytes as a capture and takes the footer's
// counts: no panic, and counts taken hold together.
func FuzzCounts(f *testing.F) {
	for _, data := range fuzzSeeds(f) {
		f.Add(data)
	}
	in := filepath.Join(scratchDir(f), "counts.arrow")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(in, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := Open(in)
		if err != nil {
			return
		}
		defer r.Close()
		c, err := r.Counts()
		if c == nil {
			return
		}
		if err != nil || r.Recovered || c.check(r.Meta, r.ipc.NumBatches(), r.widths()) != nil {
			t.Fatalf("counts taken: %+v, %v", c, err)
		}
	})
}

// BenchmarkCountsTally measures the Writer's tally of a full batch of the
// seed-like stream (Counts.addBatch), per row: the encoder goroutine's
// cost of the footer's counts.
func BenchmarkCountsTally(b *testing.B) {
	m := countsMeta()
	w, err := NewWriter(io.Discard, m, WriterOptions{Compression: None})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	// A batch of all but one row: the last would have it written.
	for i := 0; i < w.rows-1; i++ {
		if i%100 == 99 {
			err = w.Lost(1, 2, int64(i), 3)
		} else {
			e := randEvent(rng, &Meta{Probes: m.Probes[:2]}, int64(i))
			err = w.Append(&e)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	bt := w.cur
	for i := range bt.cols {
		bt.cols[i].columnData(&bt.data[i], bt.n)
	}
	var c Counts
	c.reset(m.Probes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.addBatch(bt.n, bt.data, w.widths, false)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bt.n), "ns/row")
}
