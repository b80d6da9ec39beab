// Package export writes the rows of a capture as CSV, JSON lines or Parquet
// for tools that do not read Arrow IPC, or as a new capture (Arrow), batch
// by batch, so that memory does not grow with the capture; with
// Options.Redact it leaves out what identifies the host and its processes.
//
// CSV, JSON lines and Parquet have no place for the capture's stack table,
// so they write a stack field (ustack, kstack) as its frames, folded as
// `bpftape stacks --build-ids` prints them ("main;top;mid;leaf"; a frame
// that did not resolve as [OBJECT@BUILDID+0xOFFSET], the same on every
// host that ran that build), null for no stack; Options.StackIDs keeps the
// ids. Arrow keeps the ids and the table.
package export

import (
	"fmt"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
)

// Format is an output format.
type Format string

// Output formats.
const (
	CSV     Format = "csv"
	JSONL   Format = "jsonl"
	Parquet Format = "parquet"
	Arrow   Format = "arrow" // a bpftape capture, as record writes it
	// Pprof is a profile of a probe's stacks and Perfetto a trace of
	// timelines, not rows: packages replay/pprof and replay/perfetto write
	// them.
	Pprof    Format = "pprof"
	Perfetto Format = "perfetto"
)

// ParseFormat checks a --to value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case CSV, JSONL, Parquet, Arrow, Pprof, Perfetto:
		return f, nil
	case "json", "ndjson":
		return JSONL, nil
	case "ipc":
		return Arrow, nil
	}
	return "", fmt.Errorf("unknown format %q: use csv, jsonl, parquet, arrow, pprof or perfetto", s)
}

// LostMode says what becomes of loss records, which are rows of the capture
// that count lost events rather than events.
type LostMode string

// Loss record modes. LostDrop is the default: one row per event, so that
// counting rows counts events; the caller warns about the losses it drops
// (replay.Pass.Notes). CSV and JSON lines then have no lost column; Parquet
// keeps it, null on every row, so that one query (WHERE lost IS NULL) runs
// on every Parquet export and on a folder of partitioned exports made with
// different modes.
const (
	LostDrop LostMode = "drop" // events only (Parquet: a lost column, all null)
	LostKeep LostMode = "keep" // events and loss records; lost is empty/null on events
	LostOnly LostMode = "only" // loss records only
)

// ParseLostMode checks a --lost value.
func ParseLostMode(s string) (LostMode, error) {
	switch m := LostMode(s); m {
	case LostDrop, LostKeep, LostOnly:
		return m, nil
	case "":
		return LostDrop, nil
	}
	return "", fmt.Errorf("unknown --lost mode %q: use drop, keep or only", s)
}

// Options select the rows of an export.
type Options struct {
	Format Format
	Lost   LostMode // "" is LostDrop
	// Rows selects the event rows; loss records, which have no process,
	// are selected by its time window only.
	Rows replay.RowFilter
	// Redact leaves out comm, every string field and the metadata that
	// identifies the host or a command (see RedactMeta).
	Redact bool
	// Compression of Arrow and Parquet output: zstd (""), lz4 or none.
	Compression format.Compression
	// CSVFormulas writes CSV text cells that start with =, +, -, @, a tab
	// or a carriage return as they are, instead of prefixing a quote.
	CSVFormulas bool
	// StackIDs writes the stack fields of CSV, JSON lines and Parquet as
	// their uint64 ids, as the capture holds them, rather than as folded
	// frames (an Arrow export always keeps the ids, and the table).
	StackIDs bool

	// selection is a partitioned export's selectionKey, written in each
	// part's metadata.
	selection string
}

// lostMode is o.Lost, LostDrop when unset.
func (o *Options) lostMode() LostMode {
	if o.Lost == "" {
		return LostDrop
	}
	return o.Lost
}

// Result counts what an export wrote.
type Result struct {
	Events      uint64   `json:"events"`
	LossRecords uint64   `json:"loss_records"`
	Files       []string `json:"files,omitempty"` // written by a partitioned export
	// OpenParts is the most part files a partitioned export had open at
	// once (at most MaxOpenParts).
	OpenParts int `json:"open_parts,omitempty"`
	// UnresolvedFrames counts, by reason, the frames of the stacks written
	// as frames that did not resolve (replay.StackCounts.Unresolved).
	UnresolvedFrames map[string]uint64 `json:"unresolved_frames,omitempty"`
}

// column is one output column: a fixed one or a field column of the capture.
type column struct {
	name  string
	fixed int // format.ColTime... for fixed columns, -1 for fields
	index int // schema index of a field column
	typ   format.Type
	// names writes a stack field as its folded frames (nameStacks); nil
	// for other columns, and for stack fields written as ids.
	names *replay.StackNamer
}

// columns lists the capture's columns in schema order, without the lost
// column in CSV and JSON lines unless loss records are kept (Parquet always
// has it), and without comm and the string fields when redacting.
func columns(c *replay.Capture, o *Options) []column {
	lost := o.lostMode()
	if o.Format == Parquet {
		lost = LostKeep // the column, whether or not loss rows fill it
	}
	types := map[string]format.Type{}
	for _, p := range c.Meta().Probes {
		for _, f := range p.Fields {
			types[f.Column] = f.Type
		}
	}
	var cols []column
	for i, f := range c.Schema().Fields() {
		switch {
		case i == format.ColLost && lost == LostDrop:
		case i == format.ColComm && o.Redact:
		case i > format.ColLost && o.Redact && types[f.Name] == format.String:
		case i <= format.ColLost:
			cols = append(cols, column{name: f.Name, fixed: i})
		default:
			cols = append(cols, column{name: f.Name, fixed: -1, index: i, typ: types[f.Name]})
		}
	}
	return cols
}

// nameStacks has the stack columns of cols written as folded frames, unless
// o.StackIDs; it returns their namer (shared by the columns, so that a
// stack is symbolized once), nil when there is none.
func nameStacks(c *replay.Capture, o *Options, cols []column) (*replay.StackNamer, error) {
	if o.StackIDs {
		return nil, nil
	}
	var n *replay.StackNamer
	for k := range cols {
		if cols[k].fixed >= 0 || !cols[k].typ.IsStack() {
			continue
		}
		if n == nil {
			var err error
			if n, err = replay.NewStackNamer(c); err != nil {
				return nil, fmt.Errorf("stacks as frames: %w", err)
			}
			// Rows of many hosts land in one table: a frame that did not
			// resolve names its build, so that only the same code joins.
			n.BuildIDs = true
		}
		cols[k].names = n
	}
	return n, nil
}

// stackNotes puts what n found in res.
func stackNotes(res *Result, n *replay.StackNamer) {
	if n != nil && len(n.Unresolved()) > 0 {
		res.UnresolvedFrames = n.Unresolved()
	}
}

// folded is a named stack column's row i: its frames, ok false for no stack.
func (col *column) folded(b *format.Batch, i int) (string, bool) {
	return col.names.Folded(b.PID[i], b.Time[i], uint64(b.Col(col.index).Int(i)))
}

// walk calls fn for every row the options select, in file order, with
// lost set for loss records, in a pass over c (replay.Capture.Walk).
func walk(c *replay.Capture, o *Options, fn func(b *format.Batch, i int, lost bool) error) (*replay.Pass, error) {
	return c.Walk(&o.Rows, func(b *format.Batch, i int, lost bool) error {
		if lost && o.Lost == LostDrop || !lost && o.Lost == LostOnly {
			return nil
		}
		return fn(b, i, lost)
	})
}
