package format

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
)

// MetadataKey is the schema metadata key holding the capture's Meta as JSON.
const MetadataKey = "bpftape"

// SchemaVersion is the format version this bpftape writes, bumped whenever
// the column layout or Meta changes incompatibly. Version 1 named a field's
// column after the field alone, shared by the probes whose field of that
// name had the same type and renamed "probe.field" on a clash of types;
// version 2 names every field's column "probe.field" (ColumnName). Both
// read, through Field.Column; writing always writes version 2, so `bpftape
// export --format arrow` converts a version 1 capture.
const SchemaVersion = 2

// ErrNewerVersion: the capture was written by a newer bpftape, in a format
// version this one does not know.
var ErrNewerVersion = errors.New("capture written by a newer bpftape")

// ExtraRedacted is the Meta.Extra key of a capture written by `bpftape
// export --redact`: its value says what was removed.
const ExtraRedacted = "redacted"

// Type is the type of one recorded field; integers keep the width and
// signedness the kernel gave them so that histograms of a 32-bit return value
// see the same bits BCC would.
type Type uint8

// Field types.
const (
	TypeInvalid Type = iota
	Int8
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	String
	// UserStack and KernelStack hold a stack id (StackID) in a uint64
	// column: the frames are in the capture's stack table (StackTable),
	// 0 is a sample without a stack.
	UserStack
	KernelStack
)

var typeNames = [...]string{"invalid", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "string", "ustack", "kstack"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// MarshalText writes the type's name, so that the JSON metadata reads "uint64".
func (t Type) MarshalText() ([]byte, error) {
	if t == TypeInvalid || int(t) >= len(typeNames) {
		return nil, fmt.Errorf("invalid field type %d", uint8(t))
	}
	return []byte(typeNames[t]), nil
}

// UnmarshalText parses a type name written by MarshalText.
func (t *Type) UnmarshalText(b []byte) error {
	for i, n := range typeNames {
		if i > 0 && n == string(b) {
			*t = Type(i)
			return nil
		}
	}
	return fmt.Errorf("unknown field type %q", b)
}

// IntType returns the integer type of the given size in bytes and signedness.
func IntType(size int, signed bool) (Type, error) {
	var t Type
	switch size {
	case 1:
		t = Uint8
	case 2:
		t = Uint16
	case 4:
		t = Uint32
	case 8:
		t = Uint64
	default:
		return TypeInvalid, fmt.Errorf("integer size %d is not 1, 2, 4 or 8", size)
	}
	if signed {
		t -= Uint8 - Int8
	}
	return t, nil
}

// Signed reports whether t is a signed integer type.
func (t Type) Signed() bool { return t >= Int8 && t <= Int64 }

// IsInt reports whether t is an integer type.
func (t Type) IsInt() bool { return t >= Int8 && t <= Uint64 }

// IsStack reports whether t is a stack type: a column of stack ids.
func (t Type) IsStack() bool { return t == UserStack || t == KernelStack }

// Size is the width of an integer type in bytes, 0 for strings.
func (t Type) Size() int {
	switch t {
	case Int8, Uint8:
		return 1
	case Int16, Uint16:
		return 2
	case Int32, Uint32:
		return 4
	case Int64, Uint64, UserStack, KernelStack:
		return 8
	}
	return 0
}

func (t Type) arrow() arrow.DataType {
	switch t {
	case Int8:
		return arrow.PrimitiveTypes.Int8
	case Int16:
		return arrow.PrimitiveTypes.Int16
	case Int32:
		return arrow.PrimitiveTypes.Int32
	case Int64:
		return arrow.PrimitiveTypes.Int64
	case Uint8:
		return arrow.PrimitiveTypes.Uint8
	case Uint16:
		return arrow.PrimitiveTypes.Uint16
	case Uint32:
		return arrow.PrimitiveTypes.Uint32
	case Uint64, UserStack, KernelStack:
		return arrow.PrimitiveTypes.Uint64
	case String:
		return arrow.BinaryTypes.StringView
	}
	return nil
}

// Field is one recorded value of a probe: an argument, a return value or a
// tracepoint field. Column names the Arrow column that holds it.
//
// Pointer marks an integer field whose value is an address: the recorder
// sets it for a value whose type in the function's debug info (DWARF or
// BTF) is a pointer, such as the struct pointer parameter of a probe
// recorded without a field list, and no :TYPE was given to the field. The
// column is an integer like any other
// (a uint64), so that every reader reads it; bpftape prints it in hex and
// draws no histogram or heat map of it unless asked. Captures written
// before the flag existed, and fields without debug info, have it unset.
type Field struct {
	Name    string `json:"name"`
	Type    Type   `json:"type"`
	Column  string `json:"column"`
	Pointer bool   `json:"pointer,omitempty"`
}

// Probe describes one probe of a capture; its index in Meta.Probes is the
// probe's id and its Name is the value of the probe column.
type Probe struct {
	Name    string  `json:"name"`
	Kind    string  `json:"kind"`             // uprobe, uretprobe, usdt, tracepoint, ...
	Spec    string  `json:"spec"`             // as the user typed it
	Target  string  `json:"target,omitempty"` // binary or library path
	BuildID string  `json:"build_id,omitempty"`
	Fields  []Field `json:"fields"`
	// Filter is the filter the BPF program ran before recording an event
	// of this probe ("size >= 8192", with --pid and --comm), "" for none:
	// the probe's events are then a subset.
	Filter string `json:"filter,omitempty"`
	// Filtered is how many events the filter rejected, known when the
	// capture window closed: the footer's metadata has it, the schema's
	// (and a killed recorder's file) has not.
	Filtered uint64 `json:"filtered,omitempty"`
}

// Field returns the index of the field called name, or -1.
func (p *Probe) Field(name string) int {
	for i := range p.Fields {
		if p.Fields[i].Name == name {
			return i
		}
	}
	return -1
}

// Meta is everything a capture says about itself, stored as JSON in the
// schema metadata so that it is known before the first event is read.
type Meta struct {
	SchemaVersion int      `json:"schema_version"`
	Tool          string   `json:"tool"`
	Host          string   `json:"host"`
	Kernel        string   `json:"kernel"`
	CommandLine   []string `json:"command_line"`
	// StartWall and StartBoot were read together when the capture started:
	// an event's wall-clock time is StartWall + (time - StartBoot).
	StartWall   time.Time `json:"start_wall"`
	StartBoot   int64     `json:"start_boot_ns"`
	Compression string    `json:"compression"`
	// Window is when every probe was recording; nil in captures not
	// written by a recorder.
	Window *Window `json:"window,omitempty"`
	Probes []Probe `json:"probes"`
	// Extra holds free-form facts (the traced command, the ring buffer size...).
	Extra map[string]string `json:"extra,omitempty"`
	// Inputs are the metas of the captures a merged capture was made from (see Merge).
	Inputs []Meta `json:"inputs,omitempty"`
}

// Window is the interval in which every probe of a capture was recording
// (boot-clock ns): events are recorded only after the last probe was
// attached and not after the first was detached, so counts and pairs of
// probes compare. End is 0 when unknown: the footer carries it, and a file
// whose recorder was killed has no footer (nor does a part of a rotated
// capture but the last: each ends where the next starts).
type Window struct {
	Start int64 `json:"start_ns"`
	End   int64 `json:"end_ns,omitempty"`
}

// AddCount adds two event counts, saturating at the largest uint64: the
// loss counts of a forged capture must not wrap around to a small total
// (2^64-1 + 2^64-1 + 2 would be 0).
func AddCount(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

// WallTime converts an event's boot-clock time to wall-clock time.
func (m *Meta) WallTime(bootNs int64) time.Time {
	return m.StartWall.Add(time.Duration(bootNs - m.StartBoot))
}

// Probe returns the probe called name, or nil.
func (m *Meta) Probe(name string) (int, *Probe) {
	for i := range m.Probes {
		if m.Probes[i].Name == name {
			return i, &m.Probes[i]
		}
	}
	return -1, nil
}

// ProbeNames lists the probes' names, for error messages that suggest them.
func (m *Meta) ProbeNames() []string {
	names := make([]string, len(m.Probes))
	for i := range m.Probes {
		names[i] = m.Probes[i].Name
	}
	return names
}

// fixed column names and positions, shared by every capture.
const (
	ColTime = iota
	ColCPU
	ColPID
	ColTID
	ColComm
	ColProbe
	ColLost
	numFixed
)

var fixedNames = [numFixed]string{"time", "cpu", "pid", "tid", "comm", "probe", "lost"}

// MaxProbes bounds the probe table; ids are stored as uint16 dictionary indices.
const MaxProbes = 1 << 16

// ColumnName is the column of field of probe in a capture of format
// version 2: "probe.field". It depends on nothing but the probe and the
// field, so a query on a probe's field reads the same whichever probes
// share the capture. Probe names (k:foo.isra.0) and field names
// (req->hdr.size) may both hold dots: the writer refuses a capture in
// which two fields would get the same column.
func ColumnName(probe, field string) string { return probe + "." + field }

// assignColumns validates the probe table and fills in each field's column
// (ColumnName). It returns the field columns in probe order.
func (m *Meta) assignColumns() ([]Field, error) {
	if len(m.Probes) == 0 {
		return nil, fmt.Errorf("capture has no probes")
	}
	if len(m.Probes) > MaxProbes {
		return nil, fmt.Errorf("%d probes: at most %d", len(m.Probes), MaxProbes)
	}
	var cols []Field
	seenProbe := map[string]bool{}
	seenCol := map[string]string{}
	for pi := range m.Probes {
		p := &m.Probes[pi]
		if p.Name == "" {
			return nil, fmt.Errorf("probe %d (%s) has no name", pi, p.Spec)
		}
		if seenProbe[p.Name] {
			return nil, fmt.Errorf("two probes are named %q: name them NAME=SPEC", p.Name)
		}
		seenProbe[p.Name] = true
		seenField := map[string]bool{}
		for fi := range p.Fields {
			f := &p.Fields[fi]
			if f.Name == "" || seenField[f.Name] {
				return nil, fmt.Errorf("probe %s: field %d has an empty or repeated name %q", p.Name, fi, f.Name)
			}
			seenField[f.Name] = true
			col := ColumnName(p.Name, f.Name)
			if prev, ok := seenCol[col]; ok {
				return nil, fmt.Errorf("probe %s: field %s and %s would share the column %q: rename a probe with NAME=", p.Name, f.Name, prev, col)
			}
			seenCol[col] = p.Name + " field " + f.Name
			if f.Type.arrow() == nil {
				return nil, fmt.Errorf("probe %s: field %s has invalid type %v", p.Name, f.Name, f.Type)
			}
			f.Column = ColumnName(p.Name, f.Name)
			cols = append(cols, Field{Name: f.Column, Type: f.Type, Column: f.Column})
		}
	}
	return cols, nil
}

func (m *Meta) encode() (string, error) {
	b, err := json.Marshal(m)
	return string(b), err
}

func decodeMeta(s string) (*Meta, error) {
	m := new(Meta)
	if err := json.Unmarshal([]byte(s), m); err != nil {
		return nil, fmt.Errorf("bpftape metadata: %w", err)
	}
	switch {
	case m.SchemaVersion > SchemaVersion:
		return nil, fmt.Errorf("%w: format version %d (written by %s); this bpftape reads versions 1 to %d: use a newer bpftape",
			ErrNewerVersion, m.SchemaVersion, m.Tool, SchemaVersion)
	case m.SchemaVersion < 1:
		return nil, fmt.Errorf("bpftape metadata: format version %d", m.SchemaVersion)
	case m.SchemaVersion >= 2:
		// Version 2 names every field's column after its probe; a file
		// that says otherwise would answer a query with another
		// probe's values.
		for _, p := range m.Probes {
			for _, f := range p.Fields {
				if f.Column != ColumnName(p.Name, f.Name) {
					return nil, fmt.Errorf("bpftape metadata: probe %s field %s is in column %q, not %q",
						p.Name, f.Name, f.Column, ColumnName(p.Name, f.Name))
				}
			}
		}
	}
	return m, nil
}
