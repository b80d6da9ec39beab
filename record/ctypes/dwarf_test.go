package ctypes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/bpf"
)

// variants are the builds of the workload the tests read: -O0, -O2, and
// stripped -O2 copies whose DWARF is in a separate (compressed) debug file
// found by .gnu_debuglink or by build id.
func variants(t *testing.T) map[string]func(*testing.T) (*Binary, error) {
	o0, o2 := build(t, "-O0"), build(t, "-O2")
	return map[string]func(*testing.T) (*Binary, error){
		"O0": func(*testing.T) (*Binary, error) { return OpenBinary(o0, nil) },
		"O2": func(*testing.T) (*Binary, error) { return OpenBinary(o2, nil) },
		"O2-debuglink": func(t *testing.T) (*Binary, error) {
			bin, dir := stripped(t, o2, true)
			return OpenBinary(bin, []string{dir})
		},
		"O2-buildid": func(t *testing.T) (*Binary, error) {
			bin, dir := stripped(t, o2, false)
			return OpenBinary(bin, []string{dir})
		},
	}
}

// TestLayout resolves every member ./structs --layout prints and compares
// offsets and sizes with the compiler's offsetof and sizeof.
func TestLayout(t *testing.T) {
	lines, sizes := layout(t, build(t, "-O0"))
	for name, open := range variants(t) {
		t.Run(name, func(t *testing.T) {
			b, err := open(t)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range lines {
				st, err := b.LookupStruct(l.strct)
				if err != nil {
					t.Fatal(err)
				}
				a, err := ResolveNamed("p", PointerTo(st), parsePath(t, l.path))
				if err != nil {
					t.Errorf("%s.%s: %v", l.strct, l.path, err)
					continue
				}
				if len(a.Reads) != 0 || a.Off != l.off || a.Size != l.size {
					t.Errorf("struct %s %s: %v; offsetof %d, sizeof %d", l.strct, l.path, a, l.off, l.size)
				}
				wantLeaf := LeafRead
				if a.Type.Kind == Array {
					wantLeaf = LeafAddr
				}
				if a.Leaf != wantLeaf {
					t.Errorf("struct %s %s: leaf %v, want %v", l.strct, l.path, a.Leaf, wantLeaf)
				}
			}
			st, err := b.LookupStruct("req")
			if err != nil {
				t.Fatal(err)
			}
			if st.Size != sizes["req"] {
				t.Errorf("sizeof(struct req) %d, the compiler says %d", st.Size, sizes["req"])
			}
			if stripped := strings.Contains(name, "-"); stripped != strings.HasSuffix(b.Source(), ".debug") {
				t.Errorf("DWARF read from %s", b.Source())
			}
		})
	}
}

// layoutOf maps "struct.path" to its offset, from ./structs --layout.
func layoutOf(t *testing.T) map[string]int64 {
	lines, _ := layout(t, build(t, "-O0"))
	m := map[string]int64{}
	for _, l := range lines {
		m[l.strct+"."+l.path] = l.off
	}
	return m
}

func TestResolvePaths(t *testing.T) {
	off := layoutOf(t)
	b, err := OpenBinary(build(t, "-O2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := b.Func("rx")
	if err != nil {
		t.Fatal(err)
	}
	p, err := fn.Param("req")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Type.String(); got != "struct req *" {
		t.Errorf("req's type is %q", got)
	}
	_, sizes := layout(t, build(t, "-O0"))
	ok := []struct {
		path  []Step
		reads []int64
		off   int64
		leaf  LeafKind
		size  int64
		check func(*Type) bool
	}{
		{nil, nil, 0, LeafValue, 8, func(t *Type) bool { return t.Kind == Pointer }},
		{[]Step{Arrow("buf"), Arrow("len")}, []int64{off["req.buf"]}, off["buf.len"], LeafRead, 8, nil},
		{[]Step{Arrow("buf"), Arrow("data")}, []int64{off["req.buf"]}, off["buf.data"], LeafRead, 8, (*Type).IsCharPointer},
		{[]Step{Arrow("next"), Arrow("next"), Arrow("hdr"), Dot("id")}, []int64{off["req.next"], off["req.next"]}, off["req.hdr.id"], LeafRead, 4, nil},
		{[]Step{Arrow("name")}, nil, off["req.name"], LeafAddr, 16, (*Type).IsCharArray},
		{[]Step{Arrow("name"), Index(3)}, nil, off["req.name"] + 3, LeafRead, 1, nil},
		{[]Step{Deref(), Dot("hdr"), Dot("size")}, nil, off["req.hdr.size"], LeafRead, 2, nil},
		{[]Step{Index(1), Dot("x")}, nil, sizes["req"] + off["req.x"], LeafRead, 4, nil},
		{[]Step{Arrow("u"), Dot("p")}, nil, off["req.u.p"], LeafRead, 8, nil},
		{[]Step{Arrow("y")}, nil, off["req.y"], LeafRead, 4, nil},
		{[]Step{Arrow("raw")}, nil, off["req.raw"], LeafRead, 4, nil},
		{[]Step{Arrow("next"), Deref(), Dot("arr"), Index(3)}, []int64{off["req.next"]}, off["req.arr"] + 24, LeafRead, 8, nil},
		{[]Step{Arrow("buf"), Arrow("data"), Deref()}, []int64{off["req.buf"], off["buf.data"]}, 0, LeafRead, 1, nil},
	}
	for _, c := range ok {
		a, err := ResolveNamed("req", p.Type, c.path)
		what := FormatPath("req", c.path)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		var reads []int64
		for _, r := range a.Reads {
			reads = append(reads, r.Off)
		}
		if fmt.Sprint(reads) != fmt.Sprint(c.reads) || a.Off != c.off || a.Leaf != c.leaf || a.Size != c.size || c.check != nil && !c.check(a.Type) {
			t.Errorf("%s: %v; want reads %v, leaf %v at %d of %d bytes", what, a, c.reads, c.leaf, c.off, c.size)
		}
	}

	bad := []struct {
		path []Step
		err  error
		text string
	}{
		{[]Step{Dot("hdr")}, ErrPointer, "req.hdr: struct req * is a pointer: use ->hdr"},
		{[]Step{Arrow("hdr"), Arrow("size")}, ErrNotPointer, "use .size"},
		{[]Step{Arrow("hdrr")}, ErrNoMember, `did you mean "hdr"?`},
		{[]Step{Arrow("arr"), Index(4)}, ErrIndex, "past the end of long int[4]"},
		{[]Step{Arrow("bf1")}, ErrBitfield, "req->bf1 is a bitfield"},
		{[]Step{Arrow("bits"), Dot("hi")}, ErrBitfield, ""},
		{[]Step{Arrow("opaque"), Arrow("x")}, ErrVoidPointer, "cast it"},
		{[]Step{Arrow("opaque"), Deref()}, ErrVoidPointer, ""},
		{[]Step{Arrow("hdr")}, ErrAggregate, "req->hdr is struct hdr: name one of its members (size, flags, id)"},
		{[]Step{Arrow("ratio")}, ErrNotValue, "double"},
		{[]Step{Arrow("next"), Arrow("next"), Arrow("next"), Arrow("next"), Arrow("next"), Arrow("x")}, ErrTooDeep, "more than 4 pointer loads"},
		{[]Step{Arrow("hdr"), Dot("id"), Dot("x")}, ErrNotStruct, ""},
		{[]Step{Arrow("x"), Index(0)}, ErrNotArray, ""},
	}
	for _, c := range bad {
		_, err := ResolveNamed("req", p.Type, c.path)
		what := FormatPath("req", c.path)
		if !errors.Is(err, c.err) || !strings.Contains(fmt.Sprint(err), c.text) || strings.Contains(fmt.Sprint(err), "\n") {
			t.Errorf("%s: error %v, want %v containing %q", what, err, c.err, c.text)
		}
	}
	// Four loads are allowed: five arrows, the first from the register.
	if a, err := ResolveNamed("req", p.Type, []Step{Arrow("next"), Arrow("next"), Arrow("next"), Arrow("next"), Arrow("hdr"), Dot("id")}); err != nil || len(a.Reads) != MaxReads {
		t.Errorf("four loads: %v, %v", a, err)
	}
}

// TestABI checks each parameter's location at entry against the x86-64
// System V ABI's rules (TestABIGdb checks them against the registers and
// stack gdb sees at the functions' entries).
func TestABI(t *testing.T) {
	reg := func(r string) Location { return Location{Arch: bpf.AMD64, Reg: r} }
	stack := func(off int64) Location { return Location{Arch: bpf.AMD64, Stack: true, StackOff: off} }
	want := map[string][]any{ // per parameter: a Location or a sentinel error; last the return value's
		"rx":          {reg("di"), reg("si"), reg("ax")},
		"by_value":    {stack(8), reg("di"), reg("ax")},
		"with_double": {ErrSSEParam, reg("di"), ErrSSEParam},
		"many":        {reg("di"), reg("si"), reg("dx"), reg("cx"), reg("r8"), reg("r9"), stack(8), stack(16), reg("ax")},
		"ret_big":     {reg("si"), Location{Arch: bpf.AMD64, Reg: "ax", Indirect: true}},
		"ret_pair":    {reg("di"), reg("si"), Location{Arch: bpf.AMD64, Reg: "ax", Reg2: "dx"}},
		"pass_pair":   {Location{Arch: bpf.AMD64, Reg: "di", Reg2: "si"}, reg("dx"), reg("cx"), reg("ax")},
		"pass_mixed":  {ErrSSEParam, reg("si"), reg("ax")},
		"pass_packed": {stack(8), reg("di"), reg("ax")},
		"after_stack": {reg("di"), reg("si"), reg("dx"), reg("cx"), reg("r8"), stack(8), reg("r9"), reg("ax")},
		// The argument area starts 16-byte aligned at rsp+8: w skips rsp+16.
		"align_stack":  {reg("di"), reg("si"), reg("dx"), reg("cx"), reg("r8"), reg("r9"), stack(8), stack(24), stack(40), reg("ax")},
		"vararg":       {reg("di"), reg("ax")},
		"local_static": {reg("di"), reg("ax")},
		"inl_twice":    {reg("di"), reg("si"), reg("ax")},
		"opaque_user":  {reg("di"), reg("si"), reg("ax")},
	}
	for name, open := range variants(t) {
		t.Run(name, func(t *testing.T) {
			b, err := open(t)
			if err != nil {
				t.Fatal(err)
			}
			for fname, locs := range want {
				fn, err := b.Func(fname)
				if err != nil {
					t.Errorf("%s: %v", fname, err)
					continue
				}
				if len(fn.Params) != len(locs)-1 {
					t.Errorf("%s: %d params, want %d: %s", fname, len(fn.Params), len(locs)-1, fn.Signature())
					continue
				}
				check := func(what string, loc Location, err error, w any) {
					switch w := w.(type) {
					case error:
						if !errors.Is(err, w) {
							t.Errorf("%s %s: %v, %v; want %v", fname, what, loc, err, w)
						}
					case Location:
						if err != nil || loc != w {
							t.Errorf("%s %s: %v, %v; want %v", fname, what, loc, err, w)
						}
					}
				}
				for i, p := range fn.Params {
					check(p.ArgName(), p.Loc, p.Err, locs[i])
				}
				check("return", fn.RetLoc, fn.RetErr, locs[len(locs)-1])
			}
			fn, err := b.Func("vararg")
			if err != nil || !fn.Variadic || fn.Signature() != "int vararg(const char *fmt, ...)" {
				t.Errorf("vararg: %v, %v", fn.Signature(), err)
			}
			fn, err = b.Func("rx")
			if err != nil || fn.Signature() != "long int rx(struct req *req, size_t size)" {
				t.Errorf("rx: %v, %v", fn.Signature(), err)
			}
		})
	}
}

func TestFuncErrors(t *testing.T) {
	b, err := OpenBinary(build(t, "-O0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Func("rxx"); !errors.Is(err, ErrNoFunc) || !strings.Contains(err.Error(), `"rx"`) {
		t.Errorf("rxx: %v", err)
	}
	fn, err := b.Func("rx")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fn.Param("sise"); !errors.Is(err, ErrNoParam) || !strings.Contains(err.Error(), `"size"`) {
		t.Errorf("sise: %v", err)
	}
	if p, err := fn.Param("arg1"); err == nil && p.Name == "size" {
		t.Errorf("arg1 found a named parameter")
	}
	if _, err := b.LookupStruct("reqq"); !errors.Is(err, ErrNoType) || !strings.Contains(err.Error(), `"struct req"`) {
		t.Errorf("struct reqq: %v", err)
	}
	// A stripped binary without its debug file.
	bin, _ := stripped(t, build(t, "-O2"), false)
	if _, err := OpenBinary(bin, []string{t.TempDir()}); !errors.Is(err, ErrNoDWARF) {
		t.Errorf("stripped, no debug file: %v", err)
	}
}

// TestIncompleteAcrossCUs: structs2.c sees struct req only declared; the
// parameter's type is completed from the CU that defines it.
func TestIncompleteAcrossCUs(t *testing.T) {
	off := layoutOf(t)
	for _, opt := range []string{"-O0", "-O2"} {
		b, err := OpenBinary(build(t, opt), nil)
		if err != nil {
			t.Fatal(err)
		}
		fn, err := b.Func("opaque_user")
		if err != nil {
			t.Fatal(err)
		}
		_, a, err := fn.ParamAccess("r", []Step{Arrow("hdr"), Dot("id")})
		if err != nil || a.Off != off["req.hdr.id"] {
			t.Errorf("%s: r->hdr.id: %v, %v", opt, a, err)
		}
	}
}

// gdbProbe is one value the tests read with gdb at a function's entry.
type gdbProbe struct {
	fn, param string
	path      []Step
	want      uint64
}

// gdbExpr is the C expression gdb evaluates for an Access from base.
func gdbExpr(base Location, a Access) string {
	v := "$r" + strings.TrimPrefix(base.Reg, "r")
	if base.Stack {
		v = fmt.Sprintf("($rsp+%d)", base.StackOff)
	}
	for _, r := range a.Reads {
		v = fmt.Sprintf("*(unsigned long *)(%s+%d)", v, r.Off)
	}
	types := map[int64]string{1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long"}
	if a.Leaf == LeafValue {
		return fmt.Sprintf("(unsigned long)(%s)&%#x", v, uint64(1)<<(8*a.Size)-1)
	}
	return fmt.Sprintf("(unsigned long)*(%s *)(%s+%d)", types[a.Size], v, a.Off)
}

// TestABIGdb stops gdb at the first instruction of each function and
// reads each probe's value where Func and ParamAccess say it is: at -O0
// and -O2, it must be what main passed.
func TestABIGdb(t *testing.T) {
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("no gdb")
	}
	probes := []gdbProbe{
		{"rx", "req", []Step{Arrow("hdr"), Dot("id")}, 0x2a},
		{"rx", "req", []Step{Arrow("hdr"), Dot("size")}, 100},
		{"rx", "req", []Step{Arrow("hdr"), Dot("flags")}, 3},
		{"rx", "req", []Step{Arrow("buf"), Arrow("len")}, 0x77},
		{"rx", "req", []Step{Arrow("next"), Arrow("hdr"), Dot("id")}, 0x2b},
		{"rx", "req", []Step{Arrow("x")}, 7},
		{"rx", "req", []Step{Arrow("y")}, 8},
		{"rx", "req", []Step{Arrow("u"), Dot("l")}, 0x5555},
		{"rx", "req", []Step{Arrow("arr"), Index(2)}, 0x33},
		{"rx", "req", []Step{Arrow("name"), Index(0)}, 'f'},
		{"rx", "req", []Step{Arrow("buf"), Arrow("data"), Index(1)}, 'a'},
		{"rx", "size", nil, 0x1234},
		{"by_value", "b", []Step{Dot("a")}, 0x1111},
		{"by_value", "b", []Step{Dot("c")}, 0x3333},
		{"by_value", "x", nil, 0x44},
		{"with_double", "x", nil, 0x55},
		{"many", "a", nil, 0x101},
		{"many", "f", nil, 0x106},
		{"many", "g", nil, 0x107},
		{"many", "h", nil, 0x108},
		{"ret_big", "x", nil, 0x66},
		{"ret_pair", "p", nil, 0x7777},
		{"ret_pair", "n", nil, 0x88},
		{"pass_pair", "p", []Step{Dot("p")}, 0x9999},
		{"pass_pair", "p", []Step{Dot("n")}, 0xaa},
		{"pass_pair", "s", []Step{Dot("a")}, 0xbb},
		{"pass_pair", "z", nil, 0xdd},
		{"pass_mixed", "z", nil, 0xff},
		{"pass_packed", "s", []Step{Dot("l")}, 0x1212},
		{"pass_packed", "s", []Step{Dot("c")}, 'c'},
		{"pass_packed", "z", nil, 0x1313},
		{"after_stack", "e", nil, 5},
		{"after_stack", "g", nil, 0x1616},
		{"after_stack", "f", nil, 0x1515},
		{"align_stack", "s1", nil, 0x1717},
		{"align_stack", "w", nil, 0x1919},
		{"align_stack", "t", nil, 0x2020},
		{"local_static", "r", []Step{Arrow("x")}, 7},
		{"inl_twice", "r", []Step{Arrow("y")}, 8},
		{"inl_twice", "k", nil, 0x99},
		{"opaque_user", "n", nil, 0x3c},
		{"opaque_user", "r", []Step{Arrow("hdr"), Dot("id")}, 0x2a},
	}
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			bin := build(t, opt)
			b, err := OpenBinary(bin, nil)
			if err != nil {
				t.Fatal(err)
			}
			script := []string{"set pagination off", "set confirm off"}
			byFn := map[string][]int{}
			var order []string
			for i, p := range probes {
				if byFn[p.fn] == nil {
					order = append(order, p.fn)
				}
				byFn[p.fn] = append(byFn[p.fn], i)
			}
			for _, f := range order {
				fn, err := b.Func(f)
				if err != nil {
					t.Fatal(err)
				}
				script = append(script, "break *"+f, "commands", "silent")
				for _, i := range byFn[f] {
					p := probes[i]
					expr := ""
					if prm, err := fn.Param(p.param); err == nil && prm.Type.Size == 16 && prm.Loc.OnStack() {
						// An __int128 on the stack: its low eightbyte.
						expr = fmt.Sprintf("*(unsigned long *)($rsp+%d)", prm.Loc.StackOff)
					} else {
						base, a, err := fn.ParamAccess(p.param, p.path)
						if err != nil {
							t.Fatalf("%s %s: %v", f, FormatPath(p.param, p.path), err)
						}
						expr = gdbExpr(base, a)
					}
					script = append(script, fmt.Sprintf(`printf "probe %d %%lx\n", %s`, i, expr))
				}
				script = append(script, "continue", "end")
			}
			script = append(script, "run", "quit")
			got := runGdb(t, bin, script)
			for i, p := range probes {
				vals := got[i]
				if len(vals) == 0 {
					t.Errorf("%s %s: gdb printed nothing", p.fn, FormatPath(p.param, p.path))
				}
				for _, v := range vals {
					if v != p.want {
						t.Errorf("%s %s: gdb read %#x at entry, main passed %#x", p.fn, FormatPath(p.param, p.path), v, p.want)
					}
				}
			}
		})
	}
}

var probeLine = regexp.MustCompile(`(?m)^probe (\d+) ([0-9a-f]+)$`)

// runGdb runs script in gdb on bin and returns the values each "probe N
// VALUE" line printed, by N.
func runGdb(t *testing.T, bin string, script []string) map[int][]uint64 {
	t.Helper()
	f := filepath.Join(t.TempDir(), "script.gdb")
	if err := os.WriteFile(f, []byte(strings.Join(script, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("gdb", "-nx", "-batch", "-x", f, "--args", bin).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "probe ") {
		t.Skipf("gdb: %v\n%s", err, out)
	}
	got := map[int][]uint64{}
	for _, m := range probeLine.FindAllStringSubmatch(string(out), -1) {
		i, _ := strconv.Atoi(m[1])
		v, _ := strconv.ParseUint(m[2], 16, 64)
		got[i] = append(got[i], v)
	}
	if len(got) == 0 {
		t.Skipf("gdb printed no probe values:\n%s", out)
	}
	return got
}

// TestReturnGdb checks RetAccess: gdb finishes ret_pair and ret_big and
// reads the return value where RetAccess says it is.
func TestReturnGdb(t *testing.T) {
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("no gdb")
	}
	for _, opt := range []string{"-O0", "-O2"} {
		bin := build(t, opt)
		b, err := OpenBinary(bin, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			fn   string
			path []Step
			want uint64
		}{
			{"ret_pair", []Step{Dot("p")}, 0x7777},
			{"ret_pair", []Step{Dot("n")}, 0x88},
			{"ret_big", []Step{Dot("a")}, 0x66},
			{"ret_big", []Step{Dot("c")}, 0x68},
			{"rx", nil, 0x2a + 0x1234},
		} {
			fn, err := b.Func(c.fn)
			if err != nil {
				t.Fatal(err)
			}
			base, a, err := fn.RetAccess(c.path)
			if err != nil {
				t.Fatalf("%s retval%s: %v", c.fn, FormatPath("", c.path), err)
			}
			got := runGdb(t, bin, []string{"set pagination off", "break *" + c.fn, "run", "finish",
				fmt.Sprintf(`printf "probe 0 %%lx\n", %s`, gdbExpr(base, a)), "kill", "quit"})
			if len(got[0]) != 1 || got[0][0] != c.want {
				t.Errorf("%s %s: retval%s read %#x, want %#x", opt, c.fn, FormatPath("", c.path), got[0], c.want)
			}
		}
	}
}

func TestParseType(t *testing.T) {
	b, err := OpenBinary(build(t, "-O0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text, name string
		kind       Kind
		size       int64
		signed     bool
	}{
		{"u32", "u32", Int, 4, false},
		{"s64 *", "s64 *", Pointer, 8, false},
		{"unsigned long", "unsigned long", Int, 8, false},
		{"long long int", "long long int", Int, 8, true},
		{"unsigned char", "unsigned char", Int, 1, false},
		{"short", "short", Int, 2, true},
		{"int", "int", Int, 4, true},
		{"const char *", "const char *", Pointer, 8, false},
		{"struct req *", "struct req *", Pointer, 8, false},
		{"struct hdr", "struct hdr", Struct, 8, false},
		{"size_t", "size_t", Int, 8, false},
		{"char**", "char **", Pointer, 8, false},
	} {
		got, err := ParseType(c.text, b)
		if err != nil {
			t.Errorf("%q: %v", c.text, err)
			continue
		}
		if got.String() != c.name || got.Kind != c.kind || got.Size != c.size || got.Signed != c.signed {
			t.Errorf("%q: %s %v size %d signed %v", c.text, got, got.Kind, got.Size, got.Signed)
		}
	}
	for _, text := range []string{"", "*", "struct", "unsigned float", "short long", "struct nosuch *", "char char"} {
		if got, err := ParseType(text, b); err == nil {
			t.Errorf("%q: %s, want an error", text, got)
		}
	}
	if _, err := ParseType("struct req *", nil); !errors.Is(err, ErrNoType) {
		t.Errorf("struct without a source: %v", err)
	}
	// A cast then a path: *(u32 *)(p + 4) and ((struct req *)p)->hdr.id.
	u32p, _ := ParseType("u32 *", nil)
	if a, err := Resolve(u32p, []Step{Deref()}); err != nil || a.Leaf != LeafRead || a.Size != 4 || a.Signed {
		t.Errorf("*(u32 *): %v, %v", a, err)
	}
	rp, _ := ParseType("struct req *", b)
	if a, err := Resolve(rp, []Step{Arrow("hdr"), Dot("id")}); err != nil || a.Size != 4 || !a.Signed {
		t.Errorf("((struct req *)p)->hdr.id: %v, %v", a, err)
	}
}
