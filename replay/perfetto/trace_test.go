package perfetto

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
	pb "github.com/bpftape/bpftape/replay/perfetto/internal/perfettopb"
	"github.com/bpftape/bpftape/replay/replaytest"
)

// checkLibraryBytes checks that trace is, byte for byte, what the
// protobuf library marshals of the packets it decodes to (tr), with
// nothing in it unknown to the vendored definitions: the writer uses
// protowire, and this holds it to the library's encoding of Perfetto's
// messages.
func checkLibraryBytes(t testing.TB, trace []byte, tr *pb.Trace) {
	t.Helper()
	b := trace
	for i := 0; len(b) > 0; i++ {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			t.Fatalf("packet %d: not a Trace.packet field", i)
		}
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 || i >= len(tr.Packet) {
			t.Fatalf("packet %d: malformed", i)
		}
		b = b[n+m:]
		want, err := proto.Marshal(tr.Packet[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(v, want) {
			t.Fatalf("packet %d: written as\n%x\nthe library marshals\n%x", i, v, want)
		}
		if u := unknownIn(tr.Packet[i].ProtoReflect()); u != "" {
			t.Fatalf("packet %d: a field unknown to the vendored protos, in %s", i, u)
		}
	}
}

// unknownIn returns the name of a message in m (m included) that holds
// fields its definition lacks, or "".
func unknownIn(m protoreflect.Message) string {
	if len(m.GetUnknown()) > 0 {
		return string(m.Descriptor().FullName())
	}
	found := ""
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Message() == nil || fd.IsMap():
		case fd.IsList():
			for i := 0; i < v.List().Len() && found == ""; i++ {
				found = unknownIn(v.List().Get(i).Message())
			}
		default:
			found = unknownIn(v.Message())
		}
		return found == ""
	})
	return found
}

// protos is the directory of the vendored Perfetto protos, and root the
// file that declares perfetto.protos.Trace.
var (
	protos = filepath.Join("..", "..", "testdata", "third_party", "perfetto")
	root   = "bpftape_trace.proto"
)

// decodeText decodes a trace with protoc against the vendored upstream
// protos, as `protoc --decode=perfetto.protos.Trace` prints it.
func decodeText(t testing.TB, trace []byte) string {
	t.Helper()
	cmd := exec.Command("protoc", "--decode=perfetto.protos.Trace", "-I", protos, root)
	cmd.Stdin = bytes.NewReader(trace)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("protoc --decode=perfetto.protos.Trace (install it with scripts/deps.sh): %v\n%s", err, stderr.Bytes())
	}
	return out.String()
}

// slice is a slice of a trace as trace_processor makes it: a begin and
// the end that closes it on the same track.
type slice struct {
	track      uint64
	name       string
	begin, end uint64
	args       map[string]string // the begin's and the end's
	frames     []string          // the begin's callstack
	depth      int               // open slices on its track when it began
}

// instant is an instant event of a trace.
type instant struct {
	track  uint64
	name   string
	ts     uint64
	args   map[string]string
	frames []string
}

// model is what a trace holds, read as trace_processor reads it.
type model struct {
	slices    []slice
	instants  []instant
	counters  map[uint64][][2]float64 // by track: (time, value)
	tracks    map[uint64]*pb.TrackDescriptor
	described []*pb.TrackDescriptor // every descriptor, in file order
	clock     *pb.ClockSnapshot
	sequences int
	open      int // begins never closed
}

// event is a track event with its packet's time and place in the file.
type event struct {
	ts     uint64
	index  int
	ev     *pb.TrackEvent
	frames []string
}

// read decodes trace twice, with protoc and with the generated Go types,
// checks that both see the same events and that Perfetto's rules hold:
// every packet on a sequence, each sequence's first packet clears its
// incremental state, times run forward on each sequence and are boot-clock
// times, interned callstacks are defined on their sequence before use, and,
// with the events sorted by time (ties in file order) as trace_processor
// sorts them, every end closes a begin on the same track. It returns the
// trace's slices, instants, counters and tracks.
func read(t testing.TB, trace []byte) *model {
	t.Helper()
	text := decodeText(t, trace)
	var tr pb.Trace
	if err := proto.Unmarshal(trace, &tr); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	checkLibraryBytes(t, trace, &tr)
	m := &model{counters: map[uint64][][2]float64{}, tracks: map[uint64]*pb.TrackDescriptor{}}
	type seqState struct {
		last    uint64
		funcs   map[uint64]string
		frames  map[uint64]uint64
		stacks  map[uint64][]uint64
		names   map[uint64]string // event names
		args    map[uint64]string // debug annotation names
		started bool
	}
	seqs := map[uint32]*seqState{}
	var events []event
	kinds := map[pb.TrackEvent_Type]int{}
	for i, p := range tr.Packet {
		if p.TrustedPacketSequenceId == nil || p.Timestamp == nil {
			t.Fatalf("packet %d has no sequence or time: %v", i, p)
		}
		if p.GetTimestampClockId() != uint32(pb.BuiltinClock_BUILTIN_CLOCK_BOOTTIME) {
			t.Fatalf("packet %d: clock %d, want BOOTTIME", i, p.GetTimestampClockId())
		}
		s := seqs[p.GetTrustedPacketSequenceId()]
		if s == nil {
			s = &seqState{}
			seqs[p.GetTrustedPacketSequenceId()] = s
		}
		flags := p.GetSequenceFlags()
		if flags&uint32(pb.TracePacket_SEQ_INCREMENTAL_STATE_CLEARED) != 0 {
			s.started = true
			s.funcs, s.frames, s.stacks = map[uint64]string{}, map[uint64]uint64{}, map[uint64][]uint64{}
			s.names, s.args = map[uint64]string{}, map[uint64]string{}
		}
		if !s.started {
			t.Fatalf("packet %d: sequence %d does not start by clearing its incremental state", i, p.GetTrustedPacketSequenceId())
		}
		if p.GetTimestamp() < s.last {
			t.Fatalf("packet %d: sequence %d goes back in time from %d to %d", i, p.GetTrustedPacketSequenceId(), s.last, p.GetTimestamp())
		}
		s.last = p.GetTimestamp()
		if d := p.InternedData; d != nil {
			for _, f := range d.FunctionNames {
				s.funcs[f.GetIid()] = string(f.Str)
			}
			for _, f := range d.Frames {
				s.frames[f.GetIid()] = f.GetFunctionNameId()
			}
			for _, c := range d.Callstacks {
				s.stacks[c.GetIid()] = c.FrameIds
			}
			for _, n := range d.EventNames {
				s.names[n.GetIid()] = n.GetName()
			}
			for _, n := range d.DebugAnnotationNames {
				s.args[n.GetIid()] = n.GetName()
			}
		}
		switch {
		case p.GetClockSnapshot() != nil:
			m.clock = p.GetClockSnapshot()
		case p.GetTrackDescriptor() != nil:
			d := p.GetTrackDescriptor()
			m.tracks[d.GetUuid()] = d
			m.described = append(m.described, d)
		case p.GetTrackEvent() != nil:
			ev := p.GetTrackEvent()
			kinds[ev.GetType()]++
			// Interned names as their text, from this sequence's state here.
			if iid := ev.GetNameIid(); iid != 0 {
				n, ok := s.names[iid]
				if !ok {
					t.Fatalf("packet %d: event name %d not interned on sequence %d", i, iid, p.GetTrustedPacketSequenceId())
				}
				ev.NameField = &pb.TrackEvent_Name{Name: n}
			}
			for _, a := range ev.DebugAnnotations {
				if iid := a.GetNameIid(); iid != 0 {
					n, ok := s.args[iid]
					if !ok {
						t.Fatalf("packet %d: argument name %d not interned on sequence %d", i, iid, p.GetTrustedPacketSequenceId())
					}
					a.NameField = &pb.DebugAnnotation_Name{Name: n}
				}
			}
			if flags&uint32(pb.TracePacket_SEQ_NEEDS_INCREMENTAL_STATE) == 0 {
				t.Fatalf("packet %d: a track event without SEQ_NEEDS_INCREMENTAL_STATE", i)
			}
			if m.tracks[ev.GetTrackUuid()] == nil {
				t.Fatalf("packet %d: track %d used before its descriptor", i, ev.GetTrackUuid())
			}
			var frames []string
			if iid := ev.GetCallstackIid(); iid != 0 {
				ids, ok := s.stacks[iid]
				if !ok {
					t.Fatalf("packet %d: callstack %d not interned on sequence %d", i, iid, p.GetTrustedPacketSequenceId())
				}
				for _, id := range ids {
					fn, ok := s.funcs[s.frames[id]]
					if !ok {
						t.Fatalf("packet %d: frame %d of callstack %d has no function name", i, id, iid)
					}
					frames = append(frames, fn)
				}
			}
			events = append(events, event{p.GetTimestamp(), i, ev, frames})
		}
	}
	m.sequences = len(seqs)
	for k, want := range map[pb.TrackEvent_Type]string{
		pb.TrackEvent_TYPE_SLICE_BEGIN: "type: TYPE_SLICE_BEGIN", pb.TrackEvent_TYPE_SLICE_END: "type: TYPE_SLICE_END",
		pb.TrackEvent_TYPE_INSTANT: "type: TYPE_INSTANT", pb.TrackEvent_TYPE_COUNTER: "type: TYPE_COUNTER",
	} {
		if n := strings.Count(text, want); n != kinds[k] {
			t.Fatalf("protoc decodes %d %q, the Go types %d", n, want, kinds[k])
		}
	}
	if n := strings.Count(text, "\npacket {"); n+boolInt(strings.HasPrefix(text, "packet {")) != len(tr.Packet) {
		t.Fatalf("protoc decodes %d packets, the Go types %d", n, len(tr.Packet))
	}
	// trace_processor's order: by time, ties in file order.
	sort.SliceStable(events, func(a, b int) bool { return events[a].ts < events[b].ts })
	open := map[uint64][]*slice{}
	for _, e := range events {
		ev := e.ev
		switch ev.GetType() {
		case pb.TrackEvent_TYPE_SLICE_BEGIN:
			s := &slice{track: ev.GetTrackUuid(), name: ev.GetName(), begin: e.ts, args: args(ev, nil), frames: e.frames,
				depth: len(open[ev.GetTrackUuid()])}
			open[s.track] = append(open[s.track], s)
		case pb.TrackEvent_TYPE_SLICE_END:
			st := open[ev.GetTrackUuid()]
			if len(st) == 0 {
				t.Fatalf("packet %d: an end on track %d with no begin open there", e.index, ev.GetTrackUuid())
			}
			s := st[len(st)-1]
			open[s.track] = st[:len(st)-1]
			s.end = e.ts
			s.args = args(ev, s.args)
			m.slices = append(m.slices, *s)
		case pb.TrackEvent_TYPE_INSTANT:
			m.instants = append(m.instants, instant{ev.GetTrackUuid(), ev.GetName(), e.ts, args(ev, nil), e.frames})
		case pb.TrackEvent_TYPE_COUNTER:
			v := float64(ev.GetCounterValue())
			if _, ok := ev.CounterValueField.(*pb.TrackEvent_DoubleCounterValue); ok {
				v = ev.GetDoubleCounterValue()
			}
			m.counters[ev.GetTrackUuid()] = append(m.counters[ev.GetTrackUuid()], [2]float64{float64(e.ts), v})
		default:
			t.Fatalf("packet %d: event type %v", e.index, ev.GetType())
		}
	}
	for _, st := range open {
		m.open += len(st)
	}
	return m
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// args adds ev's debug annotations to into, as text.
func args(ev *pb.TrackEvent, into map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for _, a := range ev.DebugAnnotations {
		var v string
		switch x := a.Value.(type) {
		case *pb.DebugAnnotation_IntValue:
			v = fmt.Sprint(x.IntValue)
		case *pb.DebugAnnotation_UintValue:
			v = fmt.Sprint(x.UintValue)
		case *pb.DebugAnnotation_StringValue:
			v = x.StringValue
		case *pb.DebugAnnotation_PointerValue:
			v = fmt.Sprintf("%#x", x.PointerValue)
		default:
			v = fmt.Sprintf("%T", x)
		}
		into[a.GetName()] = v
	}
	return into
}

// export writes c as a trace with o and reads it back.
func export(t testing.TB, c *replay.Capture, o Options) (*Result, *model) {
	t.Helper()
	var buf bytes.Buffer
	res, _, err := Write(c, &buf, o)
	if err != nil {
		t.Fatal(err)
	}
	m := read(t, buf.Bytes())
	if m.open != 0 {
		t.Errorf("%d slices begun and never ended", m.open)
	}
	return res, m
}

// row is one event (or, with lost > 0, one loss record) of a test capture.
type row struct {
	probe    uint16
	pid, tid uint32
	cpu      uint16
	t        int64
	ints     []uint64
	strs     []string
	lost     uint64
	comm     string
}

// writeCapture writes rows, in this order, as a capture of m with stack
// table st (if not nil), in batches of batch rows.
func writeCapture(t testing.TB, m *format.Meta, st *format.StackTable, rows []row, batch int) *replay.Capture {
	t.Helper()
	rs := make([]replaytest.Row, len(rows))
	for k, r := range rows {
		if r.lost > 0 {
			rs[k] = replaytest.Row{Event: format.Event{Probe: r.probe, CPU: r.cpu, Time: r.t}, Lost: r.lost}
			continue
		}
		nf := len(m.Probes[r.probe].Fields)
		e := format.Event{Time: r.t, CPU: r.cpu, PID: r.pid, TID: r.tid, Probe: r.probe, Comm: []byte(r.comm),
			Ints: make([]uint64, nf), Strs: make([][]byte, nf)}
		copy(e.Ints, r.ints)
		for i, s := range r.strs {
			if s != "" {
				e.Strs[i] = []byte(s)
			}
		}
		rs[k] = replaytest.Row{Event: e}
	}
	c, err := replay.Open(replaytest.Write(t, m, st, batch, rs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// threadTrack returns the uuid of the thread track of tid, from its last
// descriptor, and that descriptor.
func (m *model) threadTrack(t testing.TB, tid int64) (uint64, *pb.TrackDescriptor) {
	t.Helper()
	var last *pb.TrackDescriptor
	for _, d := range m.described {
		if d.Thread != nil && d.Thread.GetTid() == tid {
			last = d
		}
	}
	if last == nil {
		t.Fatalf("no thread track of tid %d", tid)
	}
	return last.GetUuid(), last
}

// checkLatency checks the slices of pair start,end against replay.Latency
// of the same capture and options: as many slices as calls, of the same
// durations, and as many unmatched instants as it has unmatched events.
func checkLatency(t *testing.T, c *replay.Capture, m *model, start, end string, key []string, rows replay.RowFilter) (calls, unmatched uint64) {
	t.Helper()
	lr, _, err := replay.Latency(c, replay.LatencyOptions{Entry: start, Return: end, Key: key, Rows: rows}, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	var durs []int64
	for _, s := range m.slices {
		if s.name == start {
			durs = append(durs, int64(s.end-s.begin))
		}
	}
	var sum int64
	for _, d := range durs {
		sum += d
	}
	if uint64(len(durs)) != lr.Calls {
		t.Errorf("%s: %d slices, latency pairs %d calls", start, len(durs), lr.Calls)
	} else if lr.Calls > 0 && (lr.Stats.Sum().Int64() != sum || lr.Stats.Min() != minOf(durs) || lr.Stats.Max() != maxOf(durs)) {
		t.Errorf("%s: slices last %d ns in all (min %d, max %d), latency's calls %v (min %d, max %d)",
			start, sum, minOf(durs), maxOf(durs), lr.Stats.Sum(), lr.Stats.Min(), lr.Stats.Max())
	}
	var un uint64
	for _, in := range m.instants {
		if in.args["unmatched"] != "" && (in.name == start || in.name == end) {
			un++
		}
	}
	want := lr.UnmatchedReturns + lr.UnmatchedEntries + lr.Overflows + lr.Restarted
	if un != want {
		t.Errorf("%s: %d unmatched instants, latency has %d returns without entry, %d entries without return, %d beyond depth, %d restarted",
			start, un, lr.UnmatchedReturns, lr.UnmatchedEntries, lr.Overflows, lr.Restarted)
	}
	return lr.Calls, want
}

func minOf(v []int64) int64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []int64) int64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
