package probespec

import (
	"strings"

	"github.com/bpftape/bpftape/format"
)

// Params returns the names of the fields of p that are its function's
// parameters, in order, or nil when p has none such. A uprobe, kprobe,
// fentry or fexit recorded without a field list records its function's
// parameters under the names its debug info (DWARF or BTF) gives them,
// and argN, as BCC and bpftrace name arguments, is then the N-th of them.
// A probe recorded with a field list, or whose fields are arg0, arg1...
// already, has none.
//
// The capture does not record which parameters the recorder left out
// (one it cannot read, such as a double or a struct passed by value; it
// warns when it records): a field named argK (a parameter without a name)
// that is not the K-th says some were, and p then has none. Otherwise the
// N-th field is taken for the N-th parameter.
func Params(p *format.Probe) []string {
	s, err := Parse(p.Spec)
	if err != nil || s.Fields != nil || s.Kind.String() != p.Kind {
		return nil
	}
	switch s.Kind {
	case Uprobe, Kprobe, Fentry, Fexit:
	default:
		return nil
	}
	var names []string
	named := false
	for i, f := range p.Fields {
		if s.Kind == Fexit && f.Name == "retval" && i == len(p.Fields)-1 {
			break // fexit's return value, after the parameters
		}
		if !f.Type.IsInt() {
			return nil // not the recorder's defaults, which are integers
		}
		if k, ok := ArgIndex(f.Name); !ok {
			named = true
		} else if k != i {
			return nil
		}
		names = append(names, f.Name)
	}
	if !named {
		return nil
	}
	return names
}

// ArgIndex parses argN: N in decimal without leading zeros.
func ArgIndex(name string) (int, bool) {
	d, ok := strings.CutPrefix(name, "arg")
	if !ok || d == "" || len(d) > 3 || len(d) > 1 && d[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return 0, false
		}
		n = n*10 + int(d[i]-'0')
	}
	return n, true
}
