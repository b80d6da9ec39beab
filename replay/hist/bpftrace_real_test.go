package hist

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// btObs is n occurrences of a value.
type btObs struct {
	v int64
	n uint64
}

// btMap is a bpftrace map of hist() or, if step > 0, lhist(min, max, step),
// keyed if keys are given.
type btMap struct {
	min, max, step int64
	keys           []string // bpftrace key expressions, such as `"sda"`
	obs            [][]btObs
}

func (m btMap) call(v int64) string {
	if m.step > 0 {
		return fmt.Sprintf("lhist(%d, %d, %d, %d)", v, m.min, m.max, m.step)
	}
	return fmt.Sprintf("hist(%d)", v)
}

// script appends to b the statements that fill the map named name.
func (m btMap) script(b *strings.Builder, name string) {
	for i, obs := range m.obs {
		target := name
		if m.keys != nil {
			target += "[" + m.keys[i] + "]"
		}
		for _, o := range obs {
			if o.n == 1 {
				fmt.Fprintf(b, "%s = %s;\n", target, m.call(o.v))
				continue
			}
			fmt.Fprintf(b, "$i = 0; while ($i < %d) { %s = %s; $i++; }\n", o.n, target, m.call(o.v))
		}
	}
}

func (m btMap) hist(t *testing.T, obs []btObs) BpftraceHist {
	if m.step > 0 {
		h := mustLinear(t, m.min, m.max, m.step)
		for _, o := range obs {
			h.AddN(o.v, o.n)
		}
		return h
	}
	h := new(Pow2)
	for _, o := range obs {
		h.AddN(o.v, o.n)
	}
	return h
}

// ours writes the map as this package prints it.
func (m btMap) ours(t *testing.T, b *bytes.Buffer, name string, v BpftraceVersion) {
	if m.keys == nil {
		var err error
		switch h := m.hist(t, m.obs[0]).(type) {
		case *Pow2:
			err = h.WriteBpftrace(b, name, v)
		case *Linear:
			err = h.WriteBpftrace(b, name, v)
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	var entries []BpftraceEntry
	for i, obs := range m.obs {
		entries = append(entries, BpftraceEntry{Key: strings.Trim(m.keys[i], `"`), Hist: m.hist(t, obs)})
	}
	if err := WriteBpftraceMap(b, name, v, entries); err != nil {
		t.Fatal(err)
	}
}

func obs(vn ...int64) []btObs {
	var o []btObs
	for i := 0; i < len(vn); i += 2 {
		o = append(o, btObs{vn[i], uint64(vn[i+1])})
	}
	return o
}

// ones returns each value once.
func ones(vs ...int64) []btObs {
	var o []btObs
	for _, v := range vs {
		o = append(o, btObs{v, 1})
	}
	return o
}

func hist1(o []btObs) btMap { return btMap{obs: [][]btObs{o}} }

func lhist1(min, max, step int64, o []btObs) btMap {
	return btMap{min: min, max: max, step: step, obs: [][]btObs{o}}
}

// bpftraceMaps returns the maps to compare, in programs small enough for
// the verifier: the loops of a program are unrolled by it.
func bpftraceMaps() [][]btMap {
	rng := rand.New(rand.NewPCG(11, 12))
	randomObs := func(n int, gen func() int64) []btObs {
		var o []btObs
		for range n {
			o = append(o, btObs{gen(), 1 + rng.Uint64N(40)})
		}
		return o
	}
	// Counts whose bars fall on or near whole numbers of '@'.
	var bars []btObs
	for k := range int64(21) {
		bars = append(bars, btObs{1 << k, uint64((k*37)%211 + 1)})
	}
	var linearBars []btObs
	for k := range int64(52) {
		linearBars = append(linearBars, btObs{k * 10, uint64((k*7)%97 + 1)})
	}
	return [][]btMap{{
		hist1(ones(5, 0, -3, 1, 3000000)),
		hist1(obs(0, 7)),
		hist1(obs(-1, 3, -100, 1, math.MinInt64+1, 1)),
		hist1(ones(1)),
		hist1(ones(2, 3)),
		hist1(ones(1023, 1024, 1048575, 1048576, 1073741823, 1073741824, 2147483647)),
		hist1(ones(2147483648, 5000000000, math.MaxInt64, 1<<40, 1<<50, 1<<60, 100)),
		hist1(ones(100, 100000)),
		hist1(nil), // an empty map
		// Bars that float32 and float64 arithmetic draw differently.
		hist1(obs(1, 15, 2, 26, 4, 45, 8, 78)),
		hist1(obs(0, 30, 1, 52, 2, 15)),
		lhist1(0, 100, 10, obs(5, 60, 15, 120, 25, 208, 35, 105, 45, 182)),
		lhist1(0, 100, 10, ones(-5, 0, 9, 10, 55, 99, 100, 101, 1000)),
		lhist1(0, 25, 10, ones(22, 3)),
		lhist1(0, 4096, 512, ones(3000, 0, 4095, 4096, 512, 1024)),
		lhist1(5, 10, 1, ones(7, 4, 10, 5, 9)),
		lhist1(0, 2<<20, 4096, ones(1<<20-1, 1<<20, 2<<20-1, 4096*3)),
		lhist1(1024, 1024*100, 1024, ones(1024, 2048, 50000)),
		lhist1(0, 10, 5, nil),
		{keys: []string{`"a"`, `"bb"`, `"c"`}, obs: [][]btObs{obs(1, 3), obs(100, 1), obs(-1, 2)}},
		{min: 0, max: 50, step: 5, keys: []string{"1", "2"}, obs: [][]btObs{obs(7, 4, 49, 2), obs(-2, 1)}},
	}, {
		hist1(bars),
	}, {
		lhist1(0, 1000, 10, linearBars),
	}, {
		hist1(randomObs(30, func() int64 { return rng.Int64N(1<<40) - 1<<20 })),
		hist1(randomObs(30, func() int64 { return int64(math.Exp(rng.NormFloat64()*4 + 12)) })),
		lhist1(100, 900, 50, randomObs(30, func() int64 { return rng.Int64N(1100) })),
		{keys: []string{"1", "2", "3"}, obs: [][]btObs{
			randomObs(5, func() int64 { return rng.Int64N(1 << 20) }),
			randomObs(9, func() int64 { return rng.Int64N(1 << 30) }),
			randomObs(14, func() int64 { return -rng.Int64N(1 << 10) }),
		}},
	}}
}

var attachingRE = regexp.MustCompile(`^Attaching \d+ probes?\.\.\.\n`)

// TestBpftraceReal compares WriteBpftrace and WriteBpftraceMap with what the
// installed bpftrace prints for maps filled from constants in BEGIN.
func TestBpftraceReal(t *testing.T) {
	bin, err := exec.LookPath("bpftrace")
	if err != nil {
		t.Skip("skipping: bpftrace is not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: running bpftrace needs root")
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Skipf("skipping: bpftrace --version: %v", err)
	}
	version, err := ParseBpftraceVersion(string(out))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("comparing with bpftrace %v", version)

	total := 0
	for p, maps := range bpftraceMaps() {
		var script strings.Builder
		var want bytes.Buffer
		script.WriteString("BEGIN {\n")
		// bpftrace prints its maps in order of name when it exits.
		for i, m := range maps {
			name := fmt.Sprintf("@m%03d", i)
			if m.obs == nil || m.obs[0] == nil {
				// Declare the map without storing anything in it.
				fmt.Fprintf(&script, "if (0) { %s = %s; }\n", name, m.call(1))
			}
			m.script(&script, name)
			m.ours(t, &want, name, version)
		}
		script.WriteString("exit();\n}\n")

		cmd := exec.Command(bin, "-e", script.String())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("program %d: bpftrace: %v\n%s\n%s", p, err, stderr.String(), script.String())
		}
		// bpftrace starts the maps it prints on exit with empty lines.
		text := strings.TrimLeft(attachingRE.ReplaceAllString(string(got), ""), "\n")
		ours := strings.TrimLeft(want.String(), "\n")
		if ours != text {
			t.Errorf("program %d differs from bpftrace:\n%s\n ours:\n%s\n bpftrace:\n%s",
				p, script.String(), ours, text)
			diffLines(t, ours, text)
			continue
		}
		total += len(maps)
	}
	t.Logf("%d maps identical to bpftrace's", total)
}

func diffLines(t *testing.T, a, b string) {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			t.Logf("first difference at line %d:\n ours     %q\n bpftrace %q", i+1, x, y)
			return
		}
	}
}
