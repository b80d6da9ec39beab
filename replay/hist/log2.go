package hist

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/bits"
	"time"
)

// Log2Slots is the number of slots of a [Log2] histogram: slot 0, which
// bpf_log2l never returns, and slots 1 to 64.
const Log2Slots = 65

// Log2Slot returns the slot BCC's bpf_log2l(v) puts v in: 1 for 0 and 1,
// otherwise the slot i holding 2^(i-1) to 2^i-1, at most 64.
func Log2Slot(v uint64) int {
	if v == 0 {
		return 1
	}
	return bits.Len64(v)
}

// Log2 is a power-of-two histogram of unsigned values, bucketed like a BCC
// BPF_HISTOGRAM filled with bpf_log2l(), that also keeps the exact count,
// sum, minimum and maximum of the values.
//
// The zero value is an empty histogram ready to use.
type Log2 struct {
	slots    [Log2Slots]uint64
	count    uint64
	sum      int128
	min, max uint64
}

// Add records one occurrence of v.
func (h *Log2) Add(v uint64) {
	h.slots[Log2Slot(v)]++
	if h.count == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.count++
	h.sum.addUint64(v, 1)
}

// AddN records n occurrences of v.
func (h *Log2) AddN(v, n uint64) {
	if n == 0 {
		return
	}
	h.slots[Log2Slot(v)] += n
	if h.count == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.count += n
	h.sum.addUint64(v, n)
}

// AddInt64s records uint64(v) for each v of vs, as Add would one by one,
// with the count, sum, minimum and maximum kept over the whole slice and
// the slot found without a branch (latency's durations, a stretch of rows
// at a time).
func (h *Log2) AddInt64s(vs []int64) {
	if len(vs) == 0 {
		return
	}
	lo, hi := uint64(vs[0]), uint64(vs[0])
	var sumLo, sumHi, c uint64
	for _, v := range vs {
		u := uint64(v)
		h.slots[bits.Len64(u|1)]++ // Log2Slot: 0 and 1 share slot 1
		lo, hi = min(lo, u), max(hi, u)
		sumLo, c = bits.Add64(sumLo, u, 0)
		sumHi += c
	}
	h.summarize(uint64(len(vs)), lo, hi, int128{hi: sumHi, lo: sumLo})
}

// summarize adds to h's count, sum, minimum and maximum those of n values
// whose slots are counted.
func (h *Log2) summarize(n, lo, hi uint64, sum int128) {
	if h.count == 0 || lo < h.min {
		h.min = lo
	}
	h.max = max(h.max, hi)
	h.count += n
	h.sum.add(sum)
}

// Merge adds all values recorded in o to h.
func (h *Log2) Merge(o *Log2) {
	if o.count == 0 {
		return
	}
	for i, c := range o.slots {
		h.slots[i] += c
	}
	if h.count == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.count += o.count
	h.sum.add(o.sum)
}

// Slots returns the count of every slot, indexed as by [Log2Slot].
func (h *Log2) Slots() [Log2Slots]uint64 { return h.slots }

// Count returns the number of values recorded.
func (h *Log2) Count() uint64 { return h.count }

// Sum returns the exact sum of the values recorded.
func (h *Log2) Sum() *big.Int { return h.sum.big(false) }

// Mean returns the mean of the values recorded, or 0 if there are none.
func (h *Log2) Mean() float64 { return mean(h.Sum(), h.count) }

// Min returns the smallest value recorded, or 0 if there are none.
func (h *Log2) Min() uint64 { return h.min }

// Max returns the largest value recorded, or 0 if there are none.
func (h *Log2) Max() uint64 { return h.max }

// WriteBCC writes h exactly as bcc's print_log2_hist(label) prints an
// unkeyed histogram. It writes nothing if h is empty.
func (h *Log2) WriteBCC(w io.Writer, label string) error {
	var b bytes.Buffer
	bccLog2(&b, h.slots[:], label)
	_, err := w.Write(b.Bytes())
	return err
}

// Section is the histogram of one key of a keyed BCC histogram, such as one
// disk of biolatency -D. Key is the key as the tool's section_print_fn
// formats it.
type Section struct {
	Key  string
	Hist *Log2
}

// WriteBCCSections writes one histogram per section exactly as bcc's
// print_log2_hist(label, header, section_print_fn) does for a table keyed
// by a struct: a line "header = key" after an empty line, then the
// histogram.
//
// BCC prints sections in BPF map iteration order, which is not reproducible,
// so the sections are written in the order given.
func WriteBCCSections(w io.Writer, label, header string, sections []Section) error {
	var b bytes.Buffer
	for _, s := range sections {
		fmt.Fprintf(&b, "\n%s = %s\n", header, s.Key)
		bccLog2(&b, s.Hist.slots[:], label)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteBCCJSON writes h as a line of JSON with the keys bcc's
// print_json_hist(label) uses: "ts" (ts formatted as "2006-01-02 15:04:05"),
// "val_type" and "data", a list of {"interval-start", "interval-end",
// "count"}. BCC prints a Python dict instead of JSON.
func (h *Log2) WriteBCCJSON(w io.Writer, label string, ts time.Time) error {
	var b bytes.Buffer
	bccJSON(&b, h.slots[:], label, ts, "", "")
	_, err := w.Write(b.Bytes())
	return err
}

// WriteBCCJSONSections writes one JSON line per section, as
// [Log2.WriteBCCJSON] does, with an extra string member named header holding
// the section key, as print_json_hist(label, header, section_print_fn) does.
func WriteBCCJSONSections(w io.Writer, label, header string, sections []Section, ts time.Time) error {
	var b bytes.Buffer
	for _, s := range sections {
		bccJSON(&b, s.Hist.slots[:], label, ts, header, s.Key)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// bccStarsMax is bcc's table.stars_max, the width of the bar.
const bccStarsMax = 40

// bccLog2 reproduces bcc's _print_log2_hist(vals, label, None).
func bccLog2(b *bytes.Buffer, vals []uint64, label string) {
	idxMax, valMax := -1, uint64(0)
	for i, v := range vals {
		if v > 0 {
			idxMax = i
		}
		valMax = max(valMax, v)
	}
	if idxMax <= 0 {
		return
	}

	header := "     %-19s : count     distribution\n"
	row := "%10d -> %-10d : %-8d |%-*s|\n"
	width := bccStarsMax
	if idxMax > 32 {
		header = "               %-29s : count     distribution\n"
		row = "%20d -> %-20d : %-8d |%-*s|\n"
		width = bccStarsMax / 2
	}
	fmt.Fprintf(b, header, label)
	for i := 1; i <= idxMax; i++ {
		low := uint64(1) << (i - 1)
		high := uint64(math.MaxUint64) >> (64 - i)
		if low == high {
			low--
		}
		fmt.Fprintf(b, row, low, high, vals[i], width, stars(vals[i], valMax, width))
	}
}

// bccLinear reproduces bcc's _print_linear_hist(vals, label, None).
func bccLinear(b *bytes.Buffer, vals []uint64, label string) {
	idxMax, valMax := -1, uint64(0)
	for i, v := range vals {
		if v > 0 {
			idxMax = i
		}
		valMax = max(valMax, v)
	}
	if idxMax < 0 {
		return
	}
	fmt.Fprintf(b, "     %-13s : count     distribution\n", label)
	for i := 0; i <= idxMax; i++ {
		fmt.Fprintf(b, "        %-10d : %-8d |%-*s|\n", i, vals[i], bccStarsMax, stars(vals[i], valMax, bccStarsMax))
	}
}

// bccJSON reproduces the dict built by bcc's _print_json_hist, as JSON.
func bccJSON(b *bytes.Buffer, vals []uint64, label string, ts time.Time, sectionHeader, sectionKey string) {
	last := 0
	for i, v := range vals {
		if v != 0 {
			last = i
		}
	}
	b.WriteString(`{"ts": `)
	jsonString(b, ts.Format(time.DateTime))
	b.WriteString(`, "val_type": `)
	jsonString(b, label)
	b.WriteString(`, "data": [`)
	start := uint64(0)
	for i := 1; i <= last; i++ {
		end := uint64(math.MaxUint64) >> (64 - i)
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, `{"interval-start": %d, "interval-end": %d, "count": %d}`, start, end, vals[i])
		start = end + 1
	}
	b.WriteString("]")
	if sectionHeader != "" {
		b.WriteString(", ")
		jsonString(b, sectionHeader)
		b.WriteString(": ")
		jsonString(b, sectionKey)
	}
	b.WriteString("}\n")
}

var bar = bytes.Repeat([]byte{'*'}, bccStarsMax)

// stars returns the bar bcc's _stars(val, valMax, width) draws, for
// val <= valMax. _stars draws floor(width*val/valMax) stars, at most width,
// where the quotient is Python's correctly rounded float division.
func stars(val, valMax uint64, width int) []byte {
	if val == 0 {
		return nil
	}
	w := uint64(width)
	hi, lo := bits.Mul64(w, val)
	var q float64
	if hi == 0 && lo < 1<<53 && valMax < 1<<53 {
		// Both operands are exact float64s, so IEEE division is
		// correctly rounded too.
		q = float64(lo) / float64(valMax)
	} else {
		num := new(big.Float).SetInt(new(big.Int).Mul(
			new(big.Int).SetUint64(w), new(big.Int).SetUint64(val)))
		den := new(big.Float).SetUint64(valMax)
		q, _ = new(big.Float).SetPrec(53).Quo(num, den).Float64()
	}
	n := int(min(math.Floor(q), float64(width)))
	return bar[:n]
}

// jsonString appends s as a JSON string, leaving <, > and & unescaped.
func jsonString(b *bytes.Buffer, s string) {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	e.Encode(s)             // cannot fail for a string
	b.Truncate(b.Len() - 1) // drop the newline Encode appends
}

// KS returns the Kolmogorov–Smirnov statistic of a and b over their slots:
// the largest absolute difference between their cumulative distributions
// evaluated at every slot boundary. It is NaN if either is empty.
func KS(a, b *Log2) float64 {
	na, nb := a.count, b.count
	if na == 0 || nb == 0 {
		return math.NaN()
	}
	var ca, cb uint64
	d := 0.0
	for i := range a.slots {
		ca += a.slots[i]
		cb += b.slots[i]
		d = max(d, math.Abs(float64(ca)/float64(na)-float64(cb)/float64(nb)))
	}
	return d
}
