package ctypes

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A small interpreter of the arm64 assembly gcc -S writes for the
// workload's straight-line main and return-value functions: enough of
// mov, movk, bfi, lsr, add, adrp, fmov, loads and stores to know, at each
// bl, what the caller put in each x and v register and on its stack, and
// at a ret, what a function returns where. It is the tests' ground truth
// for AAPCS64, independent of the placement code: gcc chose the registers.

// a64Insn is one instruction of the assembly.
type a64Insn struct {
	op   string
	args []string
	text string
}

// a64Prog is a parsed assembly file: its instructions, where each label
// is among them, the bytes of its data sections, and where each label is
// in its section.
type a64Prog struct {
	insns  []a64Insn
	labels map[string]int
	data   map[string][]byte // by section
	syms   map[string]a64Ptr // region: the section
}

var a64Label = regexp.MustCompile(`^([A-Za-z_.$][\w.$]*):`)

// parseA64 parses gcc's assembly output.
func parseA64(t *testing.T, src string) *a64Prog {
	p := &a64Prog{labels: map[string]int{}, data: map[string][]byte{}, syms: map[string]a64Ptr{}}
	section := ".text"
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		if m := a64Label.FindStringSubmatch(line); m != nil {
			p.labels[m[1]] = len(p.insns)
			p.syms[m[1]] = a64Ptr{section, int64(len(p.data[section]))}
			line = line[len(m[0]):]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		op, rest, _ := strings.Cut(line, "\t")
		if op == line {
			op, rest, _ = strings.Cut(line, " ")
		}
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(op, ".") {
			section = p.directive(t, section, op, rest)
			continue
		}
		p.insns = append(p.insns, a64Insn{op: op, args: splitArgs(rest), text: line})
	}
	return p
}

// directive interprets a directive in section: data it adds to the
// section, a label it sets, or a change of section, which it returns.
func (p *a64Prog) directive(t *testing.T, section, op, rest string) string {
	sizes := map[string]int{".byte": 1, ".hword": 2, ".2byte": 2, ".word": 4, ".4byte": 4, ".xword": 8, ".8byte": 8, ".dword": 8}
	if n, ok := sizes[op]; ok {
		for _, f := range strings.Split(rest, ",") {
			v, err := strconv.ParseInt(strings.TrimSpace(f), 0, 64)
			if err != nil {
				u, uerr := strconv.ParseUint(strings.TrimSpace(f), 0, 64)
				if uerr != nil {
					t.Logf("%s %s: not a number; taken as 0", op, rest)
				}
				v = int64(u)
			}
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], uint64(v))
			p.data[section] = append(p.data[section], b[:n]...)
		}
		return section
	}
	pad := func(align int) {
		for align > 0 && len(p.data[section])%align != 0 {
			p.data[section] = append(p.data[section], 0)
		}
	}
	switch op {
	case ".text", ".data", ".bss":
		return op
	case ".section":
		name, _, _ := strings.Cut(rest, ",")
		return strings.TrimSpace(name)
	case ".align", ".p2align":
		n, _ := strconv.Atoi(strings.TrimSpace(strings.Split(rest, ",")[0]))
		pad(1 << n)
	case ".balign":
		n, _ := strconv.Atoi(strings.TrimSpace(strings.Split(rest, ",")[0]))
		pad(n)
	case ".set":
		// .set .LANCHOR0,. + 0: a label at the section's current end.
		name, expr, _ := strings.Cut(rest, ",")
		if e := strings.ReplaceAll(expr, " ", ""); strings.HasPrefix(e, ".+") || e == "." {
			k, _ := strconv.ParseInt(strings.TrimPrefix(e, ".+"), 0, 64)
			p.syms[strings.TrimSpace(name)] = a64Ptr{section, int64(len(p.data[section])) + k}
		}
	case ".ascii", ".string":
		s, err := strconv.Unquote(rest)
		if err != nil {
			t.Fatalf("%s %s: %v", op, rest, err)
		}
		p.data[section] = append(p.data[section], s...)
		if op == ".string" {
			p.data[section] = append(p.data[section], 0)
		}
	case ".zero":
		n, _ := strconv.Atoi(rest)
		p.data[section] = append(p.data[section], make([]byte, n)...)
	}
	return section
}

// splitArgs splits operands at the commas outside brackets.
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if s = strings.TrimSpace(s[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// a64Ptr is an address: an offset in a region (the stack "sp" as it was
// at the function's entry, a data label, "x8" the caller's result memory).
type a64Ptr struct {
	region string
	off    int64
}

// a64Val is a register's value: its known bits, or an address.
type a64Val struct {
	bits, known uint64
	ptr         *a64Ptr
}

// a64Byte is a known byte of memory, and the generation (the number of
// the call it was written before) it was written in.
type a64Byte struct {
	b   byte
	gen int
}

type a64State struct {
	x    [31]a64Val
	sp   a64Val
	v    [32][16]byte
	vk   [32][16]bool
	mem  map[string]map[int64]a64Byte
	ptrs map[string]map[int64]a64Ptr // 8-byte addresses stored in memory
	pgen map[string]map[int64]int
	gen  int
}

// a64Call is the state at a bl (or, for a return-value function, at its
// ret): what checks compare a placement with.
type a64Call struct {
	callee string
	st     *a64State
}

func (st *a64State) clone() *a64State {
	c := *st
	c.mem, c.ptrs, c.pgen = map[string]map[int64]a64Byte{}, map[string]map[int64]a64Ptr{}, map[string]map[int64]int{}
	for r, m := range st.mem {
		c.mem[r] = map[int64]a64Byte{}
		for k, v := range m {
			c.mem[r][k] = v
		}
	}
	for r, m := range st.ptrs {
		c.ptrs[r], c.pgen[r] = map[int64]a64Ptr{}, map[int64]int{}
		for k, v := range m {
			c.ptrs[r][k], c.pgen[r][k] = v, st.pgen[r][k]
		}
	}
	return &c
}

// asmReg is a register operand: kind 'x' or 'w' (n 31 is sp, 32 the zero
// register), or 'b', 'h', 's', 'd', 'q' (a v register's low bytes).
type asmReg struct {
	kind byte
	n    int
}

func (r asmReg) fp() bool { return strings.IndexByte("bhsdqv", r.kind) >= 0 }
func (r asmReg) width() int {
	return map[byte]int{'x': 8, 'w': 4, 'b': 1, 'h': 2, 's': 4, 'd': 8, 'q': 16, 'v': 16}[r.kind]
}

func parseReg(s string) (asmReg, bool) {
	switch s {
	case "sp":
		return asmReg{'x', 31}, true
	case "wsp":
		return asmReg{'w', 31}, true
	case "xzr":
		return asmReg{'x', 32}, true
	case "wzr":
		return asmReg{'w', 32}, true
	}
	if i := strings.IndexByte(s, '.'); i > 0 && s[0] == 'v' {
		s = s[:i] // v0.16b: the whole register
	}
	if len(s) < 2 || strings.IndexByte("xwbhsdqv", s[0]) < 0 {
		return asmReg{}, false
	}
	n, err := strconv.Atoi(s[1:])
	if err != nil || n < 0 || n > 31 || s[0] != 'v' && strings.IndexByte("xw", s[0]) >= 0 && n > 30 {
		return asmReg{}, false
	}
	return asmReg{s[0], n}, true
}

func parseImm(s string) (int64, bool) {
	s = strings.TrimPrefix(s, "#")
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		u, uerr := strconv.ParseUint(s, 0, 64)
		return int64(u), uerr == nil
	}
	return v, true
}

// gpr reads an x or w register.
func (st *a64State) gpr(r asmReg) a64Val {
	var v a64Val
	switch r.n {
	case 31:
		v = st.sp
	case 32:
		v = a64Val{known: ^uint64(0)}
	default:
		v = st.x[r.n]
	}
	if r.kind == 'w' {
		if v.ptr != nil {
			return a64Val{known: 0xffffffff00000000}
		}
		v.bits &= 0xffffffff
		v.known |= 0xffffffff00000000
	}
	return v
}

// setGPR writes an x or w register (a w write clears the upper half).
func (st *a64State) setGPR(r asmReg, v a64Val) {
	if r.kind == 'w' {
		if v.ptr != nil {
			v = a64Val{}
		}
		v.bits &= 0xffffffff
		v.known |= 0xffffffff00000000
	}
	switch r.n {
	case 31:
		st.sp = v
	case 32:
	default:
		st.x[r.n] = v
	}
}

// fpBytes reads a v register's low bytes.
func (st *a64State) fpBytes(r asmReg) ([]byte, []bool) {
	n := r.width()
	return append([]byte(nil), st.v[r.n][:n]...), append([]bool(nil), st.vk[r.n][:n]...)
}

// setFP writes a v register's low bytes and clears the rest.
func (st *a64State) setFP(r asmReg, b []byte, k []bool) {
	st.v[r.n], st.vk[r.n] = [16]byte{}, [16]bool{}
	for i := range 16 {
		st.vk[r.n][i] = true
		if i < len(b) {
			st.v[r.n][i], st.vk[r.n][i] = b[i], k[i]
		}
	}
}

// valBytes are a gpr value's low n bytes.
func valBytes(v a64Val, n int) ([]byte, []bool) {
	b, k := make([]byte, n), make([]bool, n)
	for i := range n {
		if v.ptr == nil && i < 8 {
			b[i] = byte(v.bits >> (8 * i))
			k[i] = v.known>>(8*i)&0xff == 0xff
		}
	}
	return b, k
}

func bytesVal(b []byte, k []bool) a64Val {
	var v a64Val
	for i := range min(len(b), 8) {
		v.bits |= uint64(b[i]) << (8 * i)
		if k[i] {
			v.known |= 0xff << (8 * i)
		}
	}
	for i := len(b); i < 8; i++ {
		v.known |= 0xff << (8 * i) // zero-extended
	}
	return v
}

func (st *a64State) store(a a64Ptr, b []byte, k []bool, ptr *a64Ptr) {
	if st.mem[a.region] == nil {
		st.mem[a.region] = map[int64]a64Byte{}
		st.ptrs[a.region], st.pgen[a.region] = map[int64]a64Ptr{}, map[int64]int{}
	}
	for off := a.off - 7; off < a.off+int64(len(b)); off++ {
		delete(st.ptrs[a.region], off)
	}
	for i := range b {
		if k[i] {
			st.mem[a.region][a.off+int64(i)] = a64Byte{b[i], st.gen}
		} else {
			delete(st.mem[a.region], a.off+int64(i))
		}
	}
	if ptr != nil {
		st.ptrs[a.region][a.off] = *ptr
		st.pgen[a.region][a.off] = st.gen
	}
}

func (p *a64Prog) load(st *a64State, a a64Ptr, n int) ([]byte, []bool, *a64Ptr) {
	b, k := make([]byte, n), make([]bool, n)
	if ptr, ok := st.ptrs[a.region][a.off]; ok && n == 8 {
		return b, k, &ptr
	}
	data, isData := p.data[a.region]
	for i := range n {
		off := a.off + int64(i)
		if m, ok := st.mem[a.region][off]; ok {
			b[i], k[i] = m.b, true
		} else if isData && off >= 0 && off < int64(len(data)) {
			b[i], k[i] = data[off], true
		}
	}
	return b, k, nil
}

// addr evaluates a memory operand ("[x1]", "[sp, 8]", "[x0, #:lo12:.LC3]",
// "[sp, -32]!") and a post-index ("[sp], 32"); ok is false when its base
// holds no known address.
func (st *a64State) addr(t *testing.T, in a64Insn, mem string, post []string) (a a64Ptr, ok bool) {
	wb := strings.HasSuffix(mem, "!")
	inner := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(mem, "!"), "["), "]")
	parts := splitArgs(inner)
	base, rok := parseReg(parts[0])
	if !rok {
		t.Fatalf("%s: base %q", in.text, parts[0])
	}
	bv := st.gpr(base)
	off := int64(0)
	if len(parts) > 1 {
		if strings.Contains(parts[1], ":lo12:") {
			off = 0 // adrp set the base to the label
		} else if v, iok := parseImm(parts[1]); iok && len(parts) == 2 {
			off = v
		} else {
			t.Fatalf("%s: address %s", in.text, mem)
		}
	}
	if bv.ptr == nil {
		return a64Ptr{}, false
	}
	a = a64Ptr{bv.ptr.region, bv.ptr.off + off}
	if wb {
		st.setGPR(base, a64Val{ptr: &a})
	}
	if len(post) == 1 {
		v, iok := parseImm(post[0])
		if !iok {
			t.Fatalf("%s: post-index %s", in.text, post[0])
		}
		np := a64Ptr{a.region, a.off + v}
		st.setGPR(base, a64Val{ptr: &np})
	}
	return a, true
}

// run interprets the function at label from its entry: at each bl, or at
// its ret when ret is set, it records the state. Calls clobber x0 to x18
// and the v registers (but for the low halves of v8 to v15), as AAPCS64
// lets them.
func (p *a64Prog) run(t *testing.T, label string, ret bool) []a64Call {
	t.Helper()
	pc, ok := p.labels[label]
	if !ok {
		t.Fatalf("no function %s in the assembly", label)
	}
	st := &a64State{mem: map[string]map[int64]a64Byte{}, ptrs: map[string]map[int64]a64Ptr{}, pgen: map[string]map[int64]int{}}
	st.sp = a64Val{ptr: &a64Ptr{"sp", 0}}
	if ret {
		st.x[8] = a64Val{ptr: &a64Ptr{"x8", 0}}
	}
	var calls []a64Call
	for steps := 0; pc < len(p.insns); pc, steps = pc+1, steps+1 {
		if steps > 100000 {
			t.Fatalf("%s runs on", label)
		}
		in := p.insns[pc]
		switch in.op {
		case "ret":
			if ret {
				calls = append(calls, a64Call{label, st.clone()})
			}
			return calls
		case "bl", "blr":
			if !ret {
				calls = append(calls, a64Call{in.args[0], st.clone()})
			}
			st.gen++
			for n := 0; n <= 18; n++ {
				st.x[n] = a64Val{}
			}
			st.x[30] = a64Val{}
			for n := range 32 {
				keep := 0
				if n >= 8 && n <= 15 {
					keep = 8
				}
				for i := keep; i < 16; i++ {
					st.vk[n][i] = false
				}
			}
			continue
		case "b", "br", "cbz", "cbnz", "tbz", "tbnz":
			t.Fatalf("%s: %s branches: the interpreter follows straight-line code only", label, in.text)
		}
		if strings.HasPrefix(in.op, "b.") {
			t.Fatalf("%s: %s branches", label, in.text)
		}
		p.step(t, st, in)
	}
	t.Fatalf("%s has no ret", label)
	return nil
}

// step interprets one instruction; one it does not know makes its first
// operand, a register, unknown.
func (p *a64Prog) step(t *testing.T, st *a64State, in a64Insn) {
	args := in.args
	reg := func(i int) asmReg {
		r, ok := parseReg(args[i])
		if !ok {
			t.Fatalf("%s: operand %q is not a register", in.text, args[i])
		}
		return r
	}
	unknown := func() {
		if len(args) > 0 {
			if r, ok := parseReg(args[0]); ok {
				if r.fp() {
					st.setFP(r, nil, nil)
					for i := range 16 {
						st.vk[r.n][i] = false
					}
				} else {
					st.setGPR(r, a64Val{})
				}
			}
		}
	}
	switch op := in.op; {
	case op == "nop":
	case op == "mov" || op == "fmov":
		d := reg(0)
		if s, ok := parseReg(args[1]); ok {
			var b []byte
			var k []bool
			var ptr *a64Ptr
			if s.fp() {
				b, k = st.fpBytes(s)
			} else {
				v := st.gpr(s)
				b, k = valBytes(v, s.width())
				ptr = v.ptr
			}
			if d.fp() {
				st.setFP(d, b, k)
			} else if ptr != nil && d.kind == 'x' {
				st.setGPR(d, a64Val{ptr: ptr})
			} else {
				st.setGPR(d, bytesVal(b, k))
			}
			return
		}
		if v, ok := parseImm(args[1]); ok && !d.fp() {
			st.setGPR(d, a64Val{bits: uint64(v), known: ^uint64(0)})
			return
		}
		f, err := strconv.ParseFloat(strings.TrimPrefix(args[1], "#"), 64)
		if err != nil || !d.fp() {
			t.Fatalf("%s: operand %q", in.text, args[1])
		}
		var b [8]byte
		switch d.kind {
		case 's':
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(float32(f)))
		case 'd':
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(f))
		default:
			t.Fatalf("%s: a float immediate into %c", in.text, d.kind)
		}
		n := d.width()
		st.setFP(d, b[:n], []bool{true, true, true, true, true, true, true, true}[:n])
	case op == "movk":
		d := reg(0)
		v, ok := parseImm(args[1])
		shift := int64(0)
		if len(args) > 2 {
			s, sok := parseImm(strings.TrimPrefix(args[2], "lsl "))
			ok = ok && sok
			shift = s
		}
		if !ok {
			t.Fatalf("%s: operands", in.text)
		}
		cur := st.gpr(d)
		mask := uint64(0xffff) << shift
		cur.bits = cur.bits&^mask | uint64(v)<<shift&mask
		cur.known |= mask
		cur.ptr = nil
		st.setGPR(d, cur)
	case op == "bfi" || op == "bfxil":
		d, s := reg(0), st.gpr(reg(1))
		lsb, ok1 := parseImm(args[2])
		width, ok2 := parseImm(args[3])
		if !ok1 || !ok2 {
			t.Fatalf("%s: operands", in.text)
		}
		src, srcKnown := s.bits, s.known
		if op == "bfxil" { // extract at lsb, insert at 0
			src, srcKnown, lsb = src>>lsb, srcKnown>>lsb, 0
		}
		mask := (uint64(1)<<width - 1) << lsb
		cur := st.gpr(d)
		if s.ptr != nil {
			srcKnown = 0
		}
		cur.ptr = nil
		cur.bits = cur.bits&^mask | src<<lsb&mask
		cur.known = cur.known&^mask | srcKnown<<lsb&mask
		st.setGPR(d, cur)
	case op == "lsr" || op == "lsl":
		d, s := reg(0), st.gpr(reg(1))
		sh, ok := parseImm(args[2])
		if !ok || s.ptr != nil {
			unknown()
			return
		}
		bits, known := s.bits, s.known
		if d.kind == 'w' {
			bits, known = bits&0xffffffff, known&0xffffffff
		}
		if op == "lsr" {
			bits, known = bits>>sh, known>>sh|^(^uint64(0)>>sh)
		} else {
			bits, known = bits<<sh, known<<sh|(uint64(1)<<sh-1)
		}
		st.setGPR(d, a64Val{bits: bits, known: known})
	case op == "adrp":
		at, ok := p.syms[args[1]]
		if !ok {
			at = a64Ptr{args[1], 0}
		}
		st.setGPR(reg(0), a64Val{ptr: &at})
	case op == "add" || op == "sub":
		d, s := reg(0), st.gpr(reg(1))
		if strings.HasPrefix(args[2], ":lo12:") {
			st.setGPR(d, s)
			return
		}
		v, ok := parseImm(args[2])
		if !ok || len(args) > 3 {
			unknown()
			return
		}
		if op == "sub" {
			v = -v
		}
		switch {
		case s.ptr != nil:
			st.setGPR(d, a64Val{ptr: &a64Ptr{s.ptr.region, s.ptr.off + v}})
		case s.known == ^uint64(0):
			st.setGPR(d, a64Val{bits: s.bits + uint64(v), known: ^uint64(0)})
		default:
			unknown()
		}
	case strings.HasPrefix(op, "ld") || strings.HasPrefix(op, "st"):
		p.memOp(t, st, in)
	default:
		unknown()
	}
}

// memOp interprets a load or store: ldr, ldrb, ldrh, ldrsw, ldur, ldp and
// their stores.
func (p *a64Prog) memOp(t *testing.T, st *a64State, in a64Insn) {
	op := strings.Replace(in.op, "ur", "r", 1) // ldur, stur: unscaled offsets, the same to us
	pair := strings.HasSuffix(op, "p")
	nregs := 1
	if pair {
		nregs = 2
	}
	if len(in.args) < nregs+1 {
		t.Fatalf("%s: operands", in.text)
	}
	regs := make([]asmReg, nregs)
	for i := range regs {
		r, ok := parseReg(in.args[i])
		if !ok {
			t.Fatalf("%s: operand %q", in.text, in.args[i])
		}
		regs[i] = r
	}
	a, ok := st.addr(t, in, in.args[nregs], in.args[nregs+1:])
	width := regs[0].width()
	signed := false
	switch strings.TrimPrefix(strings.TrimPrefix(op, "ld"), "st") {
	case "rb":
		width = 1
	case "rh":
		width = 2
	case "rsb":
		width, signed = 1, true
	case "rsh":
		width, signed = 2, true
	case "rsw":
		width, signed = 4, true
	case "r", "p":
	default:
		t.Fatalf("%s: unknown memory instruction", in.text)
	}
	load := strings.HasPrefix(op, "ld")
	for i, r := range regs {
		at := a64Ptr{a.region, a.off + int64(i*width)}
		if load {
			if !ok {
				if r.fp() {
					st.setFP(r, nil, nil)
					st.vk[r.n] = [16]bool{}
				} else {
					st.setGPR(r, a64Val{})
				}
				continue
			}
			b, k, ptr := p.load(st, at, width)
			switch {
			case r.fp():
				st.setFP(r, b, k)
			case ptr != nil && r.kind == 'x':
				st.setGPR(r, a64Val{ptr: ptr})
			default:
				v := bytesVal(b, k)
				if signed && k[width-1] && b[width-1]&0x80 != 0 {
					v.bits |= ^uint64(0) << (8 * width)
				}
				st.setGPR(r, v)
			}
			continue
		}
		if !ok {
			continue // a store through an unknown address: nothing the checks read
		}
		var b []byte
		var k []bool
		var ptr *a64Ptr
		if r.fp() {
			b, k = st.fpBytes(r)
			b, k = b[:width], k[:width]
		} else {
			v := st.gpr(r)
			b, k = valBytes(v, width)
			if width == 8 {
				ptr = v.ptr
			}
		}
		st.store(at, b, k, ptr)
	}
}

// byteAt returns byte k of the value at loc in the recorded state, and
// whether it is known (a stack argument only when written for this call).
func (c *a64Call) byteAt(loc Location, k int64) (byte, bool, string) {
	st := c.st
	memAt := func(a a64Ptr, fresh bool) (byte, bool, string) {
		m, ok := st.mem[a.region][a.off]
		if !ok {
			return 0, false, fmt.Sprintf("nothing known at %s%+d", a.region, a.off)
		}
		if fresh && m.gen != st.gen {
			return 0, false, fmt.Sprintf("%s%+d was not written for this call", a.region, a.off)
		}
		return m.b, true, ""
	}
	xreg := func(name string) a64Val {
		n, _ := strconv.Atoi(strings.TrimPrefix(name, "x"))
		return st.x[n]
	}
	sp := st.sp.ptr
	switch {
	case loc.Stack && loc.Indirect:
		slot := a64Ptr{"sp", sp.off + loc.StackOff}
		p, ok := st.ptrs[slot.region][slot.off]
		if !ok || st.pgen[slot.region][slot.off] != st.gen {
			return 0, false, "no address written at " + loc.String()
		}
		return memAt(a64Ptr{p.region, p.off + k}, false)
	case loc.Stack:
		return memAt(a64Ptr{"sp", sp.off + loc.StackOff + k}, true)
	case loc.Indirect:
		v := xreg(loc.Reg)
		if v.ptr == nil {
			return 0, false, loc.Reg + " holds no address"
		}
		return memAt(a64Ptr{v.ptr.region, v.ptr.off + k}, false)
	}
	name := loc.Reg
	if k >= 8 {
		name, k = loc.Reg2, k-8
	}
	if name == "" || k >= 8 {
		return 0, false, "past the registers"
	}
	v := xreg(name)
	if v.ptr != nil || v.known>>(8*k)&0xff != 0xff {
		return 0, false, name + " does not hold it"
	}
	return byte(v.bits >> (8 * k)), true, ""
}

// check compares the bytes at loc with want.
func (c *a64Call) check(t *testing.T, what string, loc Location, want map[int64]byte) {
	t.Helper()
	for k := int64(0); k < 64; k++ {
		w, ok := want[k]
		if !ok {
			continue
		}
		got, known, why := c.byteAt(loc, k)
		if !known || got != w {
			t.Errorf("%s at %v: byte %d is %#x (%s), want %#x", what, loc, k, got, why, w)
			return
		}
	}
}

// checkMem compares the bytes in memory region at off with want.
func (c *a64Call) checkMem(t *testing.T, what, region string, off int64, want map[int64]byte) {
	t.Helper()
	for k, w := range want {
		m, ok := c.st.mem[region][off+k]
		if !ok || m.b != w {
			t.Errorf("%s: byte %d of the memory at %s is %#x (known %v), want %#x", what, k, region, m.b, ok, w)
			return
		}
	}
}

// checkV compares the v registers err names with want: a float in the
// first, or each member of a homogeneous float aggregate in one.
func (c *a64Call) checkV(t *testing.T, what string, err error, want map[int64]byte, typ *Type) {
	t.Helper()
	regs := namedVRegs(t, err)
	base := typ.Size / int64(len(regs))
	for k, w := range want {
		n := regs[k/base]
		i := k % base
		if !c.st.vk[n][i] || c.st.v[n][i] != w {
			t.Errorf("%s (%v): byte %d of v%d is %#x (known %v), want %#x", what, err, i, n, c.st.v[n][i], c.st.vk[n][i], w)
			return
		}
	}
}
