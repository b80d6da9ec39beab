package perfetto

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Values of Perfetto's enums that a trace holds (perfetto.protos;
// TestWireConstants checks them against the generated code).
const (
	clockRealtime = 1 // BuiltinClock BUILTIN_CLOCK_REALTIME
	clockBoottime = 6 // BuiltinClock BUILTIN_CLOCK_BOOTTIME

	seqIncrementalStateCleared = 1 // TracePacket.SequenceFlags
	seqNeedsIncrementalState   = 2
)

// eventType is a TrackEvent's type (TrackEvent.Type).
type eventType uint8

const (
	typeSliceBegin eventType = 1
	typeSliceEnd   eventType = 2
	typeInstant    eventType = 3
	typeCounter    eventType = 4
)

// TracePacket's fields that a trace holds.
const (
	packetClockSnapshot   = 6
	packetTimestamp       = 8
	packetSequenceID      = 10 // trusted_packet_sequence_id
	packetTrackEvent      = 11
	packetInternedData    = 12
	packetSequenceFlags   = 13
	packetClockID         = 58 // timestamp_clock_id
	packetTrackDescriptor = 60
)

// trackEvent is a TrackEvent packet as the exporter hands it to
// writeEvent: a packet per event of the capture, written by appendEvent
// with protowire rather than built as the library's messages and
// marshalled. Building them (a dozen allocations an event: the packet,
// the event, each argument and their oneof wrappers) and the library's
// reflective marshalling (sizing each nested message, a map lookup for
// each oneof's coder) took two thirds of an export's CPU: exporting the
// 10M events of bench's recorded capture took 14.9 s of CPU with the
// library, 9.9 s with its messages marshalled here, 3.2 s with none built
// (in process, one run each; bench/README.md, "Perfetto export").
// appendEvent writes the fields in the library's order (fields outside
// oneofs by number, then each oneof's, in the order the oneofs are
// declared), so the bytes are the library's for the same packet
// (TestWireBytes, and checkLibraryBytes on every trace a test reads).
type trackEvent struct {
	typ    eventType
	track  uint64
	named  bool // name is the event's name (slice ends have none)
	name   string
	args   []arg
	stack  stackLines // the callstack's folded lines, its key
	frames []string   // the callstack's frames, root first
	// A counter's value: an int64, or a uint64 past its range as a double.
	counter  int64
	isDouble bool
	double   float64
}

// stackLines are the folded user and kernel stacks of an event, each
// where it has one.
type stackLines struct {
	user, kernel       string
	hasUser, hasKernel bool
}

// arg is a debug annotation: a name and a value of one of its kinds.
type arg struct {
	name string
	kind argKind
	n    uint64 // int (as its bits), uint and pointer values
	s    string
}

type argKind uint8

const (
	argInt argKind = iota
	argUint
	argString
	argPointer
)

func strArg(name, v string) arg { return arg{name: validUTF8(name), kind: argString, s: validUTF8(v)} }
func intArg(name string, v int64) arg {
	return arg{name: validUTF8(name), kind: argInt, n: uint64(v)}
}
func uintArg(name string, v uint64) arg { return arg{name: validUTF8(name), kind: argUint, n: v} }

// appendPacketHead appends the fields of a TracePacket at time ts on
// sequence seq that come before its data, in the library's order (by
// number): its time, sequence, interned data (nil: none), flags (0: none)
// and clock.
func appendPacketHead(b []byte, ts uint64, seq, flags uint32, interned []byte) []byte {
	b = appendTag(b, packetTimestamp, protowire.VarintType)
	b = appendVarint(b, ts)
	b = appendTag(b, packetSequenceID, protowire.VarintType)
	b = appendVarint(b, uint64(seq))
	if interned != nil {
		b = appendTag(b, packetInternedData, protowire.BytesType)
		b = protowire.AppendBytes(b, interned)
	}
	if flags != 0 {
		b = appendTag(b, packetSequenceFlags, protowire.VarintType)
		b = appendVarint(b, uint64(flags))
	}
	b = appendTag(b, packetClockID, protowire.VarintType)
	return appendVarint(b, clockBoottime)
}

// appendEvent appends the TracePacket of ev at time ts on sequence seq,
// with flags, the interned data's bytes (nil for none), and the iids of
// its name (if named), its arguments' names and its callstack (0: none).
func appendEvent(b []byte, ts uint64, seq, flags uint32, interned []byte, ev *trackEvent, nameIid uint64, argIids []uint64, stackIid uint64, scratch *[]byte) []byte {
	b = appendPacketHead(b, ts, seq, flags, interned)
	// The TrackEvent, in the packet's data oneof.
	e := (*scratch)[:0]
	for k, a := range ev.args {
		e = appendTag(e, 4, protowire.BytesType)
		e = appendVarint(e, uint64(sizeArg(a, argIids[k])))
		e = appendArg(e, a, argIids[k])
	}
	e = appendTag(e, 9, protowire.VarintType)
	e = appendVarint(e, uint64(ev.typ))
	e = appendTag(e, 11, protowire.VarintType)
	e = appendVarint(e, ev.track)
	if ev.named {
		e = appendTag(e, 10, protowire.VarintType)
		e = appendVarint(e, nameIid)
	}
	if ev.typ == typeCounter {
		if ev.isDouble {
			e = appendTag(e, 44, protowire.Fixed64Type)
			e = protowire.AppendFixed64(e, math.Float64bits(ev.double))
		} else {
			e = appendTag(e, 30, protowire.VarintType)
			e = appendVarint(e, uint64(ev.counter))
		}
	}
	if stackIid != 0 {
		e = appendTag(e, 56, protowire.VarintType)
		e = appendVarint(e, stackIid)
	}
	*scratch = e
	b = appendTag(b, packetTrackEvent, protowire.BytesType)
	return protowire.AppendBytes(b, e)
}

// A DebugAnnotation's fields here are all in oneofs: name_field (name_iid
// 1), then value, whose field is argValueField's.
var argValueField = [...]protowire.Number{argInt: 4, argUint: 3, argString: 6, argPointer: 7}

func appendArg(b []byte, a arg, iid uint64) []byte {
	b = appendTag(b, 1, protowire.VarintType)
	b = appendVarint(b, iid)
	if a.kind == argString {
		b = appendTag(b, argValueField[a.kind], protowire.BytesType)
		return protowire.AppendString(b, a.s)
	}
	b = appendTag(b, argValueField[a.kind], protowire.VarintType)
	return appendVarint(b, a.n)
}

func sizeArg(a arg, iid uint64) int {
	n := 1 + protowire.SizeVarint(iid)
	if a.kind == argString {
		return n + 1 + protowire.SizeBytes(len(a.s))
	}
	return n + 1 + protowire.SizeVarint(a.n)
}

// trackDescriptor is the fields of a TrackDescriptor that the exporter
// sets.
type trackDescriptor struct {
	uuid      uint64
	parent    uint64 // parent_uuid, if hasParent
	hasParent bool
	name      string // the name of static_or_dynamic_name, if named
	named     bool
	process   *processDescriptor
	thread    *threadDescriptor
	counter   bool // an empty CounterDescriptor: a counter track
}

// processDescriptor is a ProcessDescriptor: its pid, and its
// process_name unless that is "".
type processDescriptor struct {
	pid  int32
	name string
}

// threadDescriptor is a ThreadDescriptor: pid, tid, and thread_name
// unless that is "".
type threadDescriptor struct {
	pid  int32
	tid  int64
	name string
}

// appendTrackDescriptor appends d's fields in the library's order: those
// outside oneofs by number (uuid 1, process 3, thread 4, parent_uuid 5,
// counter 8), then the name's oneof (name 2).
func appendTrackDescriptor(b []byte, d *trackDescriptor) []byte {
	b = appendTag(b, 1, protowire.VarintType)
	b = appendVarint(b, d.uuid)
	if p := d.process; p != nil {
		var m []byte
		m = appendInt32(m, 1, p.pid)
		if p.name != "" {
			m = appendString(m, 6, p.name)
		}
		b = appendMessage(b, 3, m)
	}
	if t := d.thread; t != nil {
		var m []byte
		m = appendInt32(m, 1, t.pid)
		m = appendTag(m, 2, protowire.VarintType)
		m = appendVarint(m, uint64(t.tid))
		if t.name != "" {
			m = appendString(m, 5, t.name)
		}
		b = appendMessage(b, 4, m)
	}
	if d.hasParent {
		b = appendTag(b, 5, protowire.VarintType)
		b = appendVarint(b, d.parent)
	}
	if d.counter {
		b = appendMessage(b, 8, nil)
	}
	if d.named {
		b = appendString(b, 2, d.name)
	}
	return b
}

// appendClockSnapshot appends a ClockSnapshot that maps boot-clock time
// boot to wall-clock time wall, boot time the trace's clock.
func appendClockSnapshot(b []byte, boot, wall uint64) []byte {
	for _, c := range [...]struct {
		id uint64
		ts uint64
	}{{clockBoottime, boot}, {clockRealtime, wall}} {
		var m []byte
		m = appendTag(m, 1, protowire.VarintType) // clock_id
		m = appendVarint(m, c.id)
		m = appendTag(m, 2, protowire.VarintType) // timestamp
		m = appendVarint(m, c.ts)
		b = appendMessage(b, 1, m) // clocks
	}
	b = appendTag(b, 2, protowire.VarintType) // primary_trace_clock
	return appendVarint(b, clockBoottime)
}

// internedData is an InternedData being built: each repeated field's
// entries, in the order added, as bytes.
type internedData struct {
	eventNames, argNames, funcNames, frames, callstacks []byte
}

func (d *internedData) reset() {
	d.eventNames, d.argNames = d.eventNames[:0], d.argNames[:0]
	d.funcNames, d.frames, d.callstacks = d.funcNames[:0], d.frames[:0], d.callstacks[:0]
}

func (d *internedData) empty() bool {
	return len(d.eventNames)+len(d.argNames)+len(d.funcNames)+len(d.frames)+len(d.callstacks) == 0
}

// appendTo appends d's fields by number, as the library orders them:
// event_names 2, debug_annotation_names 3, function_names 5, frames 6,
// callstacks 7.
func (d *internedData) appendTo(b []byte) []byte {
	b = append(b, d.eventNames...)
	b = append(b, d.argNames...)
	b = append(b, d.funcNames...)
	b = append(b, d.frames...)
	return append(b, d.callstacks...)
}

// addName appends to *field (field number n) an entry of an iid (1) and
// a name (2): an EventName, a DebugAnnotationName or an InternedString.
func addName(field *[]byte, n protowire.Number, iid uint64, name string) {
	size := 1 + protowire.SizeVarint(iid) + 1 + protowire.SizeBytes(len(name))
	b := appendTag(*field, n, protowire.BytesType)
	b = appendVarint(b, uint64(size))
	b = appendTag(b, 1, protowire.VarintType)
	b = appendVarint(b, iid)
	*field = appendString(b, 2, name)
}

// addFrame appends a Frame whose function name is the interned string of
// the same iid.
func (d *internedData) addFrame(iid uint64) {
	size := 2 * (1 + protowire.SizeVarint(iid))
	b := appendTag(d.frames, 6, protowire.BytesType)
	b = appendVarint(b, uint64(size))
	b = appendTag(b, 1, protowire.VarintType)
	b = appendVarint(b, iid)
	b = appendTag(b, 2, protowire.VarintType) // function_name_id
	d.frames = appendVarint(b, iid)
}

// addCallstack appends a Callstack of frame iids, root first (frame_ids,
// a proto2 repeated field: not packed).
func (d *internedData) addCallstack(iid uint64, frames []uint64) {
	size := 1 + protowire.SizeVarint(iid)
	for _, f := range frames {
		size += 1 + protowire.SizeVarint(f)
	}
	b := appendTag(d.callstacks, 7, protowire.BytesType)
	b = appendVarint(b, uint64(size))
	b = appendTag(b, 1, protowire.VarintType)
	b = appendVarint(b, iid)
	for _, f := range frames {
		b = appendTag(b, 2, protowire.VarintType)
		b = appendVarint(b, f)
	}
	d.callstacks = b
}

func appendMessage(b []byte, n protowire.Number, m []byte) []byte {
	b = appendTag(b, n, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

func appendString(b []byte, n protowire.Number, s string) []byte {
	b = appendTag(b, n, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendInt32 appends an int32 field: a negative value takes ten bytes,
// sign-extended as protobuf has it.
func appendInt32(b []byte, n protowire.Number, v int32) []byte {
	b = appendTag(b, n, protowire.VarintType)
	return appendVarint(b, uint64(int64(v)))
}

// appendVarint is protowire.AppendVarint with a value under 128 (most of
// a trace's varints: small ids and lengths, event types) appended in
// line: protowire's is a call and a switch on the size, 18% of the CPU of
// an export of a recorded capture with stacks (pprof at GOMAXPROCS=1).
// With appendTag: 2.66-3.87 s to 2.42-2.92 s of CPU for that export, 8
// rounds alternating, the same bytes.
func appendVarint(b []byte, v uint64) []byte {
	if v < 1<<7 {
		return append(b, byte(v))
	}
	return protowire.AppendVarint(b, v)
}

// appendTag is protowire.AppendTag with a field number under 16 (a
// one-byte tag) appended without protowire's switch on the size.
func appendTag(b []byte, num protowire.Number, typ protowire.Type) []byte {
	if num < 16 {
		return append(b, byte(num)<<3|byte(typ&7))
	}
	return protowire.AppendTag(b, num, typ)
}
