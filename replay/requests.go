package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/replay/hist"
)

// RequestsOptions describe per-request totals: the item field of every item
// event on a thread is summed until that thread's end event, the way seed
// 000 sums per-packet TX lengths until virtio_net_flush_tx returns.
type RequestsOptions struct {
	Filter               Filter
	ItemProbe, ItemField string
	EndProbe, EndField   string
	EndCast              Cast
	// Global keys every item and end to one sum, like the seed's constant
	// hash key; by default each thread has its own.
	Global bool
	// EndLabel and TotalLabel label the two histograms (BCC's val_type).
	EndLabel, TotalLabel string
	List                 bool // print every request
	JSON                 bool
	Now                  time.Time
}

// RequestsResult is what Requests counted.
type RequestsResult struct {
	Requests uint64 `json:"requests"`
	// EndsWithoutItems are end events with no item before them: skipped, as
	// the seed's BPF program skips them.
	EndsWithoutItems uint64 `json:"ends_without_items"`
	// Incomplete counts threads whose items were never followed by an end.
	Incomplete      uint64 `json:"incomplete"`
	IncompleteItems uint64 `json:"incomplete_items"`
	End             hist.Log2
	Total           hist.Log2
	EndStats        hist.Stats
	TotalStats      hist.Stats
}

type pending struct {
	sum   int64
	items uint64
}

// Requests computes per-request totals and prints the end-value and total
// histograms as BCC prints them.
func Requests(c *Capture, o RequestsOptions, out io.Writer) (*RequestsResult, error) {
	item, err := c.Resolve(o.ItemProbe, o.ItemField)
	if err != nil {
		return nil, fmt.Errorf("item: %w", err)
	}
	end, err := c.Resolve(o.EndProbe, o.EndField)
	if err != nil {
		return nil, fmt.Errorf("end: %w", err)
	}
	if !item.IsInt() || !end.IsInt() {
		return nil, fmt.Errorf("requests need integer fields")
	}
	if o.EndLabel == "" {
		o.EndLabel = o.EndField
	}
	if o.TotalLabel == "" {
		o.TotalLabel = o.ItemField
	}
	res := &RequestsResult{}
	open := map[uint64]*pending{}
	threads := newThreadKeys(c)
	if o.List && !o.JSON {
		fmt.Fprintf(out, "%-14s %-7s %-7s %-16s %12s %8s %14s\n", "TIME", "PID", "TID", "COMM", o.EndLabel, "ITEMS", o.TotalLabel)
	}
	m := c.Meta()
	err = c.Scan(&o.Filter, func(b *format.Batch, i int) {
		var key uint64
		if !o.Global {
			key = threads.key(b, i)
		}
		if v, ok := item.Int(b, i); ok {
			p := open[key]
			if p == nil {
				p = &pending{}
				open[key] = p
			}
			p.sum += v
			p.items++
			return
		}
		v, ok := end.Int(b, i)
		if !ok {
			return
		}
		p := open[key]
		if p == nil || p.items == 0 {
			res.EndsWithoutItems++
			return
		}
		v = o.EndCast.Apply(v)
		res.Requests++
		res.End.Add(uint64(v))
		res.Total.Add(uint64(p.sum))
		res.EndStats.Add(v)
		res.TotalStats.Add(p.sum)
		if o.List && !o.JSON {
			fmt.Fprintf(out, "%-14.6f %-7d %-7d %-16s %12d %8d %14d\n", float64(b.Time[i]-m.StartBoot)/1e9, b.PID[i], b.TID[i], textsafe.Escape(b.Comm(i)), v, p.items, p.sum)
		}
		delete(open, key)
	})
	if err != nil {
		return nil, err
	}
	for _, p := range open {
		res.Incomplete++
		res.IncompleteItems += p.items
	}
	if o.JSON {
		now := o.Now
		if now.IsZero() {
			now = time.Now()
		}
		return res, json.NewEncoder(out).Encode(map[string]any{
			"requests": res.Requests, "ends_without_items": res.EndsWithoutItems,
			"incomplete": res.Incomplete, "incomplete_items": res.IncompleteItems,
			"end": histJSON(&res.End, o.EndLabel, now), "total": histJSON(&res.Total, o.TotalLabel, now),
			"end_stats": statsJSON(&res.EndStats), "total_stats": statsJSON(&res.TotalStats),
		})
	}
	if o.List {
		fmt.Fprintln(out)
	}
	if err := res.End.WriteBCC(out, o.EndLabel); err != nil {
		return nil, err
	}
	fmt.Fprintln(out)
	if err := res.Total.WriteBCC(out, o.TotalLabel); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "\n%d requests; %d ends without items skipped; %d incomplete requests (%d items) at the end of the capture\n",
		res.Requests, res.EndsWithoutItems, res.Incomplete, res.IncompleteItems)
	return res, nil
}

// histJSON is a log2 histogram in BCC's print_json_hist shape, as a value.
func histJSON(h *hist.Log2, label string, now time.Time) json.RawMessage {
	var b jsonBuf
	if err := h.WriteBCCJSON(&b, label, now); err != nil || len(b) == 0 {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

type jsonBuf []byte

func (b *jsonBuf) Write(p []byte) (int, error) {
	for len(p) > 0 && (p[len(p)-1] == '\n') {
		p = p[:len(p)-1]
	}
	*b = append(*b, p...)
	return len(p), nil
}
