package replaytest

import (
	"math/rand"

	"github.com/bpftape/bpftape/format"
)

// RandomFields gives e one value for each field of p, drawn with rng: a
// string field one of strs, an integer field one of ints or, as often, any
// 40-bit signed value (negative ones too).
func RandomFields(rng *rand.Rand, e *format.Event, p *format.Probe, ints []uint64, strs []string) {
	nf := len(p.Fields)
	e.Ints, e.Strs = make([]uint64, nf), make([][]byte, nf)
	for f := range nf {
		if p.Fields[f].Type == format.String {
			e.Strs[f] = []byte(strs[rng.Intn(len(strs))])
			continue
		}
		v := ints[rng.Intn(len(ints))]
		if rng.Intn(2) == 0 {
			v = uint64(rng.Int63n(1<<40) - 1<<39)
		}
		e.Ints[f] = v
	}
}

// ListingProbes returns, each call a new slice, probes for tests of the
// listings (events, CSV): every integer width, strings, an address, stack
// fields, fields named like the fixed columns, and a probe with no fields
// (its name last in the slice).
func ListingProbes() []format.Probe {
	return []format.Probe{
		{Name: "str", Kind: "usdt", Spec: "str=U:/bin/x:p:s", Fields: []format.Field{
			{Name: "n", Type: format.Int32}, {Name: "s", Type: format.String}, {Name: "u", Type: format.Uint64},
			{Name: "p", Type: format.Uint64, Pointer: true}, {Name: "c", Type: format.Uint8}}},
		{Name: "stk", Kind: "uprobe", Spec: "stk=u:/bin/x:f(ustack,kstack,v)", Fields: []format.Field{
			{Name: "ustack", Type: format.UserStack}, {Name: "kstack", Type: format.KernelStack}, {Name: "v", Type: format.Int64}}},
		{Name: "small", Kind: "tracepoint", Spec: "small=t:a:b", Fields: []format.Field{
			{Name: "a", Type: format.Int8}, {Name: "b", Type: format.Int16}, {Name: "cc", Type: format.Uint16},
			{Name: "d", Type: format.Uint32}, {Name: "pid", Type: format.Int32}, {Name: "comm", Type: format.String}}},
		{Name: "ret", Kind: "uretprobe", Spec: "ret=ur:/bin/x:f", Fields: []format.Field{{Name: "retval", Type: format.Int64}}},
		{Name: "nofields", Kind: "uprobe", Spec: "nofields=u:/bin/x:g()"},
	}
}
