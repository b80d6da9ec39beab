package replay

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/usage"
	"github.com/bpftape/bpftape/probespec"
	"github.com/bpftape/bpftape/replay/symbolize"
)

// Capture is an open capture: its file, opened once, and its metadata. It
// is not a cursor: every pass over it (Scan, Walk, an analysis) reads it
// from its first batch, and returns what it found besides the events it
// handed on (Pass), so that one open capture answers many questions.
type Capture struct {
	Name string

	// r read the metadata and reads every pass, rewound to the first
	// batch for each: the file is opened once, and every pass reads that
	// file, even if its path is removed or replaced meanwhile.
	r      *format.Reader
	passes int

	// Progress, if set, is told how far each pass has read.
	Progress Progress

	perRow    bool // hand hist rows one at a time even where spans would do
	decodeAll bool // decode every column in every pass (DecodeAll)

	sym *symbolize.Symbolizer // the stack table's index, built once (symbolizer)
}

// Open opens a capture and reads its metadata.
func Open(path string) (*Capture, error) {
	r, err := format.Open(path)
	if err != nil {
		return nil, err
	}
	// Decode batches ahead of the analysis on the other CPUs: batches
	// still reach it in order.
	r.ReadAhead = min(runtime.GOMAXPROCS(0), maxReadAhead)
	// No analysis keeps a batch's slices past the next.
	r.Recycle = true
	c := &Capture{Name: path, r: r}
	if os.Getenv(DecodeAllEnv) != "" {
		c.DecodeAll()
	}
	return c, nil
}

// DecodeAllEnv names the environment variable that, set to anything,
// makes every capture opened decode every column in every pass and
// answer nothing from its footer (DecodeAll): slower, with the same
// results, as a check.
const DecodeAllEnv = "BPFTAPE_DECODE_ALL"

// maxReadAhead bounds the goroutines decoding ahead of a pass (and the
// batches they hold: two each).
const maxReadAhead = 8

// DecodeAll makes every later pass decode every column of every batch,
// whatever columns its analysis asked for, and every analysis read the
// batches rather than answer from the footer's counts: results must not
// change, which is how tests check that each analysis asks for every
// column it reads, and that what it takes from the footer is what it
// would read.
func (c *Capture) DecodeAll() { c.decodeAll, c.perRow = true, true }

// Close closes the capture.
func (c *Capture) Close() error { return c.r.Close() }

// Meta is the capture's metadata.
func (c *Capture) Meta() *format.Meta { return c.r.Meta }

// Schema is the capture's Arrow schema.
func (c *Capture) Schema() *arrow.Schema { return c.r.Schema }

// StackTable returns the capture's stack table (empty without stacks).
func (c *Capture) StackTable() (*format.StackTable, error) { return c.r.StackTable() }

// symbolizer returns the index of the capture's stack table, built on the
// first call: a report symbolizes for several probes and modes, and the
// index of a large table costs as much as reading it.
func (c *Capture) symbolizer() (*symbolize.Symbolizer, error) {
	if c.sym == nil {
		t, err := c.r.StackTable()
		if err != nil {
			return nil, err
		}
		c.sym = symbolize.New(t)
	}
	return c.sym, nil
}

// Column returns the schema index of the named column, or -1.
func (c *Capture) Column(name string) int { return c.r.Column(name) }

// Size is the size of the capture's file in bytes.
func (c *Capture) Size() int64 { return c.r.Size }

// Recovered reports whether the capture has no footer (its recorder was
// killed): a pass reads its complete batches, and says where its stream
// was cut (Pass.RecoverErr).
func (c *Capture) Recovered() bool { return c.r.Recovered }

// Passes is the number of passes that have read the capture.
func (c *Capture) Passes() int { return c.passes }

// EndWall is the wall-clock time at which the capture stopped recording:
// when its window closed, or where that is not recorded, when it started.
// JSON that BCC stamps with the time it prints gets this time instead, so
// that a replay says when the data is from.
func (c *Capture) EndWall() time.Time {
	m := c.Meta()
	if m.Window != nil && m.Window.End != 0 {
		return m.WallTime(m.Window.End)
	}
	return m.StartWall
}

// reader starts a pass: it returns the capture's reader, rewound to the
// first batch.
func (c *Capture) reader() *format.Reader {
	c.passes++
	if c.passes > 1 {
		c.r.Rewind()
	}
	c.r.RecycleStrings = false // but for ScanSpans
	return c.r
}

// Ref names one field of one probe, resolved against a capture. Field is
// the field's recorded name, also where it was asked for as argN.
type Ref struct {
	Probe string
	Field string
	probe uint16
	col   int
	typ   format.Type
}

// Resolve finds probe and field in the capture, with the names that do exist
// in the error when they do not. Besides a field's name, field may be argN
// where the probe recorded its function's parameters by name (Params):
// argN is then the field of the N-th parameter, counted from 0.
func (c *Capture) Resolve(probe, field string) (Ref, error) {
	m := c.Meta()
	pi, p := m.Probe(probe)
	if p == nil {
		return Ref{}, usage.Errorf("%s: no probe %q; the capture has: %s", c.Name, probe, strings.Join(m.ProbeNames(), ", "))
	}
	fi := p.Field(field)
	if fi < 0 {
		var names []string
		for _, f := range p.Fields {
			names = append(names, f.Name)
		}
		params := probespec.Params(p)
		n, isArg := probespec.ArgIndex(field)
		switch {
		case isArg && n < len(params):
			fi = p.Field(params[n])
		case isArg && params != nil:
			return Ref{}, usage.Errorf("%s: probe %s has no field %q: it recorded %d parameters, %s; its fields: %s",
				c.Name, probe, field, len(params), argRange(len(params)), strings.Join(names, ", "))
		case params != nil:
			return Ref{}, usage.Errorf("%s: probe %s has no field %q; its fields: %s (or %s)",
				c.Name, probe, field, strings.Join(names, ", "), argRange(len(params)))
		default:
			return Ref{}, usage.Errorf("%s: probe %s has no field %q; its fields: %s", c.Name, probe, field, strings.Join(names, ", "))
		}
	}
	f := p.Fields[fi]
	return Ref{Probe: probe, Field: f.Name, probe: uint16(pi), col: c.Column(f.Column), typ: f.Type}, nil
}

// ArgsNote says which field each argN names, for a probe's parameters
// params (Params): "arg0..arg2 name nc, buf, size".
func ArgsNote(params []string) string {
	verb := "name"
	if len(params) == 1 {
		verb = "names"
	}
	return argRange(len(params)) + " " + verb + " " + strings.Join(params, ", ")
}

// argRange is "arg0" for one argument, "arg0..argN-1" for n.
func argRange(n int) string {
	if n == 1 {
		return "arg0"
	}
	return "arg0..arg" + strconv.Itoa(n-1)
}

// ResolveProbe finds a probe by name.
func (c *Capture) ResolveProbe(probe string) (uint16, error) {
	m := c.Meta()
	pi, p := m.Probe(probe)
	if p == nil {
		return 0, usage.Errorf("%s: no probe %q; the capture has: %s", c.Name, probe, strings.Join(m.ProbeNames(), ", "))
	}
	return uint16(pi), nil
}

// Int reads the referenced integer field of row i; ok is false when row i
// is another probe's event.
func (r *Ref) Int(b *format.Batch, i int) (v int64, ok bool) {
	if b.Probe[i] != r.probe {
		return 0, false
	}
	return b.Col(r.col).Int(i), true
}

// ProbeIndex is the index of the field's probe in the probe table.
func (r *Ref) ProbeIndex() int { return int(r.probe) }

// Column is the schema index of the field's column, for ScanColumns.
func (r *Ref) Column() int { return r.col }

// IsInt reports whether the field is an integer.
func (r *Ref) IsInt() bool { return r.typ.IsInt() }

// Kind names what a field that is not an integer holds, for the error
// of an analysis that needs one: "a stack" or "a string".
func (r *Ref) Kind() string {
	if r.typ.IsStack() {
		return "a stack"
	}
	return "a string"
}
