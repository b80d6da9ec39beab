// Package probespec parses the probe arguments of `bpftape record`.
//
// Syntax:
//
//	PROBE  := [NAME=]TYPE:TARGET[(FIELD,...)]
//	TYPE   := uprobe | u | uretprobe | ur | usdt | U | tracepoint | t
//	        | kprobe | k | kretprobe | kr | fentry | f | fexit | fr | profile
//	TARGET := BINARY:SYMBOL[+OFFSET]        uprobe, uretprobe
//	        | BINARY:ADDRESS                uprobe, uretprobe
//	        | BINARY:[PROVIDER:]PROBE       usdt (PROVIDER may be left out when
//	                                        only one provider has a probe PROBE)
//	        | CATEGORY:EVENT                tracepoint
//	        | [MODULE:]FUNC[+OFFSET]        kprobe (OFFSET), kretprobe, fentry, fexit
//	        | hz:N                          profile: every CPU, N times a second
//	FIELD  := argN[:TYPE] | retval[:TYPE] | str(argN) | str(retval)
//	        | TPFIELD[:TYPE] | str(TPFIELD) | ustack[(N)] | kstack[(N)]
//	TYPE   := s8 | u8 | s16 | u16 | s32 | u32 | s64 | u64
//
// BINARY is a path (anything with a '/'), a program found on PATH, or a
// library name such as libc or libssl.so.3. SYMBOL+OFFSET is a byte offset
// into the function (main+4, main+0x10) and ADDRESS a link-time virtual
// address (0x1139) as nm and objdump print it, bpftrace's convention; both
// must start an instruction, and a uretprobe takes only a function's entry.
// The recorder finds the symbols of a stripped binary in its debug file.
//
// Examples:
//
//	u:/usr/bin/qemu-system-x86_64:virtio_net_receive_rcu(arg2)
//	u:./virtnet:virtio_net_receive_rcu+4(arg2)
//	u:./virtnet:0x401196
//	rx=uprobe:./virtnet:virtio_net_receive_rcu(arg0,arg2:u32)
//	ur:qemu:virtio_net_flush_tx(retval:s32)
//	U:./usdt_example:usdt-examples:usdt2(arg0,str(arg1),arg2)
//	usdt:./virtnet:virtio-net-rx-end
//	t:syscalls:sys_exit_write(ret)
//	t:syscalls:sys_enter_openat(dfd:s32,str(filename))
//	leaf=u:./app:leaf(arg0, ustack)
//	t:sched:sched_switch(prev_pid, next_pid, prev_state, kstack, ustack)
//	profile:hz:49
//
// Stacks. ustack and kstack record the user and kernel stack of every
// event of any probe (at most N frames, default and most MaxStack), as
// bpftrace's ustack and kstack builtins; they do not count against the
// 12 fields. A profile probe samples every CPU N times a second (the -p
// or -c processes only, when given) and records both stacks unless its
// list names one.
//
// Fields. argN is the Nth argument, counted from 0 as bpftrace counts (a
// uprobe's arg2 is PT_REGS_PARM3, the third integer argument register of
// the calling convention: N is 0..5 on x86-64, whose System V ABI passes
// six in rdi..r9, and 0..7 on arm64, whose AAPCS64 passes eight in
// x0..x7; Parse accepts 0..7 and the resolver refuses arg6 and arg7 on
// x86-64); for a USDT probe it is the Nth argument of the probe's note.
// retval is a uretprobe's return value (rax on x86-64, x0 on arm64).
// TPFIELD is a tracepoint field named as in its tracefs format file (the
// common_* fields are not available: every event records its pid, tid, cpu,
// comm and time anyway). str(X) records the NUL-terminated user-space string
// X points to (at most 63 bytes; longer strings are cut) instead of X; the
// field keeps X's name (str(arg1) is recorded as a string field "arg1"), so
// X and str(X) cannot both be listed. A TYPE gives the recorded field that
// integer type: the value is cut to its width and, for a register, sign- or
// zero-extended from it, as a C cast would.
//
// Without a field list a probe records its defaults: a uprobe its
// function's parameters by their DWARF names and types when the binary has
// them, else arg0..arg5 as u64; a uretprobe retval as s64; a USDT probe every argument of its note
// with the note's size and sign; a tracepoint every field of its format
// (integers with their size and sign, pointers as u64, char arrays and
// __data_loc strings as strings). A probe records at most 12 fields, at most
// 4 of them strings.
//
// Names. NAME= names the probe in the capture; without it the name is the
// symbol (uprobe), the symbol with ":return" appended (uretprobe), the probe
// name (usdt) or the event name (tracepoint). When two probes would get the
// same default name, the second gets "#2" appended, the third "#3" and so on
// (u:libc:malloc and u:/opt/libc.so.6:malloc become malloc and malloc#2).
//
// Kernel functions: kprobe:/k:FUNC[+OFFSET] (argN, str(argN)),
// kretprobe:/kr:FUNC (retval), fentry:/f:FUNC and fexit:/fr:FUNC, whose
// fields name the function's parameters as its BTF does (or argN; a fexit
// also retval). [MODULE:]FUNC may name the module. FUNC may be a pattern
// with * and ? (Wildcard), which the recorder expands into one spec per
// matching function (Expand, MatchFunc).
package probespec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bpftape/bpftape/format"
)

// Kind is the probe type.
type Kind uint8

// Probe types.
const (
	Uprobe Kind = iota + 1
	Uretprobe
	USDT
	Tracepoint
	Kprobe
	Kretprobe
	Fentry
	Fexit
	Profile
)

var kindNames = map[Kind]string{
	Uprobe: "uprobe", Uretprobe: "uretprobe", USDT: "usdt", Tracepoint: "tracepoint",
	Kprobe: "kprobe", Kretprobe: "kretprobe", Fentry: "fentry", Fexit: "fexit",
	Profile: "profile",
}

// String returns the long name of the type, as written to a capture's
// Probe.Kind: uprobe, uretprobe, usdt, tracepoint, ...
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// prefixes maps every accepted TYPE spelling to its kind.
var prefixes = map[string]Kind{
	"uprobe": Uprobe, "u": Uprobe,
	"uretprobe": Uretprobe, "ur": Uretprobe,
	"usdt": USDT, "U": USDT,
	"tracepoint": Tracepoint, "t": Tracepoint,
	"kprobe": Kprobe, "k": Kprobe,
	"kretprobe": Kretprobe, "kr": Kretprobe,
	"fentry": Fentry, "f": Fentry,
	"fexit": Fexit, "fr": Fexit,
	"profile": Profile,
}

// Source is what a field records.
type Source uint8

// Field sources.
const (
	Arg     Source = iota + 1 // argN of a uprobe or USDT probe
	Retval                    // a uretprobe's return value
	TPField                   // a tracepoint field
	Param                     // a fentry/fexit probe's function parameter, by its name in BTF
	Stack                     // the user (ustack) or kernel (kstack) stack
)

// Limits of one probe, set by the BPF sample layout.
const (
	MaxFields  = 12 // fields per probe
	MaxStrings = 4  // string fields per probe
	MaxRegArgs = 8  // uprobe arguments passed in registers: arg0..arg7 (AAPCS64; arg0..arg5 on x86-64)
	// MaxStack is the deepest stack a stack field records, and its
	// default: the kernel's perf_event_max_stack default.
	MaxStack = 127
	// MaxHz is the highest profile frequency accepted; the kernel's
	// kernel.perf_event_max_sample_rate may refuse less.
	MaxHz = 100000
)

// Field is one entry of a probe's field list.
type Field struct {
	Text   string // as typed: "arg2:s32", "str(arg1)", "filename"
	Source Source
	Arg    int    // N of argN (Source Arg)
	Name   string // the tracepoint field (Source TPField) or parameter (Source Param)
	// Str is set for str(X): record the user string X points to.
	Str bool
	// Type is the integer type asked for with :TYPE, or format.TypeInvalid
	// for the default.
	Type format.Type
	// Kernel and Depth are a stack field's (Source Stack): kstack or
	// ustack, and the most frames it records (ustack(16)).
	Kernel bool
	Depth  int
	// Steps is an expression's path from its base (the argument, retval
	// or parameter named by Source, Arg and Name): arg0->len has the
	// steps ->len. Nil for a plain field.
	Steps []Step
}

// FieldName is the name the field gets in the capture: "argN", "retval" or
// the tracepoint field's name, also for str(X).
func (f *Field) FieldName() string {
	if f.Steps != nil {
		return exprText(f.baseName(), f.Steps)
	}
	return f.baseName()
}

// baseName is the name of the value an expression starts from.
func (f *Field) baseName() string {
	switch f.Source {
	case Arg:
		return "arg" + strconv.Itoa(f.Arg)
	case Retval:
		return "retval"
	case Stack:
		if f.Kernel {
			return "kstack"
		}
		return "ustack"
	}
	return f.Name
}

// DefaultStacks are a profile probe's fields when it has no list: both
// stacks, as BCC's profile and perf record -g take them.
func DefaultStacks() []Field {
	return []Field{
		{Text: "kstack", Source: Stack, Kernel: true, Depth: MaxStack},
		{Text: "ustack", Source: Stack, Depth: MaxStack},
	}
}

// parseStack parses ustack, kstack, ustack(N) and kstack(N).
func parseStack(text string) (f Field, ok bool, err error) {
	name, arg, hasArg := strings.Cut(text, "(")
	name = strings.TrimSpace(name)
	if name != "ustack" && name != "kstack" {
		return f, false, nil
	}
	f = Field{Text: text, Source: Stack, Kernel: name == "kstack", Depth: MaxStack}
	if hasArg {
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(arg, ")")))
		if !strings.HasSuffix(arg, ")") || err != nil || n < 1 || n > MaxStack {
			return f, true, fmt.Errorf("field %q: want %s or %s(N) with N frames, 1 to %d", text, name, name, MaxStack)
		}
		f.Depth = n
	}
	return f, true, nil
}

// Spec is one parsed probe argument.
type Spec struct {
	Text string // the argument as typed
	Name string // NAME= if given, else ""
	Kind Kind

	Binary string // uprobe, uretprobe, usdt: as typed (path, program or library name)
	Symbol string // uprobe, uretprobe; the function of kprobe, kretprobe, fentry, fexit
	// Offset is a kprobe's byte offset into Symbol (k:FUNC+OFFSET).
	Offset uint64
	// Pattern is the function pattern a spec was expanded from (vfs_*
	// for the k:vfs_read of k:vfs_*), "" otherwise.
	Pattern  string
	Provider string // usdt; "" when left out
	Probe    string // usdt
	Category string // tracepoint
	Event    string // tracepoint
	Hz       uint64 // profile

	// Fields is the field list, nil when none was given (record the
	// defaults). A given list is never empty.
	Fields []Field
	// Predicate is the /FILTER/ that ends the probe, nil for none.
	Predicate *Predicate
}

// Target returns the spec without NAME= and field list, in long form:
// "uprobe:./virtnet:virtio_net_receive_rcu".
func (s *Spec) Target() string {
	switch s.Kind {
	case Uprobe, Uretprobe:
		return s.Kind.String() + ":" + s.Binary + ":" + s.Symbol
	case USDT:
		if s.Provider == "" {
			return "usdt:" + s.Binary + ":" + s.Probe
		}
		return "usdt:" + s.Binary + ":" + s.Provider + ":" + s.Probe
	case Tracepoint:
		return "tracepoint:" + s.Category + ":" + s.Event
	case Profile:
		return "profile:hz:" + strconv.FormatUint(s.Hz, 10)
	}
	return s.Kind.String() + ":" + s.Symbol
}

// checkFuncPattern accepts a kernel function name or a pattern of one,
// with * (any run of characters) and ? (any one character).
func checkFuncPattern(name string) error {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '.' || c == '*' || c == '?' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return fmt.Errorf("kernel function %q: want a C identifier, or a pattern of one with * and ?", name)
		}
	}
	return nil
}

// Wildcard reports whether a kernel probe's function is a pattern
// (k:vfs_*), to be expanded into one probe per matching function.
func (s *Spec) Wildcard() bool {
	switch s.Kind {
	case Kprobe, Kretprobe, Fentry, Fexit:
		return strings.ContainsAny(s.Symbol, "*?")
	}
	return false
}

// Expand returns the probe on function fn of a wildcard spec: the same
// kind, module and fields, named after fn (k:vfs_* → k:vfs_read, named
// vfs_read).
func (s *Spec) Expand(fn string) *Spec {
	e := *s
	e.Symbol = fn
	e.Pattern = s.Symbol
	e.Name = ""
	e.Text = strings.Replace(s.Text, s.Symbol, fn, 1)
	if i := strings.IndexByte(e.Text, '='); i >= 0 && i < strings.IndexByte(e.Text+":", ':') {
		e.Text = e.Text[i+1:]
	}
	e.Fields = append([]Field(nil), s.Fields...)
	return &e
}

// MatchFunc reports whether kernel function fn matches pattern, in which *
// matches any run of characters and ? any one character.
func MatchFunc(pattern, fn string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for i := len(fn); i >= 0; i-- {
				if MatchFunc(pattern[1:], fn[i:]) {
					return true
				}
			}
			return false
		case '?':
			if fn == "" {
				return false
			}
		default:
			if fn == "" || fn[0] != pattern[0] {
				return false
			}
		}
		pattern, fn = pattern[1:], fn[1:]
	}
	return fn == ""
}

// DefaultName is the name the probe gets without NAME= (before it is made
// unique): the symbol, the symbol + ":return", the USDT probe or the event.
func (s *Spec) DefaultName() string {
	switch s.Kind {
	case Uprobe, Kprobe, Fentry:
		return s.Symbol
	case Uretprobe, Kretprobe, Fexit:
		return s.Symbol + ":return"
	case USDT:
		return s.Probe
	case Tracepoint:
		return s.Event
	case Profile:
		return "profile"
	}
	return s.Text
}

// Parse parses one probe argument and checks what can be checked without
// looking at binaries or the kernel: the syntax, field names allowed for the
// probe type, types, duplicates and the limits.
func Parse(text string) (*Spec, error) {
	s, err := parse(text)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", quoteShort(text), err)
	}
	return s, nil
}

// quoteShort quotes s as %q does, a long s cut to its first 100 bytes
// (at a rune boundary) and its length: an error names a huge probe or
// predicate without copying all of it.
func quoteShort(s string) string {
	const keep = 100
	if len(s) <= 2*keep {
		return strconv.Quote(s)
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

func parse(text string) (*Spec, error) {
	s := &Spec{Text: text}
	rest := strings.TrimSpace(text)
	if rest == "" {
		return nil, errors.New("empty probe")
	}
	// NAME= comes before the type, whose prefix has no '='.
	if i := strings.IndexByte(rest, '='); i >= 0 && i < strings.IndexByte(rest+":", ':') {
		s.Name = strings.TrimSpace(rest[:i])
		rest = rest[i+1:]
		if s.Name == "" {
			return nil, errors.New("empty NAME before '='")
		}
		if strings.ContainsAny(s.Name, "() ,\t") {
			return nil, fmt.Errorf("probe name %q: names cannot hold spaces, commas or parentheses", s.Name)
		}
	}
	rest, ptext, hasPred, err := cutPredicate(rest)
	if err != nil {
		return nil, err
	}
	if hasPred {
		f, err := ParsePredicate(ptext)
		if err != nil {
			return nil, err
		}
		s.Predicate = f
	}
	typ, target, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, errors.New("want TYPE:TARGET, e.g. uprobe:BINARY:SYMBOL, usdt:BINARY:PROVIDER:PROBE or tracepoint:CATEGORY:EVENT")
	}
	kind, ok := prefixes[typ]
	if !ok {
		return nil, fmt.Errorf("unknown probe type %q: use uprobe (u), uretprobe (ur), usdt (U), tracepoint (t), kprobe (k), kretprobe (kr), fentry (f), fexit (fr) or profile", typ)
	}
	s.Kind = kind

	var list string
	hasList := false
	if i := strings.IndexByte(target, '('); i >= 0 {
		if !strings.HasSuffix(target, ")") {
			return nil, errors.New("field list must end the probe: TARGET(FIELD,...)")
		}
		list = target[i+1 : len(target)-1]
		target = target[:i]
		hasList = true
	} else if strings.IndexByte(target, ')') >= 0 {
		return nil, errors.New("unbalanced ')'")
	}

	parts := strings.Split(target, ":")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("empty part in %q", target)
		}
	}
	switch kind {
	case Uprobe, Uretprobe:
		if len(parts) < 2 {
			return nil, fmt.Errorf("want %s:BINARY:SYMBOL", kind)
		}
		s.Binary = strings.Join(parts[:len(parts)-1], ":")
		s.Symbol = parts[len(parts)-1]
	case USDT:
		switch {
		case len(parts) < 2:
			return nil, errors.New("want usdt:BINARY:PROVIDER:PROBE or usdt:BINARY:PROBE")
		case len(parts) == 2:
			s.Binary, s.Probe = parts[0], parts[1]
		default:
			s.Binary = strings.Join(parts[:len(parts)-2], ":")
			s.Provider, s.Probe = parts[len(parts)-2], parts[len(parts)-1]
		}
	case Tracepoint:
		if len(parts) != 2 {
			return nil, errors.New("want tracepoint:CATEGORY:EVENT")
		}
		s.Category, s.Event = parts[0], parts[1]
	case Profile:
		if s.Predicate != nil {
			for _, o := range s.Predicate.Operands() {
				if !builtinOperands[o] {
					return nil, fmt.Errorf("filter operand %q: a profile probe's filter compares pid, tid, cpu or comm", o)
				}
			}
		}
		if len(parts) != 2 || parts[0] != "hz" {
			return nil, errors.New("want profile:hz:N, sampling every CPU N times a second (profile:hz:49)")
		}
		n, err := strconv.ParseUint(parts[1], 10, 64)
		if err != nil || n < 1 || n > MaxHz {
			return nil, fmt.Errorf("profile:hz:%s: want a frequency from 1 to %d", parts[1], MaxHz)
		}
		s.Hz = n
	default: // kprobe, kretprobe, fentry, fexit: [MODULE:]FUNC
		if len(parts) > 2 {
			return nil, fmt.Errorf("want %s:FUNC or %s:MODULE:FUNC", kind, kind)
		}
		s.Symbol = parts[len(parts)-1]
		if sym, off, ok := strings.Cut(s.Symbol, "+"); ok {
			if kind != Kprobe {
				return nil, fmt.Errorf("%s: only a kprobe takes +OFFSET (a %s goes on the function's entry or return)", s.Symbol, kind)
			}
			n, err := strconv.ParseUint(off, 0, 64)
			if err != nil || sym == "" {
				return nil, fmt.Errorf("%s: want FUNC+OFFSET with a byte offset such as 4 or 0x1a", s.Symbol)
			}
			s.Symbol, s.Offset = sym, n
		}
		if err := checkFuncPattern(s.Symbol); err != nil {
			return nil, err
		}
		if s.Offset != 0 && s.Wildcard() {
			return nil, fmt.Errorf("%s+%d: a wildcard takes no offset", s.Symbol, s.Offset)
		}
	}
	if hasList {
		fields, err := parseFields(kind, list)
		if err != nil {
			return nil, err
		}
		s.Fields = fields
	}
	return s, nil
}

func parseFields(kind Kind, list string) ([]Field, error) {
	if strings.TrimSpace(list) == "" {
		return nil, errors.New("empty field list: leave out the parentheses to record the default fields")
	}
	var fields []Field
	seen := map[string]string{}
	nstr, nstack := 0, 0
	for _, text := range strings.Split(list, ",") {
		text = strings.TrimSpace(text)
		f, err := parseField(kind, text)
		if err != nil {
			return nil, err
		}
		name := f.FieldName()
		if prev, ok := seen[name]; ok {
			return nil, fmt.Errorf("fields %q and %q both record %s", prev, text, name)
		}
		seen[name] = text
		if f.Str {
			nstr++
		}
		if f.Source == Stack {
			nstack++
		}
		fields = append(fields, f)
	}
	if len(fields)-nstack > MaxFields {
		return nil, fmt.Errorf("%d fields: a probe records at most %d", len(fields), MaxFields)
	}
	if nstr > MaxStrings {
		return nil, fmt.Errorf("%d string fields: a probe records at most %d", nstr, MaxStrings)
	}
	return fields, nil
}

func parseField(kind Kind, text string) (Field, error) {
	f := Field{Text: text}
	if text == "" {
		return f, errors.New("empty field in the field list")
	}
	if sf, ok, err := parseStack(text); ok {
		return sf, err
	}
	if kind == Profile {
		return f, fmt.Errorf("field %q: a profile probe records ustack and kstack", text)
	}
	body := text
	if strings.HasPrefix(body, "str(") {
		if !strings.HasSuffix(body, ")") {
			return f, fmt.Errorf("field %q: want str(argN) or str(EXPR)", text)
		}
		f.Str = true
		body = strings.TrimSpace(body[len("str(") : len(body)-1])
		if strings.Contains(body, ":") {
			return f, fmt.Errorf("field %q: a string has no integer TYPE", text)
		}
	}
	name, typ, hasType := strings.Cut(body, ":")
	name = strings.TrimSpace(name)
	if hasType {
		t, err := ParseType(strings.TrimSpace(typ))
		if err != nil {
			return f, fmt.Errorf("field %q: %w", text, err)
		}
		f.Type = t
	}
	if strings.ContainsAny(name, "-.[*&(") {
		base, steps, err := parseExpr(name)
		if err != nil {
			return f, fmt.Errorf("field %q: %w", text, err)
		}
		name, f.Steps = base, steps
	}
	if name == "" || strings.ContainsAny(name, "() \t") {
		return f, fmt.Errorf("field %q: want argN[:TYPE], retval[:TYPE], str(argN), a parameter or tracepoint field name, or an expression (arg0->len)", text)
	}

	switch {
	case name == "retval":
		f.Source = Retval
	case strings.HasPrefix(name, "arg") && len(name) > 3 && isDigits(name[3:]):
		n, err := strconv.Atoi(name[3:])
		if err != nil || (len(name) > 4 && name[3] == '0') {
			return f, fmt.Errorf("field %q: bad argument number", text)
		}
		f.Source, f.Arg = Arg, n
	default:
		f.Source, f.Name = TPField, name
	}

	switch kind {
	case Uprobe, Kprobe:
		switch {
		case f.Source == Retval:
			return f, fmt.Errorf("field %q: a %s fires on entry and has no retval: use a %s", text, kind, map[Kind]string{Uprobe: "uretprobe (ur:)", Kprobe: "kretprobe (kr:)"}[kind])
		case f.Source == TPField:
			// A parameter by name: the binary's DWARF or the kernel's
			// BTF says where it is and its type.
			if !isIdent(f.Name) || isDigits(f.Name[:1]) {
				return f, fmt.Errorf("field %q: want argN (N = 0..%d), a parameter name or an expression", text, MaxRegArgs-1)
			}
			f.Source = Param
		case f.Arg >= MaxRegArgs:
			return f, fmt.Errorf("field %q: only arg0..arg%d are passed in registers (arg0..arg7 on arm64, arg0..arg5 on x86-64): name the parameter instead", text, MaxRegArgs-1)
		}
	case Uretprobe, Kretprobe:
		if f.Source != Retval {
			return f, fmt.Errorf("field %q: a %s records retval[:TYPE] or str(retval); its arguments are gone by the return", text, kind)
		}
	case Fentry, Fexit:
		switch {
		case f.Source == Retval && kind == Fentry:
			return f, fmt.Errorf("field %q: a fentry fires on entry and has no retval: use a fexit (fr:)", text)
		case f.Source == TPField:
			if !isIdent(f.Name) {
				return f, fmt.Errorf("field %q: want a parameter name, argN or retval", text)
			}
			f.Source = Param
		case f.Source == Arg && f.Arg >= MaxFields:
			return f, fmt.Errorf("field %q: a function's arguments are arg0..arg%d", text, MaxFields-1)
		}
	case USDT:
		if f.Steps != nil {
			return f, fmt.Errorf("field %q: a USDT argument has no type to follow; use a uprobe on the function", text)
		}
		if f.Source != Arg {
			return f, fmt.Errorf("field %q: a USDT probe records argN[:TYPE] or str(argN)", text)
		}
	case Tracepoint:
		if f.Source == Retval {
			// Some tracepoints name a field "ret"; none is "retval", but if
			// one were it is just a field name.
			f.Source, f.Name = TPField, name
		}
		if f.Source == Arg {
			f.Source, f.Name = TPField, name
		}
		if !isIdent(f.Name) {
			return f, fmt.Errorf("field %q: %q is not a tracepoint field name", text, f.Name)
		}
		if f.Steps != nil {
			return f, fmt.Errorf("field %q: tracepoint fields take no expression; use a kprobe or fentry on the function", text)
		}
	default:
		return f, fmt.Errorf("field %q: %s probes take no field list", text, kind)
	}
	return f, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// Names returns the capture name of each spec: its NAME= or, failing that,
// its default name made unique with "#2", "#3"... Two explicit names that
// are equal, or an explicit name equal to another probe's default, are an
// error.
func Names(specs []*Spec) ([]string, error) {
	names := make([]string, len(specs))
	taken := map[string]int{}
	for i, s := range specs {
		if s.Name == "" {
			continue
		}
		if j, ok := taken[s.Name]; ok {
			return nil, fmt.Errorf("probes %q and %q are both named %q", specs[j].Text, s.Text, s.Name)
		}
		taken[s.Name] = i
		names[i] = s.Name
	}
	for i, s := range specs {
		if s.Name != "" {
			continue
		}
		base := s.DefaultName()
		name := base
		for n := 2; ; n++ {
			j, ok := taken[name]
			if !ok {
				break
			}
			if specs[j].Name != "" && name == base {
				return nil, fmt.Errorf("probe %q would be named %q, which probe %q is named: name one of them NAME=%s",
					s.Text, base, specs[j].Text, s.Text)
			}
			name = base + "#" + strconv.Itoa(n)
		}
		taken[name] = i
		names[i] = name
	}
	return names, nil
}
