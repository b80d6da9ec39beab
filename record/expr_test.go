package record

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/record/elfsym"
	"github.com/bpftape/bpftape/record/resolve"
)

// exprsBuild is a build of testdata/exprs/exprs.c: the binary to probe and
// the --debug-dir its debug file is in ("" when it has its own DWARF).
type exprsBuild struct{ exe, debugDir string }

func buildExprs(t *testing.T) map[string]exprsBuild {
	t.Helper()
	builds := map[string]exprsBuild{
		"O0": {exe: testutil.BuildC(t, "../testdata/exprs/exprs.c", "exprs-O0", "-O0", "-g")},
		"O2": {exe: testutil.BuildC(t, "../testdata/exprs/exprs.c", "exprs-O2", "-O2", "-g")},
	}
	// A stripped copy of the -O2 build, whose debug file is under a
	// build-id tree.
	dir := t.TempDir()
	bin, debug := filepath.Join(dir, "exprs"), filepath.Join(dir, "exprs.debug")
	for _, args := range [][]string{
		{"objcopy", "--only-keep-debug", builds["O2"].exe, debug},
		{"strip", "--strip-all", "-o", bin, builds["O2"].exe},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	id, err := elfsym.BuildID(bin)
	if err != nil || len(id) < 3 {
		t.Fatalf("build id %q, %v", id, err)
	}
	tree := t.TempDir()
	dst := filepath.Join(tree, ".build-id", id[:2], id[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(debug, dst); err != nil {
		t.Fatal(err)
	}
	builds["stripped"] = exprsBuild{exe: bin, debugDir: tree}
	return builds
}

// TestExpressions records exprs' rx() by parameter names and through
// pointer chains, built at -O0, at -O2 and stripped with a debug file, and
// checks every value against the workload's own account, including the
// requests whose next pointer cannot be read.
func TestExpressions(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	for name, b := range buildExprs(t) {
		t.Run(name, func(t *testing.T) { testExpressions(t, b) })
	}
}

func testExpressions(t *testing.T, b exprsBuild) {
	const n = 30
	o := Options{
		RingSize: 8 << 20,
		Command:  []string{b.exe, "30"},
		Probes: []string{
			"dflt=u:" + b.exe + ":rx",
			"e=u:" + b.exe + ":rx(size, delta:s64, req->id, req->hdr.kind, req->hdr.size, req->next->id, str(req->name), str(req->tag), req->vals[1], str(label), *(u32 *)(arg0 + 12))",
			"ur:" + b.exe + ":rx",
			"big=u:" + b.exe + ":rx(size, req->hdr.size)/size >= 4096 && req->hdr.size != 901/",
		},
	}
	if b.debugDir != "" {
		o.DebugDirs = []string{b.debugDir}
	}
	s, out := mustRecord(t, o)
	c := readCapture(t, s.Output)
	var truth [][]string
	for _, l := range lines(out) {
		if len(l) == 13 && l[0] == "rx" {
			truth = append(truth, l)
		}
	}
	if len(truth) != n {
		t.Fatalf("workload printed %d rx lines, want %d:\n%s", len(truth), n, out)
	}
	for probe, fields := range map[string]map[string]format.Type{
		"dflt": {"req": format.Uint64, "size": format.Uint32, "delta": format.Int16, "label": format.Uint64},
		"e": {"size": format.Uint32, "delta": format.Int64, "req->id": format.Int64, "req->hdr.kind": format.Uint16,
			"req->hdr.size": format.Uint32, "req->next->id": format.Int64, "req->name": format.String, "req->tag": format.String,
			"req->vals[1]": format.Int32, "label": format.String, "*(u32 *)(arg0 + 12)": format.Uint32},
		"rx:return": {"retval": format.Int64},
	} {
		if got := len(c.probe(t, probe).Fields); got != len(fields) {
			t.Errorf("%s: %d fields %+v, want %d", probe, got, c.probe(t, probe).Fields, len(fields))
		}
		for f, typ := range fields {
			if got := c.fieldType(t, probe, f); got != typ {
				t.Errorf("%s.%s is %v, want %v", probe, f, got, typ)
			}
		}
	}
	rows, ret, big := c.rows["e"], c.rows["rx:return"], c.rows["big"]
	if len(rows) != n || len(ret) != n || len(c.rows["dflt"]) != n {
		t.Fatalf("%d, %d and %d events, want %d", len(rows), len(ret), len(c.rows["dflt"]), n)
	}
	nbig := 0
	for i, l := range truth {
		r := rows[i]
		name := l[8]
		if len(name) > bpf.StrSlotSize-1 {
			name = name[:bpf.StrSlotSize-1]
		}
		ints := map[string]string{"size": l[2], "delta": l[3], "req->id": l[1], "req->hdr.kind": l[5], "req->hdr.size": l[6],
			"req->next->id": l[7], "req->vals[1]": l[10], "*(u32 *)(arg0 + 12)": l[6]}
		for f, want := range ints {
			if got := r.ints[f]; got != testutil.Atoi(t, want) {
				t.Errorf("call %d: %s = %d, want %s", i, f, got, want)
			}
		}
		for f, want := range map[string]string{"req->name": name, "req->tag": l[9], "label": l[4]} {
			if got := r.strs[f]; got != want {
				t.Errorf("call %d: %s = %q, want %q", i, f, got, want)
			}
		}
		d := c.rows["dflt"][i]
		if d.ints["size"] != r.ints["size"] || d.ints["delta"] != r.ints["delta"] || d.ints["req"] == 0 || d.ints["label"] == 0 {
			t.Errorf("call %d: defaults %v", i, d.ints)
		}
		if got := ret[i].ints["retval"]; got != testutil.Atoi(t, l[12]) {
			t.Errorf("call %d: retval %d, want %s", i, got, l[12])
		}
		if testutil.Atoi(t, l[2]) >= 4096 && l[6] != "901" {
			if nbig >= len(big) || big[nbig].ints["req->hdr.size"] != testutil.Atoi(t, l[6]) {
				t.Errorf("call %d: not the next event of big", i)
			}
			nbig++
		}
	}
	if nbig != len(big) || nbig == 0 {
		t.Errorf("big: %d events, want %d", len(big), nbig)
	}
	if s.ReadFaults == 0 {
		t.Errorf("no read faults: the NULL and unmapped next pointers should have given some")
	}
	t.Logf("%d calls checked; %d read faults; big kept %d", n, s.ReadFaults, nbig)
}

// TestExpressionErrors checks the errors of fields that cannot be
// resolved: each is one line, wraps ErrExpr, and says why.
func TestExpressionErrors(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures) // Record checks privileges first
	b := buildExprs(t)
	exe := b["O2"].exe
	nodebug := testutil.BuildC(t, "../testdata/exprs/exprs.c", "exprs-nodebug", "-O2", "-g0")
	for probe, want := range map[string]string{
		"u:" + exe + ":rx(sizee)":                                 "rx has no parameter sizee",
		"u:" + exe + ":rx(req->idd)":                              "no member",
		"u:" + exe + ":rx(req->hdr)":                              "name one of its members",
		"u:" + exe + ":rx(size->x)":                               "",
		"u:" + exe + ":rx(str(size))":                             "not a",
		"u:" + exe + ":rx(str(req))":                              "does not point to chars",
		"u:" + exe + ":rx(req.id)":                                "",
		"u:" + exe + ":rx+4(size)":                                "only at the function's entry",
		"u:" + exe + ":rx(req->next->next->next->next->next->id)": "",
		"u:" + nodebug + ":rx(req->id)":                           "no DWARF",
		"u:" + nodebug + ":rx(arg0->id)":                          "no DWARF",
		"u:" + exe + ":rx((struct nosuch *)arg0->x)":              "a cast or + applies to the parameter itself",
		"u:" + exe + ":rx(((struct nosuch *)arg0)->x)":            "nosuch",
	} {
		_, err, _ := record(t, Options{Probes: []string{probe}, Duration: 1, Command: []string{"true"}})
		if err == nil || !errors.Is(err, resolve.ErrExpr) && !strings.Contains(err.Error(), "cannot") {
			t.Errorf("%s: error %v, want ErrExpr", probe, err)
			continue
		}
		if strings.Contains(err.Error(), "\n") || want != "" && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q, want one line saying %q", probe, err, want)
		}
		t.Logf("%s: %v", probe, err)
	}
}

// TestUprobeExprUserMemory checks that a uprobe's expressions read user
// memory only (bpf.LeafUser): the traced program sets the pointers, and a
// kernel address in one must fault, not be copied into the capture. A
// kprobe's read either memory, by address.
func TestUprobeExprUserMemory(t *testing.T) {
	exe := buildExprs(t)["O2"].exe
	spec, err := probespec.Parse("u:" + exe + ":rx(size, req->id, str(req->name))")
	if err != nil {
		t.Fatal(err)
	}
	r := &resolve.Resolver{Warn: func(string) {}}
	p, err := r.Resolve(spec, "rx")
	if err != nil {
		t.Fatal(err)
	}
	args := p.Atts[0].Spec.Args
	if args[0].Leaf != bpf.LeafNone || args[0].LeafFlags != 0 {
		t.Errorf("size: %+v, want a plain register", args[0])
	}
	for i := 1; i <= 2; i++ {
		if args[i].Leaf == bpf.LeafNone || args[i].LeafFlags&bpf.LeafUser == 0 {
			t.Errorf("field %d: %+v, want an expression with LeafUser", i, args[i])
		}
	}
	if err := p.Atts[0].Spec.Validate(); err != nil {
		t.Error(err)
	}
}
