package hist

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

var (
	v017 = BpftraceVersion{0, 17}
	v020 = BpftraceVersion{0, 20}
	v021 = BpftraceVersion{0, 21}
	v023 = BpftraceVersion{0, 23}
)

func TestParseBpftraceVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want BpftraceVersion
	}{
		{"bpftrace v0.17.0\n", v017},
		{"0.21", v021},
		{"v0.20.2-1ubuntu1", v020},
		{"v1.2.3", BpftraceVersion{1, 2}},
	} {
		got, err := ParseBpftraceVersion(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseBpftraceVersion(%q) = %v, %v, want %v", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseBpftraceVersion("bpftrace"); err == nil {
		t.Error("no error without a version")
	}
	for _, tc := range []struct {
		v            BpftraceVersion
		major, minor int
		want         bool
	}{
		{BpftraceVersion{}, 99, 0, true},
		{v017, 0, 20, false},
		{v020, 0, 20, true},
		{v021, 0, 20, true},
		{BpftraceVersion{1, 0}, 0, 24, true},
	} {
		if got := tc.v.atLeast(tc.major, tc.minor); got != tc.want {
			t.Errorf("%v.atLeast(%d, %d) = %v", tc.v, tc.major, tc.minor, got)
		}
	}
}

func TestPow2Index(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want int
	}{
		{math.MinInt64, 0}, {-1, 0}, {0, 1}, {1, 2}, {2, 3}, {3, 3}, {4, 4},
		{1023, 11}, {1024, 12}, {1<<31 - 1, 32}, {1 << 31, 33}, {1 << 32, 34},
		{math.MaxInt64, 64},
	} {
		if got := Pow2Index(tc.v); got != tc.want {
			t.Errorf("Pow2Index(%d) = %d, want %d", tc.v, got, tc.want)
		}
	}
}

// TestPow2IndexMatchesBpftrace checks Pow2Index against transcriptions of
// the log2 function bpftrace's code generator emits: with k = 0 from v0.20
// on, and the earlier one whose shifts add up to at most 31, which the
// printing of old versions folds into bucket 33.
func TestPow2IndexMatchesBpftrace(t *testing.T) {
	newer := func(n int64) int {
		if n < 0 {
			return 0
		}
		if n == 0 {
			return 1
		}
		l := 0
		for i := 5; i >= 0; i-- {
			threshold := int64(1) << (1 << i)
			if i == 5 {
				threshold = 1 << 32
			}
			if n >= threshold {
				n >>= 1 << i
				l += 1 << i
			}
		}
		return l + 2
	}
	older := func(n int64) int {
		if n < 0 {
			return 0
		}
		if n == 0 {
			return 1
		}
		r := 2
		for i := 4; i >= 0; i-- {
			shift := 0
			if n >= 1<<(1<<i) {
				shift = 1 << i
			}
			n >>= shift
			r += shift
		}
		return r
	}
	vals := []int64{math.MinInt64, -1, 0, math.MaxInt64}
	for i := range 63 {
		p := int64(1) << i
		vals = append(vals, p-1, p, p+1)
	}
	for _, v := range vals {
		if got, want := Pow2Index(v), newer(v); got != want {
			t.Errorf("Pow2Index(%d) = %d, bpftrace v0.20 = %d", v, got, want)
		}
		if got, want := min(Pow2Index(v), 33), older(v); got != want {
			t.Errorf("folded Pow2Index(%d) = %d, bpftrace v0.17 = %d", v, got, want)
		}
	}
}

func writeText(t *testing.T, f func(*bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := f(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// hist017 is what bpftrace v0.17.0 printed for
// @x = hist(5); @x = hist(0); @x = hist(-3); @x = hist(1); @x = hist(3000000).
const hist017 = `@x: 
(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[2, 4)                 0 |                                                    |
[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[8, 16)                0 |                                                    |
[16, 32)               0 |                                                    |
[32, 64)               0 |                                                    |
[64, 128)              0 |                                                    |
[128, 256)             0 |                                                    |
[256, 512)             0 |                                                    |
[512, 1K)              0 |                                                    |
[1K, 2K)               0 |                                                    |
[2K, 4K)               0 |                                                    |
[4K, 8K)               0 |                                                    |
[8K, 16K)              0 |                                                    |
[16K, 32K)             0 |                                                    |
[32K, 64K)             0 |                                                    |
[64K, 128K)            0 |                                                    |
[128K, 256K)           0 |                                                    |
[256K, 512K)           0 |                                                    |
[512K, 1M)             0 |                                                    |
[1M, 2M)               0 |                                                    |
[2M, 4M)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

`

func TestPow2WriteBpftrace(t *testing.T) {
	var h Pow2
	for _, v := range []int64{5, 0, -3, 1, 3000000} {
		h.Add(v)
	}
	if got := writeText(t, func(b *bytes.Buffer) error { return h.WriteBpftrace(b, "@x", v017) }); got != hist017 {
		t.Errorf("v0.17: got\n%s\nwant\n%s", got, hist017)
	}
	want := strings.Replace(hist017, "@x: \n", "@x:\n", 1)
	for _, v := range []BpftraceVersion{v023, {}} {
		if got := writeText(t, func(b *bytes.Buffer) error { return h.WriteBpftrace(b, "@x", v) }); got != want {
			t.Errorf("%v: got\n%s\nwant\n%s", v, got, want)
		}
	}

	var big Pow2
	big.Add(1 << 31)
	big.AddN(5000000000, 2)
	big.AddN(math.MaxInt64, 3)
	big.Add(1 << 30)
	want = `@big: 
[1G, 2G)               1 |@@@@@@@@                                            |
[2G, 4G)               6 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

`
	if got := writeText(t, func(b *bytes.Buffer) error { return big.WriteBpftrace(b, "@big", v017) }); got != want {
		t.Errorf("v0.17 large values: got\n%s\nwant\n%s", got, want)
	}
	got := writeText(t, func(b *bytes.Buffer) error { return big.WriteBpftrace(b, "@big", BpftraceVersion{}) })
	lines := strings.Split(got, "\n")
	if lines[1] != "[1G, 2G)               1 |@@@@@@@@@@@@@@@@@                                   |" ||
		lines[2] != "[2G, 4G)               1 |@@@@@@@@@@@@@@@@@                                   |" ||
		lines[3] != "[4G, 8G)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                  |" ||
		lines[len(lines)-3] != "[4E, 8E)               3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|" ||
		!strings.Contains(got, "\n[1T, 2T) ") || !strings.Contains(got, "\n[512P, 1E) ") {
		t.Errorf("latest large values:\n%s", got)
	}
}

func TestPow2Merge(t *testing.T) {
	var a, b, all Pow2
	for i := range int64(1000) {
		v := (i - 500) * i * 31
		all.Add(v)
		if i%2 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	a.Merge(&b)
	if a != all || a.Count() != 1000 {
		t.Fatalf("merged %v, want %v", a.Buckets(), all.Buckets())
	}
}

func TestEmptyBpftrace(t *testing.T) {
	var h Pow2
	if got := writeText(t, func(b *bytes.Buffer) error { return h.WriteBpftrace(b, "@x", v017) }); got != "\n" {
		t.Errorf("v0.17 empty map: %q", got)
	}
	if got := writeText(t, func(b *bytes.Buffer) error { return h.WriteBpftrace(b, "@x", BpftraceVersion{}) }); got != "" {
		t.Errorf("latest empty map: %q", got)
	}
}

func TestNewLinear(t *testing.T) {
	for _, tc := range []struct {
		min, max, step int64
		ok             bool
	}{
		{0, 100, 10, true},
		{0, 25, 10, true},
		{5, 10, 1, true},
		{0, 1000, 1, true},
		{0, 1001, 1, false},
		{-1, 10, 1, false},
		{0, 10, 0, false},
		{10, 5, 1, false},
		{0, 5, 10, false},
		{0, 1 << 31, 1 << 30, false},
	} {
		_, err := NewLinear(tc.min, tc.max, tc.step)
		if (err == nil) != tc.ok {
			t.Errorf("NewLinear(%d, %d, %d) error %v", tc.min, tc.max, tc.step, err)
		}
	}
}

func mustLinear(t *testing.T, min, max, step int64, vals ...int64) *Linear {
	t.Helper()
	h, err := NewLinear(min, max, step)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		h.Add(v)
	}
	return h
}

func TestLinearWriteBpftrace(t *testing.T) {
	bar := strings.Repeat("@", 52)
	for _, tc := range []struct {
		name string
		h    *Linear
		v    BpftraceVersion
		want string
	}{{
		// What bpftrace v0.17.0 printed for lhist(22, 0, 25, 10).
		name: "short range",
		h:    mustLinear(t, 0, 25, 10, 22),
		v:    v017,
		want: "@y: \n[25, ...)              1 |" + bar + "|\n\n",
	}, {
		name: "short range latest",
		h:    mustLinear(t, 0, 25, 10, 22),
		want: "@y:\n[20, ...)              1 |" + bar + "|\n\n",
	}, {
		// What bpftrace v0.17.0 printed for lhist(3000, 0, 4096, 512).
		name: "K labels",
		h:    mustLinear(t, 0, 4096, 512, 3000),
		v:    v017,
		want: "@y: \n[2560, 3K)             1 |" + bar + "|\n\n",
	}, {
		name: "no K labels",
		h:    mustLinear(t, 0, 4096, 512, 3000),
		v:    v021,
		want: "@y: \n[2560, 3072)           1 |" + bar + "|\n\n",
	}, {
		name: "K labels with K step",
		h:    mustLinear(t, 0, 2<<20, 4096, 1<<20-1),
		v:    v021,
		want: "@y: \n[1020K, 1M)            1 |" + bar + "|\n\n",
	}, {
		// What bpftrace v0.17.0 printed for lhist(7, 5, 10, 1).
		name: "step 1",
		h:    mustLinear(t, 5, 10, 1, 7),
		v:    v017,
		want: "@y: \n[7, 8)                 1 |" + bar + "|\n\n",
	}, {
		name: "step 1 latest",
		h:    mustLinear(t, 5, 10, 1, 7, 4, 10, 10, 10, 10),
		want: "@y:\n" +
			"(..., 5)               1 |@@@@@@@@@@@@@                                       |\n" +
			"[5]                    0 |                                                    |\n" +
			"[6]                    0 |                                                    |\n" +
			"[7]                    1 |@@@@@@@@@@@@@                                       |\n" +
			"[8]                    0 |                                                    |\n" +
			"[9]                    0 |                                                    |\n" +
			"[10, ...)              4 |" + bar + "|\n\n",
	}, {
		name: "under and over",
		h:    mustLinear(t, 0, 30, 10, -5, 0, 9, 10, 29, 30, 31, 31),
		v:    v017,
		want: "@y: \n" +
			"(..., 0)               1 |@@@@@@@@@@@@@@@@@                                   |\n" +
			"[0, 10)                2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                  |\n" +
			"[10, 20)               1 |@@@@@@@@@@@@@@@@@                                   |\n" +
			"[20, 30)               1 |@@@@@@@@@@@@@@@@@                                   |\n" +
			"[30, ...)              3 |" + bar + "|\n\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := writeText(t, func(b *bytes.Buffer) error { return tc.h.WriteBpftrace(b, "@y", tc.v) })
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestLinearMerge(t *testing.T) {
	a := mustLinear(t, 0, 100, 10, 1, 50, 200)
	b := mustLinear(t, 0, 100, 10, -1, 50)
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	want := []uint64{1, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1}
	if got := a.Buckets(); !equal(got, want) || a.Count() != 5 {
		t.Errorf("merged %v, want %v", got, want)
	}
	if err := a.Merge(mustLinear(t, 0, 100, 5)); err == nil {
		t.Error("merged histograms of different steps")
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLinearWriteBCC(t *testing.T) {
	h := mustLinear(t, 0, 5, 1, 0, 1, 1, 1, 3, 5, -1)
	want := `     runqlen       : count     distribution
        0          : 1        |*************                           |
        1          : 3        |****************************************|
        2          : 0        |                                        |
        3          : 1        |*************                           |
`
	if got := writeText(t, func(b *bytes.Buffer) error { return h.WriteBCC(b, "runqlen") }); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	empty := mustLinear(t, 0, 5, 1, 7)
	if got := writeText(t, func(b *bytes.Buffer) error { return empty.WriteBCC(b, "runqlen") }); got != "" {
		t.Errorf("out of range only: %q", got)
	}
}

func TestWriteBpftraceMap(t *testing.T) {
	var a, b, c Pow2
	a.AddN(1, 3)
	b.Add(2)
	c.AddN(1, 3)
	entries := []BpftraceEntry{{"a", &a}, {"empty", &Pow2{}}, {"b", &b}, {"c", &c}}
	want := `@x[b]: 
[2, 4)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

@x[a]: 
[1]                    3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

@x[c]: 
[1]                    3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

`
	got := writeText(t, func(w *bytes.Buffer) error { return WriteBpftraceMap(w, "@x", v017, entries) })
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if entries[0].Key != "a" || entries[1].Key != "empty" {
		t.Error("WriteBpftraceMap reordered its argument")
	}
	got = writeText(t, func(w *bytes.Buffer) error { return WriteBpftraceMap(w, "@x", BpftraceVersion{}, entries) })
	if want := strings.ReplaceAll(want, "]: \n", "]:\n"); got != want {
		t.Errorf("latest: got\n%s\nwant\n%s", got, want)
	}
	lin := mustLinear(t, 0, 10, 5, 1)
	got = writeText(t, func(w *bytes.Buffer) error {
		return WriteBpftraceMap(w, "@l", v017, []BpftraceEntry{{"1, x", lin}})
	})
	if want := "@l[1, x]: \n[0, 5)                 1 |" + strings.Repeat("@", 52) + "|\n\n"; got != want {
		t.Errorf("lhist map: got %q, want %q", got, want)
	}
	if got := writeText(t, func(w *bytes.Buffer) error { return WriteBpftraceMap(w, "@x", v017, nil) }); got != "\n" {
		t.Errorf("empty map: %q", got)
	}
}

// TestBpftraceCountOverflow checks that bucket counts of 2^31 and more, for
// which bpftrace's int arithmetic overflows, are handled as bpftrace
// handles them where that is defined: such a count reads as an int.
func TestBpftraceCountOverflow(t *testing.T) {
	var h Pow2
	h.AddN(1, 1<<32) // reads as 0: not a used bucket for bpftrace
	h.AddN(8, 10)
	got := writeText(t, func(b *bytes.Buffer) error { return h.WriteBpftrace(b, "@x", v017) })
	want := "@x: \n[8, 16)               10 |" + strings.Repeat("@", 52) + "|\n\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	h.AddN(0, 1<<32+20) // reads as 20
	got = writeText(t, func(b *bytes.Buffer) error { return h.WriteBpftrace(b, "@x", v017) })
	// bpftrace's bars would be tens of millions of '@' long here.
	want = "@x: \n" +
		"[0]             4294967316 |" + strings.Repeat("@", 52) + "|\n" +
		"[1]             4294967296 |" + strings.Repeat("@", 52) + "|\n" +
		"[2, 4)                 0 |" + strings.Repeat(" ", 52) + "|\n" +
		"[4, 8)                 0 |" + strings.Repeat(" ", 52) + "|\n" +
		"[8, 16)               10 |" + strings.Repeat("@", 26) + strings.Repeat(" ", 26) + "|\n\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestBpftraceAddAllocs(t *testing.T) {
	var p Pow2
	l := mustLinear(t, 0, 1000, 10)
	if n := testing.AllocsPerRun(1000, func() { p.Add(12345); l.Add(123) }); n != 0 {
		t.Fatalf("Add allocates %v times", n)
	}
}
