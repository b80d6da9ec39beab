package export

import (
	"bufio"
	"encoding/csv"
	"io"
	"strconv"
	"strings"
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
	cw := csv.NewWriter(w)
	rec := make([]string, len(cols))
	for i, col := range cols {
		rec[i] = csvText(col.name, &o)
	}
	if err := cw.Write(rec); err != nil {
		return nil, nil, err
	}
	res := &Result{}
	probes := c.Meta().ProbeNames()
	pass, err := walk(c, &o, func(b *format.Batch, i int, lost bool) error {
		for k, col := range cols {
			rec[k] = textValue(b, i, &col, probes)
			if col.text() {
				rec[k] = csvText(rec[k], &o)
			}
		}
		count(res, lost)
		return cw.Write(rec)
	})
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	stackNotes(res, names)
	return res, pass, err
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
	s = textsafe.Visible(strings.ToValidUTF8(s, "\uFFFD"))
	if !o.CSVFormulas && s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0 {
		return "'" + s
	}
	return s
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
			line = appendJSONString(line, col.name)
			line = append(line, ':')
			switch {
			case col.fixed == format.ColComm:
				line = appendJSONString(line, b.Comm(i))
			case col.fixed == format.ColProbe:
				line = appendJSONString(line, probes[b.Probe[i]])
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
					line = appendJSONString(line, s)
				} else {
					line = append(line, "null"...)
				}
			case fc.Type == format.String:
				line = appendJSONString(line, fc.Str(i))
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

// appendJSONString appends s as a JSON string: bytes that are not UTF-8
// as U+FFFD, and invisible format characters (U+202E RIGHT-TO-LEFT
// OVERRIDE, zero-width spaces, the line and paragraph separators, ...:
// textsafe.Invisible) as escapes, so that the string is the same but the
// line holds none of them raw.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, `\ufffd`...)
		case textsafe.Invisible(r):
			b = textsafe.AppendJSON(b, r)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
