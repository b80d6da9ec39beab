package perfetto

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/bpftape/bpftape/replay/perfetto/internal/perfettopb"
)

// appendPacket appends pkt as proto.Marshal encodes it, when it is a
// TrackEvent packet: ok is false for another, which proto.Marshal then
// writes. A trace is a TrackEvent packet per event, and the protobuf
// library's reflective marshalling (sizing each nested message, finding
// each oneof's coder in a map) was half of an export's CPU: 7.1 of 14.9
// s for 10M events (bench/README.md, "Perfetto export"). Fields are
// written in the library's order (fields outside oneofs by number, then
// each oneof's, in the order the oneofs are declared), so the bytes are
// the same (TestWireBytes compares every packet of its traces);
// a TrackEvent field the exporter does not set is not written here, so
// one it comes to set must be added.
func appendPacket(b []byte, pkt *pb.TracePacket, scratch *[]byte) ([]byte, bool) {
	te, ok := pkt.Data.(*pb.TracePacket_TrackEvent)
	if !ok || te.TrackEvent == nil {
		return b, false
	}
	if pkt.Timestamp != nil {
		b = protowire.AppendTag(b, 8, protowire.VarintType)
		b = protowire.AppendVarint(b, *pkt.Timestamp)
	}
	if pkt.TrustedPacketSequenceId != nil {
		b = protowire.AppendTag(b, 10, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(*pkt.TrustedPacketSequenceId))
	}
	if pkt.InternedData != nil {
		// New names and stacks only: rare, left to the library.
		d, err := proto.MarshalOptions{}.Marshal(pkt.InternedData)
		if err != nil {
			return b, false
		}
		b = protowire.AppendTag(b, 12, protowire.BytesType)
		b = protowire.AppendBytes(b, d)
	}
	if pkt.SequenceFlags != nil {
		b = protowire.AppendTag(b, 13, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(*pkt.SequenceFlags))
	}
	if pkt.TimestampClockId != nil {
		b = protowire.AppendTag(b, 58, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(*pkt.TimestampClockId))
	}
	ev := appendTrackEvent((*scratch)[:0], te.TrackEvent)
	*scratch = ev
	b = protowire.AppendTag(b, 11, protowire.BytesType)
	b = protowire.AppendBytes(b, ev)
	return b, true
}

// appendTrackEvent appends the fields of ev that the exporter sets.
func appendTrackEvent(b []byte, ev *pb.TrackEvent) []byte {
	for _, a := range ev.DebugAnnotations {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeAnnotation(a)))
		b = appendAnnotation(b, a)
	}
	if ev.Type != nil {
		b = protowire.AppendTag(b, 9, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(*ev.Type))
	}
	if ev.TrackUuid != nil {
		b = protowire.AppendTag(b, 11, protowire.VarintType)
		b = protowire.AppendVarint(b, *ev.TrackUuid)
	}
	if n, ok := ev.NameField.(*pb.TrackEvent_NameIid); ok {
		b = protowire.AppendTag(b, 10, protowire.VarintType)
		b = protowire.AppendVarint(b, n.NameIid)
	}
	if n, ok := ev.NameField.(*pb.TrackEvent_Name); ok {
		b = protowire.AppendTag(b, 23, protowire.BytesType)
		b = protowire.AppendString(b, n.Name)
	}
	switch v := ev.CounterValueField.(type) {
	case *pb.TrackEvent_CounterValue:
		b = protowire.AppendTag(b, 30, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v.CounterValue))
	case *pb.TrackEvent_DoubleCounterValue:
		b = protowire.AppendTag(b, 44, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(v.DoubleCounterValue))
	}
	if c, ok := ev.CallstackField.(*pb.TrackEvent_CallstackIid); ok {
		b = protowire.AppendTag(b, 56, protowire.VarintType)
		b = protowire.AppendVarint(b, c.CallstackIid)
	}
	return b
}

// A DebugAnnotation's fields are all in oneofs: name_field (name_iid 1,
// name 10), then value (uint_value 3, int_value 4, string_value 6,
// pointer_value 7).

func appendAnnotation(b []byte, a *pb.DebugAnnotation) []byte {
	switch n := a.NameField.(type) {
	case *pb.DebugAnnotation_NameIid:
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, n.NameIid)
	case *pb.DebugAnnotation_Name:
		b = protowire.AppendTag(b, 10, protowire.BytesType)
		b = protowire.AppendString(b, n.Name)
	}
	switch v := a.Value.(type) {
	case *pb.DebugAnnotation_UintValue:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, v.UintValue)
	case *pb.DebugAnnotation_IntValue:
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v.IntValue))
	case *pb.DebugAnnotation_StringValue:
		b = protowire.AppendTag(b, 6, protowire.BytesType)
		b = protowire.AppendString(b, v.StringValue)
	case *pb.DebugAnnotation_PointerValue:
		b = protowire.AppendTag(b, 7, protowire.VarintType)
		b = protowire.AppendVarint(b, v.PointerValue)
	}
	return b
}

func sizeAnnotation(a *pb.DebugAnnotation) int {
	n := 0
	if v, ok := a.NameField.(*pb.DebugAnnotation_NameIid); ok {
		n += 1 + protowire.SizeVarint(v.NameIid)
	}
	switch v := a.Value.(type) {
	case *pb.DebugAnnotation_UintValue:
		n += 1 + protowire.SizeVarint(v.UintValue)
	case *pb.DebugAnnotation_IntValue:
		n += 1 + protowire.SizeVarint(uint64(v.IntValue))
	case *pb.DebugAnnotation_StringValue:
		n += 1 + protowire.SizeBytes(len(v.StringValue))
	case *pb.DebugAnnotation_PointerValue:
		n += 1 + protowire.SizeVarint(v.PointerValue)
	}
	if v, ok := a.NameField.(*pb.DebugAnnotation_Name); ok {
		n += 1 + protowire.SizeBytes(len(v.Name))
	}
	return n
}
