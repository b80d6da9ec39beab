package replay

import (
	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
)

// Pairing pairs the start and end events of two probes as Latencies does
// (per thread, nested, at most MaxDepth open starts a thread; or, with a
// Key, by the values of key fields whatever the threads), for the writers
// that place each pair rather than count it (a time line). Add is fed the
// events of a pass and says what each did; each start carries a token of
// the caller's, handed back with the end that pairs with it.
type Pairing struct {
	start, end uint16
	threads    *threadKeys
	stacks     openCalls
	keys       *pairKeys
	open       map[pairKey]int64
	// AddSpan's buffers, kept from span to span (callPairer).
	scratch []int64
	paired  *pairedRows
}

// PairStep is what one event did to a Pairing.
type PairStep uint8

// The steps of Pairing.Add.
const (
	PairOther     PairStep = iota // not an event of either probe
	PairStarted                   // a start, now open
	PairOverflow                  // a start dropped: its thread had MaxDepth open starts (LatencyResult.Overflows)
	PairRestarted                 // with a Key, a start that replaced the open start of its key, whose token Add returns (LatencyResult.Restarted)
	PairEnded                     // an end, paired with the open start whose token Add returns (a call)
	PairUnmatched                 // an end with no open start (LatencyResult.UnmatchedReturns)
)

// NewPairing resolves the probes start and end, and the key fields if any
// (ParseKeyFields), against c.
func NewPairing(c *Capture, start, end string, key []string) (*Pairing, error) {
	s, err := c.ResolveProbe(start)
	if err != nil {
		return nil, err
	}
	e, err := c.ResolveProbe(end)
	if err != nil {
		return nil, err
	}
	if s == e {
		return nil, usage.Errorf("start and end are the same probe %q", start)
	}
	p := &Pairing{start: s, end: e, threads: newThreadKeys(c)}
	if len(key) > 0 {
		if p.keys, err = newPairKeys(c, key, start, end); err != nil {
			return nil, err
		}
		p.open = map[pairKey]int64{}
	}
	return p, nil
}

// Columns returns the columns Add reads.
func (p *Pairing) Columns() []int {
	if p.keys != nil {
		return p.keys.columns()
	}
	return p.threads.columns()
}

// Add pairs event row i of b; token names it if it is a start. For
// PairEnded and PairRestarted, prev is the token of the start that ended
// or was replaced.
func (p *Pairing) Add(b *format.Batch, i int, token int64) (step PairStep, prev int64) {
	probe := b.Probe[i]
	if probe != p.start && probe != p.end {
		return PairOther, 0
	}
	if p.keys != nil {
		k := p.keys.key(b, i)
		old, ok := p.open[k]
		if probe == p.start {
			p.open[k] = token
			if ok {
				return PairRestarted, old
			}
			return PairStarted, 0
		}
		if !ok {
			return PairUnmatched, 0
		}
		delete(p.open, k)
		return PairEnded, old
	}
	s := p.stacks.of(p.threads.key(b, i))
	if probe == p.start {
		if len(*s) >= MaxDepth {
			return PairOverflow, 0
		}
		*s = append(*s, token)
		return PairStarted, 0
	}
	if len(*s) == 0 {
		return PairUnmatched, 0
	}
	prev = (*s)[len(*s)-1]
	*s = (*s)[:len(*s)-1]
	return PairEnded, prev
}

// AddSpan is Add for each of rows [lo, hi) of b, each start's token its
// time, in the loop that latency pairs a stretch of events with
// (callPairer) rather than a call a row: when the pairing goes by thread
// in a capture of one host, else it does nothing and reports false, and
// the caller goes row by row. It hands ended the durations of each
// PickMax rows' calls (the end's time less the start's) and their end
// rows, offsets from lo, and returns the ends that had no start and the
// starts dropped past MaxDepth.
func (p *Pairing) AddSpan(b *format.Batch, lo, hi int, ended func(durs []int64, ends []int32)) (unmatched, overflows uint64, ok bool) {
	if p.keys != nil || p.threads.cols != nil {
		return 0, 0, false
	}
	if p.paired == nil {
		p.paired = new(pairedRows)
	}
	pr := callPairer{start: p.start, end: p.end, stacks: &p.stacks, scratch: &p.scratch, out: p.paired}
	pr.span(b, lo, hi, ended)
	return pr.unmatched, pr.overflows, true
}

// Reset forgets every open start, for another pass over the events.
func (p *Pairing) Reset() {
	p.stacks = openCalls{}
	if p.open != nil {
		clear(p.open)
	}
}

// Open calls fn with the token of every start still open, which will never
// end (LatencyResult.UnmatchedEntries), in no set order.
func (p *Pairing) Open(fn func(token int64)) {
	for _, t := range p.open {
		fn(t)
	}
	for _, s := range p.stacks.m {
		for _, t := range *s {
			fn(t)
		}
	}
}
