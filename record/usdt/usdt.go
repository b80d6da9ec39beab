// Package usdt reads the USDT (SystemTap SDT) probes of an ELF file, the
// call sites and argument locations that sys/sdt.h records in .note.stapsdt,
// and turns their arguments into bpftape probe specs.
package usdt

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/record/elfsym"
	"github.com/bpftape/bpftape/record/suggest"
)

// Note constants of SystemTap SDT v3 probes.
const (
	noteSection = ".note.stapsdt"
	baseSection = ".stapsdt.base"
	noteName    = "stapsdt"
	noteType    = 3
)

// Site is one call site of a probe.
type Site struct {
	Location uint64 // file offset of the probe's nop: the uprobe offset
	Addr     uint64 // link-time virtual address of the nop
	Args     []Arg  // nil if Err is set
	ArgsText string // the argument string as the note has it
	// Err is why ArgsText could not be parsed (e.g. an unsupported
	// operand); the site can still be traced without arguments.
	Err error
}

// BPFArgs returns the integer specs of the site's arguments.
func (s *Site) BPFArgs() ([]bpf.ArgSpec, error) {
	if s.Err != nil {
		return nil, s.Err
	}
	return BPFArgs(s.Args)
}

// Probe is a USDT probe, provider:name, with all its call sites (inlining and
// unrolling make several, whose arguments may live in different places).
// Args and Err are the first site's: attach at Sites[i].Location with
// Sites[i].Args unless UniformArgs.
type Probe struct {
	Provider, Name string
	Locations      []uint64 // file offsets of the call sites, in note order
	// Semaphore is the file offset of the probe's semaphore, for the
	// uprobe's ref_ctr_offset (link.UprobeOptions.RefCtrOffset); 0 if the
	// probe has none.
	Semaphore     uint64
	SemaphoreAddr uint64 // link-time virtual address of the semaphore, 0 if none
	Args          []Arg
	Err           error
	Sites         []Site // one per location, in the same order
}

// String returns "provider:name".
func (p *Probe) String() string { return p.Provider + ":" + p.Name }

// BPFArgs returns the integer specs of the first site's arguments; it fails
// if they could not be parsed or there are more than bpf.MaxArgs.
func (p *Probe) BPFArgs() ([]bpf.ArgSpec, error) {
	if p.Err != nil {
		return nil, fmt.Errorf("usdt: probe %s: %w", p, p.Err)
	}
	specs, err := BPFArgs(p.Args)
	if err != nil {
		return nil, fmt.Errorf("usdt: probe %s: %w", p, err)
	}
	return specs, nil
}

// UniformArgs reports whether every site locates its arguments the same way,
// so one spec serves all of them.
func (p *Probe) UniformArgs() bool {
	if len(p.Sites) == 0 {
		return true
	}
	for _, s := range p.Sites[1:] {
		if (s.Err == nil) != (p.Sites[0].Err == nil) || !sameArgs(s.Args, p.Sites[0].Args) {
			return false
		}
	}
	return true
}

func sameArgs(a, b []Arg) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		x.Text, y.Text = "", ""
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// Read returns the USDT probes in the .note.stapsdt of the ELF file at path,
// an x86-64 or arm64 one (its machine says which: the arguments' Arch), one
// per provider:name in order of appearance, with addresses made file
// offsets for uprobes; none and no error without the note. Arguments that
// cannot be parsed set their site's Err instead of failing Read.
func Read(path string) ([]Probe, error) {
	f, err := elfsym.Open(path)
	if err != nil {
		return nil, fmt.Errorf("usdt: %w", err)
	}
	defer f.Close()
	sec := f.Section(noteSection)
	if sec == nil {
		return nil, nil
	}
	arch, err := bpf.ArchOf(f.Machine)
	if err != nil {
		return nil, fmt.Errorf("usdt: %s: %w", path, err)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("usdt: %s: reading %s: %w", path, noteSection, err)
	}
	var base uint64
	haveBase := false
	if b := f.Section(baseSection); b != nil {
		base, haveBase = b.Addr, true
	}
	addrSize := 8
	if f.Class == elf.ELFCLASS32 {
		addrSize = 4
	}
	r := reader{f: f.File, path: path, arch: arch}

	var probes []Probe
	index := map[string]int{}
	bo := f.ByteOrder
	for off := 0; len(data)-off >= 12; {
		namesz := int(bo.Uint32(data[off:]))
		descsz := int(bo.Uint32(data[off+4:]))
		typ := bo.Uint32(data[off+8:])
		nameAt := off + 12
		descAt := nameAt + align4(namesz)
		next := descAt + align4(descsz)
		if namesz < 0 || descsz < 0 || descAt > len(data) || next > len(data) || descAt+descsz > len(data) {
			return nil, fmt.Errorf("usdt: %s: truncated note at offset %#x of %s", path, off, noteSection)
		}
		off = next
		if typ != noteType || strings.TrimRight(string(data[nameAt:nameAt+namesz]), "\x00") != noteName {
			continue
		}
		n, err := parseNote(data[descAt:descAt+descsz], bo, addrSize)
		if err != nil {
			return nil, fmt.Errorf("usdt: %s: %w", path, err)
		}
		if haveBase && n.base != 0 {
			// Prelink may have moved the image since the note was
			// written; .stapsdt.base moved with it.
			n.pc += base - n.base
			if n.sema != 0 {
				n.sema += base - n.base
			}
		}
		site, sema, err := r.site(n)
		if err != nil {
			return nil, fmt.Errorf("usdt: %s: probe %s:%s: %w", path, n.provider, n.name, err)
		}
		key := n.provider + ":" + n.name
		i, ok := index[key]
		if !ok {
			i = len(probes)
			index[key] = i
			probes = append(probes, Probe{Provider: n.provider, Name: n.name})
		}
		p := &probes[i]
		if containsLoc(p.Locations, site.Location) {
			continue
		}
		p.Locations = append(p.Locations, site.Location)
		p.Sites = append(p.Sites, site)
		if p.Semaphore == 0 && n.sema != 0 {
			p.Semaphore, p.SemaphoreAddr = sema, n.sema
		}
	}
	for i := range probes {
		probes[i].Args, probes[i].Err = probes[i].Sites[0].Args, probes[i].Sites[0].Err
	}
	return probes, nil
}

// uniq drops repeated strings, keeping the first of each.
func uniq(s []string) []string {
	seen := map[string]bool{}
	out := s[:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func containsLoc(locs []uint64, l uint64) bool {
	for _, x := range locs {
		if x == l {
			return true
		}
	}
	return false
}

func align4(n int) int { return (n + 3) &^ 3 }

// note is the descriptor of one stapsdt note.
type note struct {
	pc, base, sema       uint64
	provider, name, args string
}

// parseNote parses a stapsdt descriptor: pc, base and semaphore addresses,
// then provider\0name\0args\0.
func parseNote(desc []byte, bo binary.ByteOrder, addrSize int) (note, error) {
	var n note
	if len(desc) < 3*addrSize {
		return n, fmt.Errorf("stapsdt note of %d bytes is too short", len(desc))
	}
	addr := func(i int) uint64 {
		if addrSize == 4 {
			return uint64(bo.Uint32(desc[i*4:]))
		}
		return bo.Uint64(desc[i*8:])
	}
	n.pc, n.base, n.sema = addr(0), addr(1), addr(2)
	strs := strings.SplitN(string(desc[3*addrSize:]), "\x00", 4)
	if len(strs) < 3 {
		return n, errors.New("stapsdt note without provider, name and args strings")
	}
	n.provider, n.name, n.args = strs[0], strs[1], strs[2]
	if n.provider == "" || n.name == "" {
		return n, fmt.Errorf("stapsdt note at %#x has an empty provider or name", n.pc)
	}
	return n, nil
}

// reader resolves sites of one ELF file.
type reader struct {
	f    *elf.File
	path string
	arch *bpf.Arch             // the file's, from its machine
	syms map[string]elf.Symbol // defined symbols by name, loaded on first use
}

// site builds the Site of note n and the semaphore's file offset.
func (r *reader) site(n note) (Site, uint64, error) {
	loc, err := fileOffset(r.f, n.pc, true)
	if err != nil {
		return Site{}, 0, fmt.Errorf("call site: %w", err)
	}
	var sema uint64
	if n.sema != 0 {
		if sema, err = fileOffset(r.f, n.sema, false); err != nil {
			return Site{}, 0, fmt.Errorf("semaphore: %w", err)
		}
	}
	s := Site{Location: loc, Addr: n.pc, ArgsText: n.args}
	args, err := ParseArgs(r.arch, n.args)
	if err != nil {
		s.Err = err
		return s, sema, nil
	}
	// "-4@counter(%rip)" names a symbol: a uprobe sees %rip at the nop, so
	// it becomes the displacement from the site to the symbol;
	// "[x1, #:lo12:counter]" its address's low 12 bits.
	for i := range args {
		if err := r.resolve(&args[i], n.pc); err != nil {
			s.Err = fmt.Errorf("usdt: arg %d %q: %w", i+1, args[i].Text, err)
			return s, sema, nil
		}
	}
	s.Args = args
	return s, sema, nil
}

// resolve replaces a's symbol by what it stands for: sym(%rip) becomes a
// displacement from the site's %rip, sym@tpoff the variable's offset from
// the thread pointer, :lo12:sym the low 12 bits of its address, and any
// other symbol in a non-PIE executable its address. A symbol that cannot be
// resolved is an error saying why.
func (r *reader) resolve(a *Arg, pc uint64) error {
	if a.Sym == "" {
		return nil
	}
	if a.Mod == "lo12" {
		return r.lo12(a)
	}
	if a.Mod == "tpoff" {
		off, err := r.tpoff(a.Sym)
		if err != nil {
			return err
		}
		a.Off += off
		a.Sym, a.Mod = "", ""
		return nil
	}
	sym, ok := r.symbol(a.Sym)
	if !ok {
		return fmt.Errorf("symbol %q is not in the binary's symbol tables", a.Sym)
	}
	if elf.ST_TYPE(sym.Info) == elf.STT_TLS {
		return fmt.Errorf("%q is a thread-local variable: its address is not a link-time constant", a.Sym)
	}
	v := sym.Value
	switch {
	case (a.Kind == Mem || a.Kind == SIB) && a.Reg == "rip":
		a.Off += int64(v - pc)
	case r.f.Type == elf.ET_EXEC:
		a.Off += int64(v)
	default:
		return fmt.Errorf("the address of %q is not known before a position-independent binary is loaded", a.Sym)
	}
	a.Sym = ""
	return nil
}

// lo12 resolves the offset ":lo12:sym+addend" of an arm64 memory operand,
// whose base register holds the 4 KiB page of sym (adrp): the low 12 bits of
// sym+addend. Those are the same at run time in a PIE or a library, whose
// load bias is a multiple of the page size.
func (r *reader) lo12(a *Arg) error {
	sym, ok := r.symbol(a.Sym)
	if !ok {
		return fmt.Errorf("symbol %q is not in the binary's symbol tables", a.Sym)
	}
	if elf.ST_TYPE(sym.Info) == elf.STT_TLS {
		return fmt.Errorf(":lo12:%s: %q is a thread-local variable, whose address is not a link-time constant", a.Sym, a.Sym)
	}
	a.Off = int64((sym.Value + uint64(a.Off)) & 0xfff)
	a.Sym, a.Mod = "", ""
	return nil
}

// tpoff returns the offset of the thread-local variable name from the
// thread pointer (%fs base), for the main executable's TLS block, which
// x86-64 (TLS variant II) places just below the thread pointer: the
// variable's offset in the PT_TLS image minus the block size rounded up
// to its alignment, as the linker computes @tpoff and ld.so lays it out.
func (r *reader) tpoff(name string) (int64, error) {
	sym, ok := r.symbol(name)
	if !ok {
		return 0, fmt.Errorf("thread-local symbol %q is not in the binary's symbol tables", name)
	}
	if elf.ST_TYPE(sym.Info) != elf.STT_TLS {
		return 0, fmt.Errorf("%s@tpoff: %q is not a thread-local variable", name, name)
	}
	var tls *elf.Prog
	interp := false
	for _, p := range r.f.Progs {
		switch p.Type {
		case elf.PT_TLS:
			tls = p
		case elf.PT_INTERP:
			interp = true
		}
	}
	if tls == nil {
		return 0, fmt.Errorf("%s@tpoff: the binary has no PT_TLS segment", name)
	}
	if r.f.Type != elf.ET_EXEC && !interp {
		return 0, fmt.Errorf("%s@tpoff in a shared library: only the main program's TLS offsets are fixed at link time", name)
	}
	align := max(tls.Align, 1)
	first := -tls.Vaddr & (align - 1) // glibc's l_tls_firstbyte_offset adjustment; 0 when aligned
	block := (tls.Memsz-first+align-1)/align*align + first
	return int64(sym.Value) - int64(block), nil
}

func (r *reader) symbol(name string) (elf.Symbol, bool) {
	if r.syms == nil {
		r.syms = map[string]elf.Symbol{}
		syms, _ := r.f.Symbols()
		dyn, _ := r.f.DynamicSymbols()
		for _, s := range append(syms, dyn...) {
			if s.Section == elf.SHN_UNDEF || s.Name == "" {
				continue
			}
			switch elf.ST_TYPE(s.Info) {
			case elf.STT_SECTION, elf.STT_FILE:
				continue
			}
			if _, dup := r.syms[s.Name]; !dup {
				r.syms[s.Name] = s
			}
		}
	}
	s, ok := r.syms[name]
	return s, ok
}

// fileOffset translates a virtual address to a file offset through the
// PT_LOAD segment holding it (an executable one if exec).
func fileOffset(f *elf.File, addr uint64, exec bool) (uint64, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || exec && p.Flags&elf.PF_X == 0 {
			continue
		}
		if p.Vaddr <= addr && addr < p.Vaddr+p.Filesz {
			return addr - p.Vaddr + p.Off, nil
		}
	}
	kind := "a"
	if exec {
		kind = "an executable"
	}
	return 0, fmt.Errorf("address %#x is in no file-backed part of %s PT_LOAD segment", addr, kind)
}

// Find returns the probe called name, of provider if that is not empty. A
// name found in several providers, or no match, is an error naming the
// candidates.
func Find(probes []Probe, provider, name string) (*Probe, error) {
	want := name
	if provider != "" {
		want = provider + ":" + name
	}
	var found []int
	for i := range probes {
		if probes[i].Name == name && (provider == "" || probes[i].Provider == provider) {
			found = append(found, i)
		}
	}
	switch len(found) {
	case 1:
		return &probes[found[0]], nil
	case 0:
		if len(probes) == 0 {
			return nil, fmt.Errorf("usdt: no probe %s: the binary has no USDT probes", want)
		}
		full := make([]string, len(probes))
		byName := map[string][]string{}
		names := make([]string, 0, len(probes))
		for i := range probes {
			full[i] = probes[i].String()
			byName[probes[i].Name] = append(byName[probes[i].Name], full[i])
			names = append(names, probes[i].Name)
		}
		// The name under another provider first, then close full names,
		// then close names under any provider.
		sugg := slices.Clone(byName[name])
		sugg = append(sugg, suggest.Closest(want, full, 5)...)
		for _, n := range suggest.Closest(name, names, 5) {
			sugg = append(sugg, byName[n]...)
		}
		sugg = uniq(sugg)
		if len(sugg) > 5 {
			sugg = sugg[:5]
		}
		if len(sugg) == 0 && len(full) <= 10 {
			return nil, fmt.Errorf("usdt: no probe %s (the binary has %s)", want, strings.Join(full, ", "))
		}
		return nil, fmt.Errorf("usdt: no probe %s%s", want, suggest.Hint(sugg))
	}
	full := make([]string, len(found))
	for i, j := range found {
		full[i] = probes[j].String()
	}
	return nil, fmt.Errorf("usdt: probe name %s is ambiguous: %s; name the provider", name, strings.Join(full, ", "))
}
