package ctypes

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/bpftape/bpftape/bpf"
	"github.com/bpftape/bpftape/record/elfsym"
	"github.com/bpftape/bpftape/record/suggest"
)

// Binary is the DWARF of an ELF file, or of its separate debug file: the
// functions and types of a user-space program or library.
type Binary struct {
	path   string // the binary
	source string // the file whose DWARF this is (path or the debug file)
	syms   map[string]uint64

	// arch is the architecture of the binary's code, whose calling
	// convention places a function's parameters; nil when bpftape knows
	// none for its machine.
	arch    *bpf.Arch
	machine elf.Machine

	mu    sync.Mutex // guards everything below, and data (whose type cache is not safe for concurrent use)
	data  *dwarf.Data
	conv  map[dwarf.Type]*Type
	index *dwarfIndex
	// memberAlign holds the aligned attributes (DW_AT_alignment) of the
	// members of a struct or union type, by member index (0: none); only
	// types with one are in it.
	memberAlign map[dwarf.Type][]int64
}

// dwarfIndex lists the subprogram and named type DIEs of a file.
type dwarfIndex struct {
	funcs map[string][]dwarf.Offset
	types map[string]dwarf.Offset // "struct foo", "union bar", "enum baz", "size_t", "int"
}

// hasDWARF reports whether f has a .debug_info (compressed or not).
func hasDWARF(f *elf.File) bool {
	return f.Section(".debug_info") != nil || f.Section(".zdebug_info") != nil
}

// OpenBinary reads the DWARF of the ELF file at path or, when it has none
// (a stripped binary), of its separate debug file, found as
// elfsym.FindDebugFile finds it in dirs (by build id, then by
// .gnu_debuglink). Without either the error wraps ErrNoDWARF and, when a
// debug file was looked for, the *elfsym.DebugFileError.
func OpenBinary(path string, dirs []string) (b *Binary, err error) {
	defer recoverTo(&err, path)
	// Opened as the stack table opens files (elfsym.OpenRegular): a path
	// that names a FIFO or a device must not block or read it.
	file, err := elfsym.OpenRegular(path, elfsym.FollowLinks)
	if err != nil {
		return nil, fmt.Errorf("ctypes: %w", err)
	}
	defer file.Close()
	f, err := elf.NewFile(file)
	if err != nil {
		return nil, fmt.Errorf("ctypes: %s: %w", path, err)
	}
	b = &Binary{path: path, source: path, syms: map[string]uint64{}}
	b.setMachine(f.Machine)
	addSyms(b.syms, f)
	df := f
	if !hasDWARF(f) {
		dfile, dbg, ferr := elfsym.OpenDebugFile(path, dirs)
		if ferr != nil {
			return nil, errorf(ErrNoDWARF, "ctypes: %s has no DWARF (.debug_info), and no debug file with it: %w", path, ferr)
		}
		defer dfile.Close()
		if df, err = elf.NewFile(dfile); err != nil {
			return nil, fmt.Errorf("ctypes: debug file of %s: %w", path, err)
		}
		if !hasDWARF(df) {
			return nil, errorf(ErrNoDWARF, "ctypes: %s has no DWARF, nor does its debug file %s", path, dbg)
		}
		b.source = dbg
		addSyms(b.syms, df)
	}
	// DWARF reads the sections into memory: the files may be closed.
	if b.data, err = df.DWARF(); err != nil {
		return nil, errorf(ErrBadDWARF, "ctypes: %s: %w", b.source, err)
	}
	return b, nil
}

// NewBinary reads the DWARF of an open ELF file (no debug file is looked
// for: see OpenBinary). f may be closed once it returns.
func NewBinary(f *elf.File) (b *Binary, err error) {
	defer recoverTo(&err, "ELF file")
	if !hasDWARF(f) {
		return nil, errorf(ErrNoDWARF, "ctypes: the ELF file has no DWARF (.debug_info)")
	}
	b = &Binary{syms: map[string]uint64{}}
	b.setMachine(f.Machine)
	addSyms(b.syms, f)
	if b.data, err = f.DWARF(); err != nil {
		return nil, errorf(ErrBadDWARF, "ctypes: %w", err)
	}
	return b, nil
}

// setMachine sets the architecture of the binary's code, whose calling
// convention Func follows: the machine of the binary itself (its debug
// file, made by objcopy, says the same).
func (b *Binary) setMachine(m elf.Machine) {
	b.machine = m
	b.arch, _ = bpf.ArchOf(m)
}

// Arch is the architecture of the binary's code, nil for a machine whose
// calling convention bpftape does not know.
func (b *Binary) Arch() *bpf.Arch { return b.arch }

// addSyms adds the addresses of f's function symbols (its .symtab and
// .dynsym), which pick the DIE of a function when several have its name.
func addSyms(m map[string]uint64, f *elf.File) {
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			if _, ok := m[s.Name]; !ok {
				m[s.Name] = s.Value
			}
		}
	}
}

// Source is the file whose DWARF b holds: the binary, or its debug file.
func (b *Binary) Source() string { return b.source }

// recoverTo turns a panic into an error: debug/dwarf and debug/elf have
// panicked on malformed input before (index out of range in the type
// reader, for one), and a probe's binary is not trusted input.
func recoverTo(err *error, what string) {
	if r := recover(); r != nil {
		*err = errorf(ErrBadDWARF, "ctypes: %s: malformed debug info (%v)", what, r)
	}
}

// FuncParams reads function's parameters and return type from the DWARF
// of the ELF file at path (or its debug file, in dirs: see OpenBinary),
// with where each is at entry by the calling convention of the binary's
// machine: the x86-64 System V ABI or AAPCS64.
func FuncParams(path, function string, dirs []string) (*Func, error) {
	b, err := OpenBinary(path, dirs)
	if err != nil {
		return nil, err
	}
	return b.Func(function)
}

// buildIndex scans every DIE once for functions and named types.
func (b *Binary) buildIndex() error {
	if b.index != nil {
		return nil
	}
	ix := &dwarfIndex{funcs: map[string][]dwarf.Offset{}, types: map[string]dwarf.Offset{}}
	type pending struct{ off, ref dwarf.Offset }
	var unnamed []pending
	// The DIEs whose children are being read, to find the members of a
	// struct or union (as debug/dwarf counts them: its direct
	// DW_TAG_member children) that have an aligned attribute.
	type parent struct {
		off     dwarf.Offset
		record  bool // a struct, union or class
		members int
	}
	var parents []parent
	aligned := map[dwarf.Offset][]int64{}
	r := b.data.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return errorf(ErrBadDWARF, "ctypes: %s: %w", b.source, err)
		}
		if e == nil {
			break
		}
		if e.Tag == 0 {
			if len(parents) > 0 {
				parents = parents[:len(parents)-1]
			}
			continue
		}
		if n := len(parents); e.Tag == dwarf.TagMember && n > 0 && parents[n-1].record {
			top := &parents[n-1]
			if a, ok := e.Val(dwarf.AttrAlignment).(int64); ok && a > 1 {
				l := aligned[top.off]
				for len(l) < top.members {
					l = append(l, 0)
				}
				aligned[top.off] = append(l, a)
			}
			top.members++
		}
		if e.Children {
			record := e.Tag == dwarf.TagStructType || e.Tag == dwarf.TagUnionType || e.Tag == dwarf.TagClassType
			parents = append(parents, parent{off: e.Offset, record: record})
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		switch e.Tag {
		case dwarf.TagSubprogram:
			if name != "" {
				ix.funcs[name] = append(ix.funcs[name], e.Offset)
			} else if ref, ok := originOf(e); ok {
				unnamed = append(unnamed, pending{e.Offset, ref})
			}
			if ln, _ := e.Val(dwarf.AttrLinkageName).(string); ln != "" && ln != name {
				ix.funcs[ln] = append(ix.funcs[ln], e.Offset)
			}
		case dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagEnumerationType, dwarf.TagClassType:
			if name == "" || e.Val(dwarf.AttrDeclaration) != nil {
				continue
			}
			kw := map[dwarf.Tag]string{dwarf.TagStructType: "struct ", dwarf.TagClassType: "struct ", dwarf.TagUnionType: "union ", dwarf.TagEnumerationType: "enum "}[e.Tag]
			if _, ok := ix.types[kw+name]; !ok {
				ix.types[kw+name] = e.Offset
			}
		case dwarf.TagTypedef, dwarf.TagBaseType:
			if _, ok := ix.types[name]; name != "" && !ok {
				ix.types[name] = e.Offset
			}
		}
	}
	// A concrete out-of-line copy of an inlined function, or a definition
	// of a declaration, is named by the DIE it refers to.
	for _, p := range unnamed {
		if name := b.nameOf(p.ref, 8); name != "" {
			ix.funcs[name] = append(ix.funcs[name], p.off)
		}
	}
	for off, l := range aligned {
		if dt, err := b.data.Type(off); err == nil {
			if b.memberAlign == nil {
				b.memberAlign = map[dwarf.Type][]int64{}
			}
			b.memberAlign[dt] = l
		}
	}
	b.index = ix
	return nil
}

// originOf returns the DIE a DIE refers to for its name and type:
// DW_AT_abstract_origin or DW_AT_specification.
func originOf(e *dwarf.Entry) (dwarf.Offset, bool) {
	if o, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
		return o, true
	}
	o, ok := e.Val(dwarf.AttrSpecification).(dwarf.Offset)
	return o, ok
}

// entry reads the DIE at off.
func (b *Binary) entry(off dwarf.Offset) (*dwarf.Entry, error) {
	r := b.data.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil {
		return nil, errorf(ErrBadDWARF, "ctypes: %s: DIE at %#x: %w", b.source, off, err)
	}
	if e == nil {
		return nil, errorf(ErrBadDWARF, "ctypes: %s: no DIE at %#x", b.source, off)
	}
	return e, nil
}

// nameOf is the name of the DIE at off, through its origins.
func (b *Binary) nameOf(off dwarf.Offset, depth int) string {
	for ; depth > 0; depth-- {
		e, err := b.entry(off)
		if err != nil {
			return ""
		}
		if name, _ := e.Val(dwarf.AttrName).(string); name != "" {
			return name
		}
		var ok bool
		if off, ok = originOf(e); !ok {
			return ""
		}
	}
	return ""
}

// chain is a DIE followed by the DIEs it refers to (abstract origin,
// specification), at most 8.
func (b *Binary) chain(off dwarf.Offset) ([]*dwarf.Entry, error) {
	var es []*dwarf.Entry
	seen := map[dwarf.Offset]bool{}
	for len(es) < 8 && !seen[off] {
		seen[off] = true
		e, err := b.entry(off)
		if err != nil {
			return nil, err
		}
		es = append(es, e)
		var ok bool
		if off, ok = originOf(e); !ok {
			break
		}
	}
	return es, nil
}

// dieParam is a formal parameter DIE's name and type, through its origin.
type dieParam struct {
	name string
	typ  dwarf.Offset
	ok   bool // typ is set
}

// params reads the formal parameters among a subprogram DIE's children,
// and whether a DW_TAG_unspecified_parameters (...) follows them.
func (b *Binary) params(e *dwarf.Entry) (ps []dieParam, variadic bool, err error) {
	if !e.Children {
		return nil, false, nil
	}
	r := b.data.Reader()
	r.Seek(e.Offset)
	if _, err := r.Next(); err != nil {
		return nil, false, errorf(ErrBadDWARF, "ctypes: %s: %w", b.source, err)
	}
	for {
		k, err := r.Next()
		if err != nil {
			return nil, false, errorf(ErrBadDWARF, "ctypes: %s: %w", b.source, err)
		}
		if k == nil || k.Tag == 0 {
			return ps, variadic, nil
		}
		switch k.Tag {
		case dwarf.TagFormalParameter:
			var p dieParam
			for ke, depth := k, 0; ke != nil && depth < 8; depth++ {
				if p.name == "" {
					p.name, _ = ke.Val(dwarf.AttrName).(string)
				}
				if !p.ok {
					p.typ, p.ok = ke.Val(dwarf.AttrType).(dwarf.Offset)
				}
				o, has := ke.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
				if !has || p.name != "" && p.ok {
					break
				}
				if ke, err = b.entry(o); err != nil {
					return nil, false, err
				}
			}
			ps = append(ps, p)
		case dwarf.TagUnspecifiedParameters:
			variadic = true
		}
		if k.Children {
			r.SkipChildren()
		}
	}
}

// HasFunc reports whether the DWARF describes function. It is cheap once
// the DWARF has been indexed (by the first call of HasFunc, Func or
// LookupType), unlike Func for a name the DWARF lacks, which looks for
// close names: a caller with many names to try asks HasFunc first.
func (b *Binary) HasFunc(function string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.buildIndex(); err != nil {
		return false
	}
	return len(b.index.funcs[function]) > 0
}

// Func finds function in the DWARF and returns its parameters and return
// type with their places by the ABI (see Func). Of several DIEs with the
// name, it takes the out-of-line copy at the address of the ELF symbol of
// that name (gcc -O2 leaves both an abstract instance and concrete
// copies), then any concrete one, preferring an external function.
func (b *Binary) Func(function string) (fn *Func, err error) {
	defer recoverTo(&err, b.source)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.buildIndex(); err != nil {
		return nil, err
	}
	offs := b.index.funcs[function]
	if len(offs) == 0 {
		names := make([]string, 0, len(b.index.funcs))
		for n := range b.index.funcs {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, errorf(ErrNoFunc, "ctypes: no function %s in the DWARF of %s%s", function, b.source, suggest.Hint(suggest.Closest(function, names, 5)))
	}
	symAddr, haveSym := b.syms[function]
	var best []*dwarf.Entry
	bestScore := -1
	for _, off := range offs {
		ch, err := b.chain(off)
		if err != nil {
			return nil, err
		}
		score := 0
		e := ch[0]
		if lo, ok := e.Val(dwarf.AttrLowpc).(uint64); ok {
			score += 4
			if haveSym && lo == symAddr {
				score += 8
			}
		} else if e.Val(dwarf.AttrRanges) != nil {
			score += 4
		}
		for _, c := range ch {
			if ext, _ := c.Val(dwarf.AttrExternal).(bool); ext {
				score += 2
				break
			}
		}
		if e.Val(dwarf.AttrDeclaration) == nil {
			score++
		}
		if score > bestScore {
			best, bestScore = ch, score
		}
	}
	return b.funcFrom(function, best)
}

// dwCCNocall is DW_CC_nocall: gcc marks a function whose calling
// convention it changed (a local function after interprocedural
// optimization), which the ABI no longer describes.
const dwCCNocall = 3

// funcFrom builds the Func of a DIE chain (the chosen DIE first).
func (b *Binary) funcFrom(name string, ch []*dwarf.Entry) (*Func, error) {
	fn := &Func{Name: name, Source: b.source, Arch: b.arch}
	// Parameters: the deepest DIE of the chain that lists them (the
	// abstract instance lists them all, as declared); names and types
	// missing there are taken from the others, position by position.
	var lists [][]dieParam
	var ps []dieParam
	for _, e := range ch {
		l, variadic, err := b.params(e)
		if err != nil {
			return nil, err
		}
		fn.Variadic = fn.Variadic || variadic
		lists = append(lists, l)
		if len(l) > 0 {
			ps = l
		}
	}
	for _, l := range lists {
		if len(l) != len(ps) {
			continue
		}
		for i := range ps {
			if ps[i].name == "" {
				ps[i].name = l[i].name
			}
			if !ps[i].ok {
				ps[i].typ, ps[i].ok = l[i].typ, l[i].ok
			}
		}
	}
	var nocall bool
	fn.Return = voidType
	retSet := false
	for _, e := range ch {
		if cc, ok := e.Val(dwarf.AttrCalling).(int64); ok && cc == dwCCNocall {
			nocall = true
		}
		if off, ok := e.Val(dwarf.AttrType).(dwarf.Offset); ok && !retSet {
			t, err := b.typeAt(off)
			if err != nil {
				return nil, err
			}
			fn.Return, retSet = t, true
		}
	}
	for i, p := range ps {
		t := unknownType
		if p.ok {
			var err error
			if t, err = b.typeAt(p.typ); err != nil {
				return nil, err
			}
		}
		fn.Params = append(fn.Params, Param{Name: p.name, Index: i, Type: t})
	}
	fn.place()
	if b.arch == nil {
		err := errorf(ErrNoLocation, "%s is %v code, whose calling convention bpftape does not know (it knows x86-64's and arm64's)", name, b.machine)
		for i := range fn.Params {
			fn.Params[i].Err = err
		}
		fn.RetErr = err
	}
	if nocall {
		for i := range fn.Params {
			fn.Params[i].Err = errorf(ErrNoLocation, "%s was compiled with a calling convention of the compiler's own (DW_CC_nocall), so where its parameters are is unknown", name)
		}
		fn.RetErr = errorf(ErrNoLocation, "%s was compiled with a calling convention of the compiler's own (DW_CC_nocall)", name)
	}
	return fn, nil
}

// typeAt converts the type DIE at off.
func (b *Binary) typeAt(off dwarf.Offset) (*Type, error) {
	dt, err := b.data.Type(off)
	if err != nil {
		return nil, errorf(ErrBadDWARF, "ctypes: %s: type at %#x: %w", b.source, off, err)
	}
	return b.convert(dt, 0), nil
}

// LookupType finds a type by its C name: "struct foo", "union bar", "enum
// baz", or a typedef or base type name ("size_t", "unsigned int").
func (b *Binary) LookupType(name string) (t *Type, err error) {
	defer recoverTo(&err, b.source)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.buildIndex(); err != nil {
		return nil, err
	}
	name = strings.Join(strings.Fields(name), " ")
	off, ok := b.index.types[name]
	if !ok {
		kw, _, _ := strings.Cut(name, " ")
		var names []string
		for n := range b.index.types {
			if strings.HasPrefix(n, kw+" ") || !strings.Contains(name, " ") {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		return nil, errorf(ErrNoType, "ctypes: no type %s in the DWARF of %s%s", name, b.source, suggest.Hint(suggest.Closest(name, names, 5)))
	}
	return b.typeAt(off)
}

// LookupStruct is LookupType("struct " + name).
func (b *Binary) LookupStruct(name string) (*Type, error) {
	return b.LookupType("struct " + name)
}

// convert turns a debug/dwarf type into a Type, memoized. b.mu is held.
func (b *Binary) convert(dt dwarf.Type, depth int) *Type {
	if dt == nil {
		return voidType
	}
	if t, ok := b.conv[dt]; ok {
		return t
	}
	if depth > maxNesting {
		return unknownType
	}
	if b.conv == nil {
		b.conv = map[dwarf.Type]*Type{}
	}
	t := b.convert1(dt, depth)
	b.conv[dt] = t
	return t
}

func (b *Binary) convert1(dt dwarf.Type, depth int) *Type {
	size := dt.Size()
	switch t := dt.(type) {
	case *dwarf.VoidType:
		return voidType
	case *dwarf.QualType:
		in := b.convert(t.Type, depth+1)
		return withName(in, qualify(t.Qual, in))
	case *dwarf.TypedefType:
		return withName(b.convert(t.Type, depth+1), t.Name)
	case *dwarf.PtrType:
		target := t.Type
		return &Type{Kind: Pointer, Size: 8, name: pointerName(spell(target, 0)), elem: &lazyType{load: func() *Type {
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.convertSafe(target)
		}}}
	case *dwarf.StructType:
		if t.Incomplete && t.StructName != "" {
			if full := b.complete(t); full != nil {
				return b.convert(full, depth+1)
			}
		}
		kind, kw := Struct, "struct"
		if t.Kind == "union" {
			kind, kw = Union, "union"
		}
		out := &Type{Kind: kind, Size: max(size, 0), Incomplete: t.Incomplete, tag: t.StructName, name: kw + " " + orAnon(t.StructName)}
		b.conv[dt] = out // before the members: a member may refer back through a pointer
		for _, f := range t.Field {
			m := Member{Name: f.Name, Offset: f.ByteOffset, Type: b.convert(f.Type, depth+1)}
			if f.BitSize > 0 {
				m.BitSize = f.BitSize
				if f.DataBitOffset != 0 || f.BitOffset == 0 {
					bit := f.ByteOffset*8 + f.DataBitOffset
					m.Offset, m.BitOffset = bit/8, bit%8
				} else {
					// DWARF 2: BitOffset counts from the most significant
					// bit of a storage unit of ByteSize bytes.
					unit := f.ByteSize
					if unit == 0 {
						unit = m.Type.Size
					}
					m.BitOffset = unit*8 - f.BitOffset - f.BitSize
				}
			}
			if al := b.memberAlign[dt]; len(out.Members) < len(al) {
				m.Align = al[len(out.Members)]
			}
			out.Members = append(out.Members, m)
		}
		return out
	case *dwarf.ArrayType:
		e := b.convert(t.Type, depth+1)
		out := &Type{Kind: Array, Len: t.Count, elem: ready(e), name: arrayName(e.String(), t.Count)}
		if t.Count > 0 && e.Size > 0 {
			out.Size = t.Count * e.Size
		}
		return out
	case *dwarf.IntType, *dwarf.CharType:
		return &Type{Kind: Int, Size: size, Signed: true, name: dt.Common().Name}
	case *dwarf.UintType, *dwarf.UcharType, *dwarf.AddrType:
		return &Type{Kind: Int, Size: size, name: dt.Common().Name}
	case *dwarf.BoolType:
		return &Type{Kind: Bool, Size: size, name: dt.Common().Name}
	case *dwarf.EnumType:
		out := &Type{Kind: Enum, Size: size, tag: t.EnumName, name: "enum " + orAnon(t.EnumName)}
		for _, v := range t.Val {
			if v.Val < 0 {
				out.Signed = true
			}
		}
		return out
	case *dwarf.FloatType:
		return &Type{Kind: Float, Size: size, name: dt.Common().Name}
	case *dwarf.ComplexType:
		return &Type{Kind: Float, Size: size, complex: true, name: dt.Common().Name}
	case *dwarf.FuncType:
		return &Type{Kind: Function, name: "function"}
	}
	name := dt.Common().Name
	if name == "" {
		name = "?"
	}
	return &Type{Kind: Unknown, Size: max(size, 0), name: name}
}

// convertSafe is convert for a lazy pointer target, called after the
// function that returned the pointer did.
func (b *Binary) convertSafe(dt dwarf.Type) (t *Type) {
	defer func() {
		if recover() != nil {
			t = unknownType
		}
	}()
	return b.convert(dt, 0)
}

// complete finds the definition of a struct or union declared but not
// defined where t was (struct foo; in one compilation unit, defined in
// another), or nil.
func (b *Binary) complete(t *dwarf.StructType) dwarf.Type {
	if b.buildIndex() != nil {
		return nil
	}
	kw := "struct "
	if t.Kind == "union" {
		kw = "union "
	}
	off, ok := b.index.types[kw+t.StructName]
	if !ok {
		return nil
	}
	full, err := b.data.Type(off)
	if err != nil {
		return nil
	}
	if st, ok := full.(*dwarf.StructType); !ok || st.Incomplete {
		return nil
	}
	return full
}

func orAnon(name string) string {
	if name == "" {
		return "(anonymous)"
	}
	return name
}

func arrayName(elem string, n int64) string {
	if n < 0 {
		return elem + "[]"
	}
	return fmt.Sprintf("%s[%d]", elem, n)
}

// qualify spells a qualified type: "const char", "char *const".
func qualify(qual string, in *Type) string {
	if in.Kind == Pointer {
		return in.String() + qual
	}
	return qual + " " + in.String()
}

// spell is a debug/dwarf type's C spelling, without converting it (a
// pointer's name must not convert its target).
func spell(dt dwarf.Type, depth int) string {
	if depth > 8 {
		return "?"
	}
	switch t := dt.(type) {
	case nil, *dwarf.VoidType:
		return "void"
	case *dwarf.QualType:
		in := spell(t.Type, depth+1)
		if _, ok := t.Type.(*dwarf.PtrType); ok {
			return in + t.Qual
		}
		return t.Qual + " " + in
	case *dwarf.PtrType:
		return pointerName(spell(t.Type, depth+1))
	case *dwarf.StructType:
		kw := "struct"
		if t.Kind == "union" {
			kw = "union"
		}
		return kw + " " + orAnon(t.StructName)
	case *dwarf.EnumType:
		return "enum " + orAnon(t.EnumName)
	case *dwarf.ArrayType:
		return arrayName(spell(t.Type, depth+1), t.Count)
	case *dwarf.FuncType:
		return "function"
	}
	if n := dt.Common().Name; n != "" {
		return n
	}
	return "?"
}
