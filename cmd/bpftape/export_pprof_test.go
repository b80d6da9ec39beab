//go:build linux && amd64

package main

import (
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/internal/testutil"
)

// TestExportPprof records the chain workload's leaf with its user stack
// and its return, exports pprof profiles of it and reads them with go tool
// pprof: the stacks and counts bpftape stacks prints, the build id and
// mapping of the binary, function names after the binary is gone, the
// calls' time weighted by latency as bpftape latency sums it, and a
// profile compared with another (-diff_base).
func TestExportPprof(t *testing.T) {
	testutil.RequireBPF(t, bpf.CheckFeatures)
	dir := t.TempDir()
	exe := buildChain(t, dir)
	const n = 3000
	capPath := filepath.Join(dir, "leaf.arrow")
	if _, stderr, code := runCLI(t, "record", "-o", capPath, "-c", fmt.Sprintf("%s %d", exe, n),
		fmt.Sprintf("leaf=u:%s:leaf(ustack)", exe), fmt.Sprintf("ur:%s:leaf", exe)); code != 0 || !strings.Contains(stderr, " 0 lost") {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	stacks := func(args ...string) string {
		t.Helper()
		out, stderr, code := runCLI(t, append([]string{"stacks", capPath, "leaf"}, args...)...)
		if code != 0 {
			t.Fatalf("stacks %v: exit %d\n%s", args, code, stderr)
		}
		return out
	}
	export := func(out string, args ...string) {
		t.Helper()
		_, stderr, code := runCLI(t, append([]string{"export", capPath, "-o", out}, args...)...)
		if code != 0 || !strings.Contains(stderr, "bpftape export: wrote a profile of ") {
			t.Fatalf("export %v: exit %d\n%s", args, code, stderr)
		}
	}

	// The format from the extension; the stacks of bpftape stacks.
	prof := filepath.Join(dir, "leaf.pb.gz")
	export(prof)
	raw := samePprofStacks(t, prof, 0, stacks())
	if strings.Join(raw.types, " ") != "samples/count" {
		t.Errorf("sample types %v, want samples/count", raw.types)
	}
	if v := raw.stacks["main;top;mid;leaf"]; len(v) != 1 || v[0] != n {
		t.Errorf("main;top;mid;leaf: %v, want %d", v, n)
	}
	// The binary's mapping first (pprof names the profile after it), with
	// its build id, every frame resolved.
	if id := buildID(t, exe); len(raw.mappings) == 0 || !strings.Contains(raw.mappings[0], " "+exe+" "+id) || !strings.HasSuffix(raw.mappings[0], "[FN]") {
		t.Errorf("first mapping not %s with build id %s and functions:\n%s", exe, id, strings.Join(raw.mappings, "\n"))
	}
	// Labels, and the names with the binary gone.
	if err := os.Remove(exe); err != nil {
		t.Fatal(err)
	}
	top := goPprof(t, "-top", "-tagshow=comm", prof)
	for _, want := range []string{"Total samples = " + strconv.Itoa(n), " leaf\n", " mid\n", " top\n", " main\n"} {
		if !strings.Contains(top, want) {
			t.Errorf("go tool pprof -top without the binary lacks %q:\n%s", want, top)
		}
	}
	tags := goPprof(t, "-tags", prof)
	for _, want := range []string{"comm: Total " + strconv.Itoa(n), "chain", "probe: Total", "leaf", "pid: Total", "tid: Total"} {
		if !strings.Contains(tags, want) {
			t.Errorf("go tool pprof -tags lacks %q:\n%s", want, tags)
		}
	}

	// --by puts the key at the root, as in bpftape stacks.
	byComm := filepath.Join(dir, "by.pprof")
	export(byComm, "--by", "comm")
	samePprofStacks(t, byComm, 0, stacks("--by", "comm"))

	// Weighted by the calls' time, which bpftape latency sums.
	lat := filepath.Join(dir, "lat.pb.gz")
	export(lat, "--weight", "latency", "--probe", "leaf")
	raw = readPprofRaw(t, lat)
	if strings.Join(raw.types, " ") != "calls/count latency/nanoseconds" {
		t.Errorf("sample types %v, want calls/count latency/nanoseconds", raw.types)
	}
	out, stderr, code := runCLI(t, "latency", capPath, "leaf", "leaf:return", "--json")
	if code != 0 {
		t.Fatalf("latency: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Calls int64 `json:"calls"`
		Stats struct {
			Sum string `json:"sum"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("latency --json: %v\n%s", err, out)
	}
	if v := raw.stacks["main;top;mid;leaf"]; len(v) != 2 || v[0] != doc.Calls || strconv.FormatInt(v[1], 10) != doc.Stats.Sum || doc.Calls != n {
		t.Errorf("latency profile main;top;mid;leaf %v, want %d calls of %s ns in all (bpftape latency)", v, doc.Calls, doc.Stats.Sum)
	}
	pair := filepath.Join(dir, "pair.pb.gz")
	export(pair, "--weight", "latency", "--pair", "leaf,leaf:return")
	if got := readPprofRaw(t, pair); fmt.Sprint(got.stacks) != fmt.Sprint(raw.stacks) {
		t.Errorf("--pair leaf,leaf:return gave %v, --probe leaf %v", got.stacks, raw.stacks)
	}

	// The first half of the events against them all: -diff_base
	// subtracts the base.
	out, stderr, code = runCLI(t, "info", "--json", capPath)
	var info struct {
		Meta struct {
			StartBoot int64 `json:"start_boot_ns"`
		} `json:"meta"`
		First int64 `json:"first_event_ns"`
		Last  int64 `json:"last_event_ns"`
	}
	if err := json.Unmarshal([]byte(out), &info); code != 0 || err != nil {
		t.Fatalf("info --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	to := fmt.Sprintf("%dns", (info.First+info.Last)/2-info.Meta.StartBoot)
	half := filepath.Join(dir, "half.pb.gz")
	export(half, "--to", to)
	partial := folded(t, stacks("--to", to))["main;top;mid;leaf"]
	if partial <= 0 || partial >= n {
		t.Fatalf("--to %s kept %d of %d events", to, partial, n)
	}
	samePprofStacks(t, half, 0, stacks("--to", to))
	diff := goPprof(t, "-top", "-diff_base", half, prof)
	if want := fmt.Sprintf("accounting for %d, ", n-partial); !strings.Contains(diff, want) {
		t.Errorf("-diff_base: want %q, the events after --to %s:\n%s", want, to, diff)
	}

	// Bad requests: one line, exit 2.
	for _, args := range [][]string{
		{"-f", "pprof", "--weight", "latency"},
		{"-f", "pprof", "--weight", "wall"},
		{"-f", "pprof", "--lost", "keep"},
		{"-f", "csv", "--probe", "leaf"},
		{"-f", "pprof", "--probe", "leaf:return"},
		{"-f", "pprof", "--pair", "leaf"},
	} {
		_, stderr, code := runCLI(t, append([]string{"export", capPath, "-o", filepath.Join(dir, "bad.out")}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("export %v: exit %d, want 2 with one line:\n%s", args, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.out")); err == nil {
		t.Errorf("a refused export left its -o file")
	}
}

// buildID returns the GNU build id of the ELF file at path, in hex.
func buildID(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		t.Fatalf("%s has no build id", path)
	}
	data, err := s.Data()
	if err != nil || len(data) < 16 {
		t.Fatalf("%s: build id note: %v", path, err)
	}
	// namesz, descsz, type, "GNU\0", then the id.
	return hex.EncodeToString(data[16:])
}
