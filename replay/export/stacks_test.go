package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
)

// Stacks of the test capture: frames innermost first, as the recorder
// stores them; every frame but the first is a return address.
var (
	stackLeaf = []uint64{0x404000, 0x403005, 0x402005, 0x401005} // main;top;mid;leaf
	stackOdd  = []uint64{0x405000, 0x401005}                     // a hostile name: ';' and ESC
	stackLost = []uint64{0x4ff000, 0x401005}                     // no symbol covers 0x4ff000
	stackKern = []uint64{0xffffffff81000010, 0xffffffff81001005} // entry;do_sys
	idLeaf    = format.StackID(false, stackLeaf)
	idOdd     = format.StackID(false, stackOdd)
	idLost    = format.StackID(false, stackLost)
	idKern    = format.StackID(true, stackKern)
	idMissing = uint64(0xdead)          // not in the table
	wantLeaf  = "main;top;mid;leaf"     // as bpftape stacks prints it
	wantOdd   = `main;op:er\x1b`        // escaped, ';' as ':'
	wantLost  = "main;[x@abcd+0xff000]" // [OBJECT@BUILDID+0xOFFSET]
	wantKern  = "entry;do_sys"
	stackMeta = &format.Meta{Host: "h1", Kernel: "6.1", StartBoot: base, StartWall: time.Unix(1700000000, 0), Probes: []format.Probe{
		{Name: "leaf", Kind: "uprobe", Spec: "leaf=u:/bin/x:leaf(arg0,ustack,kstack)", Fields: []format.Field{
			{Name: "arg0", Type: format.Uint64}, {Name: "ustack", Type: format.UserStack}, {Name: "kstack", Type: format.KernelStack}}},
		{Name: "other", Kind: "usdt", Spec: "other=U:/bin/x:p:o", Fields: []format.Field{{Name: "v", Type: format.Int32}}},
	}}
)

// stackRow is an event of probe leaf (or of other when other is set).
type stackRow struct {
	pid          uint32
	user, kernel uint64
	other        bool
}

// writeStacks writes a capture whose leaf events have user stacks of pid 7
// (mapped; pid 8 is not, so the same stack reads differently there),
// kernel stacks, no stack (id 0) and a stack the table lacks.
func writeStacks(t *testing.T) (string, []stackRow) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stacks.arrow")
	w, err := format.Create(path, stackMeta, format.WriterOptions{BatchRows: 64})
	if err != nil {
		t.Fatal(err)
	}
	w.AddStacks(&format.StackTable{
		Stacks: []format.Stack{{ID: idLeaf, Frames: stackLeaf}, {ID: idOdd, Frames: stackOdd}, {ID: idLost, Frames: stackLost},
			{ID: idKern, Kernel: true, Frames: stackKern}},
		Objects: []format.Object{{ID: 1, Path: "/bin/x", BuildID: "abcd"}, {ID: 2, Path: "[kernel]", Kernel: true}},
		Maps:    []format.Mapping{{PID: 7, Since: base, Start: 0x400000, End: 0x500000, Object: 1}},
		Symbols: []format.Symbol{
			{Object: 1, Addr: 0x401000, Size: 0x100, Name: "main"}, {Object: 1, Addr: 0x402000, Size: 0x100, Name: "top"},
			{Object: 1, Addr: 0x403000, Size: 0x100, Name: "mid"}, {Object: 1, Addr: 0x404000, Size: 0x100, Name: "leaf"},
			{Object: 1, Addr: 0x405000, Size: 0x100, Name: "op;er\x1b"},
			{Object: 2, Addr: 0xffffffff81000000, Size: 0x100, Name: "do_sys"}, {Object: 2, Addr: 0xffffffff81001000, Size: 0x100, Name: "entry"},
		},
	})
	var rs []stackRow
	for i := 0; i < 500; i++ {
		r := stackRow{pid: 7}
		switch i % 10 {
		case 0, 1, 2, 3:
			r.user, r.kernel = idLeaf, idKern
		case 4:
			r.user = idOdd
		case 5:
			r.user, r.kernel = idLost, idKern
		case 6:
			r.pid, r.user = 8, idLeaf // no mappings of pid 8
		case 7:
			r.user = idMissing
		case 8:
			r.other = true
		}
		rs = append(rs, r)
		e := format.Event{Time: base + int64(i)*1000, PID: r.pid, TID: r.pid, Comm: []byte("x")}
		if r.other {
			e.Probe, e.Ints, e.Strs = 1, []uint64{uint64(i)}, make([][]byte, 1)
		} else {
			e.Ints, e.Strs = []uint64{uint64(i), r.user, r.kernel}, make([][]byte, 3)
		}
		if err := w.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, rs
}

// folded is what an export of the stack id of row r should hold, and
// whether it is not null; pid 8's frames are checked against Stacks.
func folded(id uint64, pid uint32) (string, bool) {
	switch {
	case id == 0 || id == idMissing:
		return "", false
	case pid == 8:
		return "?", true
	}
	return map[uint64]string{idLeaf: wantLeaf, idOdd: wantOdd, idLost: wantLost, idKern: wantKern}[id], true
}

// stacksLines is `bpftape stacks` on the capture: folded lines, sorted.
func stacksLines(t *testing.T, c *replay.Capture, mode replay.StackMode) []string {
	t.Helper()
	r, _, err := replay.Stacks(c, replay.StacksOptions{Probe: "leaf", Mode: mode, BuildIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.WriteFolded(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	sort.Strings(lines)
	return lines
}

// countLines counts each non-null value as Stacks counts stacks.
func countLines(vals []string, valid []bool) []string {
	n := map[string]int{}
	for i, v := range vals {
		if valid[i] {
			n[v]++
		}
	}
	var lines []string
	for v, k := range n {
		lines = append(lines, fmt.Sprintf("%s %d", v, k))
	}
	sort.Strings(lines)
	return lines
}

// checkStackCols checks the exported ustack and kstack values of the leaf
// rows against the capture, and their counts against Stacks, line for line.
func checkStackCols(t *testing.T, what string, c *replay.Capture, rs []stackRow, user, kernel []string, uValid, kValid []bool) {
	t.Helper()
	if len(user) != len(rs) || len(kernel) != len(rs) {
		t.Fatalf("%s: %d and %d values, want %d", what, len(user), len(kernel), len(rs))
	}
	for i, r := range rs {
		if r.other {
			if uValid[i] || kValid[i] {
				t.Fatalf("%s row %d (probe other): stacks %q %q, want null", what, i, user[i], kernel[i])
			}
			continue
		}
		for _, s := range []struct {
			name  string
			id    uint64
			got   string
			valid bool
		}{{"ustack", r.user, user[i], uValid[i]}, {"kstack", r.kernel, kernel[i], kValid[i]}} {
			want, ok := folded(s.id, r.pid)
			if s.valid != ok || (want != "?" && s.got != want) {
				t.Fatalf("%s row %d: %s %q (valid %v), want %q (valid %v)", what, i, s.name, s.got, s.valid, want, ok)
			}
			if want == "?" && !strings.HasPrefix(s.got, "[0x") {
				t.Fatalf("%s row %d: pid 8 (unmapped) reads %q, want [0xADDRESS] frames", what, i, s.got)
			}
		}
	}
	for _, m := range []struct {
		mode  replay.StackMode
		vals  []string
		valid []bool
	}{{replay.StacksUser, user, uValid}, {replay.StacksKernel, kernel, kValid}} {
		leaf := func(vs []string, ok []bool) ([]string, []bool) {
			var v2 []string
			var ok2 []bool
			for i, r := range rs {
				if !r.other {
					v2, ok2 = append(v2, vs[i]), append(ok2, ok[i])
				}
			}
			return v2, ok2
		}
		got := countLines(leaf(m.vals, m.valid))
		if want := stacksLines(t, c, m.mode); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s, mode %d: counts by exported stack\n%s\nbpftape stacks\n%s", what, m.mode, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestStacksCSV(t *testing.T) {
	path, rs := writeStacks(t)
	c := open(t, path)
	var b bytes.Buffer
	res, _, err := WriteCSV(c, &b, Options{Format: CSV})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(recs[0], ","); got != "time,cpu,pid,tid,comm,probe,leaf.arg0,leaf.ustack,leaf.kstack,other.v" {
		t.Fatalf("header %q", got)
	}
	var user, kernel []string
	var uValid, kValid []bool
	for _, rec := range recs[1:] {
		user, kernel = append(user, rec[7]), append(kernel, rec[8])
		uValid, kValid = append(uValid, rec[7] != ""), append(kValid, rec[8] != "")
	}
	checkStackCols(t, "csv", c, rs, user, kernel, uValid, kValid)
	// Notes as stacks gives them: pid 8's frames (each unique frame of
	// the stack once), and the frame no symbol covers.
	if len(res.UnresolvedFrames) != 2 || res.UnresolvedFrames["no symbol of /bin/x covers it"] != 1 ||
		res.UnresolvedFrames["the capture has no mappings of process 8"] != uint64(len(stackLeaf)) {
		t.Errorf("unresolved frames: %v", res.UnresolvedFrames)
	}

	// --stack-ids: the ids, unsigned, as the capture holds them.
	b.Reset()
	if _, _, err := WriteCSV(c, &b, Options{Format: CSV, StackIDs: true}); err != nil {
		t.Fatal(err)
	}
	recs, err = csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		want := []string{strconv.FormatUint(r.user, 10), strconv.FormatUint(r.kernel, 10)}
		if r.other {
			want = []string{"", ""}
		}
		if got := recs[i+1][7:9]; got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("--stack-ids row %d: %v, want %v", i, got, want)
		}
	}
}

func TestStacksJSONL(t *testing.T) {
	path, rs := writeStacks(t)
	c := open(t, path)
	for _, ids := range []bool{false, true} {
		var b bytes.Buffer
		if _, _, err := WriteJSONL(c, &b, Options{Format: JSONL, StackIDs: ids}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		var user, kernel []string
		var uValid, kValid []bool
		for i, l := range lines {
			d := json.NewDecoder(strings.NewReader(l))
			d.UseNumber()
			var obj map[string]any
			if err := d.Decode(&obj); err != nil {
				t.Fatalf("line %d %q: %v", i, l, err)
			}
			_, hasU := obj["leaf.ustack"]
			if hasU == rs[i].other {
				t.Fatalf("line %d: %s", i, l)
			}
			if ids {
				if !rs[i].other && (obj["leaf.ustack"] != json.Number(strconv.FormatUint(rs[i].user, 10)) ||
					obj["leaf.kstack"] != json.Number(strconv.FormatUint(rs[i].kernel, 10))) {
					t.Fatalf("--stack-ids line %d: %s", i, l)
				}
				continue
			}
			u, uok := obj["leaf.ustack"].(string)
			k, kok := obj["leaf.kstack"].(string)
			user, kernel = append(user, u), append(kernel, k)
			uValid, kValid = append(uValid, uok), append(kValid, kok)
		}
		if !ids {
			checkStackCols(t, "jsonl", c, rs, user, kernel, uValid, kValid)
		}
	}
}

// stringCol reads a utf8 column of a Parquet file: values and validity.
func stringCol(t *testing.T, path, name string) ([]string, []bool) {
	t.Helper()
	tbl := readParquet(t, path)
	idx := tbl.Schema().FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("%s: no column %s", path, name)
	}
	if ty := tbl.Schema().Field(idx[0]).Type; !arrow.TypeEqual(ty, arrow.BinaryTypes.String) {
		t.Fatalf("%s: column %s is %s, want utf8", path, name, ty)
	}
	var vals []string
	var valid []bool
	for _, ch := range tbl.Column(idx[0]).Data().Chunks() {
		a := ch.(*array.String)
		for i := 0; i < a.Len(); i++ {
			vals, valid = append(vals, a.Value(i)), append(valid, a.IsValid(i))
		}
	}
	return vals, valid
}

func TestStacksParquet(t *testing.T) {
	path, rs := writeStacks(t)
	c := open(t, path)
	dir := t.TempDir()
	write := func(name string, o Options) string {
		out := filepath.Join(dir, name)
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := WriteParquet(c, f, o); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	pq := write("frames.parquet", Options{Format: Parquet})
	user, uValid := stringCol(t, pq, "leaf.ustack")
	kernel, kValid := stringCol(t, pq, "leaf.kstack")
	checkStackCols(t, "parquet", c, rs, user, kernel, uValid, kValid)

	// --stack-ids: uint64 columns of ids.
	tbl := readParquet(t, write("ids.parquet", Options{Format: Parquet, StackIDs: true}))
	idx := tbl.Schema().FieldIndices("leaf.ustack")[0]
	if ty := tbl.Schema().Field(idx).Type; !arrow.TypeEqual(ty, arrow.PrimitiveTypes.Uint64) {
		t.Fatalf("--stack-ids: leaf.ustack is %s, want uint64", ty)
	}
	i := 0
	for _, ch := range tbl.Column(idx).Data().Chunks() {
		a := ch.(*array.Uint64)
		for k := 0; k < a.Len(); k, i = k+1, i+1 {
			if a.IsValid(k) == rs[i].other || (!rs[i].other && a.Value(k) != rs[i].user) {
				t.Fatalf("--stack-ids row %d: %d (valid %v), want %d", i, a.Value(k), a.IsValid(k), rs[i].user)
			}
		}
	}

	// Partitioned: probe leaf's part holds the frames of its rows.
	res, _, err := WritePartitioned(c, filepath.Join(dir, "fleet"), Options{Format: Parquet})
	if err != nil {
		t.Fatal(err)
	}
	if res.UnresolvedFrames["no symbol of /bin/x covers it"] != 1 {
		t.Errorf("partitioned: unresolved frames %v", res.UnresolvedFrames)
	}
	part := filepath.Join(dir, "fleet", "host=h1", "probe=leaf", "part-0.parquet")
	user, uValid = stringCol(t, part, "leaf.ustack")
	kernel, kValid = stringCol(t, part, "leaf.kstack")
	var leafRows []stackRow
	for _, r := range rs {
		if !r.other {
			leafRows = append(leafRows, r)
		}
	}
	checkStackCols(t, "partitioned", c, leafRows, user, kernel, uValid, kValid)
}
