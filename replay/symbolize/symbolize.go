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
package symbolize

import (
	"fmt"
	"path"
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
}

type object struct {
	format.Object
	syms []format.Symbol // by Addr
}

// Symbolizer symbolizes the frames of one capture's stack table.
type Symbolizer struct {
	stacks map[uint64]*format.Stack
	maps   map[uint32][]format.Mapping // by pid, by Start then Since
	objs   map[uint32]*object
	kernel []*object // the kernel's objects, for kernel addresses
	notes  map[uint32]string
}

// New indexes t. Entries that contradict each other (two stacks with one
// id, a mapping of an object the table lacks) are used as far as they go:
// a hostile table gives wrong names, never a failure.
func New(t *format.StackTable) *Symbolizer {
	s := &Symbolizer{stacks: map[uint64]*format.Stack{}, maps: map[uint32][]format.Mapping{},
		objs: map[uint32]*object{}, notes: map[uint32]string{}}
	if t == nil {
		return s
	}
	for i := range t.Stacks {
		if _, ok := s.stacks[t.Stacks[i].ID]; !ok {
			s.stacks[t.Stacks[i].ID] = &t.Stacks[i]
		}
	}
	for _, o := range t.Objects {
		if _, ok := s.objs[o.ID]; !ok {
			ob := &object{Object: o}
			s.objs[o.ID] = ob
			if o.Kernel {
				s.kernel = append(s.kernel, ob)
			}
		}
	}
	for _, sym := range t.Symbols {
		if o := s.objs[sym.Object]; o != nil {
			o.syms = append(o.syms, sym)
		}
	}
	for _, o := range s.objs {
		sort.SliceStable(o.syms, func(i, j int) bool { return o.syms[i].Addr < o.syms[j].Addr })
	}
	for _, m := range t.Maps {
		if m.End > m.Start {
			s.maps[m.PID] = append(s.maps[m.PID], m)
		}
	}
	for pid, ms := range s.maps {
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Since < ms[j].Since })
		s.maps[pid] = ms
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
	frames = make([]Frame, len(st.Frames))
	for i, a := range st.Frames {
		look := a
		if i > 0 && a > 0 {
			look = a - 1
		}
		f := s.Frame(pid, t, look, st.Kernel)
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

// Frame symbolizes addr, a frame of a kernel stack or of a user stack of
// process pid taken at boot-clock time t.
func (s *Symbolizer) Frame(pid uint32, t int64, addr uint64, kernel bool) Frame {
	f := Frame{Addr: addr, Kernel: kernel}
	if kernel {
		for _, o := range s.kernel {
			if sym, ok := o.lookup(addr); ok {
				f.Name, f.Object, f.Offset, f.Resolved = sym.Name, o.Path, addr-sym.Addr, true
				return f
			}
		}
		f.Name = unresolvedName(f)
		f.Reason = "no kernel symbol covers it"
		return f
	}
	m, ok := s.mapping(pid, t, addr)
	if !ok {
		f.Name = fmt.Sprintf("[%#x]", addr)
		switch r := s.notes[pid]; {
		case r != "":
			f.Reason = fmt.Sprintf("process %d %s", pid, r)
		case len(s.maps[pid]) == 0:
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
	f.Object = o.Path
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

// mapping finds the mapping of pid that covers addr: of those, the last
// read at or before t (a process that exec'd has newer ones), else the
// first read after it.
func (s *Symbolizer) mapping(pid uint32, t int64, addr uint64) (format.Mapping, bool) {
	var best format.Mapping
	found := false
	for _, m := range s.maps[pid] {
		if addr < m.Start || addr >= m.End {
			continue
		}
		if !found || m.Since <= t {
			best, found = m, true
		}
		if m.Since > t {
			break
		}
	}
	return best, found
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
