package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/replay/hist"
)

// RequestsOptions describe per-request totals: the item field of every item
// event on a thread is summed until that thread's end event, the way seed
// 000 sums per-packet TX lengths until virtio_net_flush_tx returns.
type RequestsOptions struct {
	Rows                 RowFilter
	ItemProbe, ItemField string
	EndProbe, EndField   string
	EndCast              Cast
	// Global keys every item and end to one sum, like the seed's constant
	// hash key; by default each thread has its own.
	Global bool
	// Key names fields that both probes have: items and ends with equal
	// values of them make one request, whatever their threads.
	Key []string
	// EndLabel and TotalLabel label the two histograms (BCC's val_type).
	EndLabel, TotalLabel string
	List                 bool // print every request
	JSON                 bool
	// Stats keeps EndStats and TotalStats (count, sum, extremes and
	// percentiles), which the JSON prints and the text does not: JSON
	// implies it. Keeping them took a tenth of requests' CPU.
	Stats bool
	// Now stamps the JSON histograms; zero means the capture's
	// (Capture.EndWall), so that a replay says when the data is from
	// and two replays of one capture print the same.
	Now time.Time
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
	// The statistics of the end values and totals, kept with
	// RequestsOptions.Stats.
	EndStats   hist.Stats
	TotalStats hist.Stats
}

type pending struct {
	sum   int64
	items uint64
	// In a batch summed on its own (requestsPart): whether the thread's
	// request ended in it, and what its first end found: the end's value
	// and the sum and items of the batch before it, to which the items
	// of the batches before are added (RequestTotals.merge).
	ended     bool
	leadEnd   int64
	leadSum   int64
	leadItems uint64
}

// RequestTotals sums items into requests. It is fed the events of a pass
// one at a time (Add), so that it can share the pass with other analyses;
// Requests runs it alone.
type RequestTotals struct {
	o         RequestsOptions
	item, end Ref
	open      perThread[pending] // by thread key; an ended request's is emptied
	threads   *threadKeys
	keys      *pairKeys // with Key: open holds nothing, openKeyed the requests
	openKeyed map[pairKey]*pending
	list      io.Writer // where each request is printed, with o.List
	m         *format.Meta
	res       RequestsResult
}

// NewRequestTotals resolves o's fields against c; with o.List, it prints
// the header of the list to out, and Add prints each request there. o.Rows
// is the pass's to apply.
func NewRequestTotals(c *Capture, o RequestsOptions, out io.Writer) (*RequestTotals, error) {
	item, err := c.Resolve(o.ItemProbe, o.ItemField)
	if err != nil {
		return nil, fmt.Errorf("item: %w", err)
	}
	end, err := c.Resolve(o.EndProbe, o.EndField)
	if err != nil {
		return nil, fmt.Errorf("end: %w", err)
	}
	if !item.IsInt() {
		return nil, usage.Errorf("%s.%s is %s: requests need integer fields", o.ItemProbe, o.ItemField, item.Kind())
	}
	if item.ProbeIndex() == end.ProbeIndex() {
		return nil, usage.Errorf("the item and end probes are both %s: a request adds up a thread's item events until an end event of another probe", o.ItemProbe)
	}
	if !end.IsInt() {
		return nil, usage.Errorf("%s.%s is %s: requests need integer fields", o.EndProbe, o.EndField, end.Kind())
	}
	if o.EndLabel == "" {
		o.EndLabel = o.EndField
	}
	if o.TotalLabel == "" {
		o.TotalLabel = o.ItemField
	}
	if o.Now.IsZero() {
		o.Now = c.EndWall()
	}
	o.Stats = o.Stats || o.JSON
	r := &RequestTotals{o: o, item: item, end: end, threads: newThreadKeys(c), m: c.Meta()}
	if len(o.Key) > 0 {
		if o.Global {
			return nil, usage.Errorf("--key and --global exclude each other")
		}
		if r.keys, err = newPairKeys(c, o.Key, o.ItemProbe, o.EndProbe); err != nil {
			return nil, err
		}
		r.openKeyed = map[pairKey]*pending{}
	}
	if o.List && !o.JSON {
		r.list = out
		fmt.Fprintf(out, "%-14s %-7s %-7s %-16s %12s %8s %14s\n", "TIME", "PID", "TID", "COMM", o.EndLabel, "ITEMS", o.TotalLabel)
	}
	return r, nil
}

// Add counts event row i of b, if it is an item or an end.
func (r *RequestTotals) Add(b *format.Batch, i int) {
	o, res := &r.o, &r.res
	pr := b.Probe[i]
	if pr != r.item.probe && pr != r.end.probe {
		return
	}
	var key uint64
	var kkey pairKey
	var p *pending
	switch {
	case r.keys != nil:
		kkey = r.keys.key(b, i)
		p = r.openKeyed[kkey]
	case !o.Global:
		key = r.threads.key(b, i)
		fallthrough
	default:
		// A thread's entry stays once made, emptied when its request
		// ends (fewer than threads: no allocation per request).
		p = r.open.of(key)
	}
	if v, ok := r.item.Int(b, i); ok {
		if p == nil {
			p = &pending{}
			r.openKeyed[kkey] = p // only keyed requests have none yet
		}
		p.sum += v
		p.items++
		return
	}
	v, ok := r.end.Int(b, i)
	if !ok {
		return
	}
	if p == nil || p.items == 0 {
		res.EndsWithoutItems++
		return
	}
	v = o.EndCast.Apply(v)
	res.Requests++
	res.End.Add(uint64(v))
	res.Total.Add(uint64(p.sum))
	if o.Stats {
		res.EndStats.Add(v)
		res.TotalStats.Add(p.sum)
	}
	if r.list != nil {
		fmt.Fprintf(r.list, "%-14.6f %-7d %-7d %-16s %12d %8d %14d\n", float64(b.Time[i]-r.m.StartBoot)/1e9, b.PID[i], b.TID[i], textsafe.Escape(b.Comm(i)), v, p.items, p.sum)
	}
	if r.keys != nil {
		delete(r.openKeyed, kkey)
	} else {
		*p = pending{}
	}
}

// AddSpan is Add for each of rows [lo, hi) of b, a stretch of events of a
// pass without a row filter (Capture.WalkSpans), in a loop of its own
// where the options allow.
func (r *RequestTotals) AddSpan(b *format.Batch, lo, hi int) {
	if r.spans() {
		r.addSpan(b, lo, hi)
		return
	}
	for i := lo; i < hi; i++ {
		r.Add(b, i)
	}
}

// spans reports whether addSpan may take the events: requests by thread
// (or global) in a capture of one host, not listed.
func (r *RequestTotals) spans() bool {
	return r.keys == nil && r.list == nil && r.threads.cols == nil
}

// addSpan is Add for rows [lo, hi) of b (when spans says so): the rows of
// the two probes are picked (PickRows), then summed in a loop of their own
// rather than a call per event, which was most of requests' time after
// decoding.
func (r *RequestTotals) addSpan(b *format.Batch, lo, hi int) {
	r.sumSpan(b, lo, hi, &r.open, &r.res, false)
}

// sumSpan is addSpan into open and res; with part, a thread's first end in
// the batch is kept in its pending (pending.ended), for the batches before
// it to complete (merge).
func (r *RequestTotals) sumSpan(b *format.Batch, lo, hi int, open *perThread[pending], res *RequestsResult, part bool) {
	probes := b.Probe[lo:hi]
	tids := b.TID[lo:hi][:len(probes)]
	item, end := r.item.probe, r.end.probe
	items, ends := b.Col(r.item.col).Ints(), b.Col(r.end.col).Ints()
	global, cast := r.o.Global, r.o.EndCast
	var rows [PickMax]int32
	var iv, ev [PickMax]int64 // the rows' item and end values, as Int reads them
	var out endedRequests
	for first := 0; first < len(probes); first += PickMax {
		k := PickRows(&rows, probes[first:min(first+PickMax, len(probes))], first, item, end)
		items.Gather(iv[:k], lo, rows[:k])
		ends.Gather(ev[:k], lo, rows[:k])
		out.n = 0
		// The rows come in runs of one thread (all one run when
		// global), each summed on its thread's pending.
		for j := 0; j < k; {
			var key uint64
			e := k
			if !global {
				tid := tids[rows[j]]
				key, e = uint64(tid), j+1
				for e < k && tids[rows[e]] == tid {
					e++
				}
			}
			p := open.of(key)
			if part && !p.ended {
				// Up to its thread's first end in the batch, to
				// which the sum may have come from before it.
				for ; j < e && probes[rows[j]] == item; j++ {
					p.sum += iv[j]
					p.items++
				}
				if j < e {
					*p = pending{ended: true, leadEnd: cast.Apply(ev[j]), leadSum: p.sum, leadItems: p.items}
					j++
				}
			}
			res.EndsWithoutItems += out.run(p, rows[j:e], iv[j:e], ev[j:e], probes, item)
			j = e
		}
		vals := out.endVals[:out.n]
		if !cast.none() {
			for x, v := range vals {
				vals[x] = cast.Apply(v)
			}
		}
		res.Requests += uint64(out.n)
		// Counted a slice at a time, as latency counts its durations.
		if r.o.Stats {
			hist.AddAllLog2(&res.EndStats, &res.End, vals)
			hist.AddAllLog2(&res.TotalStats, &res.Total, out.totals[:out.n])
		} else {
			res.End.AddInt64s(vals)
			res.Total.AddInt64s(out.totals[:out.n])
		}
	}
}

// endedRequests is what runs of rows ended, up to PickMax rows' worth:
// each request's end value and sum.
type endedRequests struct {
	endVals, totals [PickMax]int64
	n               int
}

// run sums rows, all of one thread, on its pending p, their item values iv
// and end values ev, adds the requests they end to o and returns the ends
// that found no items. Its loop has no branch on the rows, and keeps the
// sum in a register: an item adds to the sum; an end takes it, if it has
// items, and empties it.
func (o *endedRequests) run(p *pending, rows []int32, iv, ev []int64, probes []uint16, item uint16) (without uint64) {
	sum, n, m := p.sum, p.items, o.n
	iv, ev = iv[:len(rows)], ev[:len(rows)]
	for j, i := range rows {
		isItem := b2i(probes[i] == item)
		keep := -int64(isItem) // all ones for an item, zero for an end
		none := b2i(n == 0)
		without += uint64((1 - isItem) & none)
		o.endVals[m&(PickMax-1)], o.totals[m&(PickMax-1)] = ev[j], sum
		m += (1 - isItem) &^ none
		sum = (sum + iv[j]) & keep
		n = (n + 1) & uint64(keep)
	}
	p.sum, p.items, o.n = sum, n, m
	return without
}

// requestsPart is what the rows of one batch sum among themselves, in a
// pass that sums each batch where it is decoded (RequestTotals.scanMerged).
type requestsPart struct {
	res  RequestsResult     // the requests the batch begins and ends
	open perThread[pending] // each thread's first end and last sum
}

// merge adds part pt of a batch to the requests, in file order: each
// thread's first end in the batch ends the request begun before it, with
// the items of the batch before that end; the thread's items after its
// last end are its request's so far.
func (r *RequestTotals) merge(pt *requestsPart) {
	res, o := &r.res, &pt.res
	res.Requests += o.Requests
	res.EndsWithoutItems += o.EndsWithoutItems
	res.End.Merge(&o.End)
	res.Total.Merge(&o.Total)
	res.EndStats.Merge(&o.EndStats)
	res.TotalStats.Merge(&o.TotalStats)
	for k, p := range pt.open.m {
		g := r.open.of(k)
		if !p.ended {
			g.sum += p.sum
			g.items += p.items
			continue
		}
		if items, sum := g.items+p.leadItems, g.sum+p.leadSum; items == 0 {
			res.EndsWithoutItems++
		} else {
			res.Requests++
			res.End.Add(uint64(p.leadEnd))
			res.Total.Add(uint64(sum))
			if r.o.Stats {
				res.EndStats.Add(p.leadEnd)
				res.TotalStats.Add(sum)
			}
		}
		*g = pending{sum: p.sum, items: p.items}
	}
	pt.res = RequestsResult{}
	clear(pt.open.m)
	pt.open.slots = [len(pt.open.slots)]threadSlot[pending]{}
}

// scanMerged is Requests' pass without row filter, each batch summed where
// it is decoded (mergedSpans) and merged here in file order.
func (r *RequestTotals) scanMerged(c *Capture) (*Pass, error) {
	rd, timed := c.readerFor(r.Columns(), nil)
	parts := sync.Pool{New: func() any { return new(requestsPart) }}
	return mergedSpans(c, rd, timed, func(b *format.Batch) *requestsPart {
		pt := parts.Get().(*requestsPart)
		eachSpan(b, func(lo, hi int) { r.sumSpan(b, lo, hi, &pt.open, &pt.res, true) })
		return pt
	}, func(pt *requestsPart) {
		r.merge(pt)
		parts.Put(pt)
	})
}

// Result is what the events added so far count, the items of requests
// still open counted as incomplete.
func (r *RequestTotals) Result() *RequestsResult {
	res := r.res
	for _, p := range r.open.m {
		if p.items > 0 {
			res.Incomplete++
			res.IncompleteItems += p.items
		}
	}
	for _, p := range r.openKeyed {
		res.Incomplete++
		res.IncompleteItems += p.items
	}
	return &res
}

// Write prints the Result's end-value and total histograms as BCC prints
// them, or as JSON.
func (r *RequestTotals) Write(out io.Writer) (*RequestsResult, error) {
	res := r.Result()
	return res, r.write(out, res)
}

func (r *RequestTotals) write(out io.Writer, res *RequestsResult) error {
	o := &r.o
	if o.JSON {
		return json.NewEncoder(out).Encode(map[string]any{
			"requests": res.Requests, "ends_without_items": res.EndsWithoutItems,
			"incomplete": res.Incomplete, "incomplete_items": res.IncompleteItems,
			"end": histJSON(&res.End, o.EndLabel, o.Now), "total": histJSON(&res.Total, o.TotalLabel, o.Now),
			"end_stats": statsJSON(&res.EndStats, 1), "total_stats": statsJSON(&res.TotalStats, 1),
		})
	}
	if o.List {
		fmt.Fprintln(out)
	}
	if err := res.End.WriteBCC(out, o.EndLabel); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if err := res.Total.WriteBCC(out, o.TotalLabel); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%d requests; %d ends without items skipped; %d incomplete requests (%d items) at the end of the capture\n",
		res.Requests, res.EndsWithoutItems, res.Incomplete, res.IncompleteItems)
	return nil
}

// Requests computes per-request totals and prints the end-value and total
// histograms as BCC prints them; it returns them and its pass over c.
func Requests(c *Capture, o RequestsOptions, out io.Writer) (*RequestsResult, *Pass, error) {
	r, err := NewRequestTotals(c, o, out)
	if err != nil {
		return nil, nil, err
	}
	var p *Pass
	switch {
	case r.spans() && c.Spans(&o.Rows):
		p, err = r.scanMerged(c)
	case r.spans() && c.SpansWhere(&o.Rows):
		p, err = c.ScanSpansWhere(r.Columns(), &o.Rows, func(b *format.Batch, lo, hi int) error {
			r.addSpan(b, lo, hi)
			return nil
		})
	default:
		p, err = c.ScanColumns(r.Columns(), &o.Rows, r.Add)
	}
	p.Paired()
	if err != nil {
		return nil, p, err
	}
	res := r.Result()
	return res, p, r.write(out, res)
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
