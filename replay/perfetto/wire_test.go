package perfetto

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/bpftape/bpftape/replay/perfetto/internal/perfettopb"
)

// TestWireConstants checks the enum values and field numbers the writer
// uses against the code generated from Perfetto's protos.
func TestWireConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"BUILTIN_CLOCK_REALTIME", clockRealtime, int64(pb.BuiltinClock_BUILTIN_CLOCK_REALTIME)},
		{"BUILTIN_CLOCK_BOOTTIME", clockBoottime, int64(pb.BuiltinClock_BUILTIN_CLOCK_BOOTTIME)},
		{"SEQ_INCREMENTAL_STATE_CLEARED", seqIncrementalStateCleared, int64(pb.TracePacket_SEQ_INCREMENTAL_STATE_CLEARED)},
		{"SEQ_NEEDS_INCREMENTAL_STATE", seqNeedsIncrementalState, int64(pb.TracePacket_SEQ_NEEDS_INCREMENTAL_STATE)},
		{"TYPE_SLICE_BEGIN", int64(typeSliceBegin), int64(pb.TrackEvent_TYPE_SLICE_BEGIN)},
		{"TYPE_SLICE_END", int64(typeSliceEnd), int64(pb.TrackEvent_TYPE_SLICE_END)},
		{"TYPE_INSTANT", int64(typeInstant), int64(pb.TrackEvent_TYPE_INSTANT)},
		{"TYPE_COUNTER", int64(typeCounter), int64(pb.TrackEvent_TYPE_COUNTER)},
	} {
		if c.got != c.want {
			t.Errorf("%s is %d here, %d in Perfetto's protos", c.name, c.got, c.want)
		}
	}
	fields := (&pb.TracePacket{}).ProtoReflect().Descriptor().Fields()
	for _, f := range []struct {
		name string
		num  int
	}{
		{"clock_snapshot", packetClockSnapshot}, {"timestamp", packetTimestamp},
		{"trusted_packet_sequence_id", packetSequenceID}, {"track_event", packetTrackEvent},
		{"interned_data", packetInternedData}, {"sequence_flags", packetSequenceFlags},
		{"timestamp_clock_id", packetClockID}, {"track_descriptor", packetTrackDescriptor},
	} {
		if fd := fields.ByNumber(protoreflect.FieldNumber(f.num)); fd == nil || string(fd.Name()) != f.name {
			t.Errorf("TracePacket field %d is %v in Perfetto's protos, %s here", f.num, fd, f.name)
		}
	}
}

// TestWireBytes checks that each kind of packet the writer builds with
// protowire is the bytes the protobuf library marshals for the same
// message: TrackEvents with every field and value kind the exporter sets,
// track descriptors of each shape, the clock snapshot and interned data of
// every table. Whole traces are checked packet by packet wherever a test
// reads one (read, checkLibraryBytes).
// TestVarints holds appendVarint and appendTag to protowire's, at the
// edges of their lengths.
func TestVarints(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 255, 16383, 16384, 1<<21 - 1, 1 << 21, math.MaxInt64, math.MaxUint64} {
		if got, want := appendVarint([]byte{9}, v), protowire.AppendVarint([]byte{9}, v); !bytes.Equal(got, want) {
			t.Errorf("appendVarint(%d) = %x, want %x", v, got, want)
		}
	}
	for num := protowire.Number(1); num < 300; num++ {
		for typ := protowire.VarintType; typ <= protowire.Fixed32Type; typ++ {
			if got, want := appendTag(nil, num, typ), protowire.AppendTag(nil, num, typ); !bytes.Equal(got, want) {
				t.Errorf("appendTag(%d, %d) = %x, want %x", num, typ, got, want)
			}
		}
	}
}

func TestWireBytes(t *testing.T) {
	args := []arg{intArg("cpu", -5), uintArg("n", math.MaxUint64), strArg("s", "héllo"),
		{name: "p", kind: argPointer, n: 0xffff8880_00001000}, strArg("empty", "")}
	iids := []uint64{3, 300, 1, 2, 70000}

	var d internedData
	addName(&d.eventNames, 2, 1, "f")
	addName(&d.eventNames, 2, 200, "")
	addName(&d.argNames, 3, 70000, "cpu")
	addName(&d.funcNames, 5, 1, "main")
	d.addFrame(1)
	addName(&d.funcNames, 5, 1<<20, "")
	d.addFrame(1 << 20)
	d.addCallstack(2, []uint64{1, 1 << 20, 1})
	d.addCallstack(3, nil)
	lib := &pb.InternedData{
		EventNames:           []*pb.EventName{{Iid: proto.Uint64(1), Name: proto.String("f")}, {Iid: proto.Uint64(200), Name: proto.String("")}},
		DebugAnnotationNames: []*pb.DebugAnnotationName{{Iid: proto.Uint64(70000), Name: proto.String("cpu")}},
		FunctionNames:        []*pb.InternedString{{Iid: proto.Uint64(1), Str: []byte("main")}, {Iid: proto.Uint64(1 << 20), Str: []byte{}}},
		Frames:               []*pb.Frame{{Iid: proto.Uint64(1), FunctionNameId: proto.Uint64(1)}, {Iid: proto.Uint64(1 << 20), FunctionNameId: proto.Uint64(1 << 20)}},
		Callstacks:           []*pb.Callstack{{Iid: proto.Uint64(2), FrameIds: []uint64{1, 1 << 20, 1}}, {Iid: proto.Uint64(3)}},
	}
	interned := d.appendTo(nil)
	same(t, "interned data", interned, lib)

	cases := []struct {
		ev                trackEvent
		ts                uint64
		seq, flags        uint32
		d                 *pb.InternedData
		nameIid, stackIid uint64
	}{
		{ev: trackEvent{typ: typeSliceEnd, track: 1}, ts: 0, seq: 1},
		{ev: trackEvent{typ: typeSliceBegin, track: 1 << 40, named: true, args: args},
			ts: 1 << 62, seq: 70000, flags: 3, d: lib, nameIid: 1, stackIid: 9},
		{ev: trackEvent{typ: typeInstant, track: 2, named: true, args: args[2:4]}, ts: 5, seq: 2, nameIid: 200},
		{ev: trackEvent{typ: typeCounter, track: 3, counter: -1}, ts: 6, seq: 2, flags: 2},
		{ev: trackEvent{typ: typeCounter, track: 3, isDouble: true, double: 1.8446744073709552e19}, ts: 7, seq: 2},
	}
	var scratch []byte
	for _, c := range cases {
		var in []byte
		if c.d != nil {
			in = interned
		}
		ai := iids[:len(c.ev.args)]
		got := appendEvent(nil, c.ts, c.seq, c.flags, in, &c.ev, c.nameIid, ai, c.stackIid, &scratch)
		same(t, "event packet", got, libraryEvent(&c.ev, c.ts, c.seq, c.flags, c.d, c.nameIid, ai, c.stackIid))
	}

	for _, c := range []struct {
		d   trackDescriptor
		lib *pb.TrackDescriptor
	}{
		{trackDescriptor{uuid: 1, named: true, name: "bpftape"},
			&pb.TrackDescriptor{Uuid: proto.Uint64(1), StaticOrDynamicName: &pb.TrackDescriptor_Name{Name: "bpftape"}}},
		{trackDescriptor{uuid: 1 << 63, parent: 7, hasParent: true, named: true, name: ""},
			&pb.TrackDescriptor{Uuid: proto.Uint64(1 << 63), ParentUuid: proto.Uint64(7), StaticOrDynamicName: &pb.TrackDescriptor_Name{Name: ""}}},
		{trackDescriptor{uuid: 3, named: true, name: "rx.arg2", counter: true},
			&pb.TrackDescriptor{Uuid: proto.Uint64(3), StaticOrDynamicName: &pb.TrackDescriptor_Name{Name: "rx.arg2"}, Counter: &pb.CounterDescriptor{}}},
		{trackDescriptor{uuid: 4, process: &processDescriptor{pid: 42, name: "nginx @h"}},
			&pb.TrackDescriptor{Uuid: proto.Uint64(4), Process: &pb.ProcessDescriptor{Pid: proto.Int32(42), ProcessName: proto.String("nginx @h")}}},
		{trackDescriptor{uuid: 5, process: &processDescriptor{pid: -1}},
			&pb.TrackDescriptor{Uuid: proto.Uint64(5), Process: &pb.ProcessDescriptor{Pid: proto.Int32(-1)}}},
		{trackDescriptor{uuid: 6, thread: &threadDescriptor{pid: math.MinInt32, tid: 1<<32 - 1, name: "worker"}},
			&pb.TrackDescriptor{Uuid: proto.Uint64(6), Thread: &pb.ThreadDescriptor{Pid: proto.Int32(math.MinInt32), Tid: proto.Int64(1<<32 - 1), ThreadName: proto.String("worker")}}},
		{trackDescriptor{uuid: 7, thread: &threadDescriptor{pid: 1, tid: 2}},
			&pb.TrackDescriptor{Uuid: proto.Uint64(7), Thread: &pb.ThreadDescriptor{Pid: proto.Int32(1), Tid: proto.Int64(2)}}},
	} {
		same(t, "track descriptor", appendTrackDescriptor(nil, &c.d), c.lib)
	}

	boot, wall := uint32(clockBoottime), uint32(clockRealtime)
	primary := pb.BuiltinClock_BUILTIN_CLOCK_BOOTTIME
	same(t, "clock snapshot", appendClockSnapshot(nil, 1<<40, 1_700_000_000_000_000_000), &pb.ClockSnapshot{
		Clocks: []*pb.ClockSnapshot_Clock{
			{ClockId: &boot, Timestamp: proto.Uint64(1 << 40)},
			{ClockId: &wall, Timestamp: proto.Uint64(1_700_000_000_000_000_000)},
		},
		PrimaryTraceClock: &primary,
	})

	desc := appendTrackDescriptor(nil, &trackDescriptor{uuid: 1, named: true, name: "bpftape"})
	got := appendMessage(appendPacketHead(nil, 9, 4, seqIncrementalStateCleared, nil), packetTrackDescriptor, desc)
	flags := uint32(seqIncrementalStateCleared)
	ts, seq, clock := uint64(9), uint32(4), uint32(clockBoottime)
	same(t, "descriptor packet", got, &pb.TracePacket{Timestamp: &ts, TrustedPacketSequenceId: &seq, SequenceFlags: &flags,
		TimestampClockId: &clock, Data: &pb.TracePacket_TrackDescriptor{TrackDescriptor: &pb.TrackDescriptor{
			Uuid: proto.Uint64(1), StaticOrDynamicName: &pb.TrackDescriptor_Name{Name: "bpftape"}}}})
}

// same fails t unless got is what the library marshals of want.
func same(t *testing.T, what string, got []byte, want proto.Message) {
	t.Helper()
	b, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b) {
		t.Errorf("%s: written as\n%x\nthe library marshals\n%x", what, got, b)
	}
}

// libraryEvent is ev as the library's TracePacket, the message appendEvent
// writes the bytes of.
func libraryEvent(ev *trackEvent, ts uint64, seq, flags uint32, d *pb.InternedData, nameIid uint64, argIids []uint64, stackIid uint64) *pb.TracePacket {
	te := &pb.TrackEvent{Type: pb.TrackEvent_Type(ev.typ).Enum(), TrackUuid: proto.Uint64(ev.track)}
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
	if ev.typ == typeCounter {
		if ev.isDouble {
			te.CounterValueField = &pb.TrackEvent_DoubleCounterValue{DoubleCounterValue: ev.double}
		} else {
			te.CounterValueField = &pb.TrackEvent_CounterValue{CounterValue: ev.counter}
		}
	}
	if stackIid != 0 {
		te.CallstackField = &pb.TrackEvent_CallstackIid{CallstackIid: stackIid}
	}
	clock := uint32(clockBoottime)
	pkt := &pb.TracePacket{Timestamp: &ts, TimestampClockId: &clock, TrustedPacketSequenceId: &seq,
		InternedData: d, Data: &pb.TracePacket_TrackEvent{TrackEvent: te}}
	if flags != 0 {
		pkt.SequenceFlags = &flags
	}
	return pkt
}

// TestWireTraces writes whole traces of the test captures (pairs, stacks,
// counters, strings, pointers, loss records, keyed pairs) and reads them,
// which checks each packet against the library's marshalling.
func TestWireTraces(t *testing.T) {
	traces := map[string]func(buf *bytes.Buffer) error{
		"pairs, stacks, counters": func(buf *bytes.Buffer) error {
			_, _, err := Write(writeCapture(t, appMeta(), stackTable, appRows(), 5), buf, Options{Counters: []string{"tick.n"}})
			return err
		},
		"keyed": func(buf *bytes.Buffer) error {
			_, _, err := Write(writeCapture(t, bioMeta, nil, keyedRows(), 7), buf,
				Options{Pairs: []Pair{{"issue", "complete"}}, Key: []string{"dev", "sector"}})
			return err
		},
	}
	for name, write := range traces {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := write(&buf); err != nil {
				t.Fatal(err)
			}
			if buf.Len() < 1000 {
				t.Fatalf("a trace of %d bytes: it tests little", buf.Len())
			}
			read(t, buf.Bytes())
		})
	}
}
