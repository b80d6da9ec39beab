package format

import (
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testMeta() *Meta {
	return &Meta{
		Tool: "bpftape test", Host: "testhost", Kernel: "6.18.0",
		CommandLine: []string{"bpftape", "record"},
		StartWall:   time.Unix(1700000000, 0).UTC(), StartBoot: 1000,
		Probes: []Probe{
			{Name: "ints", Kind: "usdt", Spec: "usdt:/bin/x:p:ints", Target: "/bin/x", BuildID: "abcd", Fields: []Field{
				{Name: "arg0", Type: Int8}, {Name: "arg1", Type: Int16}, {Name: "arg2", Type: Int32}, {Name: "arg3", Type: Int64},
				{Name: "arg4", Type: Uint8}, {Name: "arg5", Type: Uint16}, {Name: "arg6", Type: Uint32}, {Name: "arg7", Type: Uint64},
			}},
			{Name: "strs", Kind: "usdt", Spec: "usdt:/bin/x:p:strs", Fields: []Field{
				{Name: "arg0", Type: Uint64}, {Name: "arg1", Type: String}, {Name: "msg", Type: String},
			}},
			{Name: "ret", Kind: "uretprobe", Spec: "ur:/bin/x:f", Fields: []Field{{Name: "retval", Type: Int64}}},
			{Name: "nofields", Kind: "tracepoint", Spec: "t:sched:x"},
		},
	}
}

type rowWant struct {
	ev     Event
	lost   uint64
	isLost bool
}

// truncInt is what a column of type t keeps of v, read back with Int.
func truncInt(t Type, v uint64) int64 {
	switch t {
	case Int8:
		return int64(int8(v))
	case Int16:
		return int64(int16(v))
	case Int32:
		return int64(int32(v))
	case Uint8:
		return int64(uint8(v))
	case Uint16:
		return int64(uint16(v))
	case Uint32:
		return int64(uint32(v))
	}
	return int64(v)
}

func readAll(t *testing.T, path string) (*Reader, []rowWant) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []rowWant
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			var w rowWant
			w.ev = Event{Time: b.Time[i], CPU: b.CPU[i], PID: b.PID[i], TID: b.TID[i], Probe: b.Probe[i], Comm: []byte(b.Comm(i))}
			w.lost, w.isLost = b.Lost(i)
			p := &r.Meta.Probes[b.Probe[i]]
			for _, f := range p.Fields {
				c := b.Col(r.Column(f.Column))
				if !c.Valid(i) {
					if !w.isLost {
						t.Fatalf("row %d: field %s is null", len(rows), f.Name)
					}
					w.ev.Ints = append(w.ev.Ints, 0)
					w.ev.Strs = append(w.ev.Strs, nil)
					continue
				}
				if f.Type == String {
					w.ev.Strs = append(w.ev.Strs, []byte(c.Str(i)))
					w.ev.Ints = append(w.ev.Ints, 0)
				} else {
					w.ev.Ints = append(w.ev.Ints, uint64(c.Int(i)))
					w.ev.Strs = append(w.ev.Strs, nil)
				}
			}
			rows = append(rows, w)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return r, rows
}

func checkRows(t *testing.T, m *Meta, got, want []rowWant) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d rows, wrote %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.isLost != w.isLost || g.lost != w.lost || g.ev.Time != w.ev.Time || g.ev.CPU != w.ev.CPU || g.ev.Probe != w.ev.Probe {
			t.Fatalf("row %d: got %+v, want %+v", i, g, w)
		}
		if w.isLost {
			continue
		}
		if g.ev.PID != w.ev.PID || g.ev.TID != w.ev.TID || string(g.ev.Comm) != string(w.ev.Comm) {
			t.Fatalf("row %d: got %+v, want %+v", i, g.ev, w.ev)
		}
		for fi, f := range m.Probes[w.ev.Probe].Fields {
			if f.Type == String {
				if string(g.ev.Strs[fi]) != string(w.ev.Strs[fi]) {
					t.Fatalf("row %d field %s: got %q want %q", i, f.Name, g.ev.Strs[fi], w.ev.Strs[fi])
				}
			} else if int64(g.ev.Ints[fi]) != truncInt(f.Type, w.ev.Ints[fi]) {
				t.Fatalf("row %d field %s (%v): got %d want %d", i, f.Name, f.Type, int64(g.ev.Ints[fi]), truncInt(f.Type, w.ev.Ints[fi]))
			}
		}
	}
}

// writeRandom writes n random rows (1 in 50 a loss record) in batches of batchRows.
func writeRandom(t testing.TB, path string, comp Compression, n, batchRows int) []rowWant {
	m := testMeta()
	w, err := Create(path, m, WriterOptions{Compression: comp, BatchRows: batchRows})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	var want []rowWant
	for i := 0; i < n; i++ {
		ts := int64(1000 + i*1000)
		if rng.Intn(50) == 0 {
			r := rowWant{ev: Event{Time: ts, CPU: 1, Probe: uint16(rng.Intn(len(m.Probes)))}, lost: uint64(1 + rng.Intn(1000)), isLost: true}
			if err := w.Lost(r.ev.Probe, r.ev.CPU, ts, r.lost); err != nil {
				t.Fatal(err)
			}
			want = append(want, r)
			continue
		}
		e := randEvent(rng, m, ts)
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
		want = append(want, rowWant{ev: e})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		comp    Compression
		n, rows int
	}{
		{Zstd, 5000, 1000}, {LZ4, 5000, 777}, {None, 3000, 64 << 10}, {Zstd, 0, 10},
	} {
		t.Run(string(tc.comp), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.arrow")
			want := writeRandom(t, path, tc.comp, tc.n, tc.rows)
			r, got := readAll(t, path)
			if r.Recovered {
				t.Error("complete file reported as recovered")
			}
			if r.Meta.Host != "testhost" || r.Meta.Compression != string(tc.comp) || r.Meta.Probes[0].BuildID != "abcd" {
				t.Errorf("metadata: %+v", r.Meta)
			}
			checkRows(t, testMeta(), got, want)
			st, _ := os.Stat(path)
			if st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", st.Mode().Perm())
			}
		})
	}
}

// TestColumnNames: a field's column is "probe.field" whatever other
// probes share the capture (format version 1 shared "retval" between a
// and b and renamed b's arg0 to "b.arg0" because a's had another type).
func TestColumnNames(t *testing.T) {
	a := Probe{Name: "a", Fields: []Field{{Name: "retval", Type: Int64}, {Name: "arg0", Type: Uint64}}}
	alone := &Meta{Probes: []Probe{a}}
	if _, err := alone.assignColumns(); err != nil {
		t.Fatal(err)
	}
	m := &Meta{Probes: []Probe{
		{Name: "b", Fields: []Field{{Name: "retval", Type: Int64}, {Name: "arg0", Type: Int32}}},
		a,
		{Name: "c", Fields: []Field{{Name: "time", Type: Int64}}},
		{Name: "a.retval", Fields: []Field{{Name: "x", Type: Int8}}},
	}}
	cols, err := m.assignColumns()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range m.Probes {
		for _, f := range p.Fields {
			got = append(got, f.Column)
		}
	}
	want := []string{"b.retval", "b.arg0", "a.retval", "a.arg0", "c.time", "a.retval.x"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("columns %q, want %q", got, want)
	}
	if len(cols) != len(want) {
		t.Errorf("%d columns, want %d", len(cols), len(want))
	}
	for i, f := range alone.Probes[0].Fields {
		if f.Column != m.Probes[1].Fields[i].Column {
			t.Errorf("probe a's %s: column %q alone, %q in company", f.Name, f.Column, m.Probes[1].Fields[i].Column)
		}
	}
	for _, bad := range []*Meta{
		{},
		{Probes: []Probe{{Name: "x"}, {Name: "x"}}},
		{Probes: []Probe{{Name: ""}}},
		{Probes: []Probe{{Name: "x", Fields: []Field{{Name: "f", Type: Int8}, {Name: "f", Type: Int8}}}}},
		{Probes: []Probe{{Name: "x", Fields: []Field{{Name: "f"}}}}},
		// x's field f.g and x.f's field g would share the column x.f.g.
		{Probes: []Probe{{Name: "x", Fields: []Field{{Name: "f.g", Type: Int8}}}, {Name: "x.f", Fields: []Field{{Name: "g", Type: Int8}}}}},
	} {
		if _, err := bad.assignColumns(); err == nil {
			t.Errorf("%+v: no error", bad.Probes)
		}
	}
}

// TestFormatVersions: a version 1 capture still reads through its own
// column names; a newer version, or a version 2 capture whose metadata
// puts a field in another column, is refused with a clear error.
func TestFormatVersions(t *testing.T) {
	v1 := `{"schema_version":1,"tool":"bpftape v0.1","probes":[{"name":"a","fields":[{"name":"retval","type":"int64","column":"retval"}]}]}`
	m, err := decodeMeta(v1)
	if err != nil || m.Probes[0].Fields[0].Column != "retval" {
		t.Errorf("version 1: %v", err)
	}
	v3 := `{"schema_version":3,"tool":"bpftape v9","probes":[]}`
	if _, err := decodeMeta(v3); !errors.Is(err, ErrNewerVersion) || !strings.Contains(err.Error(), "bpftape v9") {
		t.Errorf("version 3: %v", err)
	}
	moved := `{"schema_version":2,"probes":[{"name":"a","fields":[{"name":"retval","type":"int64","column":"b.retval"}]}]}`
	if _, err := decodeMeta(moved); err == nil {
		t.Error("version 2 with a moved column: no error")
	}
}

// waitBatches waits until the encoder has written n batches in all.
func waitBatches(t *testing.T, w *Writer, n uint64) int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.Stats.Batches.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("encoder wrote %d batches, want %d", w.Stats.Batches.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	return w.Stats.Bytes.Load()
}

// TestRecoverEveryCut cuts a capture at every byte from the end of its
// second-to-last batch to its end and checks that exactly the complete
// batches are recovered, with recovery reported.
func TestRecoverEveryCut(t *testing.T) {
	if testing.Short() {
		t.Skip("cuts and recovers a capture at thousands of lengths; TestRepair and the FuzzOpen and FuzzRepair seeds cover recovery")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "c.arrow")
	m := testMeta()
	w, err := Create(path, m, WriterOptions{BatchRows: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(2))
	var want []rowWant
	var ends []int64 // file size after each batch
	var counts []int
	for b := 0; b < 3; b++ {
		for i := 0; i < 200; i++ {
			e := randEvent(rng, m, int64(len(want)))
			if err := w.Append(&e); err != nil {
				t.Fatal(err)
			}
			want = append(want, rowWant{ev: e})
		}
		if err := w.Lost(0, 1, int64(len(want)), 7); err != nil {
			t.Fatal(err)
		}
		want = append(want, rowWant{ev: Event{Time: int64(len(want)), CPU: 1}, lost: 7, isLost: true})
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, waitBatches(t, w, uint64(b+2)))
		counts = append(counts, len(want))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cutPath := filepath.Join(dir, "cut.arrow")
	for cut := ends[1]; cut < int64(len(full)); cut++ {
		if err := os.WriteFile(cutPath, full[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		wantN := counts[1]
		if cut >= ends[2] {
			wantN = counts[2]
		}
		r, got := readAll(t, cutPath)
		if !r.Recovered {
			t.Fatalf("cut at %d: not reported as recovered", cut)
		}
		atEnd := cut == ends[1] || cut == ends[2]
		if (r.RecoverErr == nil) != atEnd {
			t.Fatalf("cut at %d (batch ends %v): RecoverErr = %v", cut, ends, r.RecoverErr)
		}
		checkRows(t, m, got, want[:wantN])
	}
	// A file cut inside its header is not a capture.
	for _, cut := range []int{0, 5, 8, 100} {
		os.WriteFile(cutPath, full[:cut], 0o600)
		if _, err := Open(cutPath); err == nil {
			t.Errorf("cut at %d: opened", cut)
		}
	}
}

func TestRepair(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.arrow")
	want := writeRandom(t, path, LZ4, 3000, 500)
	full, _ := os.ReadFile(path)
	cut := filepath.Join(dir, "cut.arrow")
	os.WriteFile(cut, full[:len(full)-200], 0o600)
	fixed := filepath.Join(dir, "fixed.arrow")
	res, err := Repair(cut, fixed)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Recovered {
		t.Error("repair did not report recovery")
	}
	r, got := readAll(t, fixed)
	if r.Recovered {
		t.Error("repaired file has no footer")
	}
	if r.Meta.Compression != string(LZ4) {
		t.Errorf("compression %q", r.Meta.Compression)
	}
	checkRows(t, testMeta(), got, want[:len(got)])
	if len(got) == 0 || int64(len(got)) != res.Rows {
		t.Errorf("repaired %d rows, read %d", res.Rows, len(got))
	}
	if _, err := Repair(cut, fixed); err == nil {
		t.Error("repair overwrote an existing file")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"empty": nil,
		"text":  []byte("hello world, this is not arrow at all\n"),
		"magic": []byte("ARROW1\x00\x00garbage garbage garbage"),
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o600)
		if _, err := Open(p); err == nil {
			t.Errorf("%s: opened", name)
		} else if name != "magic" && !errors.Is(err, ErrNotCapture) {
			t.Errorf("%s: %v is not ErrNotCapture", name, err)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestTickFlushes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.arrow")
	m := testMeta()
	w, err := Create(path, m, WriterOptions{MaxAge: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e := randEvent(rand.New(rand.NewSource(3)), m, 1)
	w.Append(&e)
	if err := w.Tick(time.Now()); err != nil {
		t.Fatal(err)
	}
	if w.Stats.Batches.Load() != 1 {
		t.Fatalf("young batch was written")
	}
	w.Tick(time.Now().Add(time.Second))
	waitBatches(t, w, 2)
	// The unclosed file already holds the event.
	r, rows := readAll(t, path)
	if !r.Recovered || len(rows) != 1 {
		t.Fatalf("recovered=%v rows=%d", r.Recovered, len(rows))
	}
}
