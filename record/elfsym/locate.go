package elfsym

import (
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/bpftape/bpftape/record/suggest"
)

// Location is where a uprobe target (SYMBOL, SYMBOL+OFFSET or ADDRESS)
// resolves in a binary.
type Location struct {
	Offset uint64 // file offset: what the kernel's uprobe takes
	Addr   uint64 // link-time virtual address, as nm and objdump print it
	// Func is the function that contains Addr ("" if no symbol covers
	// it) and FuncOff Addr's offset in it: 0 at the function's entry.
	Func    string
	FuncOff uint64
	// DebugFile is the separate debug file whose symbol table named the
	// function, "" when the binary's own .symtab or .dynsym did.
	DebugFile string
	// Unverified says why Addr could not be checked to start an
	// instruction ("" when it was, or when it is a function's entry).
	Unverified string
	// IFunc reports that Func is an indirect function (STT_GNU_IFUNC):
	// its code is the resolver, which the dynamic linker calls once to
	// pick the implementation that calls then run (glibc's strlen picks
	// __strlen_avx2 or another: Impls).
	IFunc bool
	// Impls are the functions that an IFunc's resolver may pick, as glibc
	// names them (__NAME_*), when the binary or its debug file lists them.
	Impls []string
	// Resolves names the indirect function whose resolver Func is, when
	// Func is an ordinary function at an indirect function's address
	// (glibc's memchr_ifunc, a C resolver named in ifunc("...")): Impls
	// are then that function's.
	Resolves string
}

// Entry reports whether the location is a function's first instruction.
func (l *Location) Entry() bool { return l.Func != "" && l.FuncOff == 0 }

// Locate resolves a uprobe target in the ELF file at path: a function
// ("malloc", "memcpy@GLIBC_2.2.5") found in .symtab, .dynsym or the separate
// debug file (FindDebugFile in dirs), SYMBOL+OFFSET ("main+4"), or a
// link-time virtual address ("0x1139", as nm and objdump print it:
// bpftrace's convention). An offset or address inside a function must start
// an instruction, as bpftrace checks, since a breakpoint inside one would
// corrupt the traced program; a missing symbol is an error naming close ones.
func Locate(path, target string, dirs []string) (*Location, error) {
	if target == "" {
		return nil, errors.New("elfsym: empty symbol")
	}
	f, file, err := openELF(path, FollowLinks)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st := &symtabs{path: path, f: f, dirs: dirs}

	if c := target[0]; c >= '0' && c <= '9' {
		addr, err := strconv.ParseUint(target, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("elfsym: %q is neither a symbol nor an address (0x1139)", target)
		}
		return st.locateAddr(addr, target)
	}
	name, off := target, uint64(0)
	hasOff := false
	if i := strings.LastIndexByte(target, '+'); i > 0 && i < len(target)-1 {
		if v, err := strconv.ParseUint(target[i+1:], 0, 64); err == nil {
			name, off, hasOff = target[:i], v, true
		} else if c := target[i+1]; c >= '0' && c <= '9' {
			return nil, fmt.Errorf("elfsym: bad offset %q in %q (want SYMBOL+N, N decimal or 0x hex)", target[i+1:], target)
		}
	}
	sym, debug, err := st.lookup(name)
	if err != nil {
		return nil, err
	}
	if hasOff && sym.Size > 0 && off >= sym.Size {
		return nil, fmt.Errorf("elfsym: %s: offset %#x is past the end of %s (%d bytes)", target, off, name, sym.Size)
	}
	loc := &Location{Addr: sym.Value + off, Func: name, FuncOff: off, DebugFile: debug}
	if loc.Offset, err = FileOffset(f, loc.Addr); err != nil {
		return nil, fmt.Errorf("elfsym: %s: %s: %w", path, target, err)
	}
	if off > 0 {
		if err := checkBoundary(f, sym, loc); err != nil {
			return nil, fmt.Errorf("elfsym: %s: %w", path, err)
		}
	}
	st.ifunc(loc, sym)
	return loc, nil
}

// ifunc sets loc's IFunc, Resolves and Impls from sym, the function it is
// in.
func (st *symtabs) ifunc(loc *Location, sym elf.Symbol) {
	if loc.IFunc = elf.ST_TYPE(sym.Info) == sttGNUIFunc; loc.IFunc {
		loc.Impls = st.impls(baseName(loc.Func))
		return
	}
	if loc.Resolves = st.resolves(sym.Value, loc.DebugFile != ""); loc.Resolves != "" {
		loc.Impls = st.impls(loc.Resolves)
	}
}

// resolves returns the indirect function whose address is addr, the
// address of an ordinary function, which is then its resolver; "" if
// none. The binary's own symbols name it (glibc's IFUNCs are in .dynsym);
// the debug file's too when debug is set (the function was found there)
// or they are read already, so that locating an ordinary function does
// not read the debug file. Of its names (glibc's memchr, __memchr,
// __GI_memchr), the one with the fewest leading underscores, then the
// shortest.
func (st *symtabs) resolves(addr uint64, debug bool) string {
	if debug {
		st.loadDebug()
	}
	if st.ifuncAt == nil {
		st.ifuncAt = ifuncNames(st.own)
	}
	if st.dbg != nil && st.dbgIfuncAt == nil {
		st.dbgIfuncAt = ifuncNames(st.dbg)
	}
	best := st.ifuncAt[addr]
	if n := st.dbgIfuncAt[addr]; n != "" && (best == "" || publicName(n, best)) {
		best = n
	}
	return best
}

// ifuncNames maps the address of each indirect function of syms to its
// most public name (publicName).
func ifuncNames(syms []elf.Symbol) map[uint64]string {
	at := map[uint64]string{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != sttGNUIFunc || s.Section == elf.SHN_UNDEF {
			continue
		}
		n := baseName(s.Name)
		if best, ok := at[s.Value]; n != "" && (!ok || publicName(n, best)) {
			at[s.Value] = n
		}
	}
	return at
}

// publicName reports whether name a reads as more public than b: fewer
// leading underscores, then shorter, then first in order.
func publicName(a, b string) bool {
	ua, ub := len(a)-len(strings.TrimLeft(a, "_")), len(b)-len(strings.TrimLeft(b, "_"))
	if ua != ub {
		return ua < ub
	}
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// impls lists the functions named __NAME_* (glibc's implementations of
// an indirect function NAME) in the binary's symbols or its debug file's,
// but for helpers named __NAME_ifunc and the implementations of another
// indirect function whose name, leading underscores aside, extends NAME
// (__strcasecmp_l_avx2 is strcasecmp_l's, __memmove_chk_erms
// __memmove_chk's, not memmove's).
func (st *symtabs) impls(name string) []string {
	if out, ok := st.implsOf[name]; ok {
		return out
	}
	out := st.findImpls(name)
	if st.implsOf == nil {
		st.implsOf = map[string][]string{}
	}
	st.implsOf[name] = out
	return out
}

// findImpls is impls, not remembered.
func (st *symtabs) findImpls(name string) []string {
	st.loadDebug()
	syms := append(slices.Clone(st.own), st.dbg...)
	// __memmove_chk's are __memmove_chk_*; glibc's internal alias
	// __GI_memchr is memchr.
	base := strings.TrimPrefix(strings.TrimPrefix(name, "__GI_"), "__")
	// Another indirect function's name that extends this one's, as
	// strcasecmp_l does strcasecmp's, claims the names it prefixes.
	var longer []string
	for _, s := range syms {
		if n := strings.TrimPrefix(baseName(s.Name), "__"); elf.ST_TYPE(s.Info) == sttGNUIFunc && strings.HasPrefix(n, base+"_") {
			longer = append(longer, "__"+n+"_") // memmove_chk's __memmove_chk_erms
		}
	}
	var out []string
	for _, s := range syms {
		n := baseName(s.Name)
		if !isFunc(s) || elf.ST_TYPE(s.Info) != elf.STT_FUNC || !strings.HasPrefix(n, "__"+base+"_") ||
			strings.HasSuffix(n, "_ifunc") || slices.Contains(out, n) ||
			slices.ContainsFunc(longer, func(p string) bool { return strings.HasPrefix(n, p) }) {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// locateAddr resolves a virtual address, naming the function around it.
func (st *symtabs) locateAddr(addr uint64, target string) (*Location, error) {
	off, err := FileOffset(st.f, addr)
	if err != nil {
		return nil, fmt.Errorf("elfsym: %s: %w (addresses are link-time virtual addresses, as nm and objdump print them)", st.path, err)
	}
	loc := &Location{Addr: addr, Offset: off}
	sym, debug, ok := st.covering(addr)
	if !ok {
		loc.Unverified = "no function symbol covers it"
		return loc, nil
	}
	loc.Func, loc.FuncOff, loc.DebugFile = baseName(sym.Name), addr-sym.Value, debug
	st.ifunc(loc, sym)
	if loc.FuncOff > 0 {
		if err := checkBoundary(st.f, sym, loc); err != nil {
			return nil, fmt.Errorf("elfsym: %s: %w", st.path, err)
		}
	}
	return loc, nil
}

// symtabs looks symbols up in a binary, then in its debug file.
type symtabs struct {
	path string
	f    *elf.File
	dirs []string

	own, dbg []elf.Symbol
	loaded   bool
	// The most public name of the indirect function at each address, of
	// own and of dbg (resolves), and impls' answers by name.
	ifuncAt, dbgIfuncAt map[uint64]string
	implsOf             map[string][]string
	debugPath           string
	debugErr            error
	debugTried          bool
}

func (st *symtabs) load() error {
	if st.loaded {
		return nil
	}
	syms, err := allSymbols(st.f)
	if err != nil {
		return fmt.Errorf("elfsym: %s: %w", st.path, err)
	}
	st.own, st.loaded = syms, true
	return nil
}

// loadDebug reads the debug file's symbols once.
func (st *symtabs) loadDebug() {
	if st.debugTried {
		return
	}
	st.debugTried = true
	file, p, err := OpenDebugFile(st.path, st.dirs)
	if err != nil {
		st.debugErr = err
		return
	}
	defer file.Close()
	df, err := newELF(file)
	if err != nil {
		st.debugErr = fmt.Errorf("elfsym: debug file %s: %w", p, err)
		return
	}
	syms, err := df.Symbols()
	if err != nil {
		st.debugErr = fmt.Errorf("elfsym: debug file %s: %w", p, err)
		return
	}
	st.debugPath, st.dbg = p, syms
}

// hasSymtab reports whether the binary keeps its full symbol table.
func (st *symtabs) hasSymtab() bool {
	s := st.f.SectionByType(elf.SHT_SYMTAB)
	return s != nil && s.Size > 0
}

// lookup finds function name in the binary's symbols, then in the debug
// file's; it returns the symbol and the debug file it came from.
func (st *symtabs) lookup(name string) (elf.Symbol, string, error) {
	if err := st.load(); err != nil {
		return elf.Symbol{}, "", err
	}
	sym, found, err := pickFunc(st.own, name, st.path)
	if found || err != nil {
		return sym, "", err
	}
	st.loadDebug()
	if st.dbg != nil {
		sym, found, err := pickFunc(st.dbg, name, st.debugPath)
		if found || err != nil {
			return sym, st.debugPath, err
		}
	}
	// Not found: name close ones and say what was searched.
	want, _, _ := splitVersion(name)
	var names []string
	for _, s := range append(slices.Clone(st.own), st.dbg...) {
		if isFunc(s) {
			names = append(names, baseName(s.Name))
		}
	}
	hint := suggest.Hint(suggest.Closest(want, names, 5))
	var note string
	switch {
	case st.dbg != nil:
		note = fmt.Sprintf(" (searched its symbols and those of its debug file %s)", st.debugPath)
	case !st.hasSymtab():
		note = " (it is stripped: no .symtab"
		var derr *DebugFileError
		if errors.As(st.debugErr, &derr) && derr.Mismatch() {
			note += "; " + strings.TrimPrefix(derr.Error(), "elfsym: ") + ")"
		} else if st.debugErr != nil {
			note += "; " + strings.TrimPrefix(st.debugErr.Error(), "elfsym: ") +
				"; install its debug symbols or name their directory with --debug-dir or $" + DebugDirsEnv + ")"
		} else {
			note += ")"
		}
	}
	if len(names) == 0 && note == "" {
		note = " (it has no function symbols)"
	}
	return elf.Symbol{}, "", fmt.Errorf("elfsym: no function %q in %s%s%s", name, st.path, note, hint)
}

// covering returns the function symbol whose [value, value+size) holds
// addr, from the binary or its debug file.
func (st *symtabs) covering(addr uint64) (elf.Symbol, string, bool) {
	if err := st.load(); err != nil {
		return elf.Symbol{}, "", false
	}
	find := func(syms []elf.Symbol) (elf.Symbol, bool) {
		var best elf.Symbol
		ok := false
		for _, s := range syms {
			if isFunc(s) && s.Value <= addr && (addr < s.Value+s.Size || s.Size == 0 && addr == s.Value) {
				// Prefer a global name, then the entry closest to addr.
				if !ok || s.Value > best.Value || s.Value == best.Value && elf.ST_BIND(s.Info) == elf.STB_GLOBAL {
					best, ok = s, true
				}
			}
		}
		return best, ok
	}
	if s, ok := find(st.own); ok {
		return s, "", true
	}
	st.loadDebug()
	if s, ok := find(st.dbg); ok {
		return s, st.debugPath, true
	}
	return elf.Symbol{}, "", false
}

// pickFunc chooses the function called name (optionally "name@VERSION")
// among syms: the default version unless one is named; static functions of
// the same name in several files are ambiguous unless exactly one
// definition is global.
func pickFunc(syms []elf.Symbol, name, path string) (elf.Symbol, bool, error) {
	want, wantVersion, _ := splitVersion(name)
	type cand struct {
		sym            elf.Symbol
		global, hidden bool
	}
	var cands []cand
	for _, s := range syms {
		if !isFunc(s) {
			continue
		}
		n, version, hidden := splitVersion(s.Name)
		if s.HasVersion {
			version, hidden = s.Version, s.VersionIndex.IsHidden()
		}
		if n != want || wantVersion != "" && version != wantVersion {
			continue
		}
		b := elf.ST_BIND(s.Info)
		cands = append(cands, cand{s, b == elf.STB_GLOBAL || b == elf.STB_WEAK, hidden})
	}
	if wantVersion == "" && slices.ContainsFunc(cands, func(c cand) bool { return !c.hidden }) {
		cands = slices.DeleteFunc(cands, func(c cand) bool { return c.hidden })
	}
	var all, global []elf.Symbol
	addOnce := func(list []elf.Symbol, s elf.Symbol) []elf.Symbol {
		for i, x := range list {
			if x.Value == s.Value {
				if x.Size == 0 {
					list[i].Size = s.Size
				}
				return list
			}
		}
		return append(list, s)
	}
	for _, c := range cands {
		all = addOnce(all, c.sym)
		if c.global {
			global = addOnce(global, c.sym)
		}
	}
	switch {
	case len(all) == 1:
		return all[0], true, nil
	case len(global) == 1:
		return global[0], true, nil
	case len(all) == 0:
		return elf.Symbol{}, false, nil
	}
	addrs := make([]string, len(all))
	for i, s := range all {
		addrs[i] = fmt.Sprintf("%#x", s.Value)
	}
	return elf.Symbol{}, false, fmt.Errorf("elfsym: function %q is defined at %d addresses in %s (%s): name one by address",
		name, len(all), path, strings.Join(addrs, ", "))
}

// maxDecode bounds how far into a function checkBoundary decodes.
const maxDecode = 1 << 20

// checkBoundary checks that loc.Addr starts an instruction of the function
// sym: on arm64, whose instructions are all 4 bytes, that it is a multiple
// of 4 bytes into the function; on x86-64 by decoding the function's
// machine code from its entry. Code it cannot decode, or of another
// machine, leaves loc.Unverified set instead of failing.
func checkBoundary(f *elf.File, sym elf.Symbol, loc *Location) error {
	switch f.Machine {
	case elf.EM_AARCH64:
		return checkA64Boundary(sym, loc)
	case elf.EM_X86_64:
	default:
		loc.Unverified = fmt.Sprintf("instructions of %v code are not decoded", f.Machine)
		return nil
	}
	if loc.FuncOff > maxDecode {
		loc.Unverified = "too far into the function to decode"
		return nil
	}
	start, err := FileOffset(f, sym.Value)
	if err != nil {
		return err
	}
	code := make([]byte, loc.FuncOff+16)
	n, _ := readAtFile(f, code, start)
	code = code[:n]
	pos := uint64(0)
	for pos < loc.FuncOff {
		l, err := instLen(code[pos:])
		if err != nil {
			loc.Unverified = fmt.Sprintf("cannot decode the instruction at %s+%#x: %v", loc.Func, pos, err)
			return nil
		}
		if pos+uint64(l) > loc.FuncOff {
			return fmt.Errorf("%s+%#x is inside the %d-byte instruction at %s+%#x, not at an instruction boundary "+
				"(a breakpoint there would corrupt the program): use %s+%#x or %s+%#x",
				loc.Func, loc.FuncOff, l, loc.Func, pos, loc.Func, pos, loc.Func, pos+uint64(l))
		}
		pos += uint64(l)
	}
	return nil
}

// a64InsnLen is the length of every arm64 (A64) instruction.
const a64InsnLen = 4

// checkA64Boundary checks that loc.FuncOff is a multiple of 4, which
// starts an instruction of arm64 code (A64 has no other length; the
// function itself starts 4-byte aligned).
func checkA64Boundary(sym elf.Symbol, loc *Location) error {
	if sym.Value%a64InsnLen != 0 {
		loc.Unverified = fmt.Sprintf("%s starts at %#x, which is not 4-byte aligned as arm64 code is", loc.Func, sym.Value)
		return nil
	}
	if loc.FuncOff%a64InsnLen == 0 {
		return nil
	}
	lo := loc.FuncOff &^ (a64InsnLen - 1)
	use := fmt.Sprintf("%s+%#x or %s+%#x", loc.Func, lo, loc.Func, lo+a64InsnLen)
	if sym.Size > 0 && lo+a64InsnLen >= sym.Size {
		use = fmt.Sprintf("%s+%#x", loc.Func, lo)
	}
	return fmt.Errorf("%s+%#x is not at an instruction boundary: arm64 instructions are 4 bytes, so an offset into a function must be a multiple of 4 "+
		"(a breakpoint inside an instruction would corrupt the program): use %s", loc.Func, loc.FuncOff, use)
}

// instLen is the length of the x86-64 instruction at the start of code.
func instLen(code []byte) (int, error) {
	// ENDBR64/ENDBR32 (f3 0f 1e fa/fb), which starts functions built with
	// -fcf-protection: x86asm takes its f3 for a lone REP prefix.
	if len(code) >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && (code[3] == 0xfa || code[3] == 0xfb) {
		return 4, nil
	}
	inst, err := x86asm.Decode(code, 64)
	if err != nil {
		return 0, err
	}
	if inst.Op == 0 || inst.Len == 0 {
		return 0, errors.New("unknown instruction")
	}
	return inst.Len, nil
}

// readAtFile reads len(buf) bytes of f's file from offset off, through the
// PT_LOAD segment that holds them.
func readAtFile(f *elf.File, buf []byte, off uint64) (int, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || off < p.Off || off >= p.Off+p.Filesz {
			continue
		}
		n := min(uint64(len(buf)), p.Off+p.Filesz-off)
		return p.ReadAt(buf[:n], int64(off-p.Off))
	}
	return 0, fmt.Errorf("file offset %#x is in no PT_LOAD segment", off)
}

// Func is a function symbol of a binary, for listings.
type Func struct {
	Name string
	Addr uint64 // link-time virtual address
	Size uint64
	// IFunc, Resolves and Impls are as in Location: the symbol is an
	// indirect function, whose address is its resolver's, or the
	// resolver of the indirect function Resolves.
	IFunc    bool
	Resolves string
	Impls    []string
}

// Functions returns the functions defined in the ELF file at path, sorted
// by name, one per name (versions stripped): from its .symtab and .dynsym,
// and from its separate debug file too when the binary is stripped and one
// is found (its path is returned then).
func Functions(path string, dirs []string) ([]Func, string, error) {
	f, file, err := openELF(path, FollowLinks)
	if err != nil {
		return nil, "", err
	}
	defer file.Close()
	st := &symtabs{path: path, f: f, dirs: dirs}
	if err := st.load(); err != nil {
		return nil, "", err
	}
	syms := st.own
	if !st.hasSymtab() {
		st.loadDebug()
		syms = append(slices.Clone(syms), st.dbg...)
	}
	byName := map[string]Func{}
	ifuncs := map[string]bool{}
	ifuncAddrs := map[uint64]bool{}
	for _, s := range syms {
		if !isFunc(s) {
			continue
		}
		n := baseName(s.Name)
		if n == "" {
			continue // a nameless symbol cannot be probed by name
		}
		if elf.ST_TYPE(s.Info) == sttGNUIFunc {
			ifuncs[n], ifuncAddrs[s.Value] = true, true
		}
		if old, ok := byName[n]; ok && (old.Size != 0 || s.Size == 0) {
			continue
		}
		byName[n] = Func{Name: n, Addr: s.Value, Size: s.Size}
	}
	out := make([]Func, 0, len(byName))
	for _, fn := range byName {
		if fn.IFunc = ifuncs[fn.Name]; fn.IFunc {
			fn.Impls = st.impls(fn.Name)
		} else if ifuncAddrs[fn.Addr] {
			if fn.Resolves = st.resolves(fn.Addr, st.dbg != nil); fn.Resolves != "" {
				fn.Impls = st.impls(fn.Resolves)
			}
		}
		out = append(out, fn)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, st.debugPath, nil
}
