package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/bpftape/bpftape"

// floors places every package of the module on a floor by the longest
// matching path prefix (a prefix matches itself and everything under it). A
// package may import packages on its own floor or below, never above.
//
//	0  Vocabulary and mechanism that knows nothing of recording or analysis:
//	   format (the capture file and its Arrow IPC), internal/* (helpers shared
//	   by several packages), probespec (the probe-argument language, read by
//	   the recorder and by replay's redaction) and bpf (the BPF program and its
//	   loader).
//	1  The two halves of the tool: record (attaching probes and writing a
//	   capture) and replay (reading one and analysing it). They share floor 0
//	   and must not import each other: the analyser must build and run on a
//	   machine that cannot record, and the recorder must not grow analysis.
//	2  Programs: cmd/bpftape, which wires flags to floor 1, and the benchmark
//	   driver.
//
// A new top-level package fails the test until it is given a floor here.
var floors = []struct {
	prefix string
	floor  int
}{
	{"format", 0},
	{"internal", 0},
	{"probespec", 0},
	{"bpf", 0},
	{"record", 1},
	{"replay", 1},
	{"cmd", 2},
	{"bench", 2},
}

// rooms orders the packages inside the record tree, which is one floor, by
// the longest matching path prefix as floors does: a package of the tree
// may import packages of the tree in its own room or below, never above.
//
//	0  Leaves: suggest (close names for error messages), kallsyms
//	   (reading /proc/kallsyms) and sideband (the kernel's perf records
//	   of mappings, execs and exits).
//	1  Readers of what is on disk: elfsym (ELF symbols, debug files) and
//	   tracefs (tracepoints, traceable functions).
//	2  Helpers built on them: usdt (USDT notes), ctypes (DWARF and BTF
//	   types) and stacktable (symbolising stacks for the capture).
//	3  host: what the host offers (privileges, BPF features, doctor).
//	4  resolve: probe specs to probes, listing what can be probed.
//	5  record itself: the recording session.
//
// A new package under record fails the test until it is given a room here.
var rooms = []struct {
	prefix string
	room   int
}{
	{"record/suggest", 0},
	{"record/kallsyms", 0},
	{"record/sideband", 0},
	{"record/elfsym", 1},
	{"record/tracefs", 1},
	{"record/usdt", 2},
	{"record/ctypes", 2},
	{"record/stacktable", 2},
	{"record/host", 3},
	{"record/resolve", 4},
	{"record", 5},
}

// roomTree is the tree that rooms orders.
const roomTree = "record"

// apart lists trees that share a floor but must not import each other, in
// either direction.
var apart = [][2]string{
	{"record", "replay"},
}

// testOnly lists the trees of test fixtures: the helpers that import package
// testing and the forged captures. Only tests, and other packages of the
// same tree (a fixture's generator), may import them; product code never.
var testOnly = []string{"internal/testutil"}

// fixture returns the testOnly tree that holds path, or "".
func fixture(path string) string {
	for _, tree := range testOnly {
		if under(path, tree) {
			return tree
		}
	}
	return ""
}

// pkg is what `go list -json` says about one package.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// listPackages runs `go list -json` over the whole module, tests included.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

// rel returns path relative to the module, and whether it is in the module.
func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// under reports whether the module-relative path is prefix or inside it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// floorOf returns the floor of a module-relative path, or -1 if no entry of
// floors matches it.
func floorOf(path string) int {
	best, floor := -1, -1
	for _, f := range floors {
		if under(path, f.prefix) && len(f.prefix) > best {
			best, floor = len(f.prefix), f.floor
		}
	}
	return floor
}

// roomOf returns the room of a module-relative path inside roomTree and
// the prefix that gave it, or -1 and "" if no entry of rooms matches it.
func roomOf(path string) (room int, prefix string) {
	best, room := -1, -1
	for _, r := range rooms {
		if under(path, r.prefix) && len(r.prefix) > best {
			best, room, prefix = len(r.prefix), r.room, r.prefix
		}
	}
	return room, prefix
}

// violation returns why importer may not import imported (both
// module-relative), or "" if it may.
func violation(importer, imported string) string {
	fi, fd := floorOf(importer), floorOf(imported)
	if fd > fi {
		return "imports a package on a higher floor"
	}
	if under(importer, roomTree) && under(imported, roomTree) {
		ri, _ := roomOf(importer)
		rd, _ := roomOf(imported)
		if rd > ri {
			return "imports a package in a higher room of " + roomTree
		}
	}
	for _, a := range apart {
		if (under(importer, a[0]) && under(imported, a[1])) || (under(importer, a[1]) && under(imported, a[0])) {
			return a[0] + " and " + a[1] + " must not import each other"
		}
	}
	return ""
}

func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	for _, p := range pkgs {
		from, ok := rel(p.ImportPath)
		if !ok {
			t.Errorf("go list returned %s, outside the module", p.ImportPath)
			continue
		}
		if floorOf(from) < 0 {
			t.Errorf("%s has no floor: add it to the floors table", from)
			continue
		}
		if _, prefix := roomOf(from); under(from, roomTree) && prefix == roomTree && from != roomTree {
			t.Errorf("%s has no room: add it to the rooms table", from)
		}
		for kind, imports := range map[string][]string{"": p.Imports, " (test)": append(p.TestImports, p.XTestImports...)} {
			for _, imp := range imports {
				to, ok := rel(imp)
				if !ok || to == from {
					continue
				}
				if tree := fixture(to); kind == "" && tree != "" && !under(from, tree) {
					t.Errorf("%s imports %s, a test fixture that only tests may import", from, to)
				}
				if floorOf(to) < 0 {
					t.Errorf("%s%s imports %s, which has no floor", from, kind, to)
					continue
				}
				if why := violation(from, to); why != "" {
					t.Errorf("%s (floor %d)%s imports %s (floor %d): %s", from, floorOf(from), kind, to, floorOf(to), why)
				}
			}
		}
	}
}

// TestReplayDeps checks the promise directly: building any replay
// package, with all its dependencies, pulls in nothing from record.
func TestReplayDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/replay/...").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, d := range deps {
		if r, ok := rel(d); ok && under(r, "record") {
			t.Errorf("replay depends on %s", d)
		}
	}
}

// TestViolation checks the rule itself on made-up imports, so that a
// floors table that matched nothing could not pass TestLayering vacuously.
func TestViolation(t *testing.T) {
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"cmd/bpftape", "record", true},
		{"record", "format/arrowipc", true},
		{"replay/export", "probespec", true},
		{"internal/testutil/hostile", "format", true},
		{"record/usdt", "record/suggest", true},
		{"format", "record", false},
		{"probespec", "replay/hist", false},
		{"replay/export", "record/probespec", false},
		{"record", "replay", false},
		{"replay/report", "record/tracefs", false},
		{"record", "cmd/bpftape", false},
		{"record", "record/resolve", true},
		{"record", "record/host", true},
		{"record/resolve", "record/host", true},
		{"record/resolve", "record/usdt", true},
		{"record/host", "record/tracefs", true},
		{"record/usdt/internal/genseeds", "record/usdt", true},
		{"record/host", "record/resolve", false},
		{"record/host", "record", false},
		{"record/resolve", "record", false},
		{"record/elfsym", "record/host", false},
		{"record/stacktable", "record/resolve", false},
		{"record/suggest", "record/elfsym", false},
	} {
		if got := violation(c.from, c.to) == ""; got != c.ok {
			t.Errorf("%s importing %s: allowed = %v, want %v", c.from, c.to, got, c.ok)
		}
	}
	if floorOf("formatx") != -1 {
		t.Error("prefix format matched formatx")
	}
	if r, _ := roomOf("record/hostx"); r != 5 {
		t.Errorf("record/hostx is in room %d, want record's own (5): prefix record/host matched it", r)
	}
}

// TestFixture checks which paths are test fixtures.
func TestFixture(t *testing.T) {
	for path, want := range map[string]string{
		"internal/testutil":             "internal/testutil",
		"internal/testutil/hostile":     "internal/testutil",
		"internal/testutil/hostile/gen": "internal/testutil",
		"internal/testutils":            "",
		"internal/textsafe":             "",
		"format/formattest":             "",
	} {
		if got := fixture(path); got != want {
			t.Errorf("fixture(%q) = %q, want %q", path, got, want)
		}
	}
}
