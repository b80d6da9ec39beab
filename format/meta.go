package format

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/bpftape/bpftape/format/arrowipc"
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

// ExtraRepaired is the Meta.Extra key of a capture `bpftape repair` wrote
// leaving out corrupt batches of its input: its value says how many, and
// the events they held when the input's footer counted them. The events
// are gone, not lost in the kernel: no loss record counts them.
const ExtraRepaired = "repaired"

// ExtraBootID is the Meta.Extra key of the recording machine's boot id
// (/proc/sys/kernel/random/boot_id): Merge tells two machines of one host
// name, or two boots of one, apart by it, so that their threads, whose
// ids say nothing across boots, are never paired.
const ExtraBootID = "boot_id"

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
	// RecorderSwitches is how many sched_switch events the program left
	// out as the recorder's own, each between two threads that were the
	// recorder's or the idle task (a switch between the recorder and
	// another thread is recorded): known, as Filtered, from the footer.
	RecorderSwitches uint64 `json:"recorder_switches,omitempty"`
	// MaxRate is the probe's rate limit in events a second (record
	// --max-rate), 0 for none: the BPF program recorded at most that
	// many, on average, and rejected the others before sending anything,
	// so the probe's events are a subset. RateLimited is how many it
	// rejected, known, as Filtered, from the footer.
	MaxRate     float64 `json:"max_rate,omitempty"`
	RateLimited uint64  `json:"rate_limited,omitempty"`
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
	// Counts tallies the rows of the file, as its Writer wrote them: only
	// the footer's metadata has it (the schema at the file's start, and
	// so a file without footer, has none), so that info and count answer
	// without reading a batch. It is the Writer's: NewWriter drops the
	// Counts of the Meta it is given and its footer carries its own, and
	// a Meta read from a file has none (decodeMeta drops it, also from
	// Inputs), so a Meta copied from one capture into another (an export,
	// a merge's Inputs, a redaction) never carries counts that describe
	// other rows. Reader.Counts reads them, checked. Readers before it
	// ignore the key; a capture without it is read by reading its
	// batches, as before.
	Counts *Counts `json:"counts,omitempty"`
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
	m.dropCounts()
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

// dropCounts drops the counts of m and of its Inputs: they describe the
// rows of the file m was read from (see Meta.Counts).
func (m *Meta) dropCounts() {
	m.Counts = nil
	for i := range m.Inputs {
		m.Inputs[i].dropCounts()
	}
}

// CountsBackwardNs is how far an event may be timed before the latest
// event before it in its file without counting in Counts.Backward: one
// second, the slack of replay's TimeAnomalies, which must be the same for
// info and count to take Backward from the footer.
const CountsBackwardNs = int64(1e9)

// Counts is what the rows of one capture file hold (Meta.Counts): the
// Writer tallies the batches it writes, in the order it writes them, and
// puts the tally into the footer's metadata when it finishes the file
// (Close, Switch). Times are boot-clock ns, as in the time column.
//
// The counts are what the writer wrote: a reader that takes them does not
// read the batches, so a forged footer can lie. Reader.Counts checks that
// they hold together (one entry per probe of the probe table, by name and
// in order; totals that are the sums of their parts; first times not after
// last ones; as many batches as the footer lists; rows that fit their
// uncompressed bytes) and refuses them otherwise, and a reader then reads
// the batches, as it does a file without them.
type Counts struct {
	// Batches counts the file's record batches, those of no rows
	// included (the first, and those carrying parts of a stack table
	// ahead of the batch that needs them); RawBytes is the size of their
	// buffers uncompressed, as a Reader that read them all counts it
	// (Reader.RawBytes); StackParts is how many carry a stack table part.
	Batches    int   `json:"batches"`
	RawBytes   int64 `json:"raw_bytes"`
	StackParts int   `json:"stack_parts,omitempty"`
	// Events counts the event rows, LossRecords the loss records.
	Events      uint64 `json:"events"`
	LossRecords uint64 `json:"loss_records,omitempty"`
	// First and Last are the earliest and latest event times; both 0
	// without events.
	First int64 `json:"first_ns,omitempty"`
	Last  int64 `json:"last_ns,omitempty"`
	// Backward counts the events timed more than CountsBackwardNs before
	// the latest event before them in the file.
	Backward uint64 `json:"backward,omitempty"`
	// LossFirst and LossLast are the earliest and latest times of a loss
	// record; both 0 without loss records.
	LossFirst int64 `json:"loss_first_ns,omitempty"`
	LossLast  int64 `json:"loss_last_ns,omitempty"`
	// Probes has one entry for each probe of Meta.Probes, in its order.
	Probes []ProbeCounts `json:"probes"`
	// CPUs has one entry for each CPU with loss records, by ascending CPU.
	CPUs []CPULosses `json:"cpu_losses,omitempty"`

	cpus map[uint16]int // index in CPUs, while tallying
	bad  bool           // a row of no probe of the table: no counts
}

// ProbeCounts is what the rows of one probe hold (Counts.Probes).
type ProbeCounts struct {
	Name   string `json:"name"`
	Events uint64 `json:"events"`
	// First and Last are the probe's earliest and latest event times,
	// both 0 without events.
	First int64 `json:"first_ns,omitempty"`
	Last  int64 `json:"last_ns,omitempty"`
	// LossRecords counts the probe's loss records, Lost adds up their
	// counts (saturating: AddCount).
	LossRecords uint64 `json:"loss_records,omitempty"`
	Lost        uint64 `json:"lost,omitempty"`
}

// CPULosses is what the loss records of one CPU hold (Counts.CPUs).
type CPULosses struct {
	CPU         uint16 `json:"cpu"`
	LossRecords uint64 `json:"loss_records"`
	Lost        uint64 `json:"lost"`
}

// Lost adds up the counts of every loss record, saturating (AddCount).
func (c *Counts) Lost() uint64 {
	var n uint64
	for i := range c.Probes {
		n = AddCount(n, c.Probes[i].Lost)
	}
	return n
}

// reset starts the tally of a file of the given probes.
func (c *Counts) reset(probes []Probe) {
	*c = Counts{Probes: make([]ProbeCounts, len(probes))}
	for i := range probes {
		c.Probes[i].Name = probes[i].Name
	}
}

// addBatch tallies a batch written to the file: rows rows whose columns
// are cols, as arrowipc.Writer.WriteBatch took them (a column's validity
// is written only when it has nulls; a view column's data buffers follow
// its views), whose values are widths bytes wide (colWidth), carrying a
// stack table part if part is set.
func (c *Counts) addBatch(rows int, cols []arrowipc.ColumnData, widths []int, part bool) {
	c.Batches++
	if part {
		c.StackParts++
	}
	for i := range cols {
		d := &cols[i]
		if d.NullCount > 0 {
			c.RawBytes += int64((rows + 7) / 8)
		}
		c.RawBytes += int64(rows * widths[i])
		if len(d.Buffers) > 2 {
			for _, b := range d.Buffers[2:] {
				c.RawBytes += int64(len(b))
			}
		}
	}
	if rows == 0 {
		return
	}
	le := binary.LittleEndian
	times, cpus, probes := cols[ColTime].Buffers[1], cols[ColCPU].Buffers[1], cols[ColProbe].Buffers[1]
	lost := &cols[ColLost]
	valid := lost.Buffers[0]
	switch lost.NullCount {
	case 0:
		valid = nil // every row is a loss record
	case rows:
		lost = nil // none is
	}
	// The totals in locals, which the stores through p do not alias.
	events, first, last, back := c.Events, c.First, c.Last, c.Backward
	for i := 0; i < rows; i++ {
		t := int64(le.Uint64(times[8*i:]))
		pi := int(le.Uint16(probes[2*i:]))
		if pi >= len(c.Probes) {
			c.bad = true
			continue
		}
		p := &c.Probes[pi]
		if lost != nil && (valid == nil || valid[i>>3]&(1<<(i&7)) != 0) {
			c.addLoss(p, le.Uint16(cpus[2*i:]), t, le.Uint64(lost.Buffers[1][8*i:]))
			continue
		}
		switch {
		case p.Events == 0:
			p.First, p.Last = t, t
		case t < p.First:
			p.First = t
		case t > p.Last:
			p.Last = t
		}
		p.Events++
		switch {
		case events == 0:
			first, last = t, t
		case t > last:
			last = t
		default:
			// last is the latest event before this one.
			if uint64(last)-uint64(t) > uint64(CountsBackwardNs) { // exact, where last-t may wrap
				back++
			}
			first = min(first, t)
		}
		events++
	}
	c.Events, c.First, c.Last, c.Backward = events, first, last, back
}

// addLoss tallies a loss record of n events of probe p on cpu at time t.
func (c *Counts) addLoss(p *ProbeCounts, cpu uint16, t int64, n uint64) {
	if c.LossRecords == 0 {
		c.LossFirst, c.LossLast = t, t
	} else {
		c.LossFirst, c.LossLast = min(c.LossFirst, t), max(c.LossLast, t)
	}
	c.LossRecords++
	p.LossRecords++
	p.Lost = AddCount(p.Lost, n)
	if c.cpus == nil {
		c.cpus = map[uint16]int{}
	}
	k, ok := c.cpus[cpu]
	if !ok {
		k = len(c.CPUs)
		c.cpus[cpu] = k
		c.CPUs = append(c.CPUs, CPULosses{CPU: cpu})
	}
	c.CPUs[k].LossRecords++
	c.CPUs[k].Lost = AddCount(c.CPUs[k].Lost, n)
}

// final returns the tally as the footer carries it (CPUs in order), or nil
// when a row had no probe of the table.
func (c *Counts) final() *Counts {
	if c.bad {
		return nil
	}
	f := &Counts{}
	*f = *c
	f.cpus = nil
	f.Probes = slices.Clone(c.Probes)
	f.CPUs = slices.Clone(c.CPUs)
	slices.SortFunc(f.CPUs, func(a, b CPULosses) int { return int(a.CPU) - int(b.CPU) })
	return f
}

// Counts returns the counts of the file's rows that its footer holds
// (Meta.Counts), checked: nil and no error for a file without them (one
// without footer, which Open recovers, or one written before they were),
// nil and an error saying what does not hold together for counts a reader
// cannot take (a forged or damaged footer). Either way the caller then
// reads the batches. It reads nothing but the footer's metadata, which
// Open has read.
func (r *Reader) Counts() (*Counts, error) {
	if r.Recovered {
		return nil, nil
	}
	md := r.Schema.Metadata()
	i := md.FindKey(MetadataKey)
	if i < 0 {
		return nil, nil
	}
	var v struct {
		Counts *countsJSON `json:"counts"`
	}
	if err := json.Unmarshal([]byte(md.Values()[i]), &v); err != nil {
		return nil, fmt.Errorf("footer counts: %w", err)
	}
	if v.Counts == nil {
		return nil, nil
	}
	c := (*Counts)(v.Counts)
	if err := c.check(r.Meta, r.ipc.NumBatches(), r.widths()); err != nil {
		return nil, fmt.Errorf("footer counts: %w", err)
	}
	return c, nil
}

// countsJSON is Counts decoded as JSON, an error for counts that do not
// decode (Reader.Counts).
type countsJSON Counts

// UnmarshalJSON decodes counts as a Meta holds them: counts that do not
// decode (a string for a number...) decode as empty ones, with no error,
// so that a capture whose footer has them still opens, as it did before
// there were counts, and is read by reading its batches (Reader.Counts
// says what is wrong with them). A Meta read from a file has no counts
// anyway (Meta.Counts).
func (c *Counts) UnmarshalJSON(b []byte) error {
	var v countsJSON
	if json.Unmarshal(b, &v) != nil {
		v = countsJSON{}
	}
	*c = Counts(v)
	return nil
}

// widths returns the width of each column's values (colWidth); the probe
// column's dictionary indices are two bytes wide.
func (r *Reader) widths() []int {
	w := make([]int, len(r.types))
	for i, t := range r.types {
		w[i] = colWidth(t)
	}
	w[ColProbe] = 2
	return w
}

// check reports what in c does not hold together for a file with metadata
// m whose footer lists batches record batches and whose columns' values
// are widths bytes wide.
func (c *Counts) check(m *Meta, batches int, widths []int) error {
	if c.Batches != batches {
		return fmt.Errorf("%d batches where the footer lists %d", c.Batches, batches)
	}
	if c.StackParts < 0 || c.StackParts > c.Batches {
		return fmt.Errorf("%d stack table parts in %d batches", c.StackParts, c.Batches)
	}
	if c.RawBytes < 0 || c.RawBytes/arrowipc.MaxBatchBytes > int64(batches) {
		return fmt.Errorf("%d uncompressed bytes in %d batches", c.RawBytes, batches)
	}
	if len(c.Probes) != len(m.Probes) {
		return fmt.Errorf("%d probes where the probe table has %d", len(c.Probes), len(m.Probes))
	}
	var events, records uint64
	var lost uint64
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range c.Probes {
		p := &c.Probes[i]
		if p.Name != m.Probes[i].Name {
			return fmt.Errorf("probe %d is %q where the probe table has %q", i, p.Name, m.Probes[i].Name)
		}
		if p.Events == 0 && (p.First != 0 || p.Last != 0) || p.First > p.Last {
			return fmt.Errorf("probe %q: %d events from %d to %d", p.Name, p.Events, p.First, p.Last)
		}
		if p.Events > 0 {
			first, last = min(first, p.First), max(last, p.Last)
		}
		if p.LossRecords == 0 && p.Lost != 0 {
			return fmt.Errorf("probe %q: %d lost without a loss record", p.Name, p.Lost)
		}
		var ok1, ok2 bool
		events, ok1 = addChecked(events, p.Events)
		records, ok2 = addChecked(records, p.LossRecords)
		if !ok1 || !ok2 {
			return errors.New("the probes' counts overflow")
		}
		lost = AddCount(lost, p.Lost)
	}
	if events != c.Events || records != c.LossRecords {
		return fmt.Errorf("%d events and %d loss records where the probes have %d and %d", c.Events, c.LossRecords, events, records)
	}
	if c.Events == 0 {
		if c.First != 0 || c.Last != 0 || c.Backward != 0 {
			return fmt.Errorf("no events from %d to %d, %d of them backward", c.First, c.Last, c.Backward)
		}
	} else if c.First != first || c.Last != last || c.Backward >= c.Events {
		return fmt.Errorf("%d events from %d to %d (%d backward) where the probes' are from %d to %d", c.Events, c.First, c.Last, c.Backward, first, last)
	}
	if c.LossRecords == 0 && (c.LossFirst != 0 || c.LossLast != 0) || c.LossFirst > c.LossLast {
		return fmt.Errorf("%d loss records from %d to %d", c.LossRecords, c.LossFirst, c.LossLast)
	}
	var cpuRecords, cpuLost uint64
	for i, l := range c.CPUs {
		if i > 0 && l.CPU <= c.CPUs[i-1].CPU {
			return fmt.Errorf("cpu %d listed after cpu %d", l.CPU, c.CPUs[i-1].CPU)
		}
		if l.LossRecords == 0 {
			return fmt.Errorf("cpu %d listed without loss records", l.CPU)
		}
		var ok bool
		if cpuRecords, ok = addChecked(cpuRecords, l.LossRecords); !ok {
			return errors.New("the CPUs' counts overflow")
		}
		cpuLost = AddCount(cpuLost, l.Lost)
	}
	if cpuRecords != c.LossRecords || cpuLost != lost {
		return fmt.Errorf("%d loss records of %d events by CPU where the probes have %d of %d", cpuRecords, cpuLost, c.LossRecords, lost)
	}
	// Every row takes its values' bytes in every column.
	row := int64(0)
	for _, w := range widths {
		row += int64(w)
	}
	rows, ok := addChecked(c.Events, c.LossRecords)
	if !ok || row > 0 && rows > uint64(c.RawBytes/row) {
		return fmt.Errorf("%d events and %d loss records in %d uncompressed bytes", c.Events, c.LossRecords, c.RawBytes)
	}
	return nil
}

// addChecked adds a and b; ok is false when the sum overflows.
func addChecked(a, b uint64) (uint64, bool) {
	s := a + b
	return s, s >= a
}
