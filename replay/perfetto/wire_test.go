package perfetto

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/bpftape/bpftape/replay/perfetto/internal/perfettopb"
)

// TestWireBytes checks that appendPacket writes TrackEvent packets as the
// protobuf library marshals them, byte for byte: packets with every field
// and value kind the exporter sets, and the whole traces of the test
// captures (pairs, stacks, counters, strings, pointers, loss records,
// keyed pairs), written both ways.
func TestWireBytes(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	u32 := func(v uint32) *uint32 { return &v }
	ann := []*pb.DebugAnnotation{
		{NameField: &pb.DebugAnnotation_NameIid{NameIid: 3}, Value: &pb.DebugAnnotation_IntValue{IntValue: -5}},
		{NameField: &pb.DebugAnnotation_NameIid{NameIid: 300}, Value: &pb.DebugAnnotation_UintValue{UintValue: math.MaxUint64}},
		{NameField: &pb.DebugAnnotation_Name{Name: "s"}, Value: &pb.DebugAnnotation_StringValue{StringValue: "héllo"}},
		{NameField: &pb.DebugAnnotation_Name{Name: "p"}, Value: &pb.DebugAnnotation_PointerValue{PointerValue: 0xffff8880_00001000}},
		{NameField: &pb.DebugAnnotation_NameIid{NameIid: 1}, Value: &pb.DebugAnnotation_StringValue{StringValue: ""}},
	}
	packets := []*pb.TracePacket{
		{Data: &pb.TracePacket_TrackEvent{TrackEvent: &pb.TrackEvent{}}},
		{Timestamp: u(1 << 62), TimestampClockId: u32(6), TrustedPacketSequenceId: u32(70000), SequenceFlags: u32(3),
			InternedData: &pb.InternedData{EventNames: []*pb.EventName{{Iid: u(1), Name: proto.String("f")}}},
			Data: &pb.TracePacket_TrackEvent{TrackEvent: &pb.TrackEvent{
				Type: pb.TrackEvent_TYPE_SLICE_BEGIN.Enum(), TrackUuid: u(1 << 40),
				NameField: &pb.TrackEvent_NameIid{NameIid: 1}, DebugAnnotations: ann,
				CallstackField: &pb.TrackEvent_CallstackIid{CallstackIid: 9}}}},
		{Timestamp: u(5), Data: &pb.TracePacket_TrackEvent{TrackEvent: &pb.TrackEvent{
			Type: pb.TrackEvent_TYPE_INSTANT.Enum(), TrackUuid: u(2), NameField: &pb.TrackEvent_Name{Name: "lost 3 events"}, DebugAnnotations: ann[2:4]}}},
		{Timestamp: u(6), Data: &pb.TracePacket_TrackEvent{TrackEvent: &pb.TrackEvent{
			Type: pb.TrackEvent_TYPE_COUNTER.Enum(), TrackUuid: u(3), CounterValueField: &pb.TrackEvent_CounterValue{CounterValue: -1}}}},
		{Timestamp: u(7), Data: &pb.TracePacket_TrackEvent{TrackEvent: &pb.TrackEvent{
			Type: pb.TrackEvent_TYPE_COUNTER.Enum(), TrackUuid: u(3), CounterValueField: &pb.TrackEvent_DoubleCounterValue{DoubleCounterValue: 1.8446744073709552e19}}}},
	}
	var scratch []byte
	for k, pkt := range packets {
		got, ok := appendPacket(nil, pkt, &scratch)
		if !ok {
			t.Fatalf("packet %d: appendPacket left a TrackEvent packet to the library", k)
		}
		want, err := proto.Marshal(pkt)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("packet %d: appendPacket wrote\n%x\nthe library\n%x", k, got, want)
		}
	}
	if _, ok := appendPacket(nil, &pb.TracePacket{Data: &pb.TracePacket_TrackDescriptor{TrackDescriptor: &pb.TrackDescriptor{}}}, &scratch); ok {
		t.Error("appendPacket wrote a TrackDescriptor packet")
	}

	traces := map[string]func(t *testing.T) ([]byte, []byte){
		"pairs, stacks, counters": func(t *testing.T) ([]byte, []byte) {
			c := writeCapture(t, appMeta(), stackTable, appRows(), 5)
			return writeBoth(t, func(buf *bytes.Buffer) error {
				_, _, err := Write(c, buf, Options{Counters: []string{"tick.n"}})
				return err
			})
		},
		"keyed": func(t *testing.T) ([]byte, []byte) {
			c := writeCapture(t, bioMeta, nil, keyedRows(), 7)
			return writeBoth(t, func(buf *bytes.Buffer) error {
				_, _, err := Write(c, buf, Options{Pairs: []Pair{{"issue", "complete"}}, Key: []string{"dev", "sector"}})
				return err
			})
		},
	}
	for name, f := range traces {
		t.Run(name, func(t *testing.T) {
			fast, lib := f(t)
			if len(fast) < 1000 {
				t.Fatalf("a trace of %d bytes: it tests little", len(fast))
			}
			if !bytes.Equal(fast, lib) {
				t.Errorf("the trace differs: %d bytes, %d by the library alone", len(fast), len(lib))
			}
		})
	}
}

// writeBoth runs write with appendPacket and with the library alone.
func writeBoth(t *testing.T, write func(*bytes.Buffer) error) (fast, lib []byte) {
	var a, b bytes.Buffer
	if err := write(&a); err != nil {
		t.Fatal(err)
	}
	marshalAll = true
	defer func() { marshalAll = false }()
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return a.Bytes(), b.Bytes()
}
