package hist

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
)

// BpftraceVersion is the bpftrace release whose text output is reproduced,
// since details of it changed between releases. The zero value stands for
// the newest format, that of v0.24 and later.
//
// The differences reproduced are: before v0.20, hist() puts every value of
// 2^31 or more in the bucket [2G, 4G); before v0.21, lhist() labels that are
// multiples of 1024 get a K or M suffix whatever the step; before v0.23, the
// map name is followed by ": " rather than ":"; from v0.24 on, lhist() shows
// buckets of width 1 as "[n]", labels the overflow bucket with its first
// value rather than max, and prints nothing at all for an empty map.
type BpftraceVersion struct {
	Major, Minor int
}

var versionRE = regexp.MustCompile(`(\d+)\.(\d+)`)

// ParseBpftraceVersion parses a version such as "0.17", "v0.20.2" or the
// output of "bpftrace --version".
func ParseBpftraceVersion(s string) (BpftraceVersion, error) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return BpftraceVersion{}, fmt.Errorf("no bpftrace version in %q", s)
	}
	major, err1 := strconv.Atoi(m[1])
	minor, err2 := strconv.Atoi(m[2])
	if err := errors.Join(err1, err2); err != nil {
		return BpftraceVersion{}, fmt.Errorf("bpftrace version %q: %w", s, err)
	}
	return BpftraceVersion{major, minor}, nil
}

func (v BpftraceVersion) String() string {
	if v == (BpftraceVersion{}) {
		return "latest"
	}
	return fmt.Sprintf("v%d.%d", v.Major, v.Minor)
}

// atLeast reports whether v is major.minor or later.
func (v BpftraceVersion) atLeast(major, minor int) bool {
	if v == (BpftraceVersion{}) {
		return true
	}
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// Pow2Buckets is the number of buckets of a [Pow2] histogram.
const Pow2Buckets = 65

// Pow2Index returns the bucket bpftrace's hist() puts v in: 0 for negative
// values, 1 for 0, and i+2 for 2^i <= v < 2^(i+1), at most 64.
func Pow2Index(v int64) int {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return 1
	}
	return bits.Len64(uint64(v)) + 1
}

// Pow2 is a histogram of signed values bucketed like bpftrace's hist().
//
// The zero value is an empty histogram ready to use.
type Pow2 struct {
	buckets [Pow2Buckets]uint64
	count   uint64
}

// Add records one occurrence of v.
func (h *Pow2) Add(v int64) {
	h.buckets[Pow2Index(v)]++
	h.count++
}

// AddN records n occurrences of v.
func (h *Pow2) AddN(v int64, n uint64) {
	h.buckets[Pow2Index(v)] += n
	h.count += n
}

// Merge adds all values recorded in o to h.
func (h *Pow2) Merge(o *Pow2) {
	for i, c := range o.buckets {
		h.buckets[i] += c
	}
	h.count += o.count
}

// Buckets returns the count of every bucket, indexed as by [Pow2Index].
func (h *Pow2) Buckets() [Pow2Buckets]uint64 { return h.buckets }

// Count returns the number of values recorded.
func (h *Pow2) Count() uint64 { return h.count }

// WriteBpftrace writes h exactly as bpftrace v prints a map holding a
// hist(). name is what precedes the colon, such as "@bytes".
func (h *Pow2) WriteBpftrace(w io.Writer, name string, v BpftraceVersion) error {
	return writeBpftrace(w, v, name, false, []BpftraceEntry{{Hist: h}})
}

func (h *Pow2) bpftrace(b *bytes.Buffer, v BpftraceVersion) {
	vals := h.buckets
	if !v.atLeast(0, 20) {
		// bpftrace's log2 loop shifted by at most 31 bits.
		for i := 34; i < len(vals); i++ {
			vals[33] += vals[i]
			vals[i] = 0
		}
	}

	first, last, maxTrunc := -1, -1, int32(0)
	for i, c := range vals {
		// bpftrace reads every count into an int.
		t := int32(c)
		if t > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
		maxTrunc = max(maxTrunc, t)
	}
	if last < 0 {
		return
	}
	maxCount := float32(maxTrunc)
	if v.atLeast(0, 24) {
		maxCount = float32(slices.Max(vals[first : last+1]))
	}
	for i := first; i <= last; i++ {
		var label string
		switch i {
		case 0:
			label = "(..., 0)"
		case 1:
			label = "[0]"
		case 2:
			label = "[1]"
		default:
			label = "[" + pow2Bound(i-2) + ", " + pow2Bound(i-1) + ")"
		}
		bpftraceRow(b, label, vals[i], maxCount)
	}
}

// pow2Bound formats 2^p as bpftrace labels hist() buckets.
func pow2Bound(p int) string {
	s := strconv.Itoa(1 << (p % 10))
	if p >= 10 {
		s += string("KMGTPE"[p/10-1])
	}
	return s
}

// Linear is a histogram of signed values bucketed like bpftrace's
// lhist(value, min, max, step): one bucket below min, one per step from min,
// and one for max and above.
type Linear struct {
	min, max, step int64
	buckets        []uint64
	count          uint64
}

// NewLinear returns an empty Linear histogram. It accepts the arguments
// bpftrace accepts: 0 <= min < max, step >= 1, max-min >= step, at most 1000
// buckets, and, so that bpftrace's int labels cannot overflow, max < 2^31.
func NewLinear(min, max, step int64) (*Linear, error) {
	switch {
	case step < 1:
		return nil, fmt.Errorf("lhist step must be >= 1, got %d", step)
	case min < 0:
		return nil, fmt.Errorf("lhist min must be non-negative, got %d", min)
	case min > max:
		return nil, fmt.Errorf("lhist min %d must be less than max %d", min, max)
	case max > math.MaxInt32:
		return nil, fmt.Errorf("lhist max %d must be less than 2^31", max)
	case max-min < step:
		return nil, fmt.Errorf("lhist step %d is too large for the range %d", step, max-min)
	case (max-min)/step > 1000:
		return nil, fmt.Errorf("lhist has %d buckets, more than 1000", (max-min)/step)
	}
	return &Linear{min: min, max: max, step: step, buckets: make([]uint64, (max-min)/step+2)}, nil
}

// index returns the bucket lhist() puts v in.
func (h *Linear) index(v int64) int {
	switch {
	case v < h.min:
		return 0
	case v > h.max:
		return len(h.buckets) - 1
	}
	return int((v-h.min)/h.step) + 1
}

// Add records one occurrence of v.
func (h *Linear) Add(v int64) {
	h.buckets[h.index(v)]++
	h.count++
}

// AddN records n occurrences of v.
func (h *Linear) AddN(v int64, n uint64) {
	h.buckets[h.index(v)] += n
	h.count += n
}

// Merge adds all values recorded in o to h, which must have the same min,
// max and step.
func (h *Linear) Merge(o *Linear) error {
	if h.min != o.min || h.max != o.max || h.step != o.step {
		return fmt.Errorf("cannot merge lhist(%d, %d, %d) into lhist(%d, %d, %d)",
			o.min, o.max, o.step, h.min, h.max, h.step)
	}
	for i, c := range o.buckets {
		h.buckets[i] += c
	}
	h.count += o.count
	return nil
}

// Buckets returns the count of every bucket: below min first, then one per
// step, then max and above.
func (h *Linear) Buckets() []uint64 { return slices.Clone(h.buckets) }

// Count returns the number of values recorded.
func (h *Linear) Count() uint64 { return h.count }

// WriteBpftrace writes h exactly as bpftrace v prints a map holding an
// lhist(). name is what precedes the colon, such as "@bytes".
func (h *Linear) WriteBpftrace(w io.Writer, name string, v BpftraceVersion) error {
	return writeBpftrace(w, v, name, false, []BpftraceEntry{{Hist: h}})
}

// WriteBCC writes h exactly as bcc's print_linear_hist(label) prints a
// table whose key i counts the values from min+i*step to min+(i+1)*step-1.
// print_linear_hist has no rows for values outside those steps (below min,
// or at max and above, which lhist counts together), so they are left out.
func (h *Linear) WriteBCC(w io.Writer, label string) error {
	var b bytes.Buffer
	bccLinear(&b, h.buckets[1:len(h.buckets)-1], label)
	_, err := w.Write(b.Bytes())
	return err
}

func (h *Linear) bpftrace(b *bytes.Buffer, v BpftraceVersion) {
	vals := h.buckets
	n := len(vals) - 2
	label := func(x int64) string { return lhistLabel(x, h.step, v) }
	if !v.atLeast(0, 24) {
		last, maxTrunc := -1, int32(0)
		for i, c := range vals {
			t := int32(c)
			if t != 0 {
				last = i
			}
			maxTrunc = max(maxTrunc, t)
		}
		if last < 0 {
			return
		}
		start, end := -1, 0
		for i, c := range vals {
			if c > 0 {
				if start < 0 {
					start = i
				}
				end = i
			}
		}
		start = max(start, 0)
		for i := start; i <= end; i++ {
			var l string
			switch i {
			case 0:
				l = "(..., " + label(h.min) + ")"
			case n + 1:
				l = "[" + label(h.max) + ", ...)"
			default:
				l = "[" + label(int64(i-1)*h.step+h.min) + ", " + label(int64(i)*h.step+h.min) + ")"
			}
			bpftraceRow(b, l, vals[i], float32(maxTrunc))
		}
		return
	}

	first, last := -1, -1
	for i, c := range vals {
		if int32(c) > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if last < 0 {
		return
	}
	maxCount := float32(slices.Max(vals[first : last+1]))
	for i := first; i <= last; i++ {
		var l string
		lo, hi := h.min+int64(i-1)*h.step, h.min+int64(i)*h.step
		switch {
		case i == 0:
			l = "(..., " + label(h.min) + ")"
		case hi > h.max:
			l = "[" + label(lo) + ", ...)"
		case h.step == 1:
			l = "[" + label(lo) + "]"
		default:
			l = "[" + label(lo) + ", " + label(hi) + ")"
		}
		bpftraceRow(b, l, vals[i], maxCount)
	}
}

// lhistLabel formats a bucket bound as bpftrace v labels lhist() buckets.
func lhistLabel(x, step int64, v BpftraceVersion) string {
	switch {
	case v.atLeast(0, 21) && step%1024 != 0, x == 0:
		return strconv.FormatInt(x, 10)
	case x%(1<<20) == 0:
		return strconv.FormatInt(x>>20, 10) + "M"
	case x%(1<<10) == 0:
		return strconv.FormatInt(x>>10, 10) + "K"
	}
	return strconv.FormatInt(x, 10)
}

// bpftraceBarMax is the width of bpftrace's bar of '@'.
const bpftraceBarMax = 52

var atBar = bytes.Repeat([]byte{'@'}, bpftraceBarMax)

// bpftraceRow writes one histogram line as bpftrace does. The bar is
// computed in float32, as bpftrace does; it is longer than the column only
// when bpftrace's int arithmetic overflowed, and is then clamped.
func bpftraceRow(b *bytes.Buffer, label string, count uint64, maxCount float32) {
	w := float32(float32(count)/maxCount) * bpftraceBarMax
	n := 0
	if w >= 0 && w <= bpftraceBarMax { // also false for NaN
		n = int(w)
	} else if w > bpftraceBarMax {
		n = bpftraceBarMax
	}
	fmt.Fprintf(b, "%-16s%8d |%-52s|\n", label, count, atBar[:n])
}

// A BpftraceHist is a histogram bpftrace prints: a [*Pow2] or a [*Linear].
type BpftraceHist interface {
	Count() uint64
	bpftrace(b *bytes.Buffer, v BpftraceVersion)
}

// BpftraceEntry is the histogram of one key of a bpftrace map. Key is the
// key as bpftrace prints it between the brackets, such as "sda" or "1, 2".
type BpftraceEntry struct {
	Key  string
	Hist BpftraceHist
}

// WriteBpftraceMap writes the map name, keyed by the entries, exactly as
// bpftrace v prints a map of hist() or lhist(): entries as "name[key]:"
// followed by the histogram, in increasing order of their counts. Entries
// with equal counts keep the order given; bpftrace orders them by the raw
// bytes of their keys, or arbitrarily beyond 16 keys. Empty entries are left
// out, as bpftrace never has them.
func WriteBpftraceMap(w io.Writer, name string, v BpftraceVersion, entries []BpftraceEntry) error {
	return writeBpftrace(w, v, name, true, entries)
}

func writeBpftrace(w io.Writer, v BpftraceVersion, name string, keyed bool, entries []BpftraceEntry) error {
	entries = slices.DeleteFunc(slices.Clone(entries), func(e BpftraceEntry) bool {
		return e.Hist.Count() == 0
	})
	slices.SortStableFunc(entries, func(a, b BpftraceEntry) int {
		return cmp.Compare(a.Hist.Count(), b.Hist.Count())
	})
	colon := ":\n"
	if !v.atLeast(0, 23) {
		colon = ": \n"
	}
	var b bytes.Buffer
	for _, e := range entries {
		b.WriteString(name)
		if keyed {
			b.WriteString("[" + e.Key + "]")
		}
		b.WriteString(colon)
		e.Hist.bpftrace(&b, v)
		b.WriteString("\n")
	}
	if len(entries) == 0 && !v.atLeast(0, 24) {
		// An empty map still ends with a newline.
		b.WriteString("\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}
