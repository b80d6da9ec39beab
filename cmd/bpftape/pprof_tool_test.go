package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/internal/testutil"
)

// goPprof runs go tool pprof (it ships with Go and works offline) with
// args, with no symbolization from this machine's binaries or a server,
// and returns its standard output.
func goPprof(t *testing.T, args ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		if _, serr := os.Stat("/usr/local/go/bin/go"); serr != nil {
			testutil.Unavailable(t, "no go command for go tool pprof: %v", err)
		}
		goBin = "/usr/local/go/bin/go"
	}
	cmd := exec.Command(goBin, append([]string{"tool", "pprof"}, args...)...)
	// Nothing to find locally: the profile must name its functions itself.
	cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH="+t.TempDir(), "PPROF_TMPDIR="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool pprof %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// pprofRaw is what go tool pprof -raw prints of a profile: its sample
// types, and per stack (functions root first, joined by ';' as folded
// stacks are) the
// sum of each value over its samples. A location without a function (a
// frame bpftape did not resolve) reads "?".
type pprofRaw struct {
	types    []string
	stacks   map[string][]int64
	mappings []string // the mapping lines, as printed
}

var (
	rawLocation = regexp.MustCompile(`^\s+(\d+): (0x[0-9a-f]+) (?:M=\d+ )?(.*?)\s*$`)
	// unresolvedFrame is how bpftape stacks names a frame it did not
	// resolve: [OBJECT+0xOFFSET] (the object may be a bracketed name, as
	// in [[vdso]+0x79d]) or [0xADDRESS], "_[k]" after a kernel frame when
	// both stacks show.
	unresolvedFrame = regexp.MustCompile(`^\[(0x[0-9a-f]+|(\[[^\]]*\]|[^\[\]]*)\+0x[0-9a-f]+)\](_\[k\])?$`)
	rawFunction     = regexp.MustCompile(`^(.*) \S*:-?\d+:-?\d+ s=\d+`)
	rawSample       = regexp.MustCompile(`^\s+([-\d ]+): ([\d ]+)$`)
)

// readPprofRaw runs go tool pprof -raw on path and parses it.
func readPprofRaw(t *testing.T, path string) pprofRaw {
	t.Helper()
	// -symbolize=none: pprof would otherwise name a frame bpftape did not
	// resolve from its mapping's file, when that is still on disk.
	out := goPprof(t, "-raw", "-symbolize=none", path)
	r := pprofRaw{stacks: map[string][]int64{}}
	type sample struct {
		values []int64
		locs   []string
	}
	var samples []sample
	names := map[string][]string{} // location id -> its functions, innermost first
	section := ""
	for _, line := range strings.Split(out, "\n") {
		switch {
		case line == "Samples:" || line == "Locations" || line == "Mappings":
			section = line
			continue
		case section == "Samples:" && len(r.types) == 0 && strings.TrimSpace(line) != "":
			// "samples/count cpu/nanoseconds[dflt]": the default is marked.
			r.types = strings.Fields(strings.ReplaceAll(line, "[dflt]", ""))
			continue
		}
		switch section {
		case "Samples:":
			if m := rawSample.FindStringSubmatch(line); m != nil {
				var s sample
				for _, v := range strings.Fields(m[1]) {
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						t.Fatalf("pprof -raw sample %q: %v", line, err)
					}
					s.values = append(s.values, n)
				}
				s.locs = strings.Fields(m[2])
				samples = append(samples, s)
			}
		case "Locations":
			if m := rawLocation.FindStringSubmatch(line); m != nil {
				fn := "?" // no function: pprof prints the address alone
				if m[3] != "" {
					// "leaf /path:0:0 s=0": the function, then its file and line.
					f := rawFunction.FindStringSubmatch(m[3])
					if f == nil {
						t.Fatalf("pprof -raw location %q: no function", line)
					}
					fn = f[1]
				}
				names[m[1]] = append(names[m[1]], fn)
			}
		case "Mappings":
			if strings.TrimSpace(line) != "" {
				r.mappings = append(r.mappings, strings.TrimSpace(line))
			}
		}
	}
	for _, s := range samples {
		var frames []string
		for i := len(s.locs) - 1; i >= 0; i-- {
			fs, ok := names[s.locs[i]]
			if !ok {
				t.Fatalf("pprof -raw: sample names location %s, which it does not list:\n%s", s.locs[i], out)
			}
			for j := len(fs) - 1; j >= 0; j-- {
				frames = append(frames, fs[j])
			}
		}
		line := strings.Join(frames, ";")
		sum := r.stacks[line]
		if sum == nil {
			sum = make([]int64, len(s.values))
		}
		for i, v := range s.values {
			sum[i] += v
		}
		r.stacks[line] = sum
	}
	if len(samples) == 0 || len(r.types) == 0 {
		t.Fatalf("pprof -raw printed no samples:\n%s", out)
	}
	return r
}

// folded reads bpftape stacks' folded output into a map of stack to value.
func folded(t *testing.T, out string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseInt(line[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("folded line %q: %v", line, err)
		}
		m[line[:i]] += v
	}
	return m
}

// samePprofStacks checks that the value at index vi of every stack of the
// profile at path (go tool pprof -raw) is what bpftape stacks printed
// (want, folded), stack for stack.
func samePprofStacks(t *testing.T, path string, vi int, want string) pprofRaw {
	t.Helper()
	raw := readPprofRaw(t, path)
	w := map[string]int64{}
	for line, v := range folded(t, want) {
		// bpftape names a frame it did not resolve by its object and
		// offset or its address, which a profile leaves to pprof.
		frames := strings.Split(line, ";")
		for i, f := range frames {
			if unresolvedFrame.MatchString(f) {
				frames[i] = "?"
			}
		}
		w[strings.Join(frames, ";")] += v
	}
	got := map[string]int64{}
	for line, v := range raw.stacks {
		got[line] = v[vi]
	}
	if fmt.Sprint(got) != fmt.Sprint(w) {
		t.Errorf("%s: go tool pprof -raw's stacks (%s):\n%v\nbpftape stacks:\n%v", path, raw.types[vi], got, w)
	}
	return raw
}
