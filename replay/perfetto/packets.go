package perfetto

import (
	"bufio"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
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

// packetWriter writes TracePackets as the repeated field 1 of a Trace,
// one at a time, each on a sequence whose times run forward.
type packetWriter struct {
	w        *bufio.Writer
	err      error
	buf      []byte
	scratch  []byte   // a TrackEvent's bytes (appendEvent)
	argIids  []uint64 // an event's argument name iids
	interned internedData
	dataBuf  []byte // the interned data's bytes
	open     []*sequence
	seqs     uint32   // sequences begun; the last one's id
	hdr      [16]byte // a packet's tag and length (emit): on the stack it escaped, an allocation a packet
}

// sequence is one packet sequence and its interning tables.
type sequence struct {
	id      uint32
	last    uint64
	started bool
	funcs   map[string]uint64     // function name -> iid (its frame's iid too)
	stacks  map[string]uint64     // frame iids, joined -> callstack iid
	names   map[string]uint64     // event name -> iid
	args    map[string]uint64     // argument (debug annotation) name -> iid
	lines   map[stackLines]uint64 // a callstack's folded lines -> callstack iid
	key     []byte
	// The last callstack interned, its lines and iid: a probe's events
	// repeat a stack, whose lines the map hashed on every event.
	lastLines stackLines
	lastIid   uint64
}

// clear empties s's interning tables, as a sequence whose incremental
// state is cleared starts.
func (s *sequence) clear() {
	s.funcs, s.stacks = map[string]uint64{}, map[string]uint64{}
	s.names, s.args = map[string]uint64{}, map[string]uint64{}
	s.lines = map[stackLines]uint64{}
	s.lastLines, s.lastIid = stackLines{}, 0
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

// begin takes ts's sequence for a packet: it returns the sequence and the
// packet's flags so far (a new sequence's cleared state).
func (pw *packetWriter) begin(ts uint64) (*sequence, uint32) {
	s := pw.sequenceFor(ts)
	s.last = ts
	var flags uint32
	if !s.started {
		flags |= seqIncrementalStateCleared
		s.started = true
		s.clear()
	}
	return s, flags
}

// write writes a packet other than a TrackEvent at time ts on a sequence
// that allows it: its data is msg, a message of TracePacket's field n.
func (pw *packetWriter) write(ts uint64, n protowire.Number, msg []byte) {
	if pw.err != nil {
		return
	}
	s, flags := pw.begin(ts)
	pw.buf = appendPacketHead(pw.buf[:0], ts, s.id, flags, nil)
	pw.buf = appendMessage(pw.buf, n, msg)
	pw.emit(pw.buf)
}

// writeEvent writes ev at time ts on a sequence that allows it, its name,
// argument names and callstack interned.
func (pw *packetWriter) writeEvent(ts uint64, ev *trackEvent) {
	if pw.err != nil {
		return
	}
	s, flags := pw.begin(ts)
	flags |= seqNeedsIncrementalState
	if s.interned()+min(len(ev.frames), MaxFrames)+2+len(ev.args) > MaxInterned {
		flags |= seqIncrementalStateCleared
		s.clear()
	}
	// Names as interned ids: a trace repeats a few names on every event,
	// and as text they were most of its bytes.
	d := &pw.interned
	d.reset()
	var nameIid uint64
	if ev.named {
		var added bool
		if nameIid, added = internName(s.names, ev.name); added {
			addName(&d.eventNames, 2, nameIid, ev.name)
		}
	}
	pw.argIids = pw.argIids[:0]
	for _, a := range ev.args {
		iid, added := internName(s.args, a.name)
		if added {
			addName(&d.argNames, 3, iid, a.name)
		}
		pw.argIids = append(pw.argIids, iid)
	}
	var stackIid uint64
	if len(ev.frames) > 0 {
		stackIid = s.intern(d, ev.stack, ev.frames)
	}
	var interned []byte
	if !d.empty() {
		pw.dataBuf = d.appendTo(pw.dataBuf[:0])
		interned = pw.dataBuf
	}
	pw.buf = appendEvent(pw.buf[:0], ts, s.id, flags, interned, ev, nameIid, pw.argIids, stackIid, &pw.scratch)
	pw.emit(pw.buf)
}

// intern returns the iid of the callstack frames (root first; their folded
// lines are stack) on s, adding to d what s lacks. A frame is its
// function's name alone: its iid is the name's.
func (s *sequence) intern(d *internedData, stack stackLines, frames []string) uint64 {
	if s.lastIid != 0 && stack == s.lastLines {
		return s.lastIid
	}
	if iid, ok := s.lines[stack]; ok {
		s.lastLines, s.lastIid = stack, iid
		return iid
	}
	if len(frames) > MaxFrames {
		frames = frames[:MaxFrames]
	}
	ids := make([]uint64, len(frames))
	s.key = s.key[:0]
	for i, f := range frames {
		iid, ok := s.funcs[f]
		if !ok {
			iid = uint64(len(s.funcs) + 1)
			s.funcs[f] = iid
			addName(&d.funcNames, 5, iid, f)
			d.addFrame(iid)
		}
		ids[i] = iid
		s.key = appendVarint(s.key, iid)
	}
	iid, ok := s.stacks[string(s.key)]
	if !ok {
		iid = uint64(len(s.stacks) + 1)
		s.stacks[string(s.key)] = iid
		d.addCallstack(iid, ids)
	}
	s.lines[stack] = iid
	s.lastLines, s.lastIid = stack, iid
	return iid
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

// emit writes b, a marshalled packet, as one element of Trace.packet.
func (pw *packetWriter) emit(b []byte) {
	h := appendTag(pw.hdr[:0], 1, protowire.BytesType)
	h = appendVarint(h, uint64(len(b)))
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
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s // the common case, checked 8 ASCII bytes at a time
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
