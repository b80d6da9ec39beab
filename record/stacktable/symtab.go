package stacktable

import (
	"slices"
	"sort"
	"strings"
)

// cand is a function symbol as read, before the names of one address are
// narrowed to one.
type cand struct {
	addr, size   uint64
	name         string
	global, weak bool
}

// better reports whether a names an address better than b, as perf
// chooses among aliases: a symbol with a size, then a strong one, then a
// global one, then the fewest leading underscores ("read" over "__read"),
// then the longest name; then by name, for a stable choice.
func better(a, b cand) bool {
	if (a.size != 0) != (b.size != 0) {
		return a.size != 0
	}
	if a.weak != b.weak {
		return !a.weak
	}
	if a.global != b.global {
		return a.global
	}
	ua, ub := underscores(a.name), underscores(b.name)
	if ua != ub {
		return ua < ub
	}
	if len(a.name) != len(b.name) {
		return len(a.name) > len(b.name)
	}
	return a.name < b.name
}

func underscores(s string) int { return len(s) - len(strings.TrimLeft(s, "_")) }

// sym is a function: [addr, addr+size) in its object's symbol addresses.
type sym struct {
	addr, size uint64
	name       string
}

// symtab is an object's functions, by address, one per address, each
// with a size: a symbol of size 0 is given the distance to the next one
// (the table keeps only the symbols that frames hit, so replay could not
// tell where it ends), or to the end of its segment for the last one.
type symtab struct {
	syms []sym
	done []uint64 // bit i: syms[i] is in the table
}

// newSymtab builds a symtab from the candidates (reordered); segs, the
// object's PT_LOAD segments, bound a last symbol of unknown size.
func newSymtab(cands []cand, segs []segment) symtab {
	slices.SortFunc(cands, func(a, b cand) int {
		switch {
		case a.addr < b.addr:
			return -1
		case a.addr > b.addr:
			return 1
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	})
	var t symtab
	for i, c := range cands {
		if i > 0 && c.addr == cands[i-1].addr {
			continue // an alias, worse than the first of its address
		}
		t.syms = append(t.syms, sym{addr: c.addr, size: c.size, name: c.name})
	}
	for i := range t.syms {
		s := &t.syms[i]
		if s.size != 0 {
			continue
		}
		if i+1 < len(t.syms) {
			s.size = t.syms[i+1].addr - s.addr
			continue
		}
		for _, g := range segs {
			if g.exec && g.vaddr <= s.addr && s.addr-g.vaddr < g.memsz {
				s.size = g.vaddr + g.memsz - s.addr
			}
		}
	}
	return t
}

// maxNest is how many symbols before an address find looks back for one
// that contains it (a function whose size spans the ones after it).
const maxNest = 8

// find returns the index of the symbol covering addr, -1 if none: the
// closest one starting at or before it whose size reaches it (a symbol
// still of size 0 covers its address alone).
func (t *symtab) find(addr uint64) int {
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].addr > addr }) - 1
	for j := i; j >= 0 && j > i-maxNest; j-- {
		s := &t.syms[j]
		if addr-s.addr < s.size || addr == s.addr {
			return j
		}
	}
	return -1
}

func (t *symtab) stored(i int) bool {
	return t.done != nil && t.done[i/64]&(1<<(i%64)) != 0
}

func (t *symtab) setStored(i int) {
	if t.done == nil {
		t.done = make([]uint64, (len(t.syms)+63)/64)
	}
	t.done[i/64] |= 1 << (i % 64)
}
