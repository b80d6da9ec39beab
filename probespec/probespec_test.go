package probespec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bpftape/bpftape/format"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Spec
	}{
		{"u:/path/qemu:virtio_net_receive_rcu", Spec{Kind: Uprobe, Binary: "/path/qemu", Symbol: "virtio_net_receive_rcu"}},
		{"rx=u:/path/qemu:virtio_net_receive_rcu(arg2)", Spec{Name: "rx", Kind: Uprobe, Binary: "/path/qemu", Symbol: "virtio_net_receive_rcu",
			Fields: []Field{{Text: "arg2", Source: Arg, Arg: 2}}}},
		{"uprobe:libc:malloc(arg0:u32)", Spec{Kind: Uprobe, Binary: "libc", Symbol: "malloc",
			Fields: []Field{{Text: "arg0:u32", Source: Arg, Type: format.Uint32}}}},
		{"ur:qemu:virtio_net_flush_tx(retval:s32)", Spec{Kind: Uretprobe, Binary: "qemu", Symbol: "virtio_net_flush_tx",
			Fields: []Field{{Text: "retval:s32", Source: Retval, Type: format.Int32}}}},
		{"uretprobe:./a.out:f(str(retval))", Spec{Kind: Uretprobe, Binary: "./a.out", Symbol: "f",
			Fields: []Field{{Text: "str(retval)", Source: Retval, Str: true}}}},
		{"U:./usdt_example:usdt-examples:usdt2(arg0, str(arg1) ,arg2)", Spec{Kind: USDT, Binary: "./usdt_example", Provider: "usdt-examples", Probe: "usdt2",
			Fields: []Field{{Text: "arg0", Source: Arg}, {Text: "str(arg1)", Source: Arg, Arg: 1, Str: true}, {Text: "arg2", Source: Arg, Arg: 2}}}},
		{"usdt:./virtnet:virtio-net-rx-end", Spec{Kind: USDT, Binary: "./virtnet", Probe: "virtio-net-rx-end"}},
		{"usdt:./odd:dir:qemu:rx", Spec{Kind: USDT, Binary: "./odd:dir", Provider: "qemu", Probe: "rx"}},
		{"usdt:./x:p:n(arg11:s8)", Spec{Kind: USDT, Binary: "./x", Provider: "p", Probe: "n",
			Fields: []Field{{Text: "arg11:s8", Source: Arg, Arg: 11, Type: format.Int8}}}},
		{"t:syscalls:sys_exit_write", Spec{Kind: Tracepoint, Category: "syscalls", Event: "sys_exit_write"}},
		{"w=tracepoint:syscalls:sys_enter_openat(dfd:s32,str(filename),flags)", Spec{Name: "w", Kind: Tracepoint, Category: "syscalls", Event: "sys_enter_openat",
			Fields: []Field{{Text: "dfd:s32", Source: TPField, Name: "dfd", Type: format.Int32},
				{Text: "str(filename)", Source: TPField, Name: "filename", Str: true},
				{Text: "flags", Source: TPField, Name: "flags"}}}},
		{"t:raw_syscalls:sys_enter(args)", Spec{Kind: Tracepoint, Category: "raw_syscalls", Event: "sys_enter",
			Fields: []Field{{Text: "args", Source: TPField, Name: "args"}}}},
		{"t:x:y(arg0)", Spec{Kind: Tracepoint, Category: "x", Event: "y",
			Fields: []Field{{Text: "arg0", Source: TPField, Name: "arg0"}}}},
		{"u:./virtnet:virtio_net_receive_rcu+0x4(arg2)", Spec{Kind: Uprobe, Binary: "./virtnet", Symbol: "virtio_net_receive_rcu+0x4",
			Fields: []Field{{Text: "arg2", Source: Arg, Arg: 2}}}},
		{"ur:./virtnet:0x401196", Spec{Kind: Uretprobe, Binary: "./virtnet", Symbol: "0x401196"}},
		// arg6 and arg7 are arm64's x6 and x7; the resolver refuses them on
		// x86-64, which has six argument registers.
		{"u:./a.out:f(arg6,arg7:s32)", Spec{Kind: Uprobe, Binary: "./a.out", Symbol: "f",
			Fields: []Field{{Text: "arg6", Source: Arg, Arg: 6}, {Text: "arg7:s32", Source: Arg, Arg: 7, Type: format.Int32}}}},
		{"kprobe:vfs_read", Spec{Kind: Kprobe, Symbol: "vfs_read"}},
		{"kr:vfs_read", Spec{Kind: Kretprobe, Symbol: "vfs_read"}},
		{"f:vmlinux:vfs_read", Spec{Kind: Fentry, Symbol: "vfs_read"}},
		{"fexit:vfs_read", Spec{Kind: Fexit, Symbol: "vfs_read"}},
		{"k:vfs_read+0x1a(arg1)", Spec{Kind: Kprobe, Symbol: "vfs_read", Offset: 0x1a,
			Fields: []Field{{Text: "arg1", Source: Arg, Arg: 1}}}},
		{"k:do_sys_openat2(str(arg1))", Spec{Kind: Kprobe, Symbol: "do_sys_openat2",
			Fields: []Field{{Text: "str(arg1)", Source: Arg, Arg: 1, Str: true}}}},
		{"f:vfs_read(count,arg0)", Spec{Kind: Fentry, Symbol: "vfs_read",
			Fields: []Field{{Text: "count", Source: Param, Name: "count"}, {Text: "arg0", Source: Arg}}}},
		{"fr:do_sys_openat2(str(filename),retval:s32)", Spec{Kind: Fexit, Symbol: "do_sys_openat2",
			Fields: []Field{{Text: "str(filename)", Source: Param, Name: "filename", Str: true}, {Text: "retval:s32", Source: Retval, Type: format.Int32}}}},
		{"k:vfs_*", Spec{Kind: Kprobe, Symbol: "vfs_*"}},
		{"f:tcp_send?sg", Spec{Kind: Fentry, Symbol: "tcp_send?sg"}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		tt.want.Text = tt.in
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("Parse(%q) =\n %+v\nwant\n %+v", tt.in, *got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty probe"},
		{"uprobe", "want TYPE:TARGET"},
		{"x:foo:bar", `unknown probe type "x"`},
		{"u:foo", "want uprobe:BINARY:SYMBOL"},
		{"u::foo", "empty part"},
		{"=u:a:b", "empty NAME"},
		{"a b=u:a:b", "cannot hold spaces"},
		{"t:syscalls", "want tracepoint:CATEGORY:EVENT"},
		{"t:a:b:c", "want tracepoint:CATEGORY:EVENT"},
		{"usdt:foo", "want usdt:BINARY"},
		{"u:a:b(arg0", "field list must end"},
		{"u:a:b)", "unbalanced"},
		{"u:a:b()", "empty field list"},
		{"u:a:b(arg0,)", "empty field"},
		{"u:a:b(arg8)", "only arg0..arg7 are passed in registers (arg0..arg7 on arm64, arg0..arg5 on x86-64)"},
		{"k:f(arg12)", "only arg0..arg7"},
		{"u:a:b(retval)", "has no retval"},
		{"u:a:b(9foo)", "want argN (N = 0..7), a parameter name"},
		{"u:a:b(x->)", "want a member name after ->"},
		{"u:a:b(x[-1])", "want an integer"},
		{"u:a:b(*(u32 *)(arg1 + ))", "want an integer"},
		{"U:a:b(arg0->x)", "a USDT argument has no type"},
		{"t:a:b(c->d)", "tracepoint fields take no expression"},
		{"u:a:b(x)/x >/", "missing operand"},
		{"u:a:b(x)/x/", "want a comparison"},
		{"u:a:b(x)/x > y/", "compare one field"},
		{"u:a:b(x)/5 < 6/", "5 < 6: compare one field"},
		{"u:a:b(x)/comm < \"a\"/", "compares with == or != only"},
		{"u:a:b(x)/x == \"a\"/", "only comm compares with a string"},
		{"u:a:b(x)/comm == 3/", "compare comm with a"},
		{"u:a:b(x)/(x == 1/", "missing"},
		{"u:a:b(x)x == 1/", "has no opening one"},
		{"profile:hz:99/size > 1/", "a profile probe's filter compares pid"},
		{"u:a:b(arg01)", "bad argument number"},
		{"u:a:b(arg0:i32)", `unknown type "i32"`},
		{"u:a:b(arg0:u32,arg0)", `both record arg0`},
		{"u:a:b(arg1,str(arg1))", `both record arg1`},
		{"u:a:b(str(arg1:u8))", "a string has no integer TYPE"},
		{"u:a:b(str(arg1)", "want str(argN)"},
		{"ur:a:b(arg0)", "a uretprobe records retval"},
		{"U:a:b:c(retval)", "a USDT probe records argN"},
		{"U:a:b:c(foo)", "a USDT probe records argN"},
		{"t:a:b(x y)", "want argN"},
		{"t:a:b(1abc)", "is not a tracepoint field name"},
		{"k:vfs_read(retval)", "a kprobe fires on entry and has no retval: use a kretprobe (kr:)"}, {"kr:vfs_read(arg2)", "a kretprobe records retval"}, {"f:vfs_read(retval)", "a fentry fires on entry and has no retval: use a fexit (fr:)"},
		{"f:vfs_read(arg12)", "arg0..arg11"}, {"f:vfs_read+4", "only a kprobe takes +OFFSET"}, {"k:vfs_read+x", "want FUNC+OFFSET"},
		{"k:vfs_*+4", "a wildcard takes no offset"}, {"k:vfs-read", "want a C identifier"}, {"k:a:b:c", "want kprobe:FUNC or kprobe:MODULE:FUNC"},
		{"u:a:b(arg0,arg1,arg2,arg3,arg4,arg5,arg0:u8)", "both record arg0"},
		{"U:a:b(arg0,arg1,arg2,arg3,arg4,arg5,arg6,arg7,arg8,arg9,arg10,arg11,arg12)", "13 fields: a probe records at most 12"},
		{"U:a:b(str(arg0),str(arg1),str(arg2),str(arg3),str(arg4))", "5 string fields"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want error %q", tt.in, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want it to say %q", tt.in, err, tt.want)
		}
	}
}

func TestNames(t *testing.T) {
	parse := func(in ...string) []*Spec {
		var specs []*Spec
		for _, s := range in {
			sp, err := Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, sp)
		}
		return specs
	}
	got, err := Names(parse(
		"u:./virtnet:virtio_net_receive_rcu(arg2)",
		"ur:./virtnet:virtio_net_receive_rcu",
		"u:./virtnet:virtio_net_receive_rcu(arg0)",
		"U:./virtnet:qemu:virtio-net-rx-end",
		"t:syscalls:sys_exit_write",
		"w2=t:syscalls:sys_exit_write",
		"u:libc:malloc", "u:/lib/libc.so.6:malloc", "u:x:malloc",
	))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"virtio_net_receive_rcu", "virtio_net_receive_rcu:return", "virtio_net_receive_rcu#2",
		"virtio-net-rx-end", "sys_exit_write", "w2", "malloc", "malloc#2", "malloc#3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %q, want %q", got, want)
	}

	// An explicit name is never renamed; a default that would collide
	// with one is an error rather than a silent "#2".
	if _, err := Names(parse("a=u:x:f", "a=u:x:g")); err == nil || !strings.Contains(err.Error(), `both named "a"`) {
		t.Errorf("duplicate explicit names: %v", err)
	}
	if _, err := Names(parse("f=u:x:g", "u:x:f")); err == nil || !strings.Contains(err.Error(), "name one of them") {
		t.Errorf("default colliding with explicit name: %v", err)
	}
	// A default that collides with another default's "#2" keeps counting.
	got, err = Names(parse("u:x:f", "f#2=u:x:g", "u:y:f"))
	if err != nil || !reflect.DeepEqual(got, []string{"f", "f#2", "f#3"}) {
		t.Errorf("Names = %q, %v", got, err)
	}
}

// TestExpressions checks expression fields: their steps and the name
// they get in the capture.
func TestExpressions(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		field string
		name  string
		steps []Step
		str   bool
	}{
		{"u:./a:f", "size", "size", nil, false},
		{"u:./a:f", "req->hdr.size", "req->hdr.size", []Step{{Op: StepArrow, Name: "hdr"}, {Op: StepMember, Name: "size"}}, false},
		{"u:./a:f", "arg0->len", "arg0->len", []Step{{Op: StepArrow, Name: "len"}}, false},
		{"u:./a:f", "*(u32 *)(arg1 + 16)", "*(u32 *)(arg1 + 16)", []Step{{Op: StepAdd, N: 16}, {Op: StepCast, Name: "u32 *"}, {Op: StepDeref}}, false},
		{"u:./a:f", "*(u32*)(arg1-0x10)", "*(u32 *)(arg1 - 16)", []Step{{Op: StepAdd, N: -16}, {Op: StepCast, Name: "u32 *"}, {Op: StepDeref}}, false},
		{"u:./a:f", "((struct foo *)arg0)->x[3]", "((struct foo *)arg0)->x[3]", []Step{{Op: StepCast, Name: "struct foo *"}, {Op: StepArrow, Name: "x"}, {Op: StepIndex, N: 3}}, false},
		{"k:vfs_read", "str(file->f_path.dentry->d_name.name)", "file->f_path.dentry->d_name.name", []Step{
			{Op: StepArrow, Name: "f_path"}, {Op: StepMember, Name: "dentry"}, {Op: StepArrow, Name: "d_name"}, {Op: StepMember, Name: "name"}}, true},
		{"f:do_nanosleep", "t->task", "t->task", []Step{{Op: StepArrow, Name: "task"}}, false},
		{"ur:./a:f", "retval->len", "retval->len", []Step{{Op: StepArrow, Name: "len"}}, false},
	} {
		s, err := Parse(tc.kind + "(" + tc.field + ")")
		if err != nil {
			t.Errorf("%s(%s): %v", tc.kind, tc.field, err)
			continue
		}
		f := s.Fields[0]
		if f.FieldName() != tc.name || !reflect.DeepEqual(f.Steps, tc.steps) || f.Str != tc.str {
			t.Errorf("%s(%s): name %q steps %+v str %v, want %q %+v %v", tc.kind, tc.field, f.FieldName(), f.Steps, f.Str, tc.name, tc.steps, tc.str)
		}
	}
}

// TestPredicates checks predicate parsing: precedence, constants on
// either side, and slashes inside a comm.
func TestPredicates(t *testing.T) {
	for in, want := range map[string]string{
		"big=u:./vnet:rx(size)/size >= 8192/":                                 "size >= 8192",
		"u:./a:f(x,y)/x > 1 && y < 2 || !(x == -3)/":                          "((x > 1 && y < 2) || !x == -3)",
		"u:./a:f(x)/ 10 <= x /":                                               "x >= 10",
		"t:sched:sched_switch(prev_pid)/comm == \"kworker/0:1\" && cpu != 0/": "(comm == \"kworker/0:1\" && cpu != 0)",
		"u:./a:f(arg0->len)/arg0->len > 0x10/":                                "arg0->len > 16",
		"profile:hz:99/pid == 42/":                                            "pid == 42",
	} {
		s, err := Parse(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if s.Predicate == nil || s.Predicate.String() != want {
			t.Errorf("%s: predicate %v, want %s", in, s.Predicate, want)
		}
	}
}

func TestTargetAndFieldName(t *testing.T) {
	s, err := Parse("n=U:./e:usdt2(arg0,str(arg1))")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Target(); got != "usdt:./e:usdt2" {
		t.Errorf("Target = %q", got)
	}
	if a, b := s.Fields[0].FieldName(), s.Fields[1].FieldName(); a != "arg0" || b != "arg1" {
		t.Errorf("field names %q %q", a, b)
	}
	s, _ = Parse("ur:x:f")
	if got := s.Target(); got != "uretprobe:x:f" {
		t.Errorf("Target = %q", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"u:/a:b(arg0:s8,str(arg1))", "t:a:b(c)", "rx=U:x:p:n", "ur:a:b(retval:u64)",
		"u:./a:f(req->hdr.size, *(u32 *)(arg1 + 16), str(x->name), v[2])/size >= 8192 && !(comm == \"a/b\") || pid == 3/",
		"f:do_nanosleep(t->task)", "k:vfs_read(str(file->f_path.dentry->d_name.name))/cpu == 0/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			return
		}
		if s.Kind == 0 || len(s.Fields) > MaxFields {
			t.Fatalf("Parse(%q) = %+v", in, s)
		}
		if s.Fields != nil && len(s.Fields) == 0 {
			t.Fatalf("Parse(%q): empty non-nil field list", in)
		}
		if s.Predicate != nil {
			// The predicate writes back into one that parses the same.
			again, err := ParsePredicate(s.Predicate.String())
			if err != nil || again.String() != s.Predicate.String() {
				t.Fatalf("Parse(%q): predicate %q reparses as %v, %v", in, s.Predicate, again, err)
			}
		}
		for _, fd := range s.Fields {
			// An expression's name parses back into the same steps.
			if fd.Steps == nil {
				continue
			}
			base, steps, err := parseExpr(fd.FieldName())
			if err != nil || base != fd.baseName() || !reflect.DeepEqual(steps, fd.Steps) {
				t.Fatalf("Parse(%q): field %q reparses as %q %+v, %v (had %+v)", in, fd.FieldName(), base, steps, err, fd.Steps)
			}
		}
	})
}

// TestTypeName checks that TypeName inverts ParseType for every integer
// type, names strings, and names nothing else.
func TestTypeName(t *testing.T) {
	ints := 0
	for typ := format.Type(0); typ < 64; typ++ {
		name := TypeName(typ)
		switch {
		case typ.IsInt():
			ints++
			back, err := ParseType(name)
			if err != nil || back != typ {
				t.Errorf("ParseType(TypeName(%v) = %q) = %v, %v", typ, name, back, err)
			}
		case typ == format.String:
			if name != "string" {
				t.Errorf("TypeName(String) = %q", name)
			}
		case name != "":
			t.Errorf("TypeName(%v) = %q, want \"\"", typ, name)
		}
	}
	if ints != 8 {
		t.Errorf("%d integer types, want 8", ints)
	}
}

func TestMatchFunc(t *testing.T) {
	for _, tt := range []struct {
		pattern, fn string
		want        bool
	}{
		{"vfs_*", "vfs_read", true}, {"vfs_*", "vfs_", true}, {"vfs_*", "do_vfs_read", false},
		{"*read", "vfs_read", true}, {"*read", "vfs_readv", false}, {"*_read*", "vfs_readv", true},
		{"tcp_send?sg", "tcp_sendmsg", true}, {"tcp_send?sg", "tcp_sendmmsg", false},
		{"vfs_read", "vfs_read", true}, {"vfs_read", "vfs_reads", false}, {"*", "", true}, {"?", "", false},
	} {
		if got := MatchFunc(tt.pattern, tt.fn); got != tt.want {
			t.Errorf("MatchFunc(%q, %q) = %v, want %v", tt.pattern, tt.fn, got, tt.want)
		}
	}
}

func TestExpand(t *testing.T) {
	s, err := Parse("calls=k:vfs_*(arg2)")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Wildcard() {
		t.Fatal("k:vfs_* is no wildcard")
	}
	e := s.Expand("vfs_read")
	if e.Text != "k:vfs_read(arg2)" || e.Symbol != "vfs_read" || e.Pattern != "vfs_*" || e.Name != "" || e.Wildcard() || len(e.Fields) != 1 {
		t.Errorf("Expand = %+v", e)
	}
	if e.DefaultName() != "vfs_read" {
		t.Errorf("expanded default name %q", e.DefaultName())
	}
}
