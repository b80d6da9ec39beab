package record

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
	"github.com/bpftape/bpftape/record/elfsym"
)

// stripTorture makes a stripped copy of the torture executable (no .symtab:
// its functions are in no symbol table it keeps) with a .gnu_debuglink, and
// puts its debug file under a build-id tree in a directory of its own. It
// returns the copy and the tree's root.
func stripTorture(t *testing.T, b *torture) (bin, tree string) {
	t.Helper()
	for _, tool := range []string{"objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: no %s", tool)
		}
	}
	dir := t.TempDir()
	bin = filepath.Join(dir, "torture")
	debug := filepath.Join(dir, "torture.debug")
	for _, args := range [][]string{
		{"objcopy", "--only-keep-debug", b.exe, debug},
		{"strip", "--strip-all", "-o", bin, b.exe},
		{"objcopy", "--add-gnu-debuglink=" + debug, bin},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	id, err := elfsym.BuildID(bin)
	if err != nil || len(id) < 3 {
		t.Fatalf("build id %q, %v", id, err)
	}
	tree = t.TempDir()
	dst := filepath.Join(tree, ".build-id", id[:2], id[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(debug, dst); err != nil {
		t.Fatal(err)
	}
	return bin, tree
}

// TestStrippedDebugFile records uprobes on functions of a stripped binary,
// by name, SYMBOL+OFFSET and address, whose symbols only its separate debug
// file has (found by build id under --debug-dir), and checks every value;
// a debug file of another build in its place is refused with a clear error.
func TestStrippedDebugFile(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	b := buildTorture(t, "gcc")
	bin, tree := stripTorture(t, b)
	addr := symbolAddr(t, b.exe, "torture_func")
	probes := []tortureProbe{
		{name: "func", truth: "torture_func", args: []int{1, 2}, spec: "func=u:" + bin + ":torture_func(arg0,arg1)"},
		{name: "func_off", truth: "torture_func", args: []int{1, 2}, spec: "func_off=u:" + bin + ":torture_func+1(arg0,arg1)"},
		{name: "func_addr", truth: "torture_func", args: []int{1, 2}, spec: fmt.Sprintf("func_addr=u:%s:%#x(arg0,arg1)", bin, addr)},
		{name: "static", truth: "torture_static", args: []int{1}, spec: "static=u:" + bin + ":torture_static(arg0)"},
	}
	var specs []string
	for _, p := range probes {
		specs = append(specs, p.spec)
	}

	// Without the debug directory the symbols are not found.
	_, err, _ := record(t, Options{Duration: 1, Probes: specs[:1]})
	if err == nil || !strings.Contains(err.Error(), "stripped") || !strings.Contains(err.Error(), "no debug file") {
		t.Errorf("without --debug-dir: %v", err)
	}

	s, out := mustRecord(t, Options{Command: []string{bin, tortureIters, tortureSeed}, Probes: specs, DebugDirs: []string{tree}})
	if s.ExitCode != 0 {
		t.Fatalf("exit %d", s.ExitCode)
	}
	truth := map[string][][]string{}
	for _, l := range lines(out) {
		if l[0] == "F" {
			truth[l[1]] = append(truth[l[1]], l[2:])
		}
	}
	c := readCapture(t, s.Output)
	checkTorture(t, c, s, truth, probes, s.TargetPID)
	for _, p := range probes {
		if f := c.meta.Extra["debug_file:"+p.name]; !strings.HasPrefix(f, tree) {
			t.Errorf("%s: capture says debug file %q", p.name, f)
		}
		if cp := c.probe(t, p.name); cp.Target != bin || cp.BuildID == "" {
			t.Errorf("%s: target %s build id %q", p.name, cp.Target, cp.BuildID)
		}
	}

	// torture_func+2 is inside mov %rsp,%rbp.
	_, err, _ = record(t, Options{Duration: 1, DebugDirs: []string{tree}, Probes: []string{"u:" + bin + ":torture_func+2"}})
	if err == nil || !strings.Contains(err.Error(), "not at an instruction boundary") || !strings.Contains(err.Error(), "torture_func+0x1 or torture_func+0x4") {
		t.Errorf("torture_func+2: %v", err)
	}
	_, err, _ = record(t, Options{Duration: 1, DebugDirs: []string{tree}, Probes: []string{"ur:" + bin + ":torture_func+1"}})
	if err == nil || !strings.Contains(err.Error(), "a uretprobe goes on a function's entry") {
		t.Errorf("uretprobe at torture_func+1: %v", err)
	}

	// Another build's debug file under this build's id.
	other := buildTorture(t, "gcc")
	otherBin, otherTree := stripTorture(t, other)
	_ = otherBin
	id, _ := elfsym.BuildID(bin)
	oid, _ := elfsym.BuildID(other.exe)
	if id == oid {
		t.Fatal("two builds with one build id")
	}
	dst := filepath.Join(tree, ".build-id", id[:2], id[2:]+".debug")
	if err := os.Rename(filepath.Join(otherTree, ".build-id", oid[:2], oid[2:]+".debug"), dst); err != nil {
		t.Fatal(err)
	}
	_, err, _ = record(t, Options{Duration: 1, DebugDirs: []string{tree}, Probes: specs[:1]})
	for _, w := range []string{`no function "torture_func"`, "is from a different build", "has build id " + oid, id} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("mismatching debug file: error %v does not say %q", err, w)
		}
	}
}
