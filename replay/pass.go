package replay

import (
	"fmt"
	"io"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
)

// Pass is what one read of a capture, from its first batch, found besides
// the events it handed on. Analyses return it, also with an error (it then
// holds what was read before the error), so that their caller can warn
// about losses and recovery (Notes).
type Pass struct {
	// Events counts the event rows read (loss records excluded), before
	// the row filter.
	Events uint64
	// Losses tallies every loss record read, whatever the row filter: they are
	// data, and every analysis reports them so that an undercounted
	// histogram is never silent.
	Losses Losses
	// Times tallies implausible event times, in the passes that read
	// every event's time (Scan and Walk).
	Times TimeAnomalies
	// Batches is the number of batches read, RawBytes their size
	// uncompressed (Scan and Walk).
	Batches  int
	RawBytes int64
	// Recovered is set when the capture has no footer (Capture.Recovered):
	// the pass read its complete batches, and RecoverErr says what it
	// dropped after them (nil: the file ends at a batch boundary).
	Recovered  bool
	RecoverErr error

	name string
	meta *format.Meta
	// unmatched says what a row filter that matched no event left out (Scan).
	unmatched unmatched
	projected bool // read by a format.Projection
}

func (c *Capture) newPass() *Pass {
	return &Pass{name: c.Name, meta: c.Meta(), Recovered: c.Recovered()}
}

// read records what reader r read in the pass.
func (p *Pass) read(r *format.Reader) {
	p.Batches, p.RawBytes, p.RecoverErr = r.Batches(), r.RawBytes, r.RecoverErr
}

// Notes prints what the reader of an analysis must know about the pass:
// recovery, losses, implausible times, and a row filter that matched nothing.
// A nil Pass (an analysis that failed before it read) prints nothing.
func (p *Pass) Notes(w io.Writer) {
	if p == nil {
		return
	}
	if p.Recovered {
		fmt.Fprintf(w, "NOTE: %s has no footer (was the recorder killed?): read its %d complete batches", p.name, p.Batches)
		if p.RecoverErr != nil {
			fmt.Fprintf(w, ", dropped the %v", p.RecoverErr)
		}
		fmt.Fprintf(w, "; 'bpftape repair' writes a standard file.\n")
	}
	p.Losses.Warn(w, p.name, p.meta)
	p.Times.Warn(w, p.name)
	p.unmatched.note(w, p.name)
}

// Scan reads the capture from its first batch and calls fn for every event
// row that passes f (nil: every event); loss records are tallied in the
// Pass, not handed on.
func (c *Capture) Scan(f *RowFilter, fn func(b *format.Batch, i int)) (*Pass, error) {
	return c.walk(f, false, func(b *format.Batch, i int, _ bool) error {
		fn(b, i)
		return nil
	})
}

// Walk reads the capture from its first batch and calls fn for every event
// that passes f and for every loss record in f's time window (loss records
// have no process), in file order, with lost set for loss records: for
// the tools that must place losses (exports, time lines) where Scan only
// tallies them. It stops at the first error fn returns, and returns it.
func (c *Capture) Walk(f *RowFilter, fn func(b *format.Batch, i int, lost bool) error) (*Pass, error) {
	if f == nil {
		f = &RowFilter{}
	}
	return c.walk(f, true, fn)
}

func (c *Capture) walk(f *RowFilter, losses bool, fn func(b *format.Batch, i int, lost bool) error) (*Pass, error) {
	return c.walkWith(c.reader(), f, losses, fn)
}

// walkWith is Scan (losses false) or Walk with r, a reader at its first batch.
func (c *Capture) walkWith(r *format.Reader, f *RowFilter, losses bool, fn func(b *format.Batch, i int, lost bool) error) (*Pass, error) {
	p := c.newPass()
	m := c.Meta()
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len; i++ {
			if n, ok := b.Lost(i); ok {
				p.Losses.Add(m.Probes[b.Probe[i]].Name, b.CPU[i], b.Time[i], n)
				if losses && f.InWindow(b.Time[i], m.StartBoot) {
					if err := fn(b, i, true); err != nil {
						p.read(r)
						return p, err
					}
				}
				continue
			}
			p.Events++
			p.Times.Check(b.Time[i], m)
			if f != nil && !f.Match(b, i, m.StartBoot) {
				if !losses {
					p.unmatched.saw(f, b, i)
				}
				continue
			}
			p.unmatched.matched = true
			if err := fn(b, i, false); err != nil {
				p.read(r)
				return p, err
			}
		}
	}
	p.read(r)
	if err := r.Err(); err != nil {
		return p, fmt.Errorf("%s: %w", c.Name, err)
	}
	return p, nil
}

// unmatched gathers, while a row filter has matched nothing, a few of the
// values the capture has instead, for the note that says so: a row filter
// that selects nothing otherwise prints an empty result and exits 0.
type unmatched struct {
	filtered, matched bool
	pids              map[uint32]bool
	comms             map[string]bool
}

const unmatchedValues = 8

func (u *unmatched) saw(f *RowFilter, b *format.Batch, i int) {
	u.filtered = true
	if u.matched {
		return
	}
	if u.pids == nil {
		u.pids, u.comms = map[uint32]bool{}, map[string]bool{}
	}
	if len(f.PIDs) > 0 && len(u.pids) < unmatchedValues {
		u.pids[b.PID[i]] = true
	}
	if len(f.Comms) > 0 && len(u.comms) < unmatchedValues {
		u.comms[b.Comm(i)] = true
	}
}

func (u *unmatched) note(w io.Writer, name string) {
	if !u.filtered || u.matched {
		return
	}
	var has []string
	if len(u.pids) > 0 {
		var ps []string
		for _, p := range sortedKeys(u.pids) {
			ps = append(ps, fmt.Sprint(p))
		}
		has = append(has, "pids "+strings.Join(ps, ", "))
	}
	if len(u.comms) > 0 {
		has = append(has, "comms "+strings.Join(textsafe.Strings(sortedKeys(u.comms)), ", "))
	}
	msg := ""
	if len(has) > 0 {
		msg = " (it has " + strings.Join(has, "; ") + ")"
	}
	fmt.Fprintf(w, "NOTE: %s: no event matches the --pid, --tid, --comm, --from and --to filters%s.\n", name, msg)
}
