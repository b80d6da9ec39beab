package stacktable

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/bpftape/bpftape/format"
	"github.com/bpftape/bpftape/record/kallsyms"
	"github.com/bpftape/bpftape/record/sideband"
)

// Options configure a Collector.
type Options struct {
	DebugDirs []string // where separate debug files are looked for (elfsym.DebugDirs(extra))
	Proc      string   // "/proc" when empty (tests may point elsewhere)
	Kallsyms  string   // "/proc/kallsyms" when empty
}

// Bounds on the memory a Collector keeps besides the table itself (see
// doc.go).
const (
	// maxAddrsPerPID bounds a process's cache of resolved addresses: a
	// full cache is emptied, and its addresses are looked up again
	// (which adds nothing new to the table) when they come back.
	maxAddrsPerPID = 1 << 16
	// maxAddrs bounds the resolved addresses cached over all processes
	// and the kernel: past it, every cache is emptied.
	maxAddrs = 1 << 20
	// minSweep is the number of processes known past which the exited
	// ones are forgotten (then again each time the number doubles).
	minSweep = 1024
	// forgetAfter is how long (boot-clock ns, by the times of the stacks)
	// an exited process is kept after its last stack, for stacks drained
	// late.
	forgetAfter = 10e9
	// maxFruitless and rereadBackoff bound the re-reads of a process's
	// maps for addresses outside all of its mappings (garbage frames
	// would otherwise read them for every new address): after
	// maxFruitless re-reads in a row that found nothing new, at most one
	// per rereadBackoff of boot-clock time.
	maxFruitless  = 4
	rereadBackoff = 100e6
	// userLimit is the end of user space (5-level paging: 56 bits).
	userLimit = 1 << 56
	// maxImages bounds the images (one per exec) kept of a process, for
	// the stacks drained after a later exec: the oldest is dropped.
	maxImages = 4
)

// maxOpenFiles bounds the objects kept open until their symbols are
// needed; past it, an object is opened again by the paths it was found by
// (its process's map_files first) if it is still the same file (device,
// inode, size, mtime). A variable for the tests.
var maxOpenFiles = 256

// Collector builds a capture's stack table as stacks arrive. Not safe for
// concurrent use. The zero value is not usable: see New.
type Collector struct {
	debugDirs []string
	proc      string
	kallsyms  string

	seen   map[seenKey]struct{} // stacks resolved, by process image
	stacks map[uint64]struct{}  // ids of the stacks in the table
	procs  map[uint32]*process  // by pid, its newest image
	noted  map[uint32]struct{}  // pids with a ProcessNote
	gens   uint32               // images made, for process.gen

	// sb, if set, tells of the mappings, execs, forks and exits of every
	// process as they happen (see UseSideband); sbp is what it told, by
	// pid.
	sb       Sideband
	sbFn     func(*sideband.Record) // c.sideband, made once
	sbp      map[uint32]*sbProc
	sbLost   uint64
	sbMaxT   int64
	sbSweeps int

	used      []*object // objects in the table, by id-1
	byFile    map[fileKey]*object
	byBuildID map[string]*object
	byPath    map[string]*object // objects that could not be opened
	vdso      map[uint64]*object // by image size
	openFiles int
	reads     reads // bounds the waits for what is read of traced processes

	kern      *kernelSyms
	kernAddrs map[uint64]bool

	cached  int // resolved addresses cached, over all caches
	maxT    int64
	sweepAt int

	pending format.StackTable
	stats   Stats
}

// New returns a Collector.
func New(o Options) *Collector {
	c := &Collector{
		debugDirs: o.DebugDirs,
		proc:      o.Proc,
		kallsyms:  o.Kallsyms,
		seen:      map[seenKey]struct{}{},
		stacks:    map[uint64]struct{}{},
		procs:     map[uint32]*process{},
		noted:     map[uint32]struct{}{},
		byFile:    map[fileKey]*object{},
		byBuildID: map[string]*object{},
		byPath:    map[string]*object{},
		vdso:      map[uint64]*object{},
		kernAddrs: map[uint64]bool{},
		sbp:       map[uint32]*sbProc{},
		sweepAt:   minSweep,
	}
	if c.proc == "" {
		c.proc = "/proc"
	}
	if c.kallsyms == "" {
		c.kallsyms = kallsyms.Path
	}
	return c
}

// Add registers a stack (frames innermost first, as bpf_get_stack gives
// them) seen at boot-clock time t (ns) in process pid, and returns its id,
// format.StackID(kernel, frames). A stack seen before in the same process
// image (any process, for a kernel stack) costs a hash and two map
// lookups; a new one goes into the pending part with what it needs to be
// symbolized: the mappings its user frames fall in, their objects, and the
// symbols covering its frames (see doc.go).
func (c *Collector) Add(pid uint32, t int64, kernel bool, frames []uint64) uint64 {
	id := format.StackID(kernel, frames)
	key := seenKey{id: id}
	var p *process
	if !kernel {
		key.pid = pid
		if p = c.procs[pid]; p != nil {
			key.gen = p.at(t).gen
		}
	}
	if _, ok := c.seen[key]; ok {
		return id
	}
	if !kernel {
		// What the side-band holds first: an exec or the mappings this
		// stack needs may be in it.
		c.Sync()
		p = c.process(pid, t)
		if key.gen = p.gen; key.gen != 0 {
			if _, ok := c.seen[key]; ok {
				return id
			}
		}
	}
	c.seen[key] = struct{}{}
	if len(frames) > format.MaxFrames {
		// A reader refuses a longer stack: keep its innermost frames.
		frames = frames[:format.MaxFrames]
	}
	if _, ok := c.stacks[id]; !ok {
		c.stacks[id] = struct{}{}
		c.pending.Stacks = append(c.pending.Stacks, format.Stack{ID: id, Kernel: kernel, Frames: slices.Clone(frames)})
		c.stats.Stacks++
	}
	if t > c.maxT {
		c.maxT = t
	}
	if kernel {
		c.addKernel(frames)
	} else {
		c.addUser(pid, p, t, frames)
	}
	return id
}

// seenKey is a stack as seen in a process image. A stack id names frames,
// not a process: the same user frames in another process (a forked worker,
// a non-PIE program run twice), or in the same one after an exec, need
// that image's mappings in the table too, since replay resolves them with
// the mappings of the event's pid at the event's time.
type seenKey struct {
	id  uint64
	pid uint32 // 0 for a kernel stack
	gen uint32 // the image (process.gen); 0 for a kernel stack
}

// Exec reads pid's mappings again now, known or not: call it when the
// process may have exec'd (its comm changed), so that the new image's
// mappings are taken while it runs. A short command run by -c execs and
// may exit before its first stack is drained, when its mappings could no
// longer be read. With a side-band (UseSideband), the exec is known from
// it, with its time; without, a read that finds other mappings than the
// last one starts a new image at t.
func (c *Collector) Exec(pid uint32, t int64) {
	c.Sync()
	p := c.procs[pid]
	if p == nil || !p.read || c.sb != nil && c.sbLost == 0 {
		// With every record of the side-band, an exec made a new image
		// already: a rename is no exec.
		c.Snapshot(pid, t)
		return
	}
	lines, ok := c.readLines(pid, p, t)
	if !ok {
		return
	}
	// A new image may put other code at the old addresses (two non-PIE
	// programs both at 0x400000): the stacks from t on are resolved again,
	// against the new mappings; those before keep the old ones.
	q := &process{since: t, maps: slices.Clone(p.maps), read: true, lastT: p.lastT, lastRead: p.lastRead}
	if c.applyMaps(pid, q, lines, t) {
		c.push(pid, q)
	}
}

// Snapshot reads pid's mappings now (call when a process is first seen,
// e.g. on its first event, so that a short-lived process's mappings are
// taken before it exits). Cheap when they are already known.
func (c *Collector) Snapshot(pid uint32, t int64) {
	c.Sync()
	if p := c.procs[pid]; p != nil && p.at(t).read {
		return
	}
	c.process(pid, t)
}

// Take returns the entries added since the last Take, or nil when there
// are none (for format.Writer.AddStacks, which writes them with the next
// batch).
func (c *Collector) Take() *format.StackTable {
	if c.pending.Empty() {
		return nil
	}
	t := c.pending
	c.pending = format.StackTable{}
	return &t
}

// Stats for the record summary.
type Stats struct {
	Stacks, Objects, Symbols, Unresolved, Skipped int
	SidebandLost                                  uint64
}

// Stats returns the numbers of stacks, objects and symbols in the table,
// of the frames that no symbol covers, counted once per stack and process
// image (for a kernel stack, once per stack), of the file reads skipped
// or not waited for because they were slow or the recording was ending
// (the objects and processes concerned say why in the table), and of the
// side-band records the kernel dropped for want of room.
func (c *Collector) Stats() Stats {
	s := c.stats
	s.Skipped = c.reads.skipped
	s.SidebandLost = c.sbLost
	return s
}

// addUser resolves the frames of a new user stack of pid, whose image at
// t is p.
func (c *Collector) addUser(pid uint32, p *process, t int64, frames []uint64) {
	if !p.read {
		// Never read, and not readable now: the process is gone.
		c.note(pid, p.err)
		c.stats.Unresolved += len(frames)
		return
	}
	for i, a := range frames {
		// Every frame but the innermost is a return address, which replay
		// looks up one byte earlier (the call may be its function's last
		// instruction); the symbol of the address itself goes in too.
		look := a
		if i > 0 && a > 0 {
			look = a - 1
			c.resolveUser(pid, p, t, a)
		}
		if !c.resolveUser(pid, p, t, look) {
			c.stats.Unresolved++
		}
	}
}

// addKernel resolves the frames of a new kernel stack.
func (c *Collector) addKernel(frames []uint64) {
	for i, a := range frames {
		look := a
		if i > 0 && a > 0 {
			look = a - 1
			c.resolveKernel(a)
		}
		if !c.resolveKernel(look) {
			c.stats.Unresolved++
		}
	}
}

// resolveUser puts in the table what frame address a of process pid
// needs (its mapping, object and symbol), once per address, and reports
// whether a symbol covers it.
func (c *Collector) resolveUser(pid uint32, p *process, t int64, a uint64) bool {
	if ok, done := p.addrs[a]; done {
		return ok
	}
	ok := c.lookupUser(pid, p, t, a)
	if len(p.addrs) >= maxAddrsPerPID {
		c.cached -= len(p.addrs)
		clear(p.addrs)
	}
	if c.cached >= maxAddrs {
		c.forgetAddrs()
	}
	if p.addrs == nil {
		p.addrs = map[uint64]bool{}
	}
	p.addrs[a] = ok
	c.cached++
	return ok
}

func (c *Collector) lookupUser(pid uint32, p *process, t int64, a uint64) bool {
	if a == 0 || a >= userLimit {
		return false
	}
	m := p.find(a)
	if m == nil && p.mayReread(t) {
		// An exec, a dlopen, or garbage: read the maps again.
		if c.refresh(pid, p, t) {
			c.cached -= len(p.addrs)
			clear(p.addrs)
		}
		m = p.find(a)
	}
	if m == nil || m.obj == nil {
		return false
	}
	o := m.obj
	if !m.emitted {
		m.emitted = true
		c.use(o)
		c.pending.Maps = append(c.pending.Maps, format.Mapping{PID: pid, Since: m.since, Start: m.start, End: m.end,
			Offset: m.off, Object: o.id, Bias: m.bias})
	}
	c.loadSymbols(o)
	return c.hit(o, &o.tab, a-m.bias)
}

// resolveKernel puts the kernel symbol covering a in the table, once per
// address, and reports whether there is one.
func (c *Collector) resolveKernel(a uint64) bool {
	if ok, done := c.kernAddrs[a]; done {
		return ok
	}
	k := c.kernel()
	ok := false
	if i := k.tab.find(a); i >= 0 {
		ok = true
		o := k.objs[k.mod[i]]
		c.use(o)
		c.store(o, &k.tab, i)
	} else if k.err != "" {
		// No symbols at all: say why, on the kernel's object.
		c.use(k.objs[0])
	}
	if len(c.kernAddrs) >= maxAddrsPerPID {
		c.cached -= len(c.kernAddrs)
		clear(c.kernAddrs)
	}
	if c.cached >= maxAddrs {
		c.forgetAddrs()
	}
	c.kernAddrs[a] = ok
	c.cached++
	return ok
}

// hit stores the symbol of tab covering addr (an address of o's symbols),
// if any, and reports whether there is one.
func (c *Collector) hit(o *object, tab *symtab, addr uint64) bool {
	i := tab.find(addr)
	if i < 0 {
		return false
	}
	c.store(o, tab, i)
	return true
}

// store puts symbol i of tab, a symbol of o, in the table once.
func (c *Collector) store(o *object, tab *symtab, i int) {
	if tab.stored(i) {
		return
	}
	tab.setStored(i)
	s := tab.syms[i]
	c.pending.Symbols = append(c.pending.Symbols, format.Symbol{Object: o.id, Addr: s.addr, Size: s.size, Name: s.name})
	c.stats.Symbols++
}

// use gives o its id and puts it in the table, the first time.
func (c *Collector) use(o *object) {
	if o.id != 0 {
		return
	}
	c.used = append(c.used, o)
	o.id = uint32(len(c.used))
	if o.buildIDFrom != "" {
		o.buildID = noteBuildID(o.buildIDFrom)
	}
	// An object's NoSymbols is known once its symbols are read.
	c.loadSymbols(o)
	c.pending.Objects = append(c.pending.Objects, format.Object{ID: o.id, Path: o.path, BuildID: o.buildID,
		Kernel: o.kernel, NoSymbols: o.noSymbols})
	c.stats.Objects++
}

// note records once why pid's mappings are not in the table.
func (c *Collector) note(pid uint32, reason string) {
	if _, ok := c.noted[pid]; ok {
		return
	}
	c.noted[pid] = struct{}{}
	c.pending.Processes = append(c.pending.Processes, format.ProcessNote{PID: pid, Reason: reason})
}

// forgetAddrs empties every resolved-address cache.
func (c *Collector) forgetAddrs() {
	for _, p := range c.procs {
		for ; p != nil; p = p.prev {
			clear(p.addrs)
		}
	}
	clear(c.kernAddrs)
	c.cached = 0
}

// process returns pid's image at t, reading its maps the first time.
func (c *Collector) process(pid uint32, t int64) *process {
	newest := c.procs[pid]
	if newest == nil {
		if len(c.procs) >= c.sweepAt {
			c.sweep()
		}
		newest = c.newProcess(pid, t)
		c.procs[pid] = newest
	}
	newest.lastT = max(newest.lastT, t)
	p := newest.at(t)
	if !p.read && p.mayReread(t) {
		c.load(pid, p, t)
	}
	return p
}

// newProcess returns the images of a process first seen at t: one per
// exec (or fork) the side-band told of, after one for what came before.
func (c *Collector) newProcess(pid uint32, t int64) *process {
	p := &process{lastT: t}
	c.gens++
	p.gen = c.gens
	if s := c.sbp[pid]; s != nil {
		for _, img := range s.images {
			if img.since > 0 {
				p = c.image(p, img.since)
			}
		}
	}
	return p
}

// push makes q, which begins at q.since, an image of process pid.
func (c *Collector) push(pid uint32, q *process) {
	c.gens++
	q.gen = c.gens
	p := c.procs[pid]
	if p == nil || q.since >= p.since {
		q.prev = p
		c.procs[pid] = q
	} else {
		// An image older than the newest (records out of order): in place.
		for p.prev != nil && p.prev.since > q.since {
			p = p.prev
		}
		q.prev, p.prev = p.prev, q
	}
	c.trim(c.procs[pid])
}

// image returns the chain p with an image beginning at since on top, if p
// has none that begins then.
func (c *Collector) image(p *process, since int64) *process {
	for q := p; q != nil; q = q.prev {
		if q.since == since {
			return p
		}
	}
	c.gens++
	q := &process{since: since, gen: c.gens, prev: p, lastT: p.lastT}
	c.trim(q)
	return q
}

// trim drops the images of the chain p past maxImages.
func (c *Collector) trim(p *process) {
	for i := 1; p != nil; i, p = i+1, p.prev {
		if i == maxImages {
			for q := p.prev; q != nil; q = q.prev {
				c.cached -= len(q.addrs)
			}
			p.prev = nil
		}
	}
}

// at returns the image of the chain p (newest first) in force at t: the
// oldest kept for a time before all of them.
func (p *process) at(t int64) *process {
	for p.since > t && p.prev != nil {
		p = p.prev
	}
	return p
}

// sweep forgets the processes that have exited and had no stack for
// forgetAfter: their mappings are in the table already.
func (c *Collector) sweep() {
	for pid, p := range c.procs {
		if c.maxT-p.lastT < forgetAfter {
			continue
		}
		if _, err := os.Stat(filepath.Join(c.proc, strconv.FormatUint(uint64(pid), 10))); err != nil {
			for q := p; q != nil; q = q.prev {
				c.cached -= len(q.addrs)
			}
			delete(c.procs, pid)
		}
	}
	c.sweepAt = max(minSweep, 2*len(c.procs))
}
