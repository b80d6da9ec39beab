// Package symbolize turns the stacks of a capture into function names from
// the capture alone: its stack table (format.StackTable) holds the stacks,
// the mappings of every process a user stack was taken in, and the
// symbols that frames fall in, which the recorder took while the
// processes ran. Nothing on the machine that replays is read, so a
// capture symbolizes the same anywhere, after its processes and binaries
// are gone.
//
// A frame that does not resolve says why instead of showing a bare
// "[unknown]": Frame.Reason, and a name that keeps what is known — the
// object and offset ("[libfoo.so+0x1a2b]") or the address alone.
//
// New indexes the table so that no frame costs a scan of it, since a
// capture's table may be forged: scanning every mapping of the process,
// or every kernel object, for each frame let a file of 1 M mappings or
// 300,000 kernel objects stall every command that names stacks. The
// mappings of a process go in a segment tree over the ranges their ends
// cut the address space into, each node listing by time read the mappings
// that cover it whole, which finds the one valid at an event's time in
// O(log² n) however many overlap, and in a few steps when few do; the
// symbols of all kernel objects merge into one sorted list of which
// covers each range of addresses, searched in O(log n).
package symbolize

import (
	"cmp"
	"fmt"
	"math"
	"path"
	"slices"
	"sort"

	"github.com/bpftape/bpftape/format"
)

// Frame is one symbolized frame.
type Frame struct {
	Addr   uint64
	Kernel bool
	// Name is the function, or for an unresolved frame "[OBJECT+0xOFF]"
	// or "[0xADDR]".
	Name string
	// Object is the file (or [kernel], [module]) the frame is in, "" if
	// no mapping covers it; Offset is the address's offset into the
	// function, or into the object when Name is unresolved.
	Object string
	Offset uint64
	// Reason says why an unresolved frame is (Resolved false).
	Resolved bool
	Reason   string
	// Map is the mapping of the user frame's process that covers it, nil
	// for a kernel frame or where none does; BuildID is its object's (or
	// a kernel object's) GNU build id, hex, "" if unknown. Profile formats
	// keep them, so that a symbol server can resolve the frame again.
	Map     *format.Mapping
	BuildID string
}

type object struct {
	format.Object
	syms []format.Symbol // by Addr
}

// Symbolizer symbolizes the frames of one capture's stack table.
type Symbolizer struct {
	stacks map[uint64]*format.Stack
	maps   map[uint32]*procMaps // by pid
	objs   map[uint32]*object
	kernel kernelIndex
	notes  map[uint32]string
	// timed: some process has two mappings that cover one address, so
	// that which of them a frame falls in depends on when its stack was
	// taken (Timeless).
	timed bool
}

// New indexes t. Entries that contradict each other (two stacks with one
// id, a mapping of an object the table lacks) are used as far as they go:
// a hostile table gives wrong names, never a failure.
func New(t *format.StackTable) *Symbolizer {
	s := &Symbolizer{stacks: map[uint64]*format.Stack{}, maps: map[uint32]*procMaps{},
		objs: map[uint32]*object{}, notes: map[uint32]string{}}
	if t == nil {
		return s
	}
	for i := range t.Stacks {
		if _, ok := s.stacks[t.Stacks[i].ID]; !ok {
			s.stacks[t.Stacks[i].ID] = &t.Stacks[i]
		}
	}
	var kernel []*object // the kernel's objects, in table order
	var block []object   // allocated a block at a time; appends do not move it
	for _, o := range t.Objects {
		if _, ok := s.objs[o.ID]; !ok {
			if len(block) == cap(block) {
				block = make([]object, 0, 1024)
			}
			block = append(block, object{Object: o})
			ob := &block[len(block)-1]
			s.objs[o.ID] = ob
			if o.Kernel {
				kernel = append(kernel, ob)
			}
		}
	}
	for _, sym := range t.Symbols {
		if o := s.objs[sym.Object]; o != nil {
			o.syms = append(o.syms, sym)
		}
	}
	for _, o := range s.objs {
		slices.SortStableFunc(o.syms, func(a, b format.Symbol) int { return cmp.Compare(a.Addr, b.Addr) })
	}
	s.kernel = newKernelIndex(kernel)
	// The mappings by process, then time read, then table order.
	type key struct {
		pid   uint32
		since int64
		i     int
	}
	keys := make([]key, 0, len(t.Maps))
	for i, m := range t.Maps {
		if m.End > m.Start {
			keys = append(keys, key{m.PID, m.Since, i})
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.pid, b.pid); c != 0 {
			return c
		}
		if c := cmp.Compare(a.since, b.since); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	// One allocation for all the processes' mappings and their indexes,
	// and scratch space reused from one process to the next. A process
	// whose mappings lie in the table in order, as one part lists them,
	// indexes them where they are: the copy of a table of 1 M mappings
	// took 53 MB.
	nproc := 0
	for i := range keys {
		if i == 0 || keys[i].pid != keys[i-1].pid {
			nproc++
		}
	}
	var maps []format.Mapping
	procs := make([]procMaps, 0, nproc)
	var scratch procScratch
	for len(keys) > 0 {
		n := 1
		for n < len(keys) && keys[n].pid == keys[0].pid {
			n++
		}
		sel := keys[:min(n, maxProcMaps)]
		in := true // in table order, one after the other
		for j, k := range sel {
			in = in && k.i == sel[0].i+j
		}
		var pm []format.Mapping
		if in {
			pm = t.Maps[sel[0].i : sel[0].i+len(sel) : sel[0].i+len(sel)]
		} else {
			if maps == nil {
				maps = make([]format.Mapping, 0, len(keys))
			}
			first := len(maps)
			for _, k := range sel {
				maps = append(maps, t.Maps[k.i])
			}
			pm = maps[first:len(maps):len(maps)]
		}
		procs = append(procs, newProcMaps(pm, &scratch))
		s.maps[keys[0].pid] = &procs[len(procs)-1]
		s.timed = s.timed || scratch.overlap
		keys = keys[n:]
	}
	for _, n := range t.Processes {
		s.notes[n.PID] = n.Reason
	}
	return s
}

// Stack returns the frames of stack id, innermost first, and whether the
// table has it.
func (s *Symbolizer) Stack(id uint64) (frames []uint64, kernel, ok bool) {
	st := s.stacks[id]
	if st == nil {
		return nil, false, false
	}
	return st.Frames, st.Kernel, true
}

// Frames symbolizes stack id, taken in process pid at boot-clock time t,
// innermost first; ok is false when the table lacks the stack. Every
// frame but the innermost is a return address, which may be the first
// byte after its function when the call was the function's last
// instruction: it is looked up one byte earlier, as perf does.
func (s *Symbolizer) Frames(pid uint32, t int64, id uint64) (frames []Frame, ok bool) {
	st := s.stacks[id]
	if st == nil {
		return nil, false
	}
	var pm *procMaps
	var read uint32
	if !st.Kernel {
		pm = s.maps[pid]
		read = pm.readBy(t)
	}
	frames = make([]Frame, len(st.Frames))
	for i, a := range st.Frames {
		look := a
		if i > 0 && a > 0 {
			look = a - 1
		}
		f := s.frame(pid, pm, read, look, st.Kernel)
		if f.Addr != a {
			f.Offset += a - look
			f.Addr = a
			if !f.Resolved {
				f.Name = unresolvedName(f)
			}
		}
		frames[i] = f
	}
	return frames, true
}

// Timeless reports whether every stack's frames read the same whenever it
// was taken: no process has two mappings that cover one address (as one
// that exec'd or mapped a file anew has), so that the time given Frames
// and Frame makes no difference, and an analysis need not read it.
func (s *Symbolizer) Timeless() bool { return !s.timed }

// Frame symbolizes addr, a frame of a kernel stack or of a user stack of
// process pid taken at boot-clock time t.
func (s *Symbolizer) Frame(pid uint32, t int64, addr uint64, kernel bool) Frame {
	if kernel {
		return s.frame(pid, nil, 0, addr, true)
	}
	pm := s.maps[pid]
	return s.frame(pid, pm, pm.readBy(t), addr, false)
}

// frame is Frame with the mappings of pid, pm, and how many of them were
// read by the time of the stack, read.
func (s *Symbolizer) frame(pid uint32, pm *procMaps, read uint32, addr uint64, kernel bool) Frame {
	f := Frame{Addr: addr, Kernel: kernel}
	if kernel {
		if ks := s.kernel.find(addr); ks != nil {
			f.Name, f.Object, f.Offset, f.Resolved = ks.Name, ks.path, addr-ks.Addr, true
			if o := s.objs[ks.Object]; o != nil {
				f.BuildID = o.BuildID
			}
			return f
		}
		f.Name = unresolvedName(f)
		f.Reason = "no kernel symbol covers it"
		return f
	}
	m := pm.find(read, addr)
	if m == nil {
		f.Name = fmt.Sprintf("[%#x]", addr)
		switch r := s.notes[pid]; {
		case r != "":
			f.Reason = fmt.Sprintf("process %d %s", pid, r)
		case pm == nil:
			f.Reason = fmt.Sprintf("the capture has no mappings of process %d", pid)
		default:
			// The usual cause: a frame-pointer walk through code built
			// without frame pointers reads whatever the register held.
			f.Reason = fmt.Sprintf("no mapping of process %d covers it: not a code address (code built without frame pointers breaks the walk)", pid)
		}
		return f
	}
	o := s.objs[m.Object]
	if o == nil {
		f.Name = fmt.Sprintf("[%#x]", addr)
		f.Reason = fmt.Sprintf("its mapping names object %d, which the capture lacks", m.Object)
		return f
	}
	f.Object, f.Map, f.BuildID = o.Path, m, o.BuildID
	objAddr := addr - m.Bias
	if sym, ok := o.lookup(objAddr); ok {
		f.Name, f.Offset, f.Resolved = sym.Name, objAddr-sym.Addr, true
		return f
	}
	f.Offset = addr - m.Start + m.Offset
	f.Name = unresolvedName(f)
	if o.NoSymbols != "" {
		f.Reason = fmt.Sprintf("%s has no symbols: %s", o.Path, o.NoSymbols)
	} else {
		f.Reason = fmt.Sprintf("no symbol of %s covers it", o.Path)
	}
	return f
}

// unresolvedName is the name of a frame no symbol covers: its object and
// offset, or its address.
func unresolvedName(f Frame) string {
	if f.Object == "" {
		return fmt.Sprintf("[%#x]", f.Addr)
	}
	return fmt.Sprintf("[%s+%#x]", path.Base(f.Object), f.Offset)
}

// lookup finds the symbol that covers addr: the last one starting at or
// before it, if addr is within its size (a size 0 symbol covers up to the
// next symbol).
func (o *object) lookup(addr uint64) (format.Symbol, bool) {
	i := sort.Search(len(o.syms), func(i int) bool { return o.syms[i].Addr > addr }) - 1
	if i < 0 {
		return format.Symbol{}, false
	}
	sym := o.syms[i]
	if sym.Size == 0 || addr-sym.Addr < sym.Size {
		return sym, true
	}
	return format.Symbol{}, false
}

// maxProcMaps bounds the mappings of one process that are indexed (the
// first by time read), so that a node list's offsets fit in 32 bits: a
// mapping is listed at most twice per level of the tree, 56 times here.
const maxProcMaps = 1 << 26

// procMaps indexes the mappings of one process by address and time read.
//
// The distinct Starts and Ends cut the address space into elementary
// ranges, [bounds[k], bounds[k+1]), each covered whole or not at all by
// every mapping. A segment tree over them, stored bottom up (the leaves
// are nodes m..2m-1 for m ranges, node i's parent is i/2), lists each
// mapping at the at most two nodes a level whose ranges make up its own:
// the mappings that cover an address are those listed on the path from
// its range's leaf to the root. A mapping is named by its rank, its index
// in maps, which is in order of time read, then of the table; each node
// lists ranks ascending. The index takes O(n log n) to build and memory,
// and a lookup O(log n) nodes, each a binary search of its list. A lookup
// skips the nodes that list nothing, most of them in a table as the
// recorder writes one, where mappings read at one time do not overlap.
type procMaps struct {
	maps   []format.Mapping
	bounds []uint64
	// Node i lists ranks[nodes[2i]:nodes[2i+2]]; nodes[2i+1] is its
	// nearest ancestor that lists something, or 0.
	nodes []uint32
	ranks []uint32
}

// procScratch is the space newProcMaps needs only while it runs.
type procScratch struct {
	ends   []mapEnd
	leaves []uint32
	// overlap reports whether two of the last process's mappings cover
	// one address.
	overlap bool
}

// mapEnd is the Start (from 2r) or End (from 2r+1) of the mapping of rank
// r.
type mapEnd struct {
	at   uint64
	from uint32
}

// newProcMaps indexes ms, at most maxProcMaps mappings with End > Start
// in order of rank.
func newProcMaps(ms []format.Mapping, scratch *procScratch) procMaps {
	ends := slices.Grow(scratch.ends[:0], 2*len(ms))
	for r, m := range ms {
		ends = append(ends, mapEnd{m.Start, uint32(2 * r)}, mapEnd{m.End, uint32(2*r + 1)})
	}
	slices.SortFunc(ends, func(a, b mapEnd) int { return cmp.Compare(a.at, b.at) })
	// The leaves each mapping spans, [leaves[2r], leaves[2r+1]).
	leaves := slices.Grow(scratch.leaves[:0], 2*len(ms))[:2*len(ms)]
	scratch.ends, scratch.leaves = ends, leaves
	// Mappings cover [Start, End): at each address, those that end there
	// leave before those that start there come in.
	scratch.overlap = false
	for i, active := 0, 0; i < len(ends); {
		j := i
		for ; j < len(ends) && ends[j].at == ends[i].at; j++ {
			active -= int(ends[j].from & 1)
		}
		for k := i; k < j; k++ {
			active += int(1 - ends[k].from&1)
		}
		scratch.overlap = scratch.overlap || active > 1
		i = j
	}
	n := 0
	for i, e := range ends {
		if i == 0 || e.at != ends[i-1].at {
			n++
		}
	}
	bounds := make([]uint64, 0, n)
	for _, e := range ends {
		if len(bounds) == 0 || bounds[len(bounds)-1] != e.at {
			bounds = append(bounds, e.at)
		}
		leaves[e.from] = uint32(len(bounds) - 1)
	}
	m := len(bounds) - 1
	// Count each node's mappings, then list them in order of rank, with
	// nodes[2i+1] the next free place in node i's list.
	nodes := make([]uint32, 2*(2*m+1))
	var ranks []uint32
	for pass := 0; pass < 2; pass++ {
		for r := range ms {
			l, h := int(leaves[2*r])+m, int(leaves[2*r+1])+m
			for l < h {
				if l&1 == 1 {
					if pass == 0 {
						nodes[2*l+2]++
					} else {
						ranks[nodes[2*l+1]] = uint32(r)
						nodes[2*l+1]++
					}
					l++
				}
				if h&1 == 1 {
					h--
					if pass == 0 {
						nodes[2*h+2]++
					} else {
						ranks[nodes[2*h+1]] = uint32(r)
						nodes[2*h+1]++
					}
				}
				l >>= 1
				h >>= 1
			}
		}
		if pass == 0 {
			for i := 1; i <= 2*m; i++ {
				nodes[2*i] += nodes[2*i-2]
			}
			for i := 0; i < 2*m; i++ {
				nodes[2*i+1] = nodes[2*i]
			}
			ranks = make([]uint32, nodes[4*m])
		}
	}
	// Each node's nearest ancestor that lists something; a parent, i/2,
	// comes before its children.
	for i := 1; i < 2*m; i++ {
		up := i >> 1
		if up > 0 && nodes[2*up] == nodes[2*up+2] {
			up = int(nodes[2*up+1])
		}
		nodes[2*i+1] = uint32(up)
	}
	return procMaps{maps: ms, bounds: bounds, nodes: nodes, ranks: ranks}
}

// readBy returns how many mappings were read at or before t: those of
// the ranks below it.
func (p *procMaps) readBy(t int64) uint32 {
	if p == nil {
		return 0
	}
	lo, hi := 0, len(p.maps)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if p.maps[mid].Since <= t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return uint32(lo)
}

// find returns the mapping that covers addr: of those, the last read at
// or before the time that readBy took r for (a process that exec'd has
// newer ones), else the first read after it. Mappings read at the same
// time are taken in table order. It returns nil if none covers addr.
func (p *procMaps) find(r uint32, addr uint64) *format.Mapping {
	if p == nil {
		return nil
	}
	// The elementary range of addr: the last bound at or before it.
	k := upper(p.bounds, addr) - 1
	m := len(p.bounds) - 1
	if k < 0 || k >= m {
		return nil
	}
	const none = math.MaxUint32
	best, earliest := uint32(none), uint32(none)
	i := k + m
	if p.nodes[2*i] == p.nodes[2*i+2] {
		i = int(p.nodes[2*i+1])
	}
	for ; i > 0; i = int(p.nodes[2*i+1]) {
		list := p.ranks[p.nodes[2*i]:p.nodes[2*i+2]]
		earliest = min(earliest, list[0])
		if list[0] >= r || (best != none && list[len(list)-1] <= best) {
			continue
		}
		// The last rank below r.
		lo, hi := 0, len(list)
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if list[mid] < r {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if c := list[lo-1]; best == none || c > best {
			best = c
		}
	}
	switch {
	case best != none:
		return &p.maps[best]
	case earliest != none:
		return &p.maps[earliest]
	}
	return nil
}

// upper returns the number of elements of a, ascending, at or below x.
func upper(a []uint64, x uint64) int {
	lo, hi := 0, len(a)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if a[mid] <= x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// kernelIndex says which kernel symbol covers each kernel address: the
// addresses from start[i] up to start[i+1] are in syms[sym[i]], or in none
// when sym[i] is -1. An empty index covers nothing.
type kernelIndex struct {
	start []uint64
	sym   []int32
	syms  []kernelSym
}

// kernelSym is a kernel symbol and the path of its object.
type kernelSym struct {
	format.Symbol
	path string
}

// newKernelIndex merges the symbols of the kernel objects objs, as
// object.lookup tried on each object in turn would resolve an address: an
// object's symbol covers from its address up to its end or the object's
// next symbol, whichever comes first, and where the symbols of several
// objects cover an address, the first object's wins. It sweeps the
// symbols by address, keeping those that have started and not ended in a
// heap by object, in O(n log n).
func newKernelIndex(objs []*object) kernelIndex {
	n := 0
	for _, o := range objs {
		n += len(o.syms)
	}
	n = min(n, math.MaxInt32)
	x := kernelIndex{syms: make([]kernelSym, 0, n)}
	all := make([]span, 0, n)
	for prio, o := range objs {
		for i, sym := range o.syms {
			if i+1 < len(o.syms) && o.syms[i+1].Addr == sym.Addr {
				continue // lookup takes the last of those at one address
			}
			if len(x.syms) == math.MaxInt32 {
				break // more symbols than a capture's memory could hold
			}
			last := uint64(math.MaxUint64)
			if i+1 < len(o.syms) {
				last = o.syms[i+1].Addr - 1
			}
			if sym.Size != 0 && sym.Size-1 < last-sym.Addr {
				last = sym.Addr + sym.Size - 1
			}
			x.syms = append(x.syms, kernelSym{sym, o.Path})
			all = append(all, span{first: sym.Addr, last: last, prio: prio, sym: int32(len(x.syms) - 1)})
		}
	}
	if len(all) == 0 {
		return x
	}
	slices.SortFunc(all, func(a, b span) int { return cmp.Compare(a.first, b.first) })
	var active spanHeap
	at, i := uint64(0), 0
	for {
		for i < len(all) && all[i].first <= at {
			active.push(all[i])
			i++
		}
		for len(active) > 0 && active[0].last < at {
			active.pop()
		}
		sym := int32(-1)
		if len(active) > 0 {
			sym = active[0].sym
		}
		if len(x.sym) == 0 || x.sym[len(x.sym)-1] != sym {
			x.start = append(x.start, at)
			x.sym = append(x.sym, sym)
		}
		// The winner changes only where a span starts or the winner ends.
		next, more := uint64(0), false
		if i < len(all) {
			next, more = all[i].first, true
		}
		if len(active) > 0 && active[0].last != math.MaxUint64 && (!more || active[0].last+1 < next) {
			next, more = active[0].last+1, true
		}
		if !more {
			break
		}
		at = next
	}
	x.start, x.sym = slices.Clip(x.start), slices.Clip(x.sym)
	return x
}

// span is the addresses [first, last] that kernel symbol sym covers, of
// the object at prio in table order.
type span struct {
	first, last uint64
	prio        int
	sym         int32
}

// spanHeap is a binary heap of spans, the first object's on top.
type spanHeap []span

func (h *spanHeap) push(s span) {
	*h = append(*h, s)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].prio <= a[i].prio {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *spanHeap) pop() {
	a := *h
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && a[c+1].prio < a[c].prio {
			c++
		}
		if a[i].prio <= a[c].prio {
			break
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
	*h = a
}

// find returns the kernel symbol that covers addr, or nil.
func (x *kernelIndex) find(addr uint64) *kernelSym {
	i := upper(x.start, addr) - 1
	if i < 0 || x.sym[i] < 0 {
		return nil
	}
	return &x.syms[x.sym[i]]
}
