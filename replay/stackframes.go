package replay

import (
	"strings"

	"github.com/bpftape/bpftape/internal/textsafe"
	"github.com/bpftape/bpftape/replay/symbolize"
)

// StackNamer turns the stack ids of a capture's ustack and kstack columns
// into folded frame strings, one id at a time, for writers that put a
// stack in a cell (export's CSV, JSON lines and Parquet). A stack reads
// exactly as `bpftape stacks` prints it: the frames are named by the same
// code (stackAgg.fold, one stack at a time, so an unresolved frame is
// [OBJECT+0xOFFSET] or [0xADDRESS] there as here) and escaped as
// WriteFolded escapes them.
//
// A stack is symbolized once per (id, pid), at the time it was first
// asked for, as Stacks symbolizes a stack at the first time it was seen;
// a repeated stack then costs a map lookup. A StackNamer is not safe for
// concurrent use.
type StackNamer struct {
	// BuildIDs names unresolved frames with their object's build id, as
	// StacksOptions.BuildIDs does; set it before the first Folded.
	BuildIDs   bool
	sym        *symbolize.Symbolizer
	names      map[stackKey]foldedName
	unresolved map[string]uint64
	// The last stack named, by process and id: a probe's events repeat
	// a stack, whose key the map hashed again on every event.
	last    foldedLast
	lastSet bool
}

type foldedLast struct {
	pid  uint32
	id   uint64
	name foldedName
}

type foldedName struct {
	line string
	ok   bool
}

// NewStackNamer reads c's stack table.
func NewStackNamer(c *Capture) (*StackNamer, error) {
	sym, err := c.symbolizer()
	if err != nil {
		return nil, err
	}
	return &StackNamer{sym: sym, names: map[stackKey]foldedName{}, unresolved: map[string]uint64{}}, nil
}

// Folded returns stack id, taken in process pid at boot-clock time t, as
// its frames root first, separated by ';' ("main;top;mid;leaf"). ok is
// false for id 0 (no stack) and for an id the stack table lacks, which
// Stacks counts as events without a stack.
func (s *StackNamer) Folded(pid uint32, t int64, id uint64) (line string, ok bool) {
	if id == 0 {
		return "", false
	}
	if s.lastSet && s.last.pid == pid && s.last.id == id {
		return s.last.name.line, s.last.name.ok
	}
	line, ok = s.folded(pid, t, id)
	s.last, s.lastSet = foldedLast{pid, id, foldedName{line, ok}}, true
	return line, ok
}

// folded is Folded for a stack other than the last one named.
func (s *StackNamer) folded(pid uint32, t int64, id uint64) (line string, ok bool) {
	_, kernel, found := s.sym.Stack(id)
	if !found {
		return "", false
	}
	// The key Stacks uses: a kernel stack means the same in every process.
	k := stackKey{user: id, pid: pid}
	mode := StacksUser
	if kernel {
		k = stackKey{kernel: id}
		mode = StacksKernel
	}
	if n, hit := s.names[k]; hit {
		return n.line, n.ok
	}
	a := &stackAgg{
		res:  &StackCounts{Mode: mode, Unresolved: s.unresolved},
		sym:  s.sym,
		opts: &StacksOptions{Mode: mode, BuildIDs: s.BuildIDs},
		seen: map[stackKey]*stackSeen{},
	}
	a.add(k, t, 1)
	var n foldedName
	if r := a.fold(); len(r.Stacks) == 1 {
		names := make([]string, len(r.Stacks[0].Frames))
		for i, f := range r.Stacks[0].Frames {
			names[i] = strings.ReplaceAll(textsafe.Escape(f), ";", ":") // as WriteFolded
		}
		n = foldedName{strings.Join(names, ";"), true}
	}
	s.names[k] = n
	return n.line, n.ok
}

// Unresolved counts, by reason, the frames of the stacks named so far that
// did not resolve, each unique frame of each stack once (as
// StackCounts.Unresolved; StackCounts.Notes prints them).
func (s *StackNamer) Unresolved() map[string]uint64 { return s.unresolved }
