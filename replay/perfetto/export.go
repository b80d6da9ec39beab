package perfetto

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/replay"
)

// MaxLanes bounds the lanes of a keyed pair: slices open at once beyond
// it share a lane, their begin moved to its last end (Result.Clamped).
const MaxLanes = 4096

// exporter is the state of a trace being written: per probe, thread,
// process, pair and track, never per event.
type exporter struct {
	c        *replay.Capture
	o        *Options
	pairs    []*pairSpec
	counters []counterSpec
	out      *packetWriter
	pairOf   []int // per probe, the index of its pair, or -1
	probes   []probeCols
	names    *replay.StackNamer
	procs    map[procKey]*process
	threads  map[threadKey]*thread
	res      *Result
	uuids    uint64

	// From the first pass: the thread pairs' entries that never return
	// (by ordinal), and the pairs whose slices do not nest with others'.
	openAtEnd map[int64]bool
	crossing  []bool

	// Keyed pairs: the open starts, by slot, and each pair's lanes.
	slots []keyedStart
	free  []int64
	lanes map[int][]*track

	bpftape       *track
	counterTracks []uint64
	ev            trackEvent              // the event being written
	argBuf        []arg                   // its arguments
	descBuf       []byte                  // a TrackDescriptor's bytes
	split         map[stackLines][]string // folded lines -> frames, root first
	// The last stack frames returned, and the last thread: a probe's
	// events repeat a stack, and a thread's events come in runs, which
	// the maps hashed again on every event.
	lastLines   stackLines
	lastFrames  []string
	lastThread  threadMemo
	first, last int64 // event and loss record times, for want of a window
	seen        bool
}

// probeCols are a probe's columns: the fields written as arguments, its
// stacks (-1 if none), its host field's (-1 if none) and its counters.
type probeCols struct {
	fields       []fieldCol
	user, kernel int
	host         int
	counters     []int
}

type fieldCol struct {
	name    string
	col     int
	typ     format.Type
	pointer bool
	// args are its argument's names, valid UTF-8: on an entry or
	// instant, and on a return ("return." before it).
	args [2]string
}

// threadMemo is the thread that exporter.thread returned last, and what
// it was asked for.
type threadMemo struct {
	th       *thread
	host     string
	tid, pid uint32
	comm     string
}

func newProbeCols(c *replay.Capture, pi int) (probeCols, error) {
	m := c.Meta()
	p := &m.Probes[pi]
	pc := probeCols{user: -1, kernel: -1, host: -1}
	hf := m.HostFieldIndex(p)
	for fi, f := range p.Fields {
		col := c.Column(f.Column)
		if col < 0 {
			return pc, fmt.Errorf("%s: probe %s: field %s has no column %q", c.Name, p.Name, f.Name, f.Column)
		}
		switch {
		case f.Type == format.UserStack:
			pc.user = col
		case f.Type == format.KernelStack:
			pc.kernel = col
		default:
			if fi == hf && f.Type == format.String {
				pc.host = col
			}
			pc.fields = append(pc.fields, fieldCol{name: f.Name, col: col, typ: f.Type, pointer: f.Pointer,
				args: [2]string{validUTF8(f.Name), validUTF8(returnPrefix + f.Name)}})
		}
	}
	return pc, nil
}

// track is a track that holds slices: its begins and ends must run
// forward, last is the latest.
type track struct {
	uuid uint64
	last uint64
}

type threadKey struct {
	host string
	tid  uint32
}

type procKey struct {
	host string
	pid  uint32
}

type thread struct {
	track
	pid  uint32
	comm string
	own  map[int]*track // the tracks of pairs that do not nest, by pair
}

type process struct {
	uuid   uint64
	name   string
	leader bool // named after its leader thread
}

// keyedStart is an open start of a keyed pair: what its slice's begin or
// its unmatched instant will hold.
type keyedStart struct {
	live    bool
	ordinal int64
	t       int64
	thread  uint64
	name    string
	args    []arg
	stack   stackLines
	frames  []string
}

func (x *exporter) threadPairs() bool {
	for _, p := range x.pairs {
		if !p.keyed {
			return true
		}
	}
	return false
}

func (x *exporter) newUUID() uint64 {
	x.uuids++
	return x.uuids
}

// ts converts a capture time to a packet time.
func ts(t int64) uint64 {
	if t < 0 {
		return 0
	}
	return uint64(t)
}

// openStart is an entry open on a thread in the first pass.
type openStart struct {
	ordinal int64
	pair    int
}

// firstPass pairs the thread pairs' events, numbered as the second pass
// numbers them, and keeps the entries that never return and the pairs
// whose slices overlap another pair's without nesting.
func (x *exporter) firstPass() (*replay.Pass, error) {
	var cols []int
	for _, p := range x.pairs {
		if !p.keyed {
			cols = append(cols, p.p.Columns()...)
		}
	}
	for _, pc := range x.probes {
		if pc.host >= 0 {
			cols = append(cols, pc.host)
		}
	}
	cols = append(cols, format.ColTID)
	open := map[threadKey]*[]openStart{}
	var lastKey threadKey
	var lastOpen *[]openStart
	x.crossing = make([]bool, len(x.pairs))
	var n int64
	p, err := x.c.WalkColumns(cols, &x.o.Rows, func(b *format.Batch, i int, lost bool) error {
		if lost {
			return nil
		}
		n++
		pi := x.pairOf[b.Probe[i]]
		if pi < 0 || x.pairs[pi].keyed {
			return nil
		}
		step, prev := x.pairs[pi].p.Add(b, i, n)
		if step != replay.PairStarted && step != replay.PairEnded {
			return nil
		}
		k := threadKey{x.host(b, i), b.TID[i]}
		s := lastOpen
		if s == nil || k != lastKey {
			if s = open[k]; s == nil {
				s = new([]openStart)
				open[k] = s
			}
			lastKey, lastOpen = k, s // a thread's events come in runs
		}
		if step == replay.PairStarted {
			*s = append(*s, openStart{n, pi})
			return nil
		}
		for j := len(*s) - 1; j >= 0; j-- {
			if (*s)[j].ordinal != prev {
				continue
			}
			if j != len(*s)-1 {
				// Slices begun since and still open overlap this one.
				x.crossing[pi] = true
				for _, o := range (*s)[j+1:] {
					x.crossing[o.pair] = true
				}
			}
			*s = slices.Delete(*s, j, j+1)
			break
		}
		return nil
	})
	if err != nil {
		return p, err
	}
	x.openAtEnd = map[int64]bool{}
	for _, s := range open {
		for _, o := range *s {
			x.openAtEnd[o.ordinal] = true
		}
	}
	// The second pass pairs anew.
	for _, ps := range x.pairs {
		if !ps.keyed {
			m := x.c.Meta()
			fresh, err := replay.NewPairing(x.c, m.Probes[ps.start].Name, m.Probes[ps.end].Name, nil)
			if err != nil {
				return p, err
			}
			ps.p = fresh
		}
	}
	return p, nil
}

// secondPass writes the trace.
func (x *exporter) secondPass() (*replay.Pass, error) {
	x.clock()
	x.lanes = map[int][]*track{}
	var n int64
	p, err := x.c.Walk(&x.o.Rows, func(b *format.Batch, i int, lost bool) error {
		if lost {
			x.loss(b, i)
			return x.out.err
		}
		n++
		x.event(b, i, n)
		return x.out.err
	})
	if err != nil {
		return p, err
	}
	x.finish()
	return p, x.out.err
}

func (x *exporter) result() *Result {
	x.res.Sequences = x.out.seqs
	return x.res
}

func (x *exporter) flush() error { return x.out.flush() }

// clock writes the ClockSnapshot that maps the boot clock to the wall clock.
func (x *exporter) clock() {
	m := x.c.Meta()
	if m.StartBoot < 0 || m.StartWall.Before(time.Unix(0, 0)) || m.StartWall.After(time.Unix(0, math.MaxInt64)) {
		return // a forged capture's: no real time to map to
	}
	x.out.write(ts(m.StartBoot), packetClockSnapshot, appendClockSnapshot(nil, uint64(m.StartBoot), uint64(m.StartWall.UnixNano())))
}

// see widens the span of the times written.
func (x *exporter) see(t int64) {
	if !x.seen {
		x.first, x.last, x.seen = t, t, true
	}
	x.first, x.last = min(x.first, t), max(x.last, t)
}

// host returns the host of event row i of b in a merged capture, or "".
func (x *exporter) host(b *format.Batch, i int) string {
	col := x.probes[b.Probe[i]].host
	if col < 0 || !b.Col(col).Valid(i) {
		return ""
	}
	return b.Col(col).Str(i)
}

// event writes event row i of b, the n-th event of the pass.
func (x *exporter) event(b *format.Batch, i int, n int64) {
	t := b.Time[i]
	x.see(t)
	th := x.thread(b, i)
	pc := &x.probes[b.Probe[i]]
	for _, ci := range pc.counters {
		x.counter(ci, b, i)
	}
	pi := x.pairOf[b.Probe[i]]
	if pi < 0 {
		x.instant(th.uuid, b, i, "")
		return
	}
	ps := x.pairs[pi]
	if ps.keyed {
		x.keyed(pi, th, b, i, n)
		return
	}
	step, _ := ps.p.Add(b, i, n)
	switch step {
	case replay.PairStarted:
		if x.openAtEnd[n] {
			x.instant(th.uuid, b, i, "entry without return: the capture ended first")
			return
		}
		stack, frames := x.frames(b, i)
		x.begin(x.pairTrack(th, pi), ts(t), ps.name, x.args(x.argBuf[:0], b, i, false), stack, frames)
	case replay.PairOverflow:
		x.instant(th.uuid, b, i, fmt.Sprintf("entry beyond %d calls open on its thread", replay.MaxDepth))
	case replay.PairEnded:
		stack, frames := x.frames(b, i)
		x.end(x.pairTrack(th, pi), ts(t), x.args(x.argBuf[:0], b, i, true), stack, frames)
	case replay.PairUnmatched:
		x.instant(th.uuid, b, i, "return without entry")
	}
}

// keyed writes event row i of b, of keyed pair pi.
func (x *exporter) keyed(pi int, th *thread, b *format.Batch, i int, n int64) {
	ps := x.pairs[pi]
	var slot int64 = -1
	if b.Probe[i] == ps.start {
		slot = x.alloc()
		stack, frames := x.frames(b, i)
		x.slots[slot] = keyedStart{live: true, ordinal: n, t: b.Time[i], thread: th.uuid, name: ps.name,
			args: x.args(nil, b, i, false), stack: stack, frames: frames}
	}
	step, prev := ps.p.Add(b, i, slot)
	switch step {
	case replay.PairRestarted:
		x.unmatchedStart(prev, "start replaced by a later start of the same key")
	case replay.PairEnded:
		s := &x.slots[prev]
		begin, end := ts(s.t), ts(b.Time[i])
		lane := x.lane(pi, begin)
		x.begin(lane, begin, s.name, s.args, s.stack, s.frames)
		stack, frames := x.frames(b, i)
		x.end(lane, end, x.args(x.argBuf[:0], b, i, true), stack, frames)
		x.release(prev)
	case replay.PairUnmatched:
		x.instant(th.uuid, b, i, "end without start")
	}
}

func (x *exporter) alloc() int64 {
	if n := len(x.free); n > 0 {
		s := x.free[n-1]
		x.free = x.free[:n-1]
		return s
	}
	x.slots = append(x.slots, keyedStart{})
	return int64(len(x.slots) - 1)
}

func (x *exporter) release(slot int64) {
	x.slots[slot] = keyedStart{}
	x.free = append(x.free, slot)
}

// unmatchedStart writes the open keyed start in slot as an unmatched
// instant, and frees the slot.
func (x *exporter) unmatchedStart(slot int64, why string) {
	s := &x.slots[slot]
	x.write(ts(s.t), trackEvent{typ: typeInstant, track: s.thread, named: true, name: s.name,
		args: append(s.args, strArg("unmatched", why)), stack: s.stack, frames: s.frames})
	x.res.Unmatched++
	x.release(slot)
}

// lane returns a lane of keyed pair pi free from time begin on.
func (x *exporter) lane(pi int, begin uint64) *track {
	var best *track
	for _, l := range x.lanes[pi] {
		if l.last <= begin && (best == nil || l.last > best.last) {
			best = l
		}
	}
	if best != nil {
		return best
	}
	if len(x.lanes[pi]) >= MaxLanes {
		best = x.lanes[pi][0]
		for _, l := range x.lanes[pi] {
			if l.last < best.last {
				best = l
			}
		}
		return best // begin is clamped to its last end
	}
	l := &track{uuid: x.newUUID()}
	x.lanes[pi] = append(x.lanes[pi], l)
	x.describe(begin, &trackDescriptor{uuid: l.uuid, named: true, name: validUTF8(x.pairs[pi].name)})
	return l
}

// pairTrack returns the track of thread pair pi's slices on th: the
// thread's, or the pair's own under it if its slices do not nest.
func (x *exporter) pairTrack(th *thread, pi int) *track {
	if !x.crossing[pi] {
		return &th.track
	}
	if t := th.own[pi]; t != nil {
		return t
	}
	if th.own == nil {
		th.own = map[int]*track{}
	}
	t := &track{uuid: x.newUUID(), last: th.last}
	th.own[pi] = t
	x.describe(th.last, &trackDescriptor{uuid: t.uuid, parent: th.uuid, hasParent: true,
		named: true, name: validUTF8(x.pairs[pi].name)})
	return t
}

// clamp returns at, or tr's latest begin or end if that is later.
func (x *exporter) clamp(tr *track, at uint64) uint64 {
	if at < tr.last {
		x.res.Clamped++
		at = tr.last
	}
	tr.last = at
	return at
}

func (x *exporter) begin(tr *track, at uint64, name string, args []arg, stack stackLines, frames []string) {
	at = x.clamp(tr, at)
	x.write(at, trackEvent{typ: typeSliceBegin, track: tr.uuid, named: true, name: validUTF8(name),
		args: args, stack: stack, frames: frames})
}

func (x *exporter) end(tr *track, at uint64, args []arg, stack stackLines, frames []string) {
	at = x.clamp(tr, at)
	x.write(at, trackEvent{typ: typeSliceEnd, track: tr.uuid, args: args, stack: stack, frames: frames})
	x.res.Slices++
}

// write writes ev at time at, keeping its arguments' memory for the next
// event's.
func (x *exporter) write(at uint64, ev trackEvent) {
	x.ev = ev
	x.out.writeEvent(at, &x.ev)
	x.argBuf = ev.args[:0]
}

// instant writes event row i of b as an instant on track uuid, named
// after its probe; why, if not "", says why it is an unmatched event of a
// pair.
func (x *exporter) instant(uuid uint64, b *format.Batch, i int, why string) {
	args := x.args(x.argBuf[:0], b, i, false)
	if why != "" {
		args = append(args, strArg("unmatched", why))
		x.res.Unmatched++
	} else {
		x.res.Instants++
	}
	stack, frames := x.frames(b, i)
	x.write(ts(b.Time[i]), trackEvent{typ: typeInstant, track: uuid, named: true,
		name: validUTF8(x.c.Meta().Probes[b.Probe[i]].Name), args: args, stack: stack, frames: frames})
}

// counter writes the value of counter ci in event row i of b.
func (x *exporter) counter(ci int, b *format.Batch, i int) {
	cs := &x.counters[ci]
	col := b.Col(cs.col)
	if !col.Valid(i) {
		return
	}
	if x.counterTracks == nil {
		x.counterTracks = make([]uint64, len(x.counters))
	}
	at := ts(b.Time[i])
	if x.counterTracks[ci] == 0 {
		x.counterTracks[ci] = x.newUUID()
		x.describe(at, &trackDescriptor{uuid: x.counterTracks[ci], named: true, name: validUTF8(cs.name), counter: true})
	}
	ev := trackEvent{typ: typeCounter, track: x.counterTracks[ci], args: x.argBuf[:0]}
	v := col.Int(i)
	if cs.typ == format.Uint64 && v < 0 {
		ev.isDouble, ev.double = true, float64(uint64(v))
	} else {
		ev.counter = v
	}
	x.write(at, ev)
	x.res.Counters++
}

// loss writes loss record i of b as an instant on the bpftape track.
func (x *exporter) loss(b *format.Batch, i int) {
	n, _ := b.Lost(i)
	at := ts(b.Time[i])
	x.see(b.Time[i])
	tr := x.bpftapeTrack(at)
	x.write(at, trackEvent{typ: typeInstant, track: tr.uuid, named: true, name: fmt.Sprintf("lost %d events", n),
		args: append(x.argBuf[:0], strArg("probe", x.c.Meta().Probes[b.Probe[i]].Name), intArg("cpu", int64(b.CPU[i])), uintArg("lost", n))})
	x.res.LossRecords++
}

func (x *exporter) bpftapeTrack(at uint64) *track {
	if x.bpftape == nil {
		x.bpftape = &track{uuid: x.newUUID()}
		x.describe(at, &trackDescriptor{uuid: x.bpftape.uuid, named: true, name: "bpftape"})
	}
	return x.bpftape
}

// finish writes the keyed starts still open, and the capture's window.
func (x *exporter) finish() {
	var open []int64
	for s := range x.slots {
		if x.slots[s].live {
			open = append(open, int64(s))
		}
	}
	slices.SortFunc(open, func(a, b int64) int { return int(x.slots[a].ordinal - x.slots[b].ordinal) })
	for _, s := range open {
		x.unmatchedStart(s, "start without end: the capture ended first")
	}
	m := x.c.Meta()
	start, end, ok := x.first, x.last, x.seen
	if w := m.Window; w != nil {
		if w.Start != 0 {
			start, ok = w.Start, true
			end = max(end, start)
		}
		if w.End != 0 {
			end = max(w.End, start)
		}
	}
	if !ok {
		return
	}
	tr := x.bpftapeTrack(ts(start))
	x.begin(tr, ts(start), "capture", []arg{strArg("host", m.Host), strArg("kernel", m.Kernel)}, stackLines{}, nil)
	at := x.clamp(tr, ts(end))
	x.write(at, trackEvent{typ: typeSliceEnd, track: tr.uuid})
}

// describe writes a track's descriptor at time at.
func (x *exporter) describe(at uint64, d *trackDescriptor) {
	x.descBuf = appendTrackDescriptor(x.descBuf[:0], d)
	x.out.write(at, packetTrackDescriptor, x.descBuf)
}

// thread returns the track of event row i's thread, describing it (and
// its process) when first seen and when its comm or pid changes.
func (x *exporter) thread(b *format.Batch, i int) *thread {
	host, tid, pid, comm := x.host(b, i), b.TID[i], b.PID[i], b.Comm(i)
	if m := &x.lastThread; m.th != nil && m.tid == tid && m.pid == pid && m.comm == comm && m.host == host {
		// As the last event's: process would describe nothing, and the
		// thread is the one found then.
		return m.th
	}
	th := x.lookThread(host, tid, pid, comm, ts(b.Time[i]))
	x.lastThread = threadMemo{th: th, host: host, tid: tid, pid: pid, comm: comm}
	return th
}

// lookThread is thread for an event of thread tid of process pid, named
// comm, at time at.
func (x *exporter) lookThread(host string, tid, pid uint32, comm string, at uint64) *thread {
	x.process(host, pid, tid, comm, at)
	k := threadKey{host, tid}
	th := x.threads[k]
	if th != nil && th.comm == comm && th.pid == pid {
		return th
	}
	if th == nil {
		th = &thread{track: track{uuid: x.newUUID()}}
		x.threads[k] = th
	}
	th.comm, th.pid = comm, pid
	td := &threadDescriptor{pid: int32(pid), tid: int64(tid)}
	if comm != "" {
		td.name = validUTF8(comm)
	}
	x.describe(at, &trackDescriptor{uuid: th.uuid, thread: td})
	return th
}

// process describes process pid when first seen, and names it after its
// leader thread (tid = pid) when that shows.
func (x *exporter) process(host string, pid, tid uint32, comm string, at uint64) {
	k := procKey{host, pid}
	p := x.procs[k]
	switch {
	case p == nil:
		p = &process{uuid: x.newUUID(), name: comm, leader: tid == pid}
		x.procs[k] = p
	case tid == pid && (!p.leader || p.name != comm):
		p.leader = true
		if p.name == comm {
			return
		}
		p.name = comm
	default:
		return
	}
	name := p.name
	if host != "" {
		name = strings.TrimSpace(name + " @" + host)
	}
	pd := &processDescriptor{pid: int32(pid)}
	if name != "" {
		pd.name = validUTF8(name)
	}
	x.describe(at, &trackDescriptor{uuid: p.uuid, process: pd})
}

// args appends to args the cpu and fields of event row i of b as
// arguments, their names after returnPrefix on a return (ret).
func (x *exporter) args(args []arg, b *format.Batch, i int, ret bool) []arg {
	pc := &x.probes[b.Probe[i]]
	k := 0 // which of the names made with the probe's columns
	if ret {
		k = 1
	}
	args = append(args, arg{name: cpuArgs[k], kind: argInt, n: uint64(b.CPU[i])})
	for _, f := range pc.fields {
		col := b.Col(f.col)
		if !col.Valid(i) {
			continue
		}
		name := f.args[k]
		switch {
		case f.typ == format.String:
			args = append(args, arg{name: name, kind: argString, s: validUTF8(col.Str(i))})
		case f.pointer:
			args = append(args, arg{name: name, kind: argPointer, n: uint64(col.Int(i))})
		case f.typ == format.Uint64:
			args = append(args, arg{name: name, kind: argUint, n: uint64(col.Int(i))})
		default:
			args = append(args, arg{name: name, kind: argInt, n: uint64(col.Int(i))})
		}
	}
	return args
}

// returnPrefix is what the arguments of a return event have before their
// names.
const returnPrefix = "return."

// cpuArgs are the cpu argument's names (fieldCol.args).
var cpuArgs = [2]string{"cpu", returnPrefix + "cpu"}

// frames returns the callstack of event row i of b, root first: its user
// stack's frames, then its kernel stack's; nil if it has none. stack is
// their folded lines, which name it.
func (x *exporter) frames(b *format.Batch, i int) (stack stackLines, frames []string) {
	pc := &x.probes[b.Probe[i]]
	if x.names == nil || pc.user < 0 && pc.kernel < 0 {
		return stackLines{}, nil
	}
	for k, col := range []int{pc.user, pc.kernel} {
		if col < 0 || !b.Col(col).Valid(i) {
			continue
		}
		if line, ok := x.names.Folded(b.PID[i], b.Time[i], uint64(b.Col(col).Int(i))); ok {
			if k == 0 {
				stack.user, stack.hasUser = line, true
			} else {
				stack.kernel, stack.hasKernel = line, true
			}
		}
	}
	if stack == (stackLines{}) {
		return stack, nil
	}
	if x.lastFrames != nil && stack == x.lastLines {
		return stack, x.lastFrames
	}
	defer func() { x.lastLines, x.lastFrames = stack, frames }()
	frames, ok := x.split[stack]
	if !ok {
		if stack.hasUser {
			frames = append(frames, strings.Split(stack.user, ";")...)
		}
		if stack.hasKernel {
			frames = append(frames, strings.Split(stack.kernel, ";")...)
		}
		if x.split == nil {
			x.split = map[stackLines][]string{}
		}
		x.split[stack] = frames
	}
	return stack, frames
}
