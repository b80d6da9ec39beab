package export

import (
	"bufio"
	"bytes"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/internal/decimal"
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
	cells := newCSVCells(c, cols, probes, &o)
	var pass *replay.Pass
	if o.Rows.Empty() && o.Lost == LostDrop {
		// Every event and nothing else: a stretch of rows at a time.
		pass, err = c.ScanSpans(nil, func(b *format.Batch, lo, hi int) error {
			for lo < hi {
				var n int
				cw.buf, n = cells.rows(cw.buf, b, lo, hi, csvBuffer)
				res.Events += uint64(n)
				lo += n
				if len(cw.buf) >= csvBuffer {
					if err := cw.flush(); err != nil {
						return err
					}
				}
			}
			return nil
		})
	} else {
		pass, err = walk(c, &o, func(b *format.Batch, i int, lost bool) error {
			cw.buf = cells.row(cw.buf, b, i, lost)
			count(res, lost)
			if len(cw.buf) >= csvBuffer {
				return cw.flush()
			}
			return nil
		})
	}
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

// csvCells appends the cells of a row to a line: numbers with package
// decimal, text made safe (csvText) and quoted as needed, the text of a
// probe name, of the last command name and of the stacks named so far
// encoded once.
//
// An event's line, when the columns start with time, cpu, pid, tid, comm
// and probe (not redacted), is made faster (fastRows): what lies between
// its time and its fields is cached per thread and probe (csvHead), and
// the field cells come from a plan per probe (csvPlan) where the row has
// values in its probe's columns and nowhere else, as every row written by
// bpftape does. Other rows, and lines of other columns, take the cells
// one by one (row).
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

	// The fast line: fixed is how many columns (6, or 7 with lost) its
	// head covers, 0 for no fast line; fields are the columns after them,
	// set for batch (its Index + 1), and plans the probes' cells when
	// there are at most 64 fields (the validity of a row's fields is a
	// word).
	fixed  int
	fields []csvField
	plans  []csvPlan
	batch  int
	ones   []byte // a validity bitmap of every row, for columns without one
	heads  [512]csvHead
	time   decimal.Rising
}

// csvField is a field column of the fast line, as of the batch.
type csvField struct {
	index int // the column's schema index
	// valid is the column's validity bitmap, nil for a string column
	// (read through Column.Valid); bits and sign read an 8-byte integer
	// column as in bpftape events (textField), bits nil for the others.
	valid []byte
	col   *format.Column
	bits  []uint64
	sign  int64
	asIs  bool // written by csvCells.cell: a string, a stack's frames, a narrower integer
}

// csvPlan is the field cells of a probe's lines: want has the bit of each
// of its columns, cells its columns in order with the commas before each,
// and tail the commas after the last and the newline. A probe whose
// fields are not in the columns' order has none (ok false).
type csvPlan struct {
	ok    bool
	want  uint64
	cells []csvCell
	tail  shortText
}

type csvCell struct {
	k   int // index in csvCells.fields
	pre shortText
}

// shortText is a few bytes of a line (commas), appended as one word when
// they fit in one.
type shortText struct {
	w [16]byte
	s []byte
}

func newShortText(s string) shortText {
	t := shortText{s: []byte(s)}
	copy(t.w[:], s)
	return t
}

func (t *shortText) appendTo(line []byte) []byte {
	if len(t.s) > len(t.w) {
		return append(line, t.s...)
	}
	n := len(line)
	line = slices.Grow(line, len(t.w))
	*(*[16]byte)(line[n : n+16]) = t.w
	return line[:n+len(t.s)]
}

// csvHead caches the cells of a thread's line between its time and its
// fields for one probe and cpu (a thread stays on a cpu for a while):
// ",CPU,PID,TID,COMM,PROBE", and a comma for an empty lost column; the
// comm matched by its string view, as bpftape events matches it (replay's
// lineHead).
type csvHead struct {
	ok       bool
	probe    uint16
	cpu      uint16
	pid, tid uint32
	lo, hi   uint64
	batch    int // the batch in which a long comm's view last read as comm
	comm     string
	text     []byte
	short    [64]byte // text, when it fits, copied as a whole
}

type stackMemo struct {
	id   uint64
	pid  uint32
	cell []byte
	set  bool
}

func newCSVCells(c *replay.Capture, cols []column, probes []string, o *Options) *csvCells {
	cc := &csvCells{cols: cols, o: o, lastStr: make([]string, len(cols)), lastStrCell: make([][]byte, len(cols)),
		lastStack: make([]stackMemo, len(cols)), stackCell: map[string][]byte{}}
	for _, p := range probes {
		cc.probes = append(cc.probes, cc.text(nil, p))
	}
	fixed := 0
	for fixed < len(cols) && cols[fixed].fixed == fixed && fixed <= format.ColLost {
		fixed++
	}
	if fixed < format.ColProbe+1 {
		return cc // redacted: no comm
	}
	cc.fixed = fixed
	for k := fixed; k < len(cols); k++ {
		cc.fields = append(cc.fields, csvField{index: cols[k].index})
	}
	if len(cc.fields) > 64 {
		return cc
	}
	at := map[int]int{} // schema index: index in fields
	for k, f := range cc.fields {
		at[f.index] = k
	}
	for _, p := range c.Meta().Probes {
		pl := csvPlan{ok: true}
		last := -1
		for _, f := range p.Fields {
			k, ok := at[c.Column(f.Column)]
			if !ok || k <= last {
				pl = csvPlan{}
				break
			}
			pl.want |= 1 << k
			pl.cells = append(pl.cells, csvCell{k: k, pre: newShortText(strings.Repeat(",", k-last))})
			last = k
		}
		if pl.ok {
			pl.tail = newShortText(strings.Repeat(",", len(cc.fields)-1-last) + "\n")
		}
		cc.plans = append(cc.plans, pl)
	}
	return cc
}

// text appends the cell of text s.
func (cc *csvCells) text(b []byte, s string) []byte {
	return appendCSVField(b, csvText(s, cc.o))
}

// row appends row i of b, a loss record with lost, as a line.
func (cc *csvCells) row(line []byte, b *format.Batch, i int, lost bool) []byte {
	if cc.fixed > 0 && !lost {
		line, _ = cc.fastRows(line, b, i, i+1, 0)
		return line
	}
	for k := range cc.cols {
		if k > 0 {
			line = append(line, ',')
		}
		line = cc.cell(line, k, b, i)
	}
	return append(line, '\n')
}

// rows appends event rows lo to hi of b as lines until line holds full
// bytes; it returns how many rows it appended.
func (cc *csvCells) rows(line []byte, b *format.Batch, lo, hi, full int) ([]byte, int) {
	if cc.fixed > 0 {
		return cc.fastRows(line, b, lo, hi, full)
	}
	i := lo
	for ; i < hi && len(line) < full; i++ {
		line = cc.row(line, b, i, false)
	}
	return line, i - lo
}

// fastRows appends event rows lo to hi of b as lines, the columns
// starting with the fixed ones (fixed > 0), until line holds full bytes
// (0: all of them); it returns how many rows it appended.
func (cc *csvCells) fastRows(line []byte, b *format.Batch, lo, hi, full int) ([]byte, int) {
	if cc.batch != b.Index+1 {
		cc.setBatch(b)
	}
	i := lo
	for ; i < hi && (full == 0 || len(line) < full); i++ {
		line = cc.time.AppendInt(line, b.Time[i])
		// The text between time and fields, cached: the check inlined,
		// a call only to set it.
		vlo, vhi := b.CommView(i)
		h := &cc.heads[(uint64(b.TID[i])<<16|uint64(b.Probe[i]))*0x9e3779b97f4a7c15>>(64-9)]
		if !h.holds(b.CPU[i], b.PID[i], b.TID[i], b.Probe[i], vlo, vhi, b.Index) {
			cc.setHead(h, b, i)
		}
		line = h.appendTo(line)
		if p := int(b.Probe[i]); p < len(cc.plans) {
			var valid uint64
			for k := range cc.fields {
				f := &cc.fields[k]
				if f.valid == nil {
					if f.col.Valid(i) {
						valid |= 1 << k
					}
					continue
				}
				valid |= uint64(f.valid[i>>3]>>(i&7)&1) << k
			}
			if pl := &cc.plans[p]; valid == pl.want && pl.ok {
				for j := range pl.cells {
					c := &pl.cells[j]
					line = c.pre.appendTo(line)
					if f := &cc.fields[c.k]; !f.asIs {
						line = decimal.AppendBits(line, f.bits[i], f.sign)
					} else {
						line = cc.cell(line, cc.fixed+c.k, b, i)
					}
				}
				line = pl.tail.appendTo(line)
				continue
			}
		}
		for k := cc.fixed; k < len(cc.cols); k++ {
			line = cc.cell(append(line, ','), k, b, i)
		}
		line = append(line, '\n')
	}
	return line, i - lo
}

// setBatch points the fields of the fast line at b's columns.
func (cc *csvCells) setBatch(b *format.Batch) {
	cc.batch = b.Index + 1
	if n := (b.Len + 7) / 8; len(cc.ones) < n {
		cc.ones = bytes.Repeat([]byte{0xff}, n)
	}
	for k := range cc.fields {
		f := &cc.fields[k]
		col := b.Col(f.index)
		ic := col.Ints()
		f.col, f.valid, f.bits, f.sign, f.asIs = col, ic.Valid, nil, 0, false
		switch {
		case col.Type == format.String:
			f.valid, f.asIs = nil, true
		case cc.cols[cc.fixed+k].names != nil:
			f.asIs = true // a stack's frames
		case ic.Type == format.Uint64:
			f.bits = ic.U64
		case ic.Type == format.Int64:
			f.bits, f.sign = bits64(ic.I64), -1
		default:
			f.asIs = true
		}
		if f.valid == nil && col.Type != format.String {
			f.valid = cc.ones
		}
	}
}

// bits64 is x as the bits of its values, which decimal.AppendBits signs.
func bits64(x []int64) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

// appendTo appends h's text to line.
func (h *csvHead) appendTo(line []byte) []byte {
	if len(h.text) > len(h.short) {
		return append(line, h.text...)
	}
	n := len(line)
	line = slices.Grow(line, len(h.short))
	*(*[64]byte)(line[n : n+64]) = h.short
	return line[:n+len(h.text)]
}

// holds reports whether h is the head of a row of the thread, probe, cpu
// and comm view in batch: a long comm's view is its own in its batch
// alone (setHead checks its bytes in the next).
func (h *csvHead) holds(cpu uint16, pid, tid uint32, probe uint16, lo, hi uint64, batch int) bool {
	return h.ok && h.tid == tid && h.probe == probe && h.cpu == cpu && h.pid == pid && h.lo == lo && h.hi == hi &&
		(uint32(lo) <= 12 || h.batch == batch)
}

// setHead makes h the head of row i of b.
func (cc *csvCells) setHead(h *csvHead, b *format.Batch, i int) {
	cpu, pid, tid, probe := b.CPU[i], b.PID[i], b.TID[i], b.Probe[i]
	lo, hi := b.CommView(i)
	comm := b.Comm(i)
	h.batch = b.Index // a long comm's view reads as comm in all of this batch
	if h.ok && h.tid == tid && h.probe == probe && h.cpu == cpu && h.pid == pid && h.lo == lo && h.hi == hi && h.comm == comm {
		return
	}
	h.ok, h.probe, h.cpu, h.pid, h.tid, h.lo, h.hi, h.comm = true, probe, cpu, pid, tid, lo, hi, strings.Clone(comm)
	s := append(h.text[:0], ',')
	s = append(decimal.AppendUint(s, uint64(cpu)), ',')
	s = append(decimal.AppendUint(s, uint64(pid)), ',')
	s = append(decimal.AppendUint(s, uint64(tid)), ',')
	s = append(cc.text(s, comm), ',')
	if int(probe) < len(cc.probes) {
		s = append(s, cc.probes[probe]...)
	}
	if cc.fixed > format.ColLost {
		s = append(s, ',') // an event's lost cell is empty
	}
	h.text = s
	copy(h.short[:], s)
}

// cell appends the cell of column k of row i of b.
func (cc *csvCells) cell(line []byte, k int, b *format.Batch, i int) []byte {
	col := &cc.cols[k]
	switch col.fixed {
	case format.ColTime:
		return decimal.AppendInt(line, b.Time[i])
	case format.ColCPU:
		return decimal.AppendUint(line, uint64(b.CPU[i]))
	case format.ColPID:
		return decimal.AppendUint(line, uint64(b.PID[i]))
	case format.ColTID:
		return decimal.AppendUint(line, uint64(b.TID[i]))
	case format.ColComm:
		s := b.Comm(i)
		if s != cc.lastComm || cc.lastCommCell == nil {
			cc.lastComm = strings.Clone(s)
			cc.lastCommCell = cc.text(cc.lastCommCell[:0], s)
			if cc.lastCommCell == nil {
				cc.lastCommCell = []byte{}
			}
		}
		return append(line, cc.lastCommCell...)
	case format.ColProbe:
		if p := int(b.Probe[i]); p < len(cc.probes) {
			line = append(line, cc.probes[p]...)
		}
		return line
	case format.ColLost:
		if n, ok := b.Lost(i); ok {
			line = decimal.AppendUint(line, n)
		}
		return line
	}
	fc := b.Col(col.index)
	if !fc.Valid(i) {
		return line
	}
	switch {
	case col.names != nil:
		return cc.stack(line, k, col, b, i, uint64(fc.Int(i)))
	case fc.Type == format.String:
		s := fc.Str(i)
		if s != cc.lastStr[k] || cc.lastStrCell[k] == nil {
			cc.lastStr[k] = strings.Clone(s)
			cc.lastStrCell[k] = cc.text(cc.lastStrCell[k][:0], s)
			if cc.lastStrCell[k] == nil {
				cc.lastStrCell[k] = []byte{}
			}
		}
		return append(line, cc.lastStrCell[k]...)
	case fc.Type == format.Uint64 || fc.Type.IsStack():
		return decimal.AppendUint(line, uint64(fc.Int(i)))
	default:
		return decimal.AppendInt(line, fc.Int(i))
	}
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
