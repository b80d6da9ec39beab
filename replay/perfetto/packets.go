package perfetto

import (
	"bufio"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/bpftape/bpftape/replay/perfetto/internal/perfettopb"
)

// MaxSequences bounds the packet sequences open at once (see the package
// doc): a capture whose rows step back further than that many sorted runs
// (a forged one) closes one for each new one.
const MaxSequences = 64

// MaxInterned bounds the entries of a sequence's interning tables
// (event and argument names, function names, callstacks): past it, the
// sequence clears its incremental state and interns anew, as Perfetto's
// own writers do.
const MaxInterned = 1 << 14

// MaxFrames bounds the frames of a callstack; a longer one keeps its
// outermost frames.
const MaxFrames = 1024

// marshalAll has the protobuf library marshal every packet, TrackEvents
// too: for tests that compare appendPacket's bytes with the library's.
var marshalAll = false

// boottime is the clock of every packet's timestamp.
var boottime = uint32(pb.BuiltinClock_BUILTIN_CLOCK_BOOTTIME)

// packetWriter writes TracePackets as the repeated field 1 of a Trace,
// one at a time, each on a sequence whose times run forward.
type packetWriter struct {
	w       *bufio.Writer
	err     error
	buf     []byte
	scratch []byte // a TrackEvent's bytes (appendPacket)
	open    []*sequence
	seqs    uint32 // sequences begun; the last one's id
}

// sequence is one packet sequence and its interning tables.
type sequence struct {
	id      uint32
	last    uint64
	started bool
	funcs   map[string]uint64 // function name -> iid (its frame's iid too)
	stacks  map[string]uint64 // frame iids, joined -> callstack iid
	names   map[string]uint64 // event name -> iid
	args    map[string]uint64 // argument (debug annotation) name -> iid
	key     []byte
}

// clear empties s's interning tables, as a sequence whose incremental
// state is cleared starts.
func (s *sequence) clear() {
	s.funcs, s.stacks = map[string]uint64{}, map[string]uint64{}
	s.names, s.args = map[string]uint64{}, map[string]uint64{}
}

// interned is the number of entries of s's interning tables.
func (s *sequence) interned() int { return len(s.funcs) + len(s.stacks) + len(s.names) + len(s.args) }

// sequenceFor returns the open sequence whose last time is the latest not
// after ts, or a new one.
func (pw *packetWriter) sequenceFor(ts uint64) *sequence {
	var best *sequence
	for _, s := range pw.open {
		if s.last <= ts && (best == nil || s.last > best.last) {
			best = s
		}
	}
	if best != nil {
		return best
	}
	if len(pw.open) >= MaxSequences {
		// Close the one that ran furthest ahead: the least likely to fit.
		far := 0
		for i, s := range pw.open {
			if s.last > pw.open[far].last {
				far = i
			}
		}
		pw.open = append(pw.open[:far], pw.open[far+1:]...)
	}
	pw.seqs++
	s := &sequence{id: pw.seqs}
	pw.open = append(pw.open, s)
	return s
}

// write writes pkt at time ts on a sequence that allows it; frames, root
// first, become the callstack of pkt's TrackEvent, interned.
func (pw *packetWriter) write(ts uint64, pkt *pb.TracePacket, frames []string) {
	if pw.err != nil {
		return
	}
	s := pw.sequenceFor(ts)
	s.last = ts
	pkt.Timestamp = &ts
	pkt.TimestampClockId = &boottime
	pkt.TrustedPacketSequenceId = &s.id
	var flags uint32
	if !s.started {
		flags |= uint32(pb.TracePacket_SEQ_INCREMENTAL_STATE_CLEARED)
		s.started = true
		s.clear()
	}
	if ev := pkt.GetTrackEvent(); ev != nil {
		flags |= uint32(pb.TracePacket_SEQ_NEEDS_INCREMENTAL_STATE)
		if s.interned()+min(len(frames), MaxFrames)+2+len(ev.DebugAnnotations) > MaxInterned {
			flags |= uint32(pb.TracePacket_SEQ_INCREMENTAL_STATE_CLEARED)
			s.clear()
		}
		// Names as interned ids: a trace repeats a few names on every
		// event, and as text they were most of its bytes.
		if n, ok := ev.NameField.(*pb.TrackEvent_Name); ok {
			iid, added := internName(s.names, n.Name)
			if added {
				d := interned(pkt)
				d.EventNames = append(d.EventNames, &pb.EventName{Iid: proto.Uint64(iid), Name: proto.String(n.Name)})
			}
			ev.NameField = &pb.TrackEvent_NameIid{NameIid: iid}
		}
		for _, a := range ev.DebugAnnotations {
			if n, ok := a.NameField.(*pb.DebugAnnotation_Name); ok {
				iid, added := internName(s.args, n.Name)
				if added {
					d := interned(pkt)
					d.DebugAnnotationNames = append(d.DebugAnnotationNames, &pb.DebugAnnotationName{Iid: proto.Uint64(iid), Name: proto.String(n.Name)})
				}
				a.NameField = &pb.DebugAnnotation_NameIid{NameIid: iid}
			}
		}
		if len(frames) > 0 {
			iid := s.intern(pkt, frames)
			ev.CallstackField = &pb.TrackEvent_CallstackIid{CallstackIid: iid}
		}
	}
	if flags != 0 {
		pkt.SequenceFlags = &flags
	}
	pw.marshal(pkt)
}

// intern returns the iid of the callstack frames on s, adding to pkt's
// interned data what s lacks. A frame is its function's name alone: its
// iid is the name's.
func (s *sequence) intern(pkt *pb.TracePacket, frames []string) uint64 {
	if len(frames) > MaxFrames {
		frames = frames[:MaxFrames]
	}
	data := func() *pb.InternedData { return interned(pkt) }
	ids := make([]uint64, len(frames))
	s.key = s.key[:0]
	for i, f := range frames {
		iid, ok := s.funcs[f]
		if !ok {
			iid = uint64(len(s.funcs) + 1)
			s.funcs[f] = iid
			d := data()
			d.FunctionNames = append(d.FunctionNames, &pb.InternedString{Iid: proto.Uint64(iid), Str: []byte(f)})
			d.Frames = append(d.Frames, &pb.Frame{Iid: proto.Uint64(iid), FunctionNameId: proto.Uint64(iid)})
		}
		ids[i] = iid
		s.key = protowire.AppendVarint(s.key, iid)
	}
	iid, ok := s.stacks[string(s.key)]
	if !ok {
		iid = uint64(len(s.stacks) + 1)
		s.stacks[string(s.key)] = iid
		d := data()
		d.Callstacks = append(d.Callstacks, &pb.Callstack{Iid: proto.Uint64(iid), FrameIds: ids})
	}
	return iid
}

// interned returns pkt's interned data, added if it has none.
func interned(pkt *pb.TracePacket) *pb.InternedData {
	if pkt.InternedData == nil {
		pkt.InternedData = &pb.InternedData{}
	}
	return pkt.InternedData
}

// internName returns the iid of name in table (from 1), and whether it
// was added.
func internName(table map[string]uint64, name string) (iid uint64, added bool) {
	if iid, ok := table[name]; ok {
		return iid, false
	}
	iid = uint64(len(table) + 1)
	table[name] = iid
	return iid, true
}

// marshal writes pkt as one element of Trace.packet.
func (pw *packetWriter) marshal(pkt *pb.TracePacket) {
	b, ok := pw.buf[:0], false
	if !marshalAll {
		b, ok = appendPacket(b, pkt, &pw.scratch)
	}
	if !ok {
		var err error
		if b, err = (proto.MarshalOptions{}).MarshalAppend(pw.buf[:0], pkt); err != nil {
			pw.err = err
			return
		}
	}
	pw.buf = b
	var hdr [16]byte
	h := protowire.AppendTag(hdr[:0], 1, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(len(b)))
	if _, err := pw.w.Write(h); err != nil {
		pw.err = err
		return
	}
	if _, err := pw.w.Write(b); err != nil {
		pw.err = err
	}
}

// flush writes what is buffered.
func (pw *packetWriter) flush() error {
	if pw.err != nil {
		return pw.err
	}
	return pw.w.Flush()
}

// validUTF8 makes s valid UTF-8 for a protobuf string.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
