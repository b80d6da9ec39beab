package replay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/decimal"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/internal/usage"
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
	// sspec is spec for a string value: its verb letter made s (as the
	// first occurrence of that letter: %p's "0x%x" becomes "0s%x", as it
	// always has).
	sspec string
	// plain is the verb when spec is exactly %d, %x or %s, which Events
	// formats without fmt; 0 for any other spec.
	plain byte
}

// ParseEventFormat parses `PROBE "FMT", FIELD, ...` as BCC's trace takes
// it. Its errors say what is wrong, not s again: the caller names s, as
// the flag package names a flag's value.
func ParseEventFormat(s string) (*EventFormat, error) {
	s = strings.TrimSpace(s)
	q := strings.IndexByte(s, '"')
	if q <= 0 {
		return nil, errors.New(`want PROBE "FMT", FIELD, ...`)
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
		return nil, errors.New("unterminated string")
	}
	lit, err := strconv.Unquote(rest[:end+1])
	if err != nil {
		return nil, fmt.Errorf("the string: %w", err)
	}
	f.Format = lit
	for _, a := range strings.Split(rest[end+1:], ",") {
		if a = strings.TrimSpace(a); a != "" {
			f.Fields = append(f.Fields, a)
		}
	}
	if err := f.compile(); err != nil {
		return nil, err
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
		v.sspec = strings.Replace(v.spec, string(v.spec[len(v.spec)-1]), "s", 1)
		switch v.spec {
		case "%d":
			v.plain = 'd'
		case "%x":
			v.plain = 'x'
		case "%s":
			v.plain = 's'
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
	Probes  []string // names or glob patterns (path.Match); empty: all
	Formats []*EventFormat
	Time    string // "rel" (default: seconds since capture start), "wall" or "none"
	Limit   uint64 // 0: no limit
	// JSONL lists the events as JSON lines, one object per event and one
	// per loss record, instead of BCC trace's columns (see Events).
	JSONL bool
}

type probeOut struct {
	show   bool
	fields []int // column of each printed field
	types  []format.Type
	names  []string
	ptrs   []bool // the field holds an address (format.Field.Pointer): printed in hex
	verbs  []verb

	// head is the FUNC column: the probe's name escaped, padded, and a space.
	head []byte
	// pre[k] is what comes before field k in a line without a format:
	// NAME=, after a space but for the first field.
	pre [][]byte
	// text[k] is how a line without a format reads field k, set for
	// each batch the probe's lines are in (batch: its Index + 1).
	text  []textField
	batch int
	// The JSON line's `,"probe":"NAME"` and the keys and columns of every
	// field of the probe.
	jprobe  []byte
	jfields []jsonField
}

// textField is how a line without a format prints a field.
type textField struct {
	col  int
	kind byte // textBits, textInt, textString or textPointer
	// For textBits, an integer column of 8 bytes (the usual field: an
	// argument or a return value), the batch's values as their bits, and
	// -1 when they are signed: its lines print them without a branch on
	// the column's type, which varies from line to line with the probe.
	bits []uint64
	sign int64
	// The text of the last value of five digits or more, and its length
	// (0 for none): a field that holds a stack's id repeats it from line
	// to line, and its 19 digits took a fifth of a recorded capture's
	// listing with stacks (appendBits).
	last uint64
	memo uint8
	text [24]byte
}

// appendBits appends row i's value of a textBits field, as
// decimal.AppendBits does.
func (f *textField) appendBits(line []byte, i int) []byte {
	v := f.bits[i]
	n := len(line)
	if v == f.last && f.memo > 0 {
		line = slices.Grow(line, len(f.text))
		*(*[24]byte)(line[n : n+24]) = f.text
		return line[:n+int(f.memo)]
	}
	line = decimal.AppendBits(line, v, f.sign)
	if d := len(line) - n; d > 4 {
		copy(f.text[:], line[n:])
		f.last, f.memo = v, uint8(d)
	}
	return line
}

const (
	textBits    = iota // an 8-byte integer: decimal
	textInt            // a narrower integer: decimal
	textString         // quoted
	textPointer        // 0x and hex, where it has a value
)

// jsonField is one field of a JSON line: key is `"NAME":` after a comma
// but for the first field.
type jsonField struct {
	key []byte
	col int
}

// eventsChunk is how much output Events formats before handing it to its
// writer: the writes of a listing are this size, not a line each.
const eventsChunk = 64 << 10

// Events prints one line per event like BCC's trace: without a format,
// each field as NAME=VALUE, an address (format.Field.Pointer) in hex.
//
// With o.JSONL it prints one JSON object per line instead, in file order:
// for an event
//
//	{"time":BOOT_NS,"offset":SECONDS,"cpu":N,"pid":N,"tid":N,"comm":"...","probe":"...","fields":{"NAME":VALUE,...}}
//
// with "offset" (seconds since the capture's start, as the TIME column
// prints them) for o.Time "rel", "wall" ("15:04:05.000000", as the TIME
// column prints it) for "wall", neither for "none"; "message" (the
// probe's formatted message, as the line prints it) after "probe" when
// o.Formats has one for the probe; and "fields" holding every field of
// the probe: integers as JSON numbers, exact however large (a uint64
// above 2^53, an address, a stack field's id: the values the text
// prints, in decimal), strings as JSON strings (as bpftape export writes
// them: U+FFFD for bytes that are not UTF-8, invisible format characters
// escaped), null for a field the event lacks. The fields are an object of
// their own so that a field named pid or comm (tracepoints have them)
// does not collide with the event's. For a loss record of a listed
// probe, which has no process, the object is
//
//	{"time":BOOT_NS,"offset":SECONDS,"cpu":N,"probe":"...","lost":N}
//
// as bpftape export -f jsonl --lost keep names the count. o.Limit counts
// events, not loss records. Memory does not grow with the capture.
func Events(c *Capture, o EventsOptions, out io.Writer) (*Pass, error) {
	m := c.Meta()
	outs := make([]probeOut, len(m.Probes))
	for i := range outs {
		po := &outs[i]
		po.show = len(o.Probes) == 0
		p := &m.Probes[i]
		for _, f := range p.Fields {
			po.fields = append(po.fields, c.Column(f.Column))
			po.types = append(po.types, f.Type)
			po.names = append(po.names, f.Name)
			po.ptrs = append(po.ptrs, f.Pointer && f.Type.IsInt())
			key := []byte{','}
			if len(po.jfields) == 0 {
				key = key[:0]
			}
			key = append(textsafe.AppendJSONString(key, f.Name), ':')
			po.jfields = append(po.jfields, jsonField{key: key, col: c.Column(f.Column)})
		}
		po.head = append(appendPadded(nil, textsafe.Escape(p.Name), 16), ' ')
		po.jprobe = textsafe.AppendJSONString([]byte(`,"probe":`), p.Name)
	}
	for _, name := range o.Probes {
		if _, p := m.Probe(name); p == nil && strings.ContainsAny(name, `*?[\`) {
			// A glob, as count takes: 'vfs_*'.
			n := 0
			for i := range m.Probes {
				ok, err := path.Match(name, m.Probes[i].Name)
				if err != nil {
					return nil, usage.Errorf("probe pattern %q: %v", name, err)
				}
				if ok {
					outs[i].show = true
					n++
				}
			}
			if n == 0 {
				return nil, usage.Errorf("%s: no probe matches %q; the capture has: %s", c.Name, name, strings.Join(m.ProbeNames(), ", "))
			}
			continue
		}
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
	for i := range outs {
		po := &outs[i]
		for k, name := range po.names {
			var pre []byte
			if k > 0 {
				pre = append(pre, ' ')
			}
			po.pre = append(po.pre, append(append(pre, textsafe.Escape(name)...), '='))
		}
	}
	switch o.Time {
	case "", "rel", "wall", "none":
	default:
		return nil, usage.Errorf("--time %q: use rel, wall or none", o.Time)
	}
	w := newEventsWriter(out)
	l := eventLister{o: &o, m: m, outs: outs, w: w, time: timeRel}
	switch o.Time {
	case "wall":
		l.time = timeWall
	case "none":
		l.time = timeNone
	}
	if !o.JSONL {
		switch o.Time {
		case "", "rel":
			w.buf = fmt.Appendf(w.buf, "%-14s ", "TIME")
		case "wall":
			w.buf = fmt.Appendf(w.buf, "%-15s ", "TIME")
		}
		w.buf = fmt.Appendf(w.buf, "%-7s %-7s %-15s %-16s %s\n", "PID", "TID", "COMM", "FUNC", "-")
	}
	// The pass stops once the listing has (--limit, or output that
	// failed): its notes then tell of the losses it read up to there.
	stopped := func() error {
		if l.stop {
			return errListed
		}
		return nil
	}
	var p *Pass
	var err error
	if o.JSONL {
		p, err = c.Walk(&o.Rows, func(b *format.Batch, i int, lost bool) error {
			l.jsonLine(b, i, lost)
			return stopped()
		})
	} else if c.SpansWhere(&o.Rows) {
		p, err = c.ScanSpansWhere(textColumns(c), &o.Rows, func(b *format.Batch, lo, hi int) error {
			l.textLines(b, lo, hi)
			return stopped()
		})
	} else {
		p, err = c.WalkColumns(textColumns(c), &o.Rows, func(b *format.Batch, i int, lost bool) error {
			if !lost {
				l.textLines(b, i, i+1)
			}
			return stopped()
		})
	}
	if errors.Is(err, errListed) {
		// Stopped before the end: the notes tell of the whole capture
		// where its footer counts it, and do not count its batches.
		err = nil
		p.stopped = true
		if _, fp := footerCounts(c); fp != nil {
			p.Losses = fp.Losses
		}
	}
	// A write error (standard output closed, a full disk) is the writer's
	// to report, as it was when every line was written on its own: a
	// bufio.Writer, as bpftape's, keeps it for its Flush.
	w.close()
	return p, err
}

// errListed stops the pass of a listing that has listed all it will.
var errListed = errors.New("listed")

// textColumns are the columns the text lines read: all but the cpu, which
// is 6% of decoding every column (loss records, which are tallied by cpu,
// get it whatever is selected).
func textColumns(c *Capture) []int {
	var cols []int
	for ci := range c.Schema().NumFields() {
		if ci != format.ColCPU {
			cols = append(cols, ci)
		}
	}
	return cols
}

// eventLister formats the lines of one Events call.
type eventLister struct {
	o    *EventsOptions
	m    *format.Meta
	outs []probeOut
	w    *eventsWriter
	time int    // timeRel, timeWall or timeNone: o.Time
	n    uint64 // events listed
	stop bool

	heads   [512]lineHead // by a hash of tid and probe
	wall    wallClock
	rel     relClock
	scratch []byte
}

// lineHead caches what a line holds between its time and its values for
// the last event of a thread and probe: the PID TID COMM columns, the
// FUNC column and the first field's NAME= (without a format), or the JSON
// line's "pid", "tid", "comm" and "probe". A thread's events repeat them,
// and escaping and padding its comm on every line cost as much as the rest
// of the line. The comm is matched by its string view
// (format.Batch.CommView), as count --by comm's cache matches it, not by
// its bytes.
type lineHead struct {
	ok       bool
	probe    uint16
	pid, tid uint32
	lo, hi   uint64 // the comm's view
	batch    int    // the batch in which a long comm's view last read as comm
	comm     string
	text     []byte
	// short holds text when it fits, copied as a whole (appendHead).
	short [64]byte
}

// appendHead appends h's text to line.
func appendHead(line []byte, h *lineHead) []byte {
	if len(h.text) > len(h.short) {
		return append(line, h.text...)
	}
	n := len(line)
	line = slices.Grow(line, len(h.short))
	*(*[64]byte)(line[n : n+64]) = h.short
	return line[:n+len(h.text)]
}

// head returns the line head of row i of b, of probe po.
func (l *eventLister) head(b *format.Batch, i int, po *probeOut) *lineHead {
	lo, hi := b.CommView(i)
	h := &l.heads[headSlot(b.TID[i], b.Probe[i])]
	if !h.holds(b.PID[i], b.TID[i], b.Probe[i], lo, hi, b.Index) {
		l.setHead(h, b, i, po)
	}
	return h
}

// headSlot is where the line head of a thread and probe is cached.
func headSlot(tid uint32, probe uint16) int {
	return int((uint64(tid)<<16 | uint64(probe)) * 0x9e3779b97f4a7c15 >> (64 - 9))
}

// holds reports whether h is the line head of a row of the thread, probe
// and comm view in batch: a long comm's view is its own in its batch
// alone (setHead checks its bytes in the next).
func (h *lineHead) holds(pid, tid uint32, probe uint16, lo, hi uint64, batch int) bool {
	return h.ok && h.tid == tid && h.probe == probe && h.pid == pid && h.lo == lo && h.hi == hi &&
		(uint32(lo) <= 12 || h.batch == batch)
}

// setHead makes h the line head of row i of b, of probe po.
func (l *eventLister) setHead(h *lineHead, b *format.Batch, i int, po *probeOut) {
	pid, tid, probe := b.PID[i], b.TID[i], b.Probe[i]
	lo, hi := b.CommView(i)
	comm := b.Comm(i)
	if h.ok && h.tid == tid && h.probe == probe && h.pid == pid && h.lo == lo && h.hi == hi && h.comm == comm {
		h.batch = b.Index // a long comm's view reads as comm in all of this batch
		return
	}
	h.ok, h.probe, h.pid, h.tid, h.lo, h.hi, h.batch, h.comm = true, probe, pid, tid, lo, hi, b.Index, strings.Clone(comm)
	s := h.text[:0]
	if l.o.JSONL {
		s = append(s, `,"pid":`...)
		s = strconv.AppendUint(s, uint64(pid), 10)
		s = append(s, `,"tid":`...)
		s = strconv.AppendUint(s, uint64(tid), 10)
		s = append(s, `,"comm":`...)
		s = textsafe.AppendJSONString(s, comm)
		s = append(s, po.jprobe...)
	} else {
		s = append(appendPadded(s, strconv.FormatUint(uint64(pid), 10), 7), ' ')
		s = append(appendPadded(s, strconv.FormatUint(uint64(tid), 10), 7), ' ')
		s = append(appendPadded(s, textsafe.Escape(comm), 15), ' ')
		s = append(s, po.head...)
		if po.verbs == nil && len(po.pre) > 0 {
			s = append(s, po.pre[0]...)
		}
	}
	h.text = s
	copy(h.short[:], s)
}

// The TIME column of a text line (EventsOptions.Time).
const (
	timeRel = iota
	timeWall
	timeNone
)

// textLines lists event rows lo to hi of b as BCC's trace prints them.
func (l *eventLister) textLines(b *format.Batch, lo, hi int) {
	for i := lo; i < hi; i++ {
		if b.Probe[i] == maskedProbe { // a row the filter leaves out
			continue
		}
		po := &l.outs[b.Probe[i]]
		if !po.show || l.stop {
			continue
		}
		line := l.w.buf
		switch l.time {
		case timeRel:
			line = l.rel.appendCol(line, b.Time[i]-l.m.StartBoot)
		case timeWall:
			line = append(l.wall.append(line, l.m.WallTime(b.Time[i])), ' ')
		}
		// head, with its check inlined and a call only to set it.
		vlo, vhi := b.CommView(i)
		h := &l.heads[headSlot(b.TID[i], b.Probe[i])]
		if !h.holds(b.PID[i], b.TID[i], b.Probe[i], vlo, vhi, b.Index) {
			l.setHead(h, b, i, po)
		}
		line = appendHead(line, h)
		if po.verbs != nil {
			line = l.message(line, po, b, i)
		} else {
			if po.batch != b.Index+1 {
				po.plan(b)
			}
			for k := range po.text {
				f := &po.text[k]
				if k > 0 {
					line = append(line, po.pre[k]...)
				}
				switch f.kind {
				case textBits:
					line = f.appendBits(line, i)
				case textString:
					line = strconv.AppendQuote(line, b.Col(f.col).Str(i))
				case textPointer:
					if col := b.Col(f.col); col.Valid(i) {
						line = strconv.AppendUint(append(line, "0x"...), uint64(col.Int(i)), 16)
					} else {
						line = appendInt64(line, col, i)
					}
				default:
					line = appendInt64(line, b.Col(f.col), i)
				}
			}
		}
		l.w.buf = append(line, '\n')
		l.w.maybeFlush()
		l.count()
	}
}

// plan sets how the probe's lines without a format read the fields of b.
func (po *probeOut) plan(b *format.Batch) {
	po.batch = b.Index + 1
	po.text = po.text[:0]
	for k, ci := range po.fields {
		f := textField{col: ci, kind: textInt}
		col := b.Col(ci)
		switch ic := col.Ints(); {
		case po.types[k] == format.String:
			f.kind = textString
		case po.ptrs[k]:
			f.kind = textPointer
		case ic.Type == format.Uint64:
			f.kind, f.bits = textBits, ic.U64
		case ic.Type == format.Int64:
			f.kind, f.bits, f.sign = textBits, bits64(ic.I64), -1
		}
		po.text = append(po.text, f)
	}
}

func (l *eventLister) count() {
	l.n++
	if l.o.Limit > 0 && l.n >= l.o.Limit || l.w.failed() {
		l.stop = true
	}
}

// message appends the probe's formatted message for row i of b.
func (l *eventLister) message(line []byte, po *probeOut, b *format.Batch, i int) []byte {
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
			if v.sspec == "%s" {
				if col.Type == format.String {
					line = append(line, textsafe.Escape(col.Str(i))...)
				} else {
					line = appendValue(line, col, i) // digits need no escaping
				}
				break
			}
			line = fmt.Appendf(line, v.sspec, textsafe.Escape(col.Str(i)))
		case v.kind == 'u' || v.kind == 'c' || col.Type == format.Uint64:
			switch u := uint64(col.Int(i)); v.plain {
			case 'd':
				line = strconv.AppendUint(line, u, 10)
			case 'x':
				line = strconv.AppendUint(line, u, 16)
			default:
				line = fmt.Appendf(line, v.spec, u)
			}
		default:
			switch x := col.Int(i); v.plain {
			case 'd':
				line = strconv.AppendInt(line, x, 10)
			case 'x':
				line = strconv.AppendInt(line, x, 16)
			default:
				line = fmt.Appendf(line, v.spec, x)
			}
		}
	}
	return line
}

// jsonLine lists row i of b, an event or a loss record, as a JSON line.
func (l *eventLister) jsonLine(b *format.Batch, i int, lost bool) {
	po := &l.outs[b.Probe[i]]
	if !po.show || l.stop {
		return
	}
	line := append(l.w.buf, `{"time":`...)
	line = strconv.AppendInt(line, b.Time[i], 10)
	switch l.o.Time {
	case "", "rel":
		line = append(line, `,"offset":`...)
		line = l.rel.append(line, b.Time[i]-l.m.StartBoot)
	case "wall":
		line = append(line, `,"wall":"`...)
		line = append(l.wall.append(line, l.m.WallTime(b.Time[i])), '"')
	}
	line = append(line, `,"cpu":`...)
	line = strconv.AppendUint(line, uint64(b.CPU[i]), 10)
	if lost {
		n, _ := b.Lost(i)
		line = append(line, po.jprobe...)
		line = append(line, `,"lost":`...)
		line = strconv.AppendUint(line, n, 10)
		l.w.buf = append(line, '}', '\n')
		l.w.maybeFlush()
		if l.w.failed() {
			l.stop = true
		}
		return
	}
	line = appendHead(line, l.head(b, i, po))
	if po.verbs != nil {
		l.scratch = l.message(l.scratch[:0], po, b, i)
		line = append(line, `,"message":`...)
		line = textsafe.AppendJSONString(line, string(l.scratch))
	}
	line = append(line, `,"fields":{`...)
	for _, f := range po.jfields {
		line = append(line, f.key...)
		col := b.Col(f.col)
		switch {
		case !col.Valid(i):
			line = append(line, "null"...)
		case col.Type == format.String:
			line = textsafe.AppendJSONString(line, col.Str(i))
		default:
			line = appendValue(line, col, i)
		}
	}
	l.w.buf = append(line, '}', '}', '\n')
	l.w.maybeFlush()
	l.count()
}

// appendValue appends row i of col as Column.Str gives it: a string as it
// is, an integer in decimal.
func appendValue(b []byte, col *format.Column, i int) []byte {
	switch col.Type {
	case format.String:
		return append(b, col.Str(i)...)
	case format.Uint64:
		return decimal.AppendUint(b, uint64(col.Int(i)))
	}
	return decimal.AppendInt(b, col.Int(i))
}

// bits64 is x as the bits of its values, which decimal.AppendBits signs.
func bits64(x []int64) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

// appendInt64 appends row i of col, an integer column, as appendValue
// does, reading the common types' values without Column.Int's switch.
func appendInt64(b []byte, col *format.Column, i int) []byte {
	switch ic := col.Ints(); ic.Type {
	case format.Uint64:
		return decimal.AppendUint(b, ic.U64[i])
	case format.Int64:
		return decimal.AppendInt(b, ic.I64[i])
	default:
		return decimal.AppendInt(b, ic.Int(i))
	}
}

// appendPadded appends s left-justified in width runes, as fmt's %-Ns
// pads it.
func appendPadded(b []byte, s string, width int) []byte {
	b = append(b, s...)
	for n := utf8.RuneCountInString(s); n < width; n++ {
		b = append(b, ' ')
	}
	return b
}

// relClock formats times since the capture's start as seconds with 6
// decimals, as fmt's %.6f prints float64(d)/1e9 (d nanoseconds): without
// floating point where the result is the same (d is not a half
// microsecond, and small enough that the float's rounding error cannot
// reach the next one), and with the sign and whole seconds formatted
// once each, with the TIME column's padding after them.
type relClock struct {
	ok    bool
	neg   bool
	sec   uint64
	first uint64 // sec's first microsecond
	s     []byte // the sign, sec and the point
	// col is the TIME column of sec: s, the 6 digits to fill in at
	// len(s), and the padding to 14 runes and a space; n of its bytes.
	// (Below 2^52 ns, sec has at most 7 digits: col fits.)
	col [16]byte
	n   int
}

// micros returns d rounded to microseconds as %.6f rounds it, and its
// sign; exact is false where only floating point gives %.6f's result.
// The rounding takes no branch: it goes one way or the other from one
// time to the next.
func micros(d int64) (us uint64, neg, exact bool) {
	const lim = 1 << 52
	if d <= -lim || d >= lim {
		return 0, false, false
	}
	m := d >> 63
	u := uint64((d^m)-m) + 500
	us = u / 1000
	if us*1000 == u { // a half microsecond
		return 0, false, false
	}
	return us, d < 0, true
}

// at makes the sign and whole seconds of us those cached, and returns
// the microseconds after the second.
func (c *relClock) at(us uint64, neg bool) uint32 {
	sec := us / 1e6
	if !c.ok || sec != c.sec || neg != c.neg {
		c.set(sec, neg)
	}
	return uint32(us - sec*1e6)
}

// set caches the texts of sec, negative with neg.
func (c *relClock) set(sec uint64, neg bool) {
	c.ok, c.sec, c.first, c.neg = true, sec, sec*1e6, neg
	c.s = c.s[:0]
	if neg {
		c.s = append(c.s, '-')
	}
	c.s = append(strconv.AppendUint(c.s, sec, 10), '.')
	col := append(append(c.col[:0], c.s...), "000000"...)
	for len(col) < 14 {
		col = append(col, ' ')
	}
	c.n = len(append(col, ' '))
}

func (c *relClock) append(b []byte, d int64) []byte {
	us, neg, exact := micros(d)
	if !exact {
		return strconv.AppendFloat(b, float64(d)/1e9, 'f', 6, 64)
	}
	f := c.at(us, neg)
	return appendFrac6(append(b, c.s...), f)
}

// appendCol appends d as append does, left-justified in the TIME column
// (14 runes) and a space.
func (c *relClock) appendCol(b []byte, d int64) []byte {
	us, neg, exact := micros(d)
	if !exact {
		start := len(b)
		b = strconv.AppendFloat(b, float64(d)/1e9, 'f', 6, 64)
		for len(b)-start < 14 {
			b = append(b, ' ')
		}
		return append(b, ' ')
	}
	if us-c.first >= 1e6 || neg != c.neg || !c.ok {
		c.set(us/1e6, neg)
	}
	f := uint32(us - c.first)
	n := len(b)
	b = slices.Grow(b, len(c.col))
	// The whole column as one copy, and the digits three at a time, a
	// word each: the word of the last three ends in the space that
	// follows them in the column.
	*(*[16]byte)(b[n : n+16]) = c.col
	hi := f / 1000
	p := b[n+len(c.s) : n+16]
	binary.LittleEndian.PutUint32(p, digits3[hi])
	binary.LittleEndian.PutUint32(p[3:], digits3[f-hi*1000])
	return b[:n+c.n]
}

// digits3 holds the three digits of 000 to 999 and a space, a word each.
var digits3 = func() (t [1000]uint32) {
	for i := range t {
		t[i] = uint32('0'+i/100) | uint32('0'+i/10%10)<<8 | uint32('0'+i%10)<<16 | ' '<<24
	}
	return t
}()

// appendFrac6 appends the 6 digits of f, below 1e6.
func appendFrac6(b []byte, f uint32) []byte {
	b = append(b, "000000"...)
	putFrac6(b[len(b)-6:], f)
	return b
}

// putFrac6 writes the 6 digits of f, below 1e6, in d. (In place: built in
// an array, they were read back from the stack wider than written, a
// store-forwarding stall that cost more than the digits.)
func putFrac6(d []byte, f uint32) {
	_ = d[5]
	hi := f / 10000
	f -= hi * 10000
	mid := f / 100
	lo := f - mid*100
	d[0], d[1] = digits2[2*hi], digits2[2*hi+1]
	d[2], d[3] = digits2[2*mid], digits2[2*mid+1]
	d[4], d[5] = digits2[2*lo], digits2[2*lo+1]
}

// digits2 holds the two digits of 00 to 99.
const digits2 = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// wallClock formats wall times as "15:04:05.000000" does, formatting the
// hours, minutes and seconds once per second.
type wallClock struct {
	ok   bool
	sec  int64
	hms  []byte // "15:04:05." of sec
	zone *time.Location
}

func (c *wallClock) append(b []byte, t time.Time) []byte {
	if sec := t.Unix(); !c.ok || sec != c.sec || t.Location() != c.zone {
		c.ok, c.sec, c.zone = true, sec, t.Location()
		c.hms = t.AppendFormat(c.hms[:0], "15:04:05.")
	}
	return appendFrac6(append(b, c.hms...), uint32(t.Nanosecond())/1000)
}

// eventsWriter hands the output of Events to its writer in chunks of
// about eventsChunk bytes, on a goroutine of its own: writing (through
// bpftape's textsafe.Writer, which reads every byte) then runs beside
// decoding and formatting. At most eventsBuffers chunks are in flight.
type eventsWriter struct {
	out  io.Writer
	buf  []byte
	full chan []byte
	free chan []byte
	done chan struct{}
	bad  atomic.Bool
	// buffers counts the chunk buffers made: at most eventsBuffers.
	buffers int
}

const eventsBuffers = 4

func newEventsWriter(out io.Writer) *eventsWriter {
	w := &eventsWriter{out: out, buf: make([]byte, 0, eventsChunk+4096), buffers: 1,
		full: make(chan []byte, eventsBuffers), free: make(chan []byte, eventsBuffers), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for b := range w.full {
			if !w.bad.Load() {
				if _, err := w.out.Write(b); err != nil {
					w.bad.Store(true)
				}
			}
			w.free <- b[:0]
		}
	}()
	return w
}

// maybeFlush hands the buffer on when it holds a chunk.
func (w *eventsWriter) maybeFlush() {
	if len(w.buf) >= eventsChunk {
		w.flush()
	}
}

func (w *eventsWriter) flush() {
	if len(w.buf) == 0 {
		return
	}
	w.full <- w.buf
	select {
	case w.buf = <-w.free:
	default:
		if w.buffers < eventsBuffers {
			w.buffers++
			w.buf = make([]byte, 0, eventsChunk+4096)
		} else {
			w.buf = <-w.free
		}
	}
}

// failed reports whether a write failed: what follows would be dropped.
func (w *eventsWriter) failed() bool { return w.bad.Load() }

// close writes what is left and waits for the writes to finish.
func (w *eventsWriter) close() {
	w.flush()
	close(w.full)
	<-w.done
}
