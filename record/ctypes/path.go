package ctypes

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bpftape/bpftape/record/suggest"
)

// MaxReads is the most pointer loads a path may make (p->a->b->c->d makes
// four): each is a probe-read helper call in the BPF program.
const MaxReads = 4

// maxIndex bounds an index, so that offsets cannot overflow.
const maxIndex = 1<<31 - 1

// StepKind says what a Step does.
type StepKind uint8

// Steps of a field path.
const (
	StepDot   StepKind = iota // .name: a member of a struct or union
	StepArrow                 // ->name: a member of the struct a pointer points to
	StepIndex                 // [n]: an element of an array, or through a pointer
	StepDeref                 // *x: what a pointer points to
)

// Step is one step of a field path: req->hdr.size is Arrow("hdr"),
// Dot("size").
type Step struct {
	Kind  StepKind
	Name  string // StepDot, StepArrow
	Index int64  // StepIndex
}

// Dot is the step .name.
func Dot(name string) Step { return Step{Kind: StepDot, Name: name} }

// Arrow is the step ->name.
func Arrow(name string) Step { return Step{Kind: StepArrow, Name: name} }

// Index is the step [n].
func Index(n int64) Step { return Step{Kind: StepIndex, Index: n} }

// Deref is the step *x: applied to everything before it.
func Deref() Step { return Step{Kind: StepDeref} }

// FormatPath writes base followed by path as C: FormatPath("f",
// [Arrow(f_path), Dot(dentry)]) is "f->f_path.dentry", and a Deref wraps
// what comes before it: "*p" or "(*p).a".
func FormatPath(base string, path []Step) string {
	s := base
	for i, st := range path {
		switch st.Kind {
		case StepDot:
			s += "." + st.Name
		case StepArrow:
			s += "->" + st.Name
		case StepIndex:
			s += "[" + strconv.FormatInt(st.Index, 10) + "]"
		case StepDeref:
			s = "*" + s
			if i+1 < len(path) && path[i+1].Kind != StepDeref {
				s = "(" + s + ")"
			}
		}
	}
	return s
}

// LeafKind says what an Access's last step gives.
type LeafKind uint8

// Leaf kinds.
const (
	// LeafValue: the value is V itself, cut to Size bytes (a path of no
	// steps: the parameter's own value).
	LeafValue LeafKind = iota
	// LeafRead: the value is the Size-byte integer at address V+Off.
	LeafRead
	// LeafAddr: the value is the address V+Off of an array (char comm[16],
	// which str() reads as a string); Size is the array's size.
	LeafAddr
)

func (k LeafKind) String() string {
	switch k {
	case LeafValue:
		return "value"
	case LeafRead:
		return "read"
	case LeafAddr:
		return "address"
	}
	return fmt.Sprintf("LeafKind(%d)", k)
}

// Read is one pointer load of an Access: V = *(u64 *)(V + Off).
type Read struct {
	Off int64
}

// Access is how a field path's value is found from a 64-bit base value V
// (a parameter's value): the Reads in order, each replacing V with the
// pointer stored at V+Off, then the Leaf at V+Off.
type Access struct {
	Reads  []Read
	Leaf   LeafKind
	Off    int64
	Type   *Type // the leaf's type
	Size   int64 // bytes of the leaf value (LeafValue, LeafRead) or array (LeafAddr)
	Signed bool  // the leaf is a signed integer or enum
}

func (a Access) String() string {
	var b strings.Builder
	for _, r := range a.Reads {
		fmt.Fprintf(&b, "V = *(V%+d); ", r.Off)
	}
	switch a.Leaf {
	case LeafValue:
		fmt.Fprintf(&b, "value V (%d bytes)", a.Size)
	case LeafRead:
		fmt.Fprintf(&b, "read %d bytes at V%+d", a.Size, a.Off)
	case LeafAddr:
		fmt.Fprintf(&b, "address V%+d (%d bytes)", a.Off, a.Size)
	}
	return b.String() + " (" + a.Type.String() + ")"
}

// Resolve finds the memory reads that follow path from a value of type
// base: see Access. Errors say which step failed and why, naming close
// member names; they wrap ErrNoMember, ErrNotPointer, ErrPointer,
// ErrNotStruct, ErrNotArray, ErrIndex, ErrVoidPointer, ErrIncomplete,
// ErrTooDeep, ErrBitfield, ErrAggregate or ErrNotValue.
func Resolve(base *Type, path []Step) (Access, error) {
	return ResolveNamed("", base, path)
}

// ResolveNamed is Resolve with the base's name (a parameter's), which
// errors use to spell the path: "f->f_pth: struct file has no member ...".
func ResolveNamed(name string, base *Type, path []Step) (Access, error) {
	c := cursor{t: base, name: name}
	if base == nil {
		c.t = voidType
	}
	for i, st := range path {
		c.where, c.prev = FormatPath(name, path[:i+1]), FormatPath(name, path[:i])
		if err := c.step(st); err != nil {
			return Access{}, err
		}
	}
	if len(path) == 0 {
		c.where = name
	}
	return c.leaf()
}

// cursor is the state of Resolve between steps: the object reached is
// either V itself (!inMem) or in memory at V+off.
type cursor struct {
	t        *Type
	inMem    bool
	off      int64
	reads    []Read
	bitfield bool
	name     string
	where    string // the path so far, for errors
	prev     string // the path before the step being taken
}

// prefix starts an error message with the path, when it has a name.
func (c *cursor) prefix() string {
	if c.where == "" {
		return ""
	}
	return c.where + ": "
}

func (c *cursor) step(st Step) error {
	wasBitfield := c.bitfield
	c.bitfield = false
	if wasBitfield {
		return errorf(ErrNotStruct, "%sa bitfield has no members, elements or target", c.prefix())
	}
	switch st.Kind {
	case StepDot:
		switch c.t.Kind {
		case Pointer:
			return errorf(ErrPointer, "%s%s is a pointer: use ->%s", c.prefix(), c.t, st.Name)
		case Struct, Union:
		default:
			return errorf(ErrNotStruct, "%s%s is not a struct or union", c.prefix(), c.t)
		}
		if !c.inMem {
			return errorf(ErrNotPointer, "%sa %s value, not in memory: resolve it through a pointer to it", c.prefix(), c.t)
		}
		return c.member(st.Name)
	case StepArrow:
		if c.t.Kind != Pointer {
			if c.t.Kind == Struct || c.t.Kind == Union {
				return errorf(ErrNotPointer, "%s%s is not a pointer: use .%s", c.prefix(), c.t, st.Name)
			}
			return errorf(ErrNotPointer, "%s%s is not a pointer", c.prefix(), c.t)
		}
		if err := c.load(); err != nil {
			return err
		}
		if c.t.Kind != Struct && c.t.Kind != Union {
			return errorf(ErrNotStruct, "%s-> needs a pointer to a struct or union, and this points to %s", c.prefix(), c.t)
		}
		return c.member(st.Name)
	case StepIndex:
		if st.Index < 0 || st.Index > maxIndex {
			return errorf(ErrIndex, "%sindex %d is out of range (0 to %d)", c.prefix(), st.Index, maxIndex)
		}
		switch c.t.Kind {
		case Array:
			if !c.inMem {
				return errorf(ErrNotPointer, "%san array value, not in memory", c.prefix())
			}
			if c.t.Len > 0 && st.Index >= c.t.Len {
				return errorf(ErrIndex, "%sindex %d is past the end of %s (%d elements)", c.prefix(), st.Index, c.t, c.t.Len)
			}
			e := c.t.Elem()
			if err := c.checkElem(e); err != nil {
				return err
			}
			c.t, c.off = e, c.off+st.Index*e.Size
		case Pointer:
			if err := c.load(); err != nil {
				return err
			}
			c.off = st.Index * c.t.Size
		default:
			return errorf(ErrNotArray, "%s%s is neither an array nor a pointer", c.prefix(), c.t)
		}
		return nil
	case StepDeref:
		switch c.t.Kind {
		case Pointer:
			return c.load()
		case Array:
			if !c.inMem {
				return errorf(ErrNotPointer, "%san array value, not in memory", c.prefix())
			}
			c.t = c.t.Elem()
			return nil
		}
		return errorf(ErrNotPointer, "%s%s is not a pointer", c.prefix(), c.t)
	}
	return fmt.Errorf("%sunknown step kind %d", c.prefix(), st.Kind)
}

// load goes through the pointer c.t: V becomes the pointer's value (read
// from memory when it is in memory), and the object is its target at V+0.
func (c *cursor) load() error {
	e := c.t.Elem()
	if err := c.checkElem(e); err != nil {
		return err
	}
	if c.inMem {
		if len(c.reads) == MaxReads {
			return errorf(ErrTooDeep, "%smore than %d pointer loads", c.prefix(), MaxReads)
		}
		c.reads = append(c.reads, Read{Off: c.off})
	}
	c.inMem, c.off, c.t = true, 0, e
	return nil
}

// checkElem refuses to go through a pointer or array to a type without a
// size or layout.
func (c *cursor) checkElem(e *Type) error {
	switch {
	case e.Kind == Void:
		what := c.prev
		if what == "" {
			what = "it"
		}
		return errorf(ErrVoidPointer, "%s%s is %s: cast it to a pointer to a type first", c.prefix(), what, c.t)
	case e.Incomplete:
		return errorf(ErrIncomplete, "%s%s is declared but not defined in the debug info, so its layout is unknown", c.prefix(), e)
	case e.Kind == Unknown:
		return errorf(ErrIncomplete, "%s%s points to a type this debug info does not describe", c.prefix(), c.t)
	}
	return nil
}

func (c *cursor) member(name string) error {
	if c.t.Incomplete {
		return errorf(ErrIncomplete, "%s%s is declared but not defined in the debug info, so its members are unknown", c.prefix(), c.t)
	}
	p, ok := c.t.findMember(name)
	if !ok {
		names := c.t.MemberNames()
		return errorf(ErrNoMember, "%s%s has no member %s%s (members: %s)", c.prefix(), c.t, name,
			suggest.Hint(suggest.Closest(name, names, 3)), listNames(names, 12))
	}
	c.t, c.off = p.m.Type, c.off+p.m.Offset
	c.bitfield = p.m.BitSize != 0
	return nil
}

// listNames joins up to n names, with "..." after them if there are more.
func listNames(names []string, n int) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > n {
		return strings.Join(names[:n], ", ") + ", ..."
	}
	return strings.Join(names, ", ")
}

func (c *cursor) leaf() (Access, error) {
	a := Access{Reads: c.reads, Off: c.off, Type: c.t, Size: c.t.Size, Signed: c.t.Signed}
	what := c.where
	if what == "" {
		what = "the value"
	}
	switch {
	case c.bitfield:
		return Access{}, errorf(ErrBitfield, "%s is a bitfield; not supported", what)
	case c.t.IsInteger():
		if c.inMem {
			a.Leaf = LeafRead
		} else {
			a.Leaf = LeafValue
		}
		return a, nil
	case c.t.Kind == Array && c.inMem:
		a.Leaf = LeafAddr
		return a, nil
	case c.t.Kind == Struct || c.t.Kind == Union:
		if c.t.Incomplete {
			return Access{}, errorf(ErrIncomplete, "%s is %s, declared but not defined in the debug info", what, c.t)
		}
		return Access{}, errorf(ErrAggregate, "%s is %s: name one of its members (%s)", what, c.t, listNames(c.t.MemberNames(), 8))
	}
	return Access{}, errorf(ErrNotValue, "%s is %s, not an integer, pointer or array", what, c.t)
}
