package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay/hist"
)

// Linear is the MIN,MAX,STEP of a linear histogram.
type Linear struct{ Min, Max, Step int64 }

// ParseLinear parses "MIN,MAX,STEP".
func ParseLinear(s string) (*Linear, error) {
	var l Linear
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return nil, fmt.Errorf("--linear %q: want MIN,MAX,STEP", s)
	}
	for i, p := range []*int64{&l.Min, &l.Max, &l.Step} {
		v, err := strconv.ParseInt(strings.TrimSpace(parts[i]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--linear %q: %w", s, err)
		}
		*p = v
	}
	if _, err := hist.NewLinear(l.Min, l.Max, l.Step); err != nil {
		return nil, fmt.Errorf("--linear %q: %w", s, err)
	}
	return &l, nil
}

// HistOptions select and shape a histogram of one probe field.
type HistOptions struct {
	Rows  RowFilter
	Probe string
	Field string
	// By splits the histogram per key: "comm", "pid", "tid" or a field of the probe.
	By     string
	Style  string // "bcc" (default) or "bpftrace"
	Linear *Linear
	Label  string // BCC's val_type, bpftrace's map name; default the field name
	Cast   Cast
	Stats  bool
	JSON   bool
	// Bpftrace selects the bpftrace release whose output to mimic.
	Bpftrace hist.BpftraceVersion
	// Notes, if not nil, gets a note when no value was counted (stderr).
	Notes io.Writer
	// Now stamps BCC-style JSON, as print_json_hist does at the moment it
	// prints; zero means the capture's (Capture.EndWall), not the replay's.
	Now time.Time
	// Interval, if not 0, prints one histogram (or one per key) per
	// interval of the capture, each after the wall-clock time of its
	// end, as BCC's tools print with -T and an interval.
	Interval time.Duration
	// unit, if more than 1, says that the values are nanoseconds shown
	// in units of unit nanoseconds (1000 for usecs): the histograms
	// count each value divided by unit and truncated, as BCC's tools
	// bucket them, and the statistics keep the nanoseconds and print
	// them in the unit.
	unit int64
}

// accum is one histogram and its statistics.
type accum struct {
	log2  hist.Log2
	pow2  hist.Pow2
	lin   *hist.Linear
	stats hist.Stats
}

// add counts v: its statistics as it is, its histogram bucket in o's unit.
func (a *accum) add(v int64, o *HistOptions) {
	a.stats.Add(v)
	if o.unit > 1 {
		v /= o.unit
	}
	switch {
	case o.Linear != nil:
		a.lin.Add(v)
	case o.Style == "bpftrace":
		a.pow2.Add(v)
	default:
		a.log2.Add(uint64(v))
	}
}

// keyed groups accumulators by a string or an integer key.
type keyed struct {
	newAcc func() *accum
	strs   map[string]*accum
	ints   map[int64]*accum
	n      uint64 // values counted (histSlices.at)
}

func newKeyed(o *HistOptions) *keyed {
	return &keyed{
		newAcc: func() *accum {
			a := &accum{}
			if o.Linear != nil {
				a.lin, _ = hist.NewLinear(o.Linear.Min, o.Linear.Max, o.Linear.Step)
			}
			return a
		},
		strs: map[string]*accum{},
		ints: map[int64]*accum{},
	}
}

func (k *keyed) str(s string) *accum {
	a := k.strs[s]
	if a == nil {
		a = k.newAcc()
		k.strs[strings.Clone(s)] = a
	}
	return a
}

func (k *keyed) int(v int64) *accum {
	a := k.ints[v]
	if a == nil {
		a = k.newAcc()
		k.ints[v] = a
	}
	return a
}

type keyedEntry struct {
	key   string
	quote bool
	acc   *accum
}

// entries lists the keys in order: integers numerically, then strings.
func (k *keyed) entries() []keyedEntry {
	var out []keyedEntry
	for _, v := range sortedKeys(k.ints) {
		out = append(out, keyedEntry{key: strconv.FormatInt(v, 10), acc: k.ints[v]})
	}
	for _, s := range sortedKeys(k.strs) {
		out = append(out, keyedEntry{key: textsafe.Escape(s), quote: true, acc: k.strs[s]})
	}
	return out
}

// Hist builds the histogram o asks for from c and prints it to out. It
// returns its pass over c (nil if it failed before reading).
func Hist(c *Capture, o HistOptions, out io.Writer) (*Pass, error) {
	ref, err := c.Resolve(o.Probe, o.Field)
	if err != nil {
		return nil, err
	}
	if !ref.IsInt() {
		return nil, usage.Errorf("%s.%s is %s: histograms need an integer field", o.Probe, o.Field, ref.Kind())
	}
	if l := o.Linear; l != nil {
		if _, err := hist.NewLinear(l.Min, l.Max, l.Step); err != nil {
			return nil, usage.Errorf("--linear %d,%d,%d: %w", l.Min, l.Max, l.Step, err)
		}
	}
	if o.Label == "" {
		o.Label = o.Field
	}
	if o.Now.IsZero() {
		o.Now = c.EndWall()
	}
	var byRef *Ref
	switch o.By {
	case "", "comm", "pid", "tid":
	default:
		r, err := c.Resolve(o.Probe, o.By)
		if err != nil {
			return nil, fmt.Errorf("--by: %w", err)
		}
		byRef = &r
	}
	if o.Interval != 0 {
		return c.histIntervals(&o, &ref, byRef, out)
	}
	r := c.reader()
	groups := newKeyed(&o)
	var all *accum
	if o.By == "" {
		all = groups.int(0)
		if c.SpansWhere(&o.Rows) {
			p, err := c.histRuns(r, &o, &ref, all, groups.newAcc)
			if err != nil {
				return p, err
			}
			p.unmatched = unmatched{} // printHist's note says it (below)
			return p, printHist(out, &o, groups.entries(), false)
		}
	} else if byRef == nil && c.SpansWhere(&o.Rows) {
		timed := c.selectColumns(r, append([]int{ref.col}, byColumns(o.By, nil)...), &o.Rows)
		s := newSlices(&o, nil)
		p, err := c.histSpans(r, timed, &o, &ref, s)
		if err != nil {
			return p, err
		}
		p.unmatched = unmatched{}
		return p, printHist(out, &o, s.entries(0), true)
	}
	stats := statsNeeded(&o)
	timed := c.selectColumns(r, append([]int{ref.col}, byColumns(o.By, byRef)...), &o.Rows)
	p, err := c.walkWith(r, timed, &o.Rows, false, func(b *format.Batch, i int, _ bool) error {
		v, ok := ref.Int(b, i)
		if !ok {
			return nil
		}
		v = o.Cast.Apply(v)
		a := all
		if a == nil {
			a = groups.pick(o.By, byRef, b, i)
		}
		a.addN(v, 1, &o, stats)
		return nil
	})
	if err != nil {
		return p, err
	}
	// printHist says itself when nothing passed the filters: not Scan's
	// note too.
	p.unmatched = unmatched{}
	return p, printHist(out, &o, groups.entries(), o.By != "")
}

// pick returns the accumulator of the key by (comm, pid, tid, or the
// field byRef) of event row i of b; by "" is key 0, the one histogram.
func (k *keyed) pick(by string, byRef *Ref, b *format.Batch, i int) *accum {
	switch by {
	case "":
		return k.int(0)
	case "comm":
		return k.str(b.Comm(i))
	case "pid":
		return k.int(int64(b.PID[i]))
	case "tid":
		return k.int(int64(b.TID[i]))
	}
	col := b.Col(byRef.col)
	if byRef.IsInt() {
		return k.int(col.Int(i))
	}
	return k.str(col.Str(i))
}

// count is how many values a has counted.
func (a *accum) count(o *HistOptions) uint64 {
	switch {
	case o.Linear != nil:
		return a.lin.Count()
	case o.Style == "bpftrace":
		return a.pow2.Count()
	}
	return a.log2.Count()
}

func printHist(out io.Writer, o *HistOptions, entries []keyedEntry, isKeyed bool) error {
	var n uint64
	for _, e := range entries {
		n += e.acc.count(o)
	}
	noteEmpty(o, n)
	noteOutside(o, entries, n)
	return printHistBody(out, o, entries, isKeyed, o.Now)
}

// noteOutside says on o.Notes how many of the n values a linear histogram
// in BCC's style has no row for: print_linear_hist has none below MIN or
// at MAX and above, where bpftrace's lhist counts them; or, when its keys
// are not the values (MIN not 0, or STEP not 1), what they count.
func noteOutside(o *HistOptions, entries []keyedEntry, n uint64) {
	if o.Linear == nil || o.Style == "bpftrace" || o.JSON || o.Notes == nil {
		return
	}
	var out uint64
	for _, e := range entries {
		b := e.acc.lin.Buckets()
		out += b[0] + b[len(b)-1]
	}
	l := o.Linear
	switch {
	case out > 0:
		fmt.Fprintf(o.Notes, "NOTE: %d of %d values are outside --linear %d,%d,%d and have no row: BCC's linear histogram has key i count [%d+i*%d, %d+(i+1)*%d); --style bpftrace shows them.\n",
			out, n, l.Min, l.Max, l.Step, l.Min, l.Step, l.Min, l.Step)
	case n > 0 && (l.Min != 0 || l.Step != 1):
		// The keys are not the values: say what they are.
		fmt.Fprintf(o.Notes, "NOTE: BCC's linear histogram has key i count [%d+i*%d, %d+(i+1)*%d); --style bpftrace labels the ranges.\n",
			l.Min, l.Step, l.Min, l.Step)
	}
}

// noteEmpty says on o.Notes that the histogram counted nothing, if n is 0.
func noteEmpty(o *HistOptions, n uint64) {
	if n == 0 && o.Notes != nil {
		fmt.Fprintf(o.Notes, "NOTE: no event of probe %s has a value of %s", textsafe.Escape(o.Probe), textsafe.Escape(o.Field))
		if f := &o.Rows; len(f.PIDs)+len(f.TIDs)+len(f.Comms) > 0 || f.From != 0 || f.To != 0 {
			fmt.Fprintf(o.Notes, " that passes the --pid, --tid, --comm, --from and --to filters")
		}
		fmt.Fprintln(o.Notes, ": the histogram is empty.")
	}
}

// printHistBody prints the histograms of entries as o's style prints
// them, JSON stamped with now.
func printHistBody(out io.Writer, o *HistOptions, entries []keyedEntry, isKeyed bool, now time.Time) error {
	var err error
	switch {
	case o.JSON:
		err = printHistJSON(out, o, entries, isKeyed, now)
	case o.Style == "bpftrace":
		var es []hist.BpftraceEntry
		for _, e := range entries {
			var h hist.BpftraceHist = &e.acc.pow2
			if o.Linear != nil {
				h = e.acc.lin
			}
			es = append(es, hist.BpftraceEntry{Key: e.key, Hist: h})
		}
		name := "@" + o.Label
		if !isKeyed {
			if len(es) == 0 {
				return nil
			}
			err = es[0].Hist.(interface {
				WriteBpftrace(io.Writer, string, hist.BpftraceVersion) error
			}).WriteBpftrace(out, name, o.Bpftrace)
		} else {
			err = hist.WriteBpftraceMap(out, name, o.Bpftrace, es)
		}
	default:
		for n, e := range entries {
			if isKeyed {
				key := e.key
				if e.quote {
					key = "'" + key + "'"
				}
				fmt.Fprintf(out, "\n%s = %s\n", o.By, key)
			} else if n > 0 {
				break
			}
			if o.Linear != nil {
				err = e.acc.lin.WriteBCC(out, o.Label)
			} else {
				err = e.acc.log2.WriteBCC(out, o.Label)
			}
			if err != nil {
				return err
			}
		}
	}
	if err != nil || !o.Stats || o.JSON {
		return err
	}
	for _, e := range entries {
		prefix := ""
		if isKeyed {
			prefix = o.By + " " + e.key + ": "
		}
		fmt.Fprintf(out, "%s%s\n", prefix, statsLine(&e.acc.stats, o.unit))
	}
	return nil
}

// statsLine prints count, sum, min, mean, percentiles and max on one line.
// With unit more than 1, s holds nanoseconds and the line shows them in
// units of unit nanoseconds, each to three decimals (in usecs exactly, in
// msecs to the microsecond); the mean and sum are computed from the
// nanoseconds, not from values rounded to the unit first. With unit 0 or
// 1, values print as recorded, the mean to one decimal.
func statsLine(s *hist.Stats, unit int64) string {
	if s.Count() == 0 {
		return "count 0"
	}
	if unit <= 1 {
		return fmt.Sprintf("count %d, sum %s, min %d, mean %.1f, p50 %d, p90 %d, p99 %d, max %d",
			s.Count(), s.Sum(), s.Min(), s.Mean(), s.Percentile(50), s.Percentile(90), s.Percentile(99), s.Max())
	}
	f := func(v int64) string { return fixed3(big.NewInt(v), unit) }
	return fmt.Sprintf("count %d, sum %s, min %s, mean %s, p50 %s, p90 %s, p99 %s, max %s",
		s.Count(), fixed3(s.Sum(), unit), f(s.Min()), meanFixed3(s, unit),
		f(s.Percentile(50)), f(s.Percentile(90)), f(s.Percentile(99)), f(s.Max()))
}

// fixed3 is v/unit rounded to three decimals (halves away from zero).
func fixed3(v *big.Int, unit int64) string {
	return new(big.Rat).SetFrac(v, big.NewInt(unit)).FloatString(3)
}

// meanFixed3 is the mean of s in units of unit, rounded to three decimals.
func meanFixed3(s *hist.Stats, unit int64) string {
	return new(big.Rat).SetFrac(s.Sum(), meanDenom(s, unit)).FloatString(3)
}

// meanDenom is Count*unit, the divisor of Sum that gives the mean in the unit.
func meanDenom(s *hist.Stats, unit int64) *big.Int {
	d := new(big.Int).SetUint64(s.Count())
	return d.Mul(d, big.NewInt(unit))
}

// exactDecimal is v/unit, unit a power of ten, written exactly: with as
// many decimals as it needs (none if it is a whole number), never in
// exponent notation.
func exactDecimal(v *big.Int, unit int64) string {
	if unit <= 1 {
		return v.String()
	}
	digits := len(strconv.FormatInt(unit, 10)) - 1
	q, r := new(big.Int).QuoRem(new(big.Int).Abs(v), big.NewInt(unit), new(big.Int))
	sign := ""
	if v.Sign() < 0 {
		sign = "-"
	}
	frac := strings.TrimRight(fmt.Sprintf("%0*d", digits, r.Int64()), "0")
	if frac == "" {
		return sign + q.String()
	}
	return sign + q.String() + "." + frac
}

// StatsJSON is the JSON form of a stats line. Sum is a string, as it may
// exceed what a JSON number holds exactly; the other values are numbers,
// written exactly (Mean as the nearest float64). In a unit coarser than
// the values recorded (latencies in usecs or msecs), they are the
// recorded nanoseconds divided by the unit, with decimals.
type StatsJSON struct {
	Count uint64      `json:"count"`
	Sum   string      `json:"sum"`
	Min   json.Number `json:"min"`
	Mean  float64     `json:"mean"`
	P50   json.Number `json:"p50"`
	P90   json.Number `json:"p90"`
	P99   json.Number `json:"p99"`
	Max   json.Number `json:"max"`
}

// statsJSON is s as JSON; with unit more than 1, s holds nanoseconds and
// the values are given in units of unit nanoseconds, as statsLine gives them.
func statsJSON(s *hist.Stats, unit int64) StatsJSON {
	if s.Count() == 0 {
		return StatsJSON{Sum: "0"}
	}
	unit = max(unit, 1)
	n := func(v int64) json.Number { return json.Number(exactDecimal(big.NewInt(v), unit)) }
	mean := s.Mean()
	if unit > 1 {
		mean, _ = new(big.Rat).SetFrac(s.Sum(), meanDenom(s, unit)).Float64()
	}
	return StatsJSON{s.Count(), exactDecimal(s.Sum(), unit), n(s.Min()), mean,
		n(s.Percentile(50)), n(s.Percentile(90)), n(s.Percentile(99)), n(s.Max())}
}

func printHistJSON(out io.Writer, o *HistOptions, entries []keyedEntry, isKeyed bool, now time.Time) error {
	if o.Linear == nil && o.Style != "bpftrace" {
		// BCC's print_json_hist shape, one object per line.
		if isKeyed {
			var secs []hist.Section
			for _, e := range entries {
				secs = append(secs, hist.Section{Key: e.key, Hist: &e.acc.log2})
			}
			if err := hist.WriteBCCJSONSections(out, o.Label, o.By, secs, now); err != nil {
				return err
			}
		} else if len(entries) > 0 {
			if err := entries[0].acc.log2.WriteBCCJSON(out, o.Label, now); err != nil {
				return err
			}
		}
		if !o.Stats {
			return nil
		}
	}
	type bucket struct {
		Start int64  `json:"interval-start"`
		End   int64  `json:"interval-end"`
		Count uint64 `json:"count"`
	}
	type doc struct {
		Key     string    `json:"key,omitempty"`
		ValType string    `json:"val_type"`
		Data    []bucket  `json:"data,omitempty"`
		Stats   StatsJSON `json:"stats"`
	}
	enc := json.NewEncoder(out)
	for _, e := range entries {
		d := doc{ValType: o.Label, Stats: statsJSON(&e.acc.stats, o.unit)}
		if isKeyed {
			d.Key = e.key
		}
		if o.Linear != nil {
			bs := e.acc.lin.Buckets()
			for j, n := range bs {
				lo := o.Linear.Min + int64(j-1)*o.Linear.Step
				hi := lo + o.Linear.Step - 1
				switch j {
				case 0:
					lo, hi = -1<<63, o.Linear.Min-1
				case len(bs) - 1:
					hi = 1<<63 - 1
				}
				if n > 0 {
					d.Data = append(d.Data, bucket{lo, hi, n})
				}
			}
		} else if o.Style == "bpftrace" {
			for j, n := range e.acc.pow2.Buckets() {
				if n == 0 {
					continue
				}
				lo, hi := pow2Range(j)
				d.Data = append(d.Data, bucket{lo, hi, n})
			}
		}
		if err := enc.Encode(d); err != nil {
			return err
		}
	}
	return nil
}

// pow2Range is the value range of bpftrace hist() bucket j.
func pow2Range(j int) (lo, hi int64) {
	switch j {
	case 0:
		return -1 << 63, -1
	case 1:
		return 0, 0
	}
	lo = int64(1) << (j - 2)
	if j-1 >= 63 {
		return lo, 1<<63 - 1
	}
	return lo, int64(1)<<(j-1) - 1
}
