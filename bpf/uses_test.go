package bpf

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpftape/bpftape/internal/testutil"
)

// TestUsesOf checks what UsesOf takes from specs.
func TestUsesOf(t *testing.T) {
	flat := spec(1, ClassArgs1, reg(RegDI, 8, true))
	wide := spec(2, ClassArgs6, reg(RegDI, 8, true))
	filtered := withFilter(spec(3, ClassArgs1, reg(RegDI, 8, true)), cmp(PredEq, OperandField, 0, true, 1))
	stack := spec(4, ClassArgs0)
	stack.Kstack = 1
	for _, c := range []struct {
		specs []*ProbeSpec
		want  Uses
	}{
		{nil, Uses{}},
		{[]*ProbeSpec{&flat}, Uses{MaxClass: ClassArgs1}},
		{[]*ProbeSpec{&flat, &wide}, Uses{MaxClass: ClassArgs6}},
		{[]*ProbeSpec{&filtered, &stack}, Uses{MaxClass: ClassArgs1, Filters: true, Stacks: true}},
	} {
		if got := UsesOf(c.specs...); got != c.want {
			t.Errorf("UsesOf(%d specs) = %+v, want %+v", len(c.specs), got, c.want)
		}
	}
}

// TestUses loads the program with only the code of one-arg specs and no
// filter or stack: it verifies fewer instructions than the whole program,
// records a one-arg spec's events, and counts every event of a spec that
// needs more (a wider class, a filter, a stack) as lost, none recorded.
func TestUses(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	exe := buildWorkload(t)
	const n = 500
	verified := func(p *ebpf.Program) uint32 {
		t.Helper()
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		v, ok := info.VerifiedInstructions()
		if !ok {
			t.Skip("this kernel does not report verified instructions")
		}
		return v
	}
	all := load(t, Options{RingSize: 1 << 20})
	uses := Uses{MaxClass: ClassArgs1}
	objs := load(t, Options{RingSize: 1 << 20, Uses: &uses})
	if a, u := verified(all.ProbeUprobe), verified(objs.ProbeUprobe); u*4 > a {
		t.Errorf("the one-arg program verified %d instructions, the whole one %d", u, a)
	} else {
		t.Logf("verified instructions: whole program %d, one-arg program %d", a, u)
	}

	stack := spec(4, ClassArgs1, reg(RegDI, 8, true))
	stack.Kstack = 1
	specs := []ProbeSpec{
		spec(1, ClassArgs1, reg(RegDI, 8, true)),
		spec(2, ClassArgs2, reg(RegDI, 8, true), reg(RegSI, 8, true)),
		withFilter(spec(3, ClassArgs1, reg(RegDI, 8, true)), cmp(PredNe, OperandField, 0, true, -1)),
		stack,
	}
	w := startWorkload(t, exe, "burst", "500")
	for i, s := range specs {
		putSpec(t, objs, uint32(i), s)
		attachUprobe(t, exe, "work", objs.ProbeUprobe, uint64(i), w.pid(), false)
	}
	w.run(t)
	rd := newReader(t, objs)
	if err := rd.Flush(); err != nil {
		t.Fatal(err)
	}
	got := map[uint16]uint64{}
	if err := rd.Drain(0, func(raw []byte) error {
		h, err := DecodeHeader(raw)
		if err == nil && h.Class != ClassComm {
			got[h.ProbeID]++
		}
		return err
	}); !errors.Is(err, ErrRingFlushed) {
		t.Fatal(err)
	}
	for _, s := range specs {
		lost, err := objs.LostSamples(s.ProbeId)
		if err != nil {
			t.Fatal(err)
		}
		want, wantLost := uint64(n), uint64(0)
		if s.ProbeId != 1 {
			want, wantLost = 0, n
		}
		if got[s.ProbeId] != want || lost != wantLost {
			t.Errorf("probe %d: %d recorded, %d lost; want %d and %d", s.ProbeId, got[s.ProbeId], lost, want, wantLost)
		}
	}
}
