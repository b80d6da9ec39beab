package ctypes

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bpftape/bpftape/record/elfsym"
)

var (
	workDir  string
	builds   = map[string]string{}
	buildsMu sync.Mutex
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ctypes-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles testdata/structs.c and structs2.c with cc -g and opt
// once per test binary, and returns the binary's path.
func build(t testing.TB, opt string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no cc")
	}
	buildsMu.Lock()
	defer buildsMu.Unlock()
	if p, ok := builds[opt]; ok {
		return p
	}
	dir := filepath.Join(workDir, "build"+opt)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "structs")
	args := []string{"-g", opt, "-Wall", "-Wl,--build-id", "-o", out, "testdata/structs.c", "testdata/structs2.c"}
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("cc %v: %v\n%s", args, err, b)
	}
	builds[opt] = out
	return out
}

// stripped makes a stripped copy of bin with its debug file, found by
// .gnu_debuglink next to it (byLink) or only under dir/.build-id (not
// byLink); it returns the copy and the debug directory to search.
func stripped(t *testing.T, bin string, byLink bool) (string, string) {
	t.Helper()
	return strippedWith(t, "", bin, byLink)
}

// strippedWith is stripped with the binutils of a target: prefix
// "aarch64-linux-gnu-" for an arm64 binary.
func strippedWith(t *testing.T, prefix, bin string, byLink bool) (string, string) {
	t.Helper()
	objcopy, strip := prefix+"objcopy", prefix+"strip"
	for _, tool := range []string{objcopy, strip} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	dir := t.TempDir()
	out, debug := filepath.Join(dir, "structs"), filepath.Join(dir, "structs.debug")
	run := func(name string, args ...string) {
		t.Helper()
		if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, b)
		}
	}
	run(objcopy, "--only-keep-debug", "--compress-debug-sections=zlib", bin, debug)
	run(strip, "--strip-all", "-o", out, bin)
	debugDir := filepath.Join(dir, "debug")
	if byLink {
		run(objcopy, "--add-gnu-debuglink="+debug, out)
		return out, debugDir
	}
	id, err := elfsym.BuildID(out)
	if err != nil || len(id) < 3 {
		t.Fatalf("build id of %s: %q, %v", out, id, err)
	}
	p := filepath.Join(debugDir, ".build-id", id[:2], id[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(debug, p); err != nil {
		t.Fatal(err)
	}
	return out, debugDir
}

// layoutLine is one line of ./structs --layout: offsetof and sizeof of a
// member path of a struct.
type layoutLine struct {
	strct, path string
	off, size   int64
}

// layout runs bin --layout.
func layout(t *testing.T, bin string) (lines []layoutLine, sizes map[string]int64) {
	t.Helper()
	out, err := exec.Command(bin, "--layout").Output()
	if err != nil {
		t.Fatalf("%s --layout: %v", bin, err)
	}
	sizes = map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "sizeof" {
			sizes[f[1]], _ = strconv.ParseInt(f[2], 10, 64)
			continue
		}
		if len(f) != 4 {
			t.Fatalf("layout line %q", sc.Text())
		}
		l := layoutLine{strct: f[0], path: f[1]}
		l.off, _ = strconv.ParseInt(f[2], 10, 64)
		l.size, _ = strconv.ParseInt(f[3], 10, 64)
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		t.Fatalf("%s --layout printed nothing", bin)
	}
	return lines, sizes
}

// parsePath turns "hdr.size" or "arr[2]" into steps from a pointer to the
// struct: ->hdr.size, ->arr[2].
func parsePath(t *testing.T, s string) []Step {
	t.Helper()
	var steps []Step
	for i, part := range strings.Split(s, ".") {
		name, idx, hasIdx := strings.Cut(part, "[")
		if i == 0 {
			steps = append(steps, Arrow(name))
		} else {
			steps = append(steps, Dot(name))
		}
		if hasIdx {
			n, err := strconv.ParseInt(strings.TrimSuffix(idx, "]"), 10, 64)
			if err != nil {
				t.Fatalf("path %q: %v", s, err)
			}
			steps = append(steps, Index(n))
		}
	}
	return steps
}
