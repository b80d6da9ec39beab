package export

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/replay"
)

// WriteCSV writes a header and one line per selected row of c: the fixed
// columns (lost only when loss records are kept) and every field column,
// empty where the row's probe has no such field; a stack field is its
// folded frames, empty for no stack, or with Options.StackIDs its id.
func WriteCSV(c *replay.Capture, w io.Writer, o Options) (*Result, *replay.Pass, error) {
	o.Lost = o.lostMode()
	cols := columns(c, &o)
	names, err := nameStacks(c, &o, cols)
	if err != nil {
		return nil, nil, err
	}
	cw := &csvWriter{w: w, buf: make([]byte, 0, csvBuffer)}
	rec := make([]string, len(cols))
	for i, col := range cols {
		rec[i] = csvText(col.name, &o)
	}
	cw.record(rec)
	res := &Result{}
	probes := c.Meta().ProbeNames()
	cells := newCSVCells(cols, probes, &o)
	pass, err := walk(c, &o, func(b *format.Batch, i int, lost bool) error {
		cw.buf = cells.row(cw.buf, b, i)
		count(res, lost)
		if len(cw.buf) >= csvBuffer {
			return cw.flush()
		}
		return nil
	})
	if ferr := cw.flush(); err == nil {
		err = ferr
	}
	stackNotes(res, names)
	return res, pass, err
}

// csvBuffer is how many bytes of lines WriteCSV gathers before it writes them.
const csvBuffer = 1 << 18

// csvWriter gathers CSV lines, as encoding/csv writes them (a comma
// between cells, "\n" after a line), and writes them in large pieces.
type csvWriter struct {
	w   io.Writer
	buf []byte
	err error
}

func (cw *csvWriter) record(rec []string) {
	for k, s := range rec {
		if k > 0 {
			cw.buf = append(cw.buf, ',')
		}
		cw.buf = appendCSVField(cw.buf, s)
	}
	cw.buf = append(cw.buf, '\n')
}

func (cw *csvWriter) flush() error {
	if cw.err == nil && len(cw.buf) > 0 {
		_, cw.err = cw.w.Write(cw.buf)
	}
	cw.buf = cw.buf[:0]
	return cw.err
}

// appendCSVField appends s as encoding/csv's Writer writes a field: in
// double quotes, with quotes doubled, when it holds a comma, a quote, a
// CR or LF, starts with a space or is \. ; else as it is.
func appendCSVField(b []byte, s string) []byte {
	if !csvNeedsQuotes(s) {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// csvNeedsQuotes is encoding/csv's Writer.fieldNeedsQuotes with a comma.
func csvNeedsQuotes(s string) bool {
	if s == "" {
		return false
	}
	if s == `\.` {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n', '\r', '"', ',':
			return true
		}
	}
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

// csvCells appends the cells of a row to a line: numbers with strconv,
// text made safe (csvText) and quoted as needed, the text of a probe name,
// of the last command name and of the stacks named so far encoded once.
type csvCells struct {
	cols   []column
	o      *Options
	probes [][]byte // the cells of the probe names
	// The last command name, its cell, and the last string of each
	// string column with its cell (per column index k).
	lastComm     string
	lastCommCell []byte
	lastStr      []string
	lastStrCell  [][]byte
	// Per stack column k: the last stack (id, pid) and its cell, and
	// the cells of the folded stacks met so far (few: a stack is named
	// once, by the StackNamer).
	lastStack []stackMemo
	stackCell map[string][]byte
	scratch   []byte
}

type stackMemo struct {
	id   uint64
	pid  uint32
	cell []byte
	set  bool
}

func newCSVCells(cols []column, probes []string, o *Options) *csvCells {
	cc := &csvCells{cols: cols, o: o, lastStr: make([]string, len(cols)), lastStrCell: make([][]byte, len(cols)),
		lastStack: make([]stackMemo, len(cols)), stackCell: map[string][]byte{}}
	for _, p := range probes {
		cc.probes = append(cc.probes, cc.text(nil, p))
	}
	return cc
}

// text appends the cell of text s.
func (cc *csvCells) text(b []byte, s string) []byte {
	return appendCSVField(b, csvText(s, cc.o))
}

// row appends row i of b as a line.
func (cc *csvCells) row(line []byte, b *format.Batch, i int) []byte {
	for k := range cc.cols {
		col := &cc.cols[k]
		if k > 0 {
			line = append(line, ',')
		}
		switch col.fixed {
		case format.ColTime:
			line = strconv.AppendInt(line, b.Time[i], 10)
			continue
		case format.ColCPU:
			line = strconv.AppendUint(line, uint64(b.CPU[i]), 10)
			continue
		case format.ColPID:
			line = strconv.AppendUint(line, uint64(b.PID[i]), 10)
			continue
		case format.ColTID:
			line = strconv.AppendUint(line, uint64(b.TID[i]), 10)
			continue
		case format.ColComm:
			s := b.Comm(i)
			if s != cc.lastComm || cc.lastCommCell == nil {
				cc.lastComm = strings.Clone(s)
				cc.lastCommCell = cc.text(cc.lastCommCell[:0], s)
				if cc.lastCommCell == nil {
					cc.lastCommCell = []byte{}
				}
			}
			line = append(line, cc.lastCommCell...)
			continue
		case format.ColProbe:
			if p := int(b.Probe[i]); p < len(cc.probes) {
				line = append(line, cc.probes[p]...)
			}
			continue
		case format.ColLost:
			if n, ok := b.Lost(i); ok {
				line = strconv.AppendUint(line, n, 10)
			}
			continue
		}
		fc := b.Col(col.index)
		if !fc.Valid(i) {
			continue
		}
		switch {
		case col.names != nil:
			line = cc.stack(line, k, col, b, i, uint64(fc.Int(i)))
		case fc.Type == format.String:
			s := fc.Str(i)
			if s != cc.lastStr[k] || cc.lastStrCell[k] == nil {
				cc.lastStr[k] = strings.Clone(s)
				cc.lastStrCell[k] = cc.text(cc.lastStrCell[k][:0], s)
				if cc.lastStrCell[k] == nil {
					cc.lastStrCell[k] = []byte{}
				}
			}
			line = append(line, cc.lastStrCell[k]...)
		case fc.Type == format.Uint64 || fc.Type.IsStack():
			line = strconv.AppendUint(line, uint64(fc.Int(i)), 10)
		default:
			line = strconv.AppendInt(line, fc.Int(i), 10)
		}
	}
	return append(line, '\n')
}

// stack appends the cell of stack id of row i: its folded frames, nothing
// for no stack.
func (cc *csvCells) stack(line []byte, k int, col *column, b *format.Batch, i int, id uint64) []byte {
	m := &cc.lastStack[k]
	if !m.set || m.id != id || m.pid != b.PID[i] {
		s, _ := col.folded(b, i) // "" for no stack, as for null
		cell, ok := cc.stackCell[s]
		if !ok {
			cell = cc.text(nil, s)
			cc.stackCell[s] = cell
		}
		*m = stackMemo{id: id, pid: b.PID[i], cell: cell, set: true}
	}
	return append(line, m.cell...)
}

func count(res *Result, lost bool) {
	if lost {
		res.LossRecords++
	} else {
		res.Events++
	}
}

// text reports whether col holds text from the capture (a command name, a
// probe name, a string field or a stack's frames), as opposed to numbers.
func (col *column) text() bool {
	return col.fixed == format.ColComm || col.fixed == format.ColProbe || (col.fixed < 0 && (col.typ == format.String || col.names != nil))
}

// csvText makes a text cell safe: bytes that are not UTF-8 become U+FFFD
// (polars and DuckDB refuse them), invisible format characters such as
// U+202E (RIGHT-TO-LEFT OVERRIDE, which shows the rest of a cell
// reversed) are written as textsafe writes them (\u202e), and unless
// o.CSVFormulas, a cell that a spreadsheet would run as a formula
// (starting with =, +, -, @, a tab or a carriage return: OWASP's list)
// gets a leading single quote. Numbers are never changed: a negative
// integer stays a number.
func csvText(s string, o *Options) string {
	if !plainASCII(s) {
		s = textsafe.Visible(strings.ToValidUTF8(s, "\uFFFD"))
	}
	if !o.CSVFormulas && s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0 {
		return "'" + s
	}
	return s
}

// plainASCII reports whether s is printable ASCII only, which csvText
// leaves as it is but for the formula quote.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// textValue is row i of col as text, "" for null.
func textValue(b *format.Batch, i int, col *column, probes []string) string {
	switch col.fixed {
	case format.ColTime:
		return strconv.FormatInt(b.Time[i], 10)
	case format.ColCPU:
		return strconv.FormatUint(uint64(b.CPU[i]), 10)
	case format.ColPID:
		return strconv.FormatUint(uint64(b.PID[i]), 10)
	case format.ColTID:
		return strconv.FormatUint(uint64(b.TID[i]), 10)
	case format.ColComm:
		return b.Comm(i)
	case format.ColProbe:
		return probes[b.Probe[i]]
	case format.ColLost:
		if n, ok := b.Lost(i); ok {
			return strconv.FormatUint(n, 10)
		}
		return ""
	}
	fc := b.Col(col.index)
	if !fc.Valid(i) {
		return ""
	}
	if col.names != nil {
		s, _ := col.folded(b, i) // "" for no stack, as for null
		return s
	}
	return fc.Str(i)
}

// WriteJSONL writes one JSON object per selected row of c with the CSV's
// names but only the row's probe's fields; 64-bit integers are written in
// full (readers that parse numbers as doubles round those above 2^53). A
// stack field is a string of folded frames, null for no stack, or with
// Options.StackIDs its id.
func WriteJSONL(c *replay.Capture, w io.Writer, o Options) (*Result, *replay.Pass, error) {
	o.Lost = o.lostMode()
	cols := columns(c, &o)
	names, err := nameStacks(c, &o, cols)
	if err != nil {
		return nil, nil, err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	res := &Result{}
	probes := c.Meta().ProbeNames()
	var line []byte
	pass, err := walk(c, &o, func(b *format.Batch, i int, lost bool) error {
		line = append(line[:0], '{')
		first := true
		for k := range cols {
			col := &cols[k]
			var fc *format.Column
			if col.fixed < 0 {
				if fc = b.Col(col.index); !fc.Valid(i) {
					continue
				}
			}
			if !first {
				line = append(line, ',')
			}
			first = false
			line = textsafe.AppendJSONString(line, col.name)
			line = append(line, ':')
			switch {
			case col.fixed == format.ColComm:
				line = textsafe.AppendJSONString(line, b.Comm(i))
			case col.fixed == format.ColProbe:
				line = textsafe.AppendJSONString(line, probes[b.Probe[i]])
			case col.fixed == format.ColLost:
				if n, ok := b.Lost(i); ok {
					line = strconv.AppendUint(line, n, 10)
				} else {
					line = append(line, "null"...)
				}
			case col.fixed >= 0:
				line = append(line, textValue(b, i, col, probes)...)
			case col.names != nil:
				if s, ok := col.folded(b, i); ok {
					line = textsafe.AppendJSONString(line, s)
				} else {
					line = append(line, "null"...)
				}
			case fc.Type == format.String:
				line = textsafe.AppendJSONString(line, fc.Str(i))
			case fc.Type == format.Uint64:
				line = strconv.AppendUint(line, uint64(fc.Int(i)), 10)
			default:
				line = strconv.AppendInt(line, fc.Int(i), 10)
			}
		}
		line = append(line, '}', '\n')
		count(res, lost)
		_, err := bw.Write(line)
		return err
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	stackNotes(res, names)
	return res, pass, err
}
