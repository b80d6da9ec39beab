package hist

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLog2Slot(t *testing.T) {
	for _, tc := range []struct {
		v    uint64
		slot int
	}{
		{0, 1}, {1, 1}, {2, 2}, {3, 2}, {4, 3}, {7, 3}, {8, 4},
		{1023, 10}, {1024, 11}, {1<<32 - 1, 32}, {1 << 32, 33},
		{1<<63 - 1, 63}, {1 << 63, 64}, {math.MaxUint64, 64},
	} {
		if got := Log2Slot(tc.v); got != tc.slot {
			t.Errorf("Log2Slot(%d) = %d, want %d", tc.v, got, tc.slot)
		}
	}
}

// TestLog2SlotMatchesBCC checks Log2Slot against a transcription of bcc's
// bpf_log2l from src/cc/export/helpers.h.
func TestLog2SlotMatchesBCC(t *testing.T) {
	log2 := func(v uint32) uint32 {
		b := func(c bool) uint32 {
			if c {
				return 1
			}
			return 0
		}
		r := b(v > 0xFFFF) << 4
		v >>= r
		shift := b(v > 0xFF) << 3
		v >>= shift
		r |= shift
		shift = b(v > 0xF) << 2
		v >>= shift
		r |= shift
		shift = b(v > 0x3) << 1
		v >>= shift
		r |= shift
		return r | v>>1
	}
	log2l := func(v uint64) int {
		if hi := uint32(v >> 32); hi != 0 {
			return int(log2(hi)) + 32 + 1
		}
		return int(log2(uint32(v))) + 1
	}
	vals := []uint64{0, math.MaxUint64}
	for i := range 64 {
		p := uint64(1) << i
		vals = append(vals, p-1, p, p+1)
	}
	for _, v := range vals {
		if got, want := Log2Slot(v), log2l(v); got != want {
			t.Errorf("Log2Slot(%d) = %d, bpf_log2l = %d", v, got, want)
		}
	}
}

func TestLog2Accumulate(t *testing.T) {
	var h Log2
	if h.Count() != 0 || h.Min() != 0 || h.Max() != 0 || h.Sum().Sign() != 0 || h.Mean() != 0 {
		t.Fatal("zero Log2 is not empty")
	}
	h.Add(5)
	h.Add(math.MaxUint64)
	h.AddN(0, 3)
	h.AddN(7, 0)
	if h.Count() != 5 || h.Min() != 0 || h.Max() != math.MaxUint64 {
		t.Fatalf("count/min/max = %d/%d/%d", h.Count(), h.Min(), h.Max())
	}
	want := new(big.Int).SetUint64(math.MaxUint64)
	want.Add(want, big.NewInt(5))
	if h.Sum().Cmp(want) != 0 {
		t.Fatalf("Sum = %v, want %v", h.Sum(), want)
	}
	s := h.Slots()
	if s[1] != 3 || s[3] != 1 || s[64] != 1 {
		t.Fatalf("slots = %v", s)
	}

	// Sums beyond 2^64 stay exact.
	var big2 Log2
	big2.AddN(math.MaxUint64, math.MaxUint64)
	want = new(big.Int).Mul(new(big.Int).SetUint64(math.MaxUint64), new(big.Int).SetUint64(math.MaxUint64))
	if big2.Sum().Cmp(want) != 0 {
		t.Fatalf("Sum = %v, want %v", big2.Sum(), want)
	}

	var a, b, all Log2
	for i := range uint64(1000) {
		v := i * i * 7919
		all.Add(v)
		if i%3 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	var m Log2
	m.Merge(&a)
	m.Merge(&Log2{})
	m.Merge(&b)
	if m != all {
		t.Fatalf("merged %+v, want %+v", m, all)
	}
	if got := m.Mean(); math.Abs(got-float64(all.Sum().Uint64())/1000) > 1e-6 {
		t.Fatalf("Mean = %v", got)
	}
}

func TestLog2AddAllocs(t *testing.T) {
	var h Log2
	if n := testing.AllocsPerRun(1000, func() { h.Add(12345) }); n != 0 {
		t.Fatalf("Add allocates %v times", n)
	}
}

// log2Of builds a Log2 whose slots hold counts.
func log2Of(counts []uint64) *Log2 {
	var h Log2
	for i, c := range counts {
		if i == 0 {
			if c != 0 {
				panic("slot 0 is never used")
			}
			continue
		}
		h.AddN(uint64(1)<<(i-1), c)
	}
	return &h
}

func bccText(t *testing.T, h *Log2, label string) string {
	t.Helper()
	var b bytes.Buffer
	if err := h.WriteBCC(&b, label); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteBCCGolden(t *testing.T) {
	for _, tc := range []struct {
		name, label string
		counts      []uint64
		want        string
	}{{
		name:   "empty",
		label:  "usecs",
		counts: nil,
		want:   "",
	}, {
		// From a bcc run printing rx_entry_hist.print_log2_hist("size").
		name:   "size",
		label:  "size",
		counts: []uint64{0, 0, 0, 0, 0, 0, 7, 17, 1, 1, 5, 47906, 30912, 100188, 411462, 278},
		want: `     size                : count     distribution
         0 -> 1          : 0        |                                        |
         2 -> 3          : 0        |                                        |
         4 -> 7          : 0        |                                        |
         8 -> 15         : 0        |                                        |
        16 -> 31         : 0        |                                        |
        32 -> 63         : 7        |                                        |
        64 -> 127        : 17       |                                        |
       128 -> 255        : 1        |                                        |
       256 -> 511        : 1        |                                        |
       512 -> 1023       : 5        |                                        |
      1024 -> 2047       : 47906    |****                                    |
      2048 -> 4095       : 30912    |***                                     |
      4096 -> 8191       : 100188   |*********                               |
      8192 -> 16383      : 411462   |****************************************|
     16384 -> 32767      : 278      |                                        |
`,
	}, {
		name:   "one slot",
		label:  "a label longer than nineteen",
		counts: []uint64{0, 0, 0, 123456789},
		want: `     a label longer than nineteen : count     distribution
         0 -> 1          : 0        |                                        |
         2 -> 3          : 0        |                                        |
         4 -> 7          : 123456789 |****************************************|
`,
	}, {
		name:   "wide",
		label:  "nsecs",
		counts: append(make([]uint64, 33), 3, 2),
		want: "               nsecs                         : count     distribution\n" +
			"                   0 -> 1                    : 0        |                    |\n" +
			wideZeroRows(2, 32) +
			"          4294967296 -> 8589934591           : 3        |********************|\n" +
			"          8589934592 -> 17179869183          : 2        |*************       |\n",
	}, {
		name:   "slot 64",
		label:  "v",
		counts: append(make([]uint64, 64), 1),
		want: "               v                             : count     distribution\n" +
			"                   0 -> 1                    : 0        |                    |\n" +
			wideZeroRows(2, 63) +
			" 9223372036854775808 -> 18446744073709551615 : 1        |********************|\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bccText(t, log2Of(tc.counts), tc.label); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// wideZeroRows returns the empty rows of slots from to to of a wide bcc
// histogram.
func wideZeroRows(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		low, high := uint64(1)<<(i-1), uint64(math.MaxUint64)>>(64-i)
		l, h := strconv.FormatUint(low, 10), strconv.FormatUint(high, 10)
		b.WriteString(strings.Repeat(" ", 20-len(l)) + l + " -> " + h + strings.Repeat(" ", 20-len(h)) +
			" : 0        |                    |\n")
	}
	return b.String()
}

var bccRowRE = regexp.MustCompile(`^ +(\d+) -> (\d+) +: (\d+) +\|[* ]*\|$`)

// TestWriteBCCSeed reprints every histogram of a real bcc session, found in
// testdata, from its counts.
func TestWriteBCCSeed(t *testing.T) {
	data, err := os.ReadFile("../../testdata/seed000/bcc_histograms.txt")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n\n")
	if len(blocks) != 11 {
		t.Fatalf("%d blocks in testdata", len(blocks))
	}
	for _, block := range blocks {
		lines := strings.Split(block, "\n")
		label := strings.TrimSpace(strings.TrimSuffix(lines[0], " : count     distribution"))
		counts := []uint64{0}
		for _, l := range lines[1:] {
			m := bccRowRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("bad row %q", l)
			}
			c, _ := strconv.ParseUint(m[3], 10, 64)
			counts = append(counts, c)
		}
		got := strings.Split(strings.TrimSuffix(bccText(t, log2Of(counts), label), "\n"), "\n")
		if len(got) != len(lines) {
			t.Errorf("%s: %d lines, want %d", label, len(got), len(lines))
			continue
		}
		for i := range lines {
			if got[i] != lines[i] {
				t.Errorf("%s line %d:\n got %q\nwant %q", label, i, got[i], lines[i])
			}
		}
	}
}

func TestStars(t *testing.T) {
	for _, tc := range []struct {
		val, max uint64
		width    int
		want     int
	}{
		{0, 10, 40, 0},
		{10, 10, 40, 40},
		{1, 40, 40, 1},
		{39, 40, 40, 39},
		{1, 41, 40, 0},
		{1, 3, 40, 13},
		{2, 3, 40, 26},
		{1, 2, 20, 10},
		{47906, 411462, 40, 4},
		{math.MaxUint64, math.MaxUint64, 20, 20},
		// 40*val/max is just below 20 and rounds to 20.0 in float64.
		{math.MaxUint64 / 2, math.MaxUint64, 40, 20},
		{1<<53 - 1, 1 << 54, 80, 39},
		// 40*val/max is exactly 20.
		{1 << 62, 1 << 63, 40, 20},
		// Just below 1, rounded to 1.0.
		{(1 << 62) / 10, 1 << 62, 10, 1},
	} {
		if got := len(stars(tc.val, tc.max, tc.width)); got != tc.want {
			t.Errorf("stars(%d, %d, %d) = %d, want %d", tc.val, tc.max, tc.width, got, tc.want)
		}
	}
}

func TestWriteBCCSections(t *testing.T) {
	var sda, sdb Log2
	sda.Add(3)
	sda.Add(100)
	sdb.AddN(1, 4)
	var b bytes.Buffer
	err := WriteBCCSections(&b, "usecs", "disk", []Section{{"sda", &sda}, {"sdb", &sdb}, {"empty", &Log2{}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `
disk = sda
     usecs               : count     distribution
         0 -> 1          : 0        |                                        |
         2 -> 3          : 1        |****************************************|
         4 -> 7          : 0        |                                        |
         8 -> 15         : 0        |                                        |
        16 -> 31         : 0        |                                        |
        32 -> 63         : 0        |                                        |
        64 -> 127        : 1        |****************************************|

disk = sdb
     usecs               : count     distribution
         0 -> 1          : 4        |****************************************|

disk = empty
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestWriteBCCJSON(t *testing.T) {
	ts := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	var h Log2
	h.AddN(0, 3)
	h.AddN(5, 2)
	var b bytes.Buffer
	if err := h.WriteBCCJSON(&b, "usecs", ts); err != nil {
		t.Fatal(err)
	}
	want := `{"ts": "2024-05-06 07:08:09", "val_type": "usecs", "data": [` +
		`{"interval-start": 0, "interval-end": 1, "count": 3}, ` +
		`{"interval-start": 2, "interval-end": 3, "count": 0}, ` +
		`{"interval-start": 4, "interval-end": 7, "count": 2}]}` + "\n"
	if b.String() != want {
		t.Errorf("got  %s\nwant %s", b.String(), want)
	}

	b.Reset()
	var top Log2
	top.Add(math.MaxUint64)
	err := WriteBCCJSONSections(&b, `a "q" <&>`, "disk", []Section{{"sda", &Log2{}}, {"nvme0n1", &top}}, ts)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	if want := `{"ts": "2024-05-06 07:08:09", "val_type": "a \"q\" <&>", "data": [], "disk": "sda"}`; lines[0] != want {
		t.Errorf("got  %s\nwant %s", lines[0], want)
	}
	var v struct {
		Data []struct {
			Start uint64 `json:"interval-start"`
			End   uint64 `json:"interval-end"`
			Count uint64 `json:"count"`
		} `json:"data"`
		Disk string `json:"disk"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Data) != 64 || v.Data[63].Start != 1<<63 || v.Data[63].End != math.MaxUint64 || v.Data[63].Count != 1 || v.Disk != "nvme0n1" {
		t.Errorf("bad JSON %s", lines[1])
	}
}

func TestKS(t *testing.T) {
	var a, b, c, a2 Log2
	for i := range uint64(100) {
		a.Add(i)
		a2.AddN(i, 3)
		b.Add(i + 1000)
	}
	c.Add(0)
	for _, tc := range []struct {
		name string
		x, y *Log2
		want float64
	}{
		{"same", &a, &a, 0},
		{"scaled", &a, &a2, 0},
		{"disjoint", &a, &b, 1},
		{"first slot", &a, &c, 1 - 2.0/100},
	} {
		if got := KS(tc.x, tc.y); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: KS = %v, want %v", tc.name, got, tc.want)
		}
		if got, back := KS(tc.x, tc.y), KS(tc.y, tc.x); got != back {
			t.Errorf("%s: KS not symmetric: %v, %v", tc.name, got, back)
		}
	}
	if !math.IsNaN(KS(&a, &Log2{})) {
		t.Error("KS with an empty histogram is not NaN")
	}
}

// TestLog2AddInt64s: AddInt64s counts a slice as Add does each value as
// uint64, into an empty histogram and into one that already holds values.
func TestLog2AddInt64s(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	all := batchValues(rng)
	for k, vs := range all {
		for _, before := range [][]int64{nil, all[(k+7)%len(all)]} {
			var want, got Log2
			for _, v := range before {
				want.Add(uint64(v))
				got.Add(uint64(v))
			}
			for _, v := range vs {
				want.Add(uint64(v))
			}
			got.AddInt64s(vs)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("values %d (%d, after %d): AddInt64s: count %d sum %v min %d max %d slots %v; Add one by one: %d %v %d %d %v",
					k, len(vs), len(before), got.count, got.sum, got.min, got.max, got.slots, want.count, want.sum, want.min, want.max, want.slots)
			}
		}
	}
}
