package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/bpftape/bpftape/internal/testutil"
)

// Probe ids of TestExprFilter.
const (
	pExprDeref    = 1 // uprobe deref: expressions over its struct pointers
	pWorkAll      = 2 // uprobe work, unfiltered
	pWorkFiltered = 3 // uprobe work, filtered: (a >= 10 && b != B3) || a == -60
	pWorkComm     = 4 // uprobe work, filtered on a comm that is not the workload's
	pWorkNotComm  = 5 // uprobe work, filtered on !(comm == "nomatch") && tid == the workload && a < 0
	pWorkIsComm   = 6 // uprobe work, filtered on comm == "workload" || comm == "workloaX"
)

// expression returns an expression on the pointer in register r.
func expression(r uint8, leaf, leafSize, leafFlags uint8, leafOff int32, reads ...int32) ArgSpec {
	a := ArgSpec{Kind: KindReg, Reg: r, Size: 8, Leaf: leaf, LeafSize: leafSize, LeafFlags: leafFlags, LeafOff: leafOff}
	a.Nread = uint8(len(reads))
	copy(a.ReadOff[:], reads)
	return a
}

func cmp(op, operand, field uint8, signed bool, val int64) PredOp {
	p := PredOp{Op: op, Operand: operand, Field: field, Val: uint64(val)}
	if signed {
		p.IsSigned = 1
	}
	return p
}

func commOp(op uint8, comm string) PredOp {
	var b [CommLen]byte
	copy(b[:], comm)
	return PredOp{Op: op, Operand: OperandComm, Len: uint8(len(comm) + 1),
		Val: binary.LittleEndian.Uint64(b[:8]), Val2: binary.LittleEndian.Uint64(b[8:])}
}

func withFilter(s ProbeSpec, ops ...PredOp) ProbeSpec {
	s.Npred = uint8(len(ops))
	copy(s.Pred[:], ops)
	for _, p := range ops {
		if p.Op <= PredGe && p.Operand == OperandComm {
			s.Flags |= SpecFilterComm
		}
	}
	return s
}

// TestExprFilter runs expressions (pointer loads, a leaf read, a string
// leaf, a fault) and filters (fields, comm, tid, and, or, not) against the
// workload's own account, with cookies and with a program per attachment.
func TestExprFilter(t *testing.T) {
	for _, noCookies := range []bool{false, true} {
		name := "cookies"
		if noCookies {
			name = "nocookies"
		}
		t.Run(name, func(t *testing.T) { testExprFilter(t, noCookies) })
	}
}

func testExprFilter(t *testing.T, noCookies bool) {
	testutil.RequireBPF(t, CheckFeatures)
	exe := buildWorkload(t)
	w := startWorkload(t, exe, "args")
	pid := w.pid()
	objs := load(t, Options{RingSize: 1 << 20, FilterTgid: uint32(pid), WakeupBytes: 1 << 18, NoCookies: noCookies})

	name := expression(RegCX, LeafRead, 8, LeafStr, 8) // str(nm->name)
	name.StrSlot = 2
	derefSpec := spec(pExprDeref, ClassArgs12Str4,
		expression(RegDI, LeafRead, 2, LeafSigned, 4),  // p->y
		expression(RegDI, LeafRead, 1, 0, 6),           // p->z
		expression(RegCX, LeafRead, 1, 0, 0, 8),        // nm->name[0]
		expression(RegDI, LeafAddr, 0, 0, 6),           // &p->z
		name,                                           // str(nm->name)
		expression(RegSI, LeafRead, 8, 0, 0, 1<<30, 0), // a load from unmapped memory
	)
	derefSpec.Nstr = 1
	putSpec(t, objs, pExprDeref-1, derefSpec)

	// work(a, b, c): a = i*7-60, b = 0x12340 + i*0x1111, i = 0..19.
	a, b := reg(RegDI, 8, true), reg(RegSI, 8, false)
	b3 := int64(0x12340 + 3*0x1111)
	putSpec(t, objs, pWorkAll-1, spec(pWorkAll, ClassArgs2, a, b))
	putSpec(t, objs, pWorkFiltered-1, withFilter(spec(pWorkFiltered, ClassArgs2, a, b),
		cmp(PredGe, OperandField, 0, true, 10), cmp(PredNe, OperandField, 1, false, b3), PredOp{Op: PredAnd},
		cmp(PredEq, OperandField, 0, true, -60), PredOp{Op: PredOr}))
	putSpec(t, objs, pWorkComm-1, withFilter(spec(pWorkComm, ClassArgs2, a, b), commOp(PredEq, "workloaX")))
	putSpec(t, objs, pWorkNotComm-1, withFilter(spec(pWorkNotComm, ClassArgs2, a, b),
		commOp(PredEq, "nomatch"), PredOp{Op: PredNot}, cmp(PredEq, OperandTID, 0, false, int64(pid)), PredOp{Op: PredAnd},
		cmp(PredLt, OperandField, 0, true, 0), PredOp{Op: PredAnd}))

	putSpec(t, objs, pWorkIsComm-1, withFilter(spec(pWorkIsComm, ClassArgs2, a, b),
		commOp(PredEq, "workload"), commOp(PredEq, "workloaX"), PredOp{Op: PredOr}))

	for id, sym := range map[uint32]string{pExprDeref: "deref", pWorkAll: "work", pWorkFiltered: "work", pWorkComm: "work",
		pWorkNotComm: "work", pWorkIsComm: "work"} {
		prog, cookie, err := objs.UprobeProgram(id - 1)
		if err != nil {
			t.Fatal(err)
		}
		attachUprobe(t, exe, sym, prog, cookie, pid, false)
	}
	c := collect(t, newReader(t, objs))
	lines := w.run(t)
	byProbe := map[uint16][][]byte{}
	for _, raw := range c.finish(t) {
		if h, err := DecodeHeader(raw); err == nil && h.Class != ClassComm {
			byProbe[h.ProbeID] = append(byProbe[h.ProbeID], raw)
		}
	}

	var derefs []string
	wantFiltered, wantNeg := 0, 0
	for _, l := range lines {
		f := fields(l, 8)
		switch f[0] {
		case "deref":
			derefs = append(derefs, l)
		case "work":
			av, bv := testutil.Atoi(t, f[1]), testutil.Atoi(t, f[2])
			if av >= 10 && bv != b3 || av == -60 {
				wantFiltered++
			}
			if av < 0 {
				wantNeg++
			}
		}
	}
	all := len(byProbe[pWorkAll])
	if all != 20 || len(derefs) != 4 {
		t.Fatalf("%d work samples, %d deref lines, want 20 and 4: %q", all, len(derefs), lines)
	}
	for _, tc := range []struct {
		id   uint16
		want int
	}{{pWorkFiltered, wantFiltered}, {pWorkComm, 0}, {pWorkNotComm, wantNeg}, {pWorkIsComm, all}} {
		got := len(byProbe[tc.id])
		dropped, err := objs.FilteredSamples(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("probe %d: %d of %d recorded, %d filtered out", tc.id, got, all, dropped)
		if got != tc.want || int(dropped) != all-tc.want {
			t.Errorf("probe %d: %d recorded, %d filtered out, want %d and %d", tc.id, got, dropped, tc.want, all-tc.want)
		}
		for _, raw := range byProbe[tc.id] {
			av, bv := int64(Arg(raw, 0)), int64(Arg(raw, 1))
			if tc.id == pWorkFiltered && !(av >= 10 && bv != b3 || av == -60) || tc.id == pWorkNotComm && av >= 0 {
				t.Errorf("probe %d recorded a=%d b=%#x, which its filter rejects", tc.id, av, bv)
			}
		}
	}
	if n, _ := objs.FilteredSamples(pWorkAll); n != 0 {
		t.Errorf("unfiltered probe: %d filtered out", n)
	}

	dr := byProbe[pExprDeref]
	if len(dr) != 4 {
		t.Fatalf("deref: %d samples, want 4", len(dr))
	}
	for i, l := range derefs {
		f := fields(l, 8)
		raw := dr[i]
		nm := f[7]
		flags := uint16(FlagReadFault)
		if len(nm) > StrSlotSize-1 {
			nm, flags = nm[:StrSlotSize-1], flags|FlagStrTruncated
		}
		first := int64(0)
		if nm != "" {
			first = int64(nm[0])
		}
		h, _ := DecodeHeader(raw)
		got := []int64{int64(Arg(raw, 0)), int64(Arg(raw, 1)), int64(Arg(raw, 2)), 0, int64(Arg(raw, 4)), int64(Arg(raw, 5))}
		want := []int64{testutil.Atoi(t, f[2]), testutil.Atoi(t, f[3]), first, 0, int64(len(nm)), 0}
		if h.Flags != flags {
			t.Errorf("%s: flags %#x, want %#x: %s", l, h.Flags, flags, describe(raw))
		}
		for k := range want {
			if got[k] != want[k] {
				t.Errorf("%s: arg %d = %d, want %d: %s", l, k, got[k], want[k], describe(raw))
			}
		}
		// &p->z is p + 6: its low bits are the struct's address plus 6.
		if addr := Arg(raw, 3); addr == 0 || addr%2 != 0 {
			t.Errorf("%s: &p->z = %#x, want p + 6 (p is 4-byte aligned)", l, addr)
		}
		if s := string(Str(raw, 2)); s != nm {
			t.Errorf("%s: str(nm->name) = %q, want %q", l, s, nm)
		}
	}
}

// TestFilterValidate checks that malformed filters and expressions are
// refused before they reach the kernel.
func TestFilterValidate(t *testing.T) {
	base := func() ProbeSpec {
		name := expression(RegDI, LeafRead, 8, LeafStr, 8)
		s := spec(1, ClassArgs12Str4, reg(RegDI, 8, true), name)
		s.Nstr = 1
		return s
	}
	ok := withFilter(base(), cmp(PredGt, OperandField, 0, true, 1), commOp(PredNe, "x"), PredOp{Op: PredAnd}, PredOp{Op: PredNot})
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid filter: %v", err)
	}
	for name, s := range map[string]ProbeSpec{
		"underflow":     withFilter(base(), cmp(PredEq, OperandPID, 0, false, 1), PredOp{Op: PredAnd}),
		"two left":      withFilter(base(), cmp(PredEq, OperandPID, 0, false, 1), cmp(PredEq, OperandTID, 0, false, 1)),
		"not on empty":  withFilter(base(), PredOp{Op: PredNot}),
		"unknown op":    withFilter(base(), PredOp{Op: 9}),
		"string field":  withFilter(base(), cmp(PredEq, OperandField, 1, false, 0)),
		"unrecorded":    withFilter(base(), cmp(PredEq, OperandField, 2, false, 0)),
		"comm order":    withFilter(base(), func() PredOp { p := commOp(PredEq, "x"); p.Op = PredLt; return p }()),
		"comm flag off": func() ProbeSpec { s := withFilter(base(), commOp(PredEq, "x")); s.Flags = 0; return s }(),
		"too long":      func() ProbeSpec { s := base(); s.Npred = MaxPred + 1; return s }(),
		"leaf on str": func() ProbeSpec {
			s := base()
			s.Args[0] = ArgSpec{Kind: KindUserStr, Reg: RegDI, Leaf: LeafRead, LeafSize: 8}
			return s
		}(),
		"narrow base": func() ProbeSpec { s := base(); s.Args[1].Size = 4; return s }(),
		"deep":        func() ProbeSpec { s := base(); s.Args[1].Nread = MaxReads + 1; return s }(),
		"stray load":  func() ProbeSpec { s := base(); s.Args[1].ReadOff[2] = 8; return s }(),
		"no leaf":     func() ProbeSpec { s := base(); s.Args[0].ReadOff[0] = 8; return s }(),
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
