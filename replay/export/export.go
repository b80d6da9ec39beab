// Package export writes the rows of a capture as CSV, JSON lines or Parquet
// for tools that do not read Arrow IPC, or as a new capture (Arrow), batch
// by batch, so that memory does not grow with the capture; with
// Options.Redact it leaves out what identifies the host and its processes.
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
)

// ParseFormat checks a --to value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case CSV, JSONL, Parquet, Arrow:
		return f, nil
	case "json", "ndjson":
		return JSONL, nil
	case "ipc":
		return Arrow, nil
	}
	return "", fmt.Errorf("unknown format %q: use csv, jsonl, parquet or arrow", s)
}

// LostMode says what becomes of loss records, which are rows of the capture
// that count lost events rather than events.
type LostMode string

// Loss record modes. LostDrop is the default: one row per event, no lost
// column, so that counting rows counts events; the caller warns about the
// losses it drops (replay.Pass.Notes).
const (
	LostDrop LostMode = "drop" // events only, no lost column
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
	// Filter selects events; loss records, which have no process, are
	// selected by its time window only.
	Filter replay.Filter
	// Redact leaves out comm, every string field and the metadata that
	// identifies the host or a command (see RedactMeta).
	Redact bool
	// Compression of Arrow and Parquet output: zstd (""), lz4 or none.
	Compression format.Compression
	// CSVFormulas writes CSV text cells that start with =, +, -, @, a tab
	// or a carriage return as they are, instead of prefixing a quote.
	CSVFormulas bool
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
}

// column is one output column: a fixed one or a field column of the capture.
type column struct {
	name  string
	fixed int // format.ColTime... for fixed columns, -1 for fields
	index int // schema index of a field column
	typ   format.Type
}

// columns lists the capture's columns in schema order, without the lost
// column unless loss records are kept, and without comm and the string
// fields when redacting.
func columns(c *replay.Capture, o *Options) []column {
	lost := o.lostMode()
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

// walk calls fn for every row the options select, in file order, with
// lost set for loss records, in a pass over c (replay.Capture.Walk).
func walk(c *replay.Capture, o *Options, fn func(b *format.Batch, i int, lost bool) error) (*replay.Pass, error) {
	return c.Walk(&o.Filter, func(b *format.Batch, i int, lost bool) error {
		if lost && o.Lost == LostDrop || !lost && o.Lost == LostOnly {
			return nil
		}
		return fn(b, i, lost)
	})
}
