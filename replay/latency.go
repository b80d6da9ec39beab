package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay/hist"
)

// LatencyOptions pair entry and return events of one function on the same
// thread, like funclatency, offline.
type LatencyOptions struct {
	Filter        Filter
	Entry, Return string
	Unit          string // ns (default), us or ms
	JSON          bool
	Now           time.Time
}

// LatencyResult is what Latency counted.
type LatencyResult struct {
	Calls uint64 `json:"calls"`
	// UnmatchedReturns are returns with no entry on their thread (the
	// capture began inside the call); UnmatchedEntries never returned
	// before the capture ended; Overflows are entries dropped because a
	// thread nested deeper than MaxDepth.
	UnmatchedReturns uint64 `json:"unmatched_returns"`
	UnmatchedEntries uint64 `json:"unmatched_entries"`
	Overflows        uint64 `json:"overflows"`
	Hist             hist.Log2
	Stats            hist.Stats
}

// MaxDepth bounds each thread's stack of open calls.
const MaxDepth = 4096

type unit struct {
	div   int64
	label string
}

var units = map[string]unit{"ns": {1, "nsecs"}, "us": {1000, "usecs"}, "ms": {1000000, "msecs"}}

// Latencies pairs the entry and return events of one function on the same
// thread into call durations. It is fed the events of a pass one at a time
// (Add), so that it can share the pass with other analyses; Latency runs
// it alone.
type Latencies struct {
	o          LatencyOptions
	u          unit
	entry, ret uint16
	stacks     map[uint64][]int64
	threads    *threadKeys
	res        LatencyResult
}

// NewLatencies resolves o's probes against c. o.Filter is the pass's to apply.
func NewLatencies(c *Capture, o LatencyOptions) (*Latencies, error) {
	if o.Unit == "" {
		o.Unit = "ns"
	}
	u, ok := units[o.Unit]
	if !ok {
		return nil, fmt.Errorf("unit %q: use ns, us or ms", o.Unit)
	}
	entry, err := c.ResolveProbe(o.Entry)
	if err != nil {
		return nil, err
	}
	ret, err := c.ResolveProbe(o.Return)
	if err != nil {
		return nil, err
	}
	if entry == ret {
		return nil, usage.Errorf("entry and return are the same probe %q", o.Entry)
	}
	return &Latencies{o: o, u: u, entry: entry, ret: ret, stacks: map[uint64][]int64{}, threads: newThreadKeys(c)}, nil
}

// Add pairs event row i of b, if it is an entry or a return.
func (l *Latencies) Add(b *format.Batch, i int) {
	switch b.Probe[i] {
	case l.entry:
		t := l.threads.key(b, i)
		s := l.stacks[t]
		if len(s) >= MaxDepth {
			l.res.Overflows++
			return
		}
		l.stacks[t] = append(s, b.Time[i])
	case l.ret:
		t := l.threads.key(b, i)
		s := l.stacks[t]
		if len(s) == 0 {
			l.res.UnmatchedReturns++
			return
		}
		d := (b.Time[i] - s[len(s)-1]) / l.u.div
		l.stacks[t] = s[:len(s)-1]
		l.res.Calls++
		l.res.Hist.Add(uint64(d))
		l.res.Stats.Add(d)
	}
}

// Result is what the events added so far count, the entries still open
// counted as never returning.
func (l *Latencies) Result() *LatencyResult {
	res := l.res
	for _, s := range l.stacks {
		res.UnmatchedEntries += uint64(len(s))
	}
	return &res
}

// Latency computes call durations and prints their histogram as funclatency
// does; it returns them and its pass over c.
func Latency(c *Capture, o LatencyOptions, out io.Writer) (*LatencyResult, *Pass, error) {
	l, err := NewLatencies(c, o)
	if err != nil {
		return nil, nil, err
	}
	p, err := c.Scan(&o.Filter, l.Add)
	if err != nil {
		return nil, p, err
	}
	res := l.Result()
	return res, p, l.write(out, res)
}

// Write prints the Result as funclatency does, or as JSON.
func (l *Latencies) Write(out io.Writer) (*LatencyResult, error) {
	res := l.Result()
	return res, l.write(out, res)
}

func (l *Latencies) write(out io.Writer, res *LatencyResult) error {
	o, u := &l.o, l.u
	if o.JSON {
		now := o.Now
		if now.IsZero() {
			now = time.Now()
		}
		return json.NewEncoder(out).Encode(map[string]any{
			"calls": res.Calls, "unit": o.Unit, "unmatched_returns": res.UnmatchedReturns,
			"unmatched_entries": res.UnmatchedEntries, "overflows": res.Overflows,
			"hist": histJSON(&res.Hist, u.label, now), "stats": statsJSON(&res.Stats),
		})
	}
	if err := res.Hist.WriteBCC(out, u.label); err != nil {
		return err
	}
	if res.Calls > 0 {
		fmt.Fprintf(out, "\navg = %.0f %s, total: %s %s, count: %d\n", res.Stats.Mean(), u.label, res.Stats.Sum(), u.label, res.Calls)
		fmt.Fprintln(out, statsLine(&res.Stats))
	}
	fmt.Fprintf(out, "unmatched: %d returns without entry, %d entries without return", res.UnmatchedReturns, res.UnmatchedEntries)
	if res.Overflows > 0 {
		fmt.Fprintf(out, ", %d entries beyond depth %d", res.Overflows, MaxDepth)
	}
	fmt.Fprintln(out)
	return nil
}
