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

var units = map[string]struct {
	div   int64
	label string
}{"ns": {1, "nsecs"}, "us": {1000, "usecs"}, "ms": {1000000, "msecs"}}

// Latency computes call durations and prints their histogram as funclatency does.
func Latency(c *Capture, o LatencyOptions, out io.Writer) (*LatencyResult, error) {
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
	res := &LatencyResult{}
	stacks := map[uint64][]int64{}
	threads := newThreadKeys(c)
	err = c.Scan(&o.Filter, func(b *format.Batch, i int) {
		switch b.Probe[i] {
		case entry:
			t := threads.key(b, i)
			s := stacks[t]
			if len(s) >= MaxDepth {
				res.Overflows++
				return
			}
			stacks[t] = append(s, b.Time[i])
		case ret:
			t := threads.key(b, i)
			s := stacks[t]
			if len(s) == 0 {
				res.UnmatchedReturns++
				return
			}
			d := (b.Time[i] - s[len(s)-1]) / u.div
			stacks[t] = s[:len(s)-1]
			res.Calls++
			res.Hist.Add(uint64(d))
			res.Stats.Add(d)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, s := range stacks {
		res.UnmatchedEntries += uint64(len(s))
	}
	if o.JSON {
		now := o.Now
		if now.IsZero() {
			now = time.Now()
		}
		return res, json.NewEncoder(out).Encode(map[string]any{
			"calls": res.Calls, "unit": o.Unit, "unmatched_returns": res.UnmatchedReturns,
			"unmatched_entries": res.UnmatchedEntries, "overflows": res.Overflows,
			"hist": histJSON(&res.Hist, u.label, now), "stats": statsJSON(&res.Stats),
		})
	}
	if err := res.Hist.WriteBCC(out, u.label); err != nil {
		return nil, err
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
	return res, nil
}
