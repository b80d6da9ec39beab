package export

import (
	"fmt"
	"io"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
)

// WriteArrow writes the selected rows of c as a new capture, in bpftape's
// own format (so that bpftape and Arrow readers open it as they open a
// recording): the same probes, columns and metadata, or with Options.Redact
// an empty comm on every event, no string fields, and the redacted
// metadata. Loss records are kept unless Options.Lost says otherwise (a
// capture without them would hide its losses from every analysis).
func WriteArrow(c *replay.Capture, w io.Writer, o Options) (*Result, *replay.Pass, error) {
	if o.Lost == "" {
		o.Lost = LostKeep
	}
	in := c.Meta()
	meta, err := exportMeta(in, &o)
	if err != nil {
		return nil, nil, err
	}
	if meta == in {
		// NewWriter fills in the columns of the meta it is given: leave
		// the reader's alone.
		if meta, err = cloneMeta(in); err != nil {
			return nil, nil, err
		}
	}
	// Per probe, the input columns of the fields the output keeps, in the
	// order of the output probe's fields.
	src := make([][]int, len(in.Probes))
	for pi := range in.Probes {
		p := &in.Probes[pi]
		out := &meta.Probes[pi]
		for _, f := range out.Fields {
			k := p.Field(f.Name)
			if k < 0 {
				return nil, nil, fmt.Errorf("probe %s: no field %s in the input", p.Name, f.Name)
			}
			ci := c.Column(p.Fields[k].Column)
			if ci < 0 {
				return nil, nil, fmt.Errorf("probe %s: no column %s in the input", p.Name, p.Fields[k].Column)
			}
			src[pi] = append(src[pi], ci)
		}
	}
	fw, err := format.NewWriter(w, meta, format.WriterOptions{Compression: o.Compression})
	if err != nil {
		return nil, nil, err
	}
	stacks, err := c.StackTable()
	if err != nil {
		return nil, nil, err
	}
	if o.Redact {
		stacks = RedactStacks(stacks)
	}
	fw.AddStacks(stacks)
	res := &Result{}
	ev := format.Event{}
	var ints []uint64
	var strs [][]byte
	pass, err := walk(c, &o, func(b *format.Batch, i int, lost bool) error {
		count(res, lost)
		if lost {
			n, _ := b.Lost(i)
			return fw.Lost(b.Probe[i], b.CPU[i], b.Time[i], n)
		}
		pi := b.Probe[i]
		cols := src[pi]
		ints, strs = ints[:0], strs[:0]
		for k, ci := range cols {
			col := b.Col(ci)
			var v uint64
			var s []byte
			if col.Valid(i) {
				if meta.Probes[pi].Fields[k].Type == format.String {
					s = []byte(col.Str(i))
				} else {
					v = uint64(col.Int(i))
				}
			}
			ints, strs = append(ints, v), append(strs, s)
		}
		ev = format.Event{Time: b.Time[i], CPU: b.CPU[i], PID: b.PID[i], TID: b.TID[i], Probe: pi, Ints: ints, Strs: strs}
		if !o.Redact {
			ev.Comm = []byte(b.Comm(i))
		}
		return fw.Append(&ev)
	})
	if cerr := fw.Close(); err == nil {
		err = cerr
	}
	return res, pass, err
}
