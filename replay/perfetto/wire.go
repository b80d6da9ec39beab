package perfetto

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/bpftape/bpftape/replay/perfetto/internal/perfettopb"
)

// trackEvent is a TrackEvent packet as the exporter hands it to writeEvent: a
// packet per event of the capture, written by appendEvent with protowire
// rather than built as the library's messages and marshalled. Building
// them (a dozen allocations an event: the packet, the event, each
// argument and their oneof wrappers) and the library's reflective
// marshalling (sizing each nested message, a map lookup for each oneof's
// coder) took two thirds of an export's CPU: exporting the 10M events of
// bench's recorded capture took 14.9 s of CPU with the library, 9.9 s
// with its messages marshalled here, 3.2 s with none built (in process,
// one run each; bench/README.md, "Perfetto export"). appendEvent writes the fields in the library's order (fields
// outside oneofs by number, then each oneof's, in the order the oneofs
// are declared), so the bytes are the library's for the same packet
// (trackEvent.packet; TestWireBytes compares whole traces written both ways).
type trackEvent struct {
	typ    pb.TrackEvent_Type
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

// appendEvent appends the TracePacket of ev at time ts on sequence seq,
// with flags, the interned data's bytes (nil for none), and the iids of
// its name (if named), its arguments' names and its callstack (0: none).
func appendEvent(b []byte, ts uint64, seq, flags uint32, interned []byte, ev *trackEvent, nameIid uint64, argIids []uint64, stackIid uint64, scratch *[]byte) []byte {
	b = protowire.AppendTag(b, 8, protowire.VarintType)
	b = protowire.AppendVarint(b, ts)
	b = protowire.AppendTag(b, 10, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(seq))
	if interned != nil {
		b = protowire.AppendTag(b, 12, protowire.BytesType)
		b = protowire.AppendBytes(b, interned)
	}
	if flags != 0 {
		b = protowire.AppendTag(b, 13, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(flags))
	}
	b = protowire.AppendTag(b, 58, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(boottime))
	// The TrackEvent, in the packet's data oneof.
	e := (*scratch)[:0]
	for k, a := range ev.args {
		e = protowire.AppendTag(e, 4, protowire.BytesType)
		e = protowire.AppendVarint(e, uint64(sizeArg(a, argIids[k])))
		e = appendArg(e, a, argIids[k])
	}
	e = protowire.AppendTag(e, 9, protowire.VarintType)
	e = protowire.AppendVarint(e, uint64(ev.typ))
	e = protowire.AppendTag(e, 11, protowire.VarintType)
	e = protowire.AppendVarint(e, ev.track)
	if ev.named {
		e = protowire.AppendTag(e, 10, protowire.VarintType)
		e = protowire.AppendVarint(e, nameIid)
	}
	if ev.typ == pb.TrackEvent_TYPE_COUNTER {
		if ev.isDouble {
			e = protowire.AppendTag(e, 44, protowire.Fixed64Type)
			e = protowire.AppendFixed64(e, math.Float64bits(ev.double))
		} else {
			e = protowire.AppendTag(e, 30, protowire.VarintType)
			e = protowire.AppendVarint(e, uint64(ev.counter))
		}
	}
	if stackIid != 0 {
		e = protowire.AppendTag(e, 56, protowire.VarintType)
		e = protowire.AppendVarint(e, stackIid)
	}
	*scratch = e
	b = protowire.AppendTag(b, 11, protowire.BytesType)
	return protowire.AppendBytes(b, e)
}

// A DebugAnnotation's fields here are all in oneofs: name_field (name_iid
// 1), then value, whose field is argValueField's.
var argValueField = [...]protowire.Number{argInt: 4, argUint: 3, argString: 6, argPointer: 7}

func appendArg(b []byte, a arg, iid uint64) []byte {
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, iid)
	if a.kind == argString {
		b = protowire.AppendTag(b, argValueField[a.kind], protowire.BytesType)
		return protowire.AppendString(b, a.s)
	}
	b = protowire.AppendTag(b, argValueField[a.kind], protowire.VarintType)
	return protowire.AppendVarint(b, a.n)
}

func sizeArg(a arg, iid uint64) int {
	n := 1 + protowire.SizeVarint(iid)
	if a.kind == argString {
		return n + 1 + protowire.SizeBytes(len(a.s))
	}
	return n + 1 + protowire.SizeVarint(a.n)
}

// packet returns ev as the library's TracePacket that appendEvent writes
// the bytes of (for marshalAll).
func (ev *trackEvent) packet(ts uint64, seq, flags uint32, d *pb.InternedData, nameIid uint64, argIids []uint64, stackIid uint64) *pb.TracePacket {
	te := &pb.TrackEvent{Type: ev.typ.Enum(), TrackUuid: proto.Uint64(ev.track)}
	if ev.named {
		te.NameField = &pb.TrackEvent_NameIid{NameIid: nameIid}
	}
	for k, a := range ev.args {
		da := &pb.DebugAnnotation{NameField: &pb.DebugAnnotation_NameIid{NameIid: argIids[k]}}
		switch a.kind {
		case argInt:
			da.Value = &pb.DebugAnnotation_IntValue{IntValue: int64(a.n)}
		case argUint:
			da.Value = &pb.DebugAnnotation_UintValue{UintValue: a.n}
		case argString:
			da.Value = &pb.DebugAnnotation_StringValue{StringValue: a.s}
		case argPointer:
			da.Value = &pb.DebugAnnotation_PointerValue{PointerValue: a.n}
		}
		te.DebugAnnotations = append(te.DebugAnnotations, da)
	}
	if ev.typ == pb.TrackEvent_TYPE_COUNTER {
		if ev.isDouble {
			te.CounterValueField = &pb.TrackEvent_DoubleCounterValue{DoubleCounterValue: ev.double}
		} else {
			te.CounterValueField = &pb.TrackEvent_CounterValue{CounterValue: ev.counter}
		}
	}
	if stackIid != 0 {
		te.CallstackField = &pb.TrackEvent_CallstackIid{CallstackIid: stackIid}
	}
	pkt := &pb.TracePacket{Timestamp: &ts, TimestampClockId: &boottime, TrustedPacketSequenceId: &seq,
		InternedData: d, Data: &pb.TracePacket_TrackEvent{TrackEvent: te}}
	if flags != 0 {
		pkt.SequenceFlags = &flags
	}
	return pkt
}
