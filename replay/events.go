package replay

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
)

// EventFormat is a BCC trace-style message for one probe: a printf format
// and the fields it prints, parsed from `PROBE "FMT", FIELD, ...`.
type EventFormat struct {
	Probe  string
	Format string
	Fields []string
	verbs  []verb
}

type verb struct {
	lit  string // text before the verb
	spec string // Go format for the verb, "" for the trailing literal
	kind byte   // 'd' signed, 'u' unsigned, 'x' hex, 's' string, 'c' char
}

// ParseEventFormat parses `PROBE "FMT", FIELD, ...` as BCC's trace takes it.
func ParseEventFormat(s string) (*EventFormat, error) {
	s = strings.TrimSpace(s)
	q := strings.IndexByte(s, '"')
	if q <= 0 {
		return nil, fmt.Errorf("format %q: want PROBE \"FMT\", FIELD, ...", s)
	}
	f := &EventFormat{Probe: strings.TrimSpace(s[:q])}
	rest := s[q:]
	end := 1
	for ; end < len(rest); end++ {
		if rest[end] == '\\' {
			end++
			continue
		}
		if rest[end] == '"' {
			break
		}
	}
	if end >= len(rest) {
		return nil, fmt.Errorf("format %q: unterminated string", s)
	}
	lit, err := strconv.Unquote(rest[:end+1])
	if err != nil {
		return nil, fmt.Errorf("format %q: %w", s, err)
	}
	f.Format = lit
	for _, a := range strings.Split(rest[end+1:], ",") {
		if a = strings.TrimSpace(a); a != "" {
			f.Fields = append(f.Fields, a)
		}
	}
	if err := f.compile(); err != nil {
		return nil, fmt.Errorf("format %q: %w", s, err)
	}
	return f, nil
}

// compile splits the printf format into verbs Go's fmt can print.
func (f *EventFormat) compile() error {
	s := f.Format
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			lit.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			lit.WriteByte('%')
			i++
			continue
		}
		j := i + 1
		for j < len(s) && strings.IndexByte("-+ #0123456789.", s[j]) >= 0 {
			j++
		}
		flags := s[i+1 : j]
		for j < len(s) && strings.IndexByte("hlzjt", s[j]) >= 0 {
			j++
		}
		if j >= len(s) {
			return fmt.Errorf("incomplete verb at the end")
		}
		v := verb{lit: lit.String()}
		lit.Reset()
		switch c := s[j]; c {
		case 'd', 'i':
			v.kind, v.spec = 'd', "%"+flags+"d"
		case 'u':
			v.kind, v.spec = 'u', "%"+flags+"d"
		case 'x', 'X', 'o':
			v.kind, v.spec = 'u', "%"+flags+string(c)
		case 'p':
			v.kind, v.spec = 'u', "0x%"+flags+"x"
		case 's':
			v.kind, v.spec = 's', "%"+flags+"s"
		case 'c':
			v.kind, v.spec = 'c', "%"+flags+"c"
		default:
			return fmt.Errorf("unsupported verb %%%c", c)
		}
		f.verbs = append(f.verbs, v)
		i = j
	}
	if len(f.verbs) != len(f.Fields) {
		return fmt.Errorf("%d verbs but %d fields", len(f.verbs), len(f.Fields))
	}
	f.verbs = append(f.verbs, verb{lit: lit.String()})
	return nil
}

// EventsOptions select and shape an event listing.
type EventsOptions struct {
	Rows    RowFilter
	Probes  []string // empty: all
	Formats []*EventFormat
	Time    string // "rel" (default: seconds since capture start), "wall" or "none"
	Limit   uint64 // 0: no limit
}

type probeOut struct {
	show   bool
	fields []int // column of each printed field
	types  []format.Type
	names  []string
	ptrs   []bool // the field holds an address (format.Field.Pointer): printed in hex
	verbs  []verb
}

// Events prints one line per event like BCC's trace: without a format,
// each field as NAME=VALUE, an address (format.Field.Pointer) in hex.
func Events(c *Capture, o EventsOptions, out io.Writer) (*Pass, error) {
	m := c.Meta()
	outs := make([]probeOut, len(m.Probes))
	for i := range outs {
		outs[i].show = len(o.Probes) == 0
		p := &m.Probes[i]
		for _, f := range p.Fields {
			outs[i].fields = append(outs[i].fields, c.Column(f.Column))
			outs[i].types = append(outs[i].types, f.Type)
			outs[i].names = append(outs[i].names, f.Name)
			outs[i].ptrs = append(outs[i].ptrs, f.Pointer && f.Type.IsInt())
		}
	}
	for _, name := range o.Probes {
		pi, err := c.ResolveProbe(name)
		if err != nil {
			return nil, err
		}
		outs[pi].show = true
	}
	for _, f := range o.Formats {
		pi, err := c.ResolveProbe(f.Probe)
		if err != nil {
			return nil, err
		}
		po := &outs[pi]
		po.fields, po.types, po.names, po.ptrs = nil, nil, nil, nil
		for _, name := range f.Fields {
			r, err := c.Resolve(f.Probe, name)
			if err != nil {
				return nil, err
			}
			po.fields = append(po.fields, r.col)
			po.types = append(po.types, r.typ)
		}
		po.verbs = f.verbs
	}
	switch o.Time {
	case "", "rel":
		fmt.Fprintf(out, "%-14s ", "TIME")
	case "wall":
		fmt.Fprintf(out, "%-15s ", "TIME")
	case "none":
	default:
		return nil, fmt.Errorf("time %q: use rel, wall or none", o.Time)
	}
	fmt.Fprintf(out, "%-7s %-7s %-15s %-16s %s\n", "PID", "TID", "COMM", "FUNC", "-")
	var n uint64
	var line []byte
	stop := false
	return c.Scan(&o.Rows, func(b *format.Batch, i int) {
		po := &outs[b.Probe[i]]
		if !po.show || stop {
			return
		}
		line = line[:0]
		switch o.Time {
		case "", "rel":
			line = fmt.Appendf(line, "%-14.6f ", float64(b.Time[i]-m.StartBoot)/1e9)
		case "wall":
			line = m.WallTime(b.Time[i]).AppendFormat(line, "15:04:05.000000")
			line = append(line, ' ')
		}
		line = fmt.Appendf(line, "%-7d %-7d %-15s %-16s ", b.PID[i], b.TID[i], textsafe.Escape(b.Comm(i)), textsafe.Escape(m.Probes[b.Probe[i]].Name))
		if po.verbs != nil {
			for k, v := range po.verbs {
				line = append(line, v.lit...)
				if v.spec == "" {
					break
				}
				col := b.Col(po.fields[k])
				switch {
				case !col.Valid(i):
					line = append(line, "?"...)
				case v.kind == 's' || col.Type == format.String:
					line = fmt.Appendf(line, strings.Replace(v.spec, string(v.spec[len(v.spec)-1]), "s", 1), textsafe.Escape(col.Str(i)))
				case v.kind == 'u' || v.kind == 'c' || col.Type == format.Uint64:
					line = fmt.Appendf(line, v.spec, uint64(col.Int(i)))
				default:
					line = fmt.Appendf(line, v.spec, col.Int(i))
				}
			}
		} else {
			for k, ci := range po.fields {
				if k > 0 {
					line = append(line, ' ')
				}
				col := b.Col(ci)
				line = append(line, textsafe.Escape(po.names[k])...)
				line = append(line, '=')
				switch {
				case po.types[k] == format.String:
					line = strconv.AppendQuote(line, col.Str(i))
				case po.ptrs[k] && col.Valid(i):
					line = append(line, "0x"...)
					line = strconv.AppendUint(line, uint64(col.Int(i)), 16)
				default:
					line = append(line, col.Str(i)...)
				}
			}
		}
		line = append(line, '\n')
		out.Write(line)
		n++
		if o.Limit > 0 && n >= o.Limit {
			stop = true
		}
	})
}
