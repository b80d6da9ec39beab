package bpf

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/cilium/ebpf/btf"

	"github.com/bpftape/bpftape/internal/testutil"
)

// The Go constants mirror bpftape.c; check them against the object's BTF
// and the bpf2go-generated struct.
func TestLayoutMatchesC(t *testing.T) {
	var s bpftapeSample
	var c bpftapeCommRecord
	offs := []struct {
		name      string
		got, want uintptr
	}{
		{"time", unsafe.Offsetof(s.Time), OffTime},
		{"pid", unsafe.Offsetof(s.Pid), OffPID},
		{"tid", unsafe.Offsetof(s.Tid), OffTID},
		{"probe_id", unsafe.Offsetof(s.ProbeId), OffProbeID},
		{"cpu", unsafe.Offsetof(s.Cpu), OffCPU},
		{"nargs", unsafe.Offsetof(s.Nargs), OffNargs},
		{"flags", unsafe.Offsetof(s.Flags), OffFlags},
		{"args", unsafe.Offsetof(s.Args), OffArgs},
		{"strs", unsafe.Offsetof(s.Strs), OffStrs},
		{"sizeof(sample)", unsafe.Sizeof(s), uintptr(SampleSize(ClassArgs12Str4))},
		{"sizeof(probe_spec)", unsafe.Sizeof(ProbeSpec{}), 16 + 40*MaxArgs + 24*MaxPred},
		{"sizeof(arg_spec)", unsafe.Sizeof(ArgSpec{}), 40},
		{"sizeof(pred_op)", unsafe.Sizeof(PredOp{}), 24},
		{"len(read_off)", uintptr(len(ArgSpec{}.ReadOff)), MaxReads},
		{"len(pred)", uintptr(len(ProbeSpec{}.Pred)), MaxPred},
		{"len(args)", uintptr(len(s.Args)), MaxArgs},
		{"len(strs)", uintptr(len(s.Strs)), MaxStrs},
		{"len(strs[0])", uintptr(len(s.Strs[0])), StrSlotSize},
		{"comm_record.probe_id", unsafe.Offsetof(c.ProbeId), OffProbeID},
		{"comm_record.comm", unsafe.Offsetof(c.Comm), OffComm},
		{"len(comm_record.comm)", uintptr(len(c.Comm)), CommLen},
		{"sizeof(comm_record)", unsafe.Sizeof(c), CommRecordSize},
	}
	for _, o := range offs {
		if o.got != o.want {
			t.Errorf("%s: C has %d, Go constant %d", o.name, o.got, o.want)
		}
	}

	spec, err := loadBpftape()
	if err != nil {
		t.Fatal(err)
	}
	if n := spec.Maps[bpftapeMapSelfTids].MaxEntries; n != MaxSelfThreads {
		t.Errorf("self_tids holds %d threads in C, MaxSelfThreads is %d", n, MaxSelfThreads)
	}
	enums := map[string]map[string]uint64{
		"arg_kind": {
			"ARG_NONE": uint64(KindNone), "ARG_CONST": uint64(KindConst), "ARG_REG": uint64(KindReg),
			"ARG_REG_DEREF": uint64(KindRegDeref), "ARG_SIB": uint64(KindSIB), "ARG_RETVAL": uint64(KindRetval),
			"ARG_TP_FIELD": uint64(KindTPField), "ARG_TP_CHARARRAY": uint64(KindTPCharArray),
			"ARG_TP_DATALOC_STR": uint64(KindTPDataLocStr), "ARG_USER_STR": uint64(KindUserStr),
			"ARG_REG_DEREF_STR": uint64(KindRegDerefStr), "ARG_TP_USER_STR": uint64(KindTPUserStr),
			"ARG_ADDR_STR": uint64(KindAddrStr), "ARG_FUNC_ARG": uint64(KindFuncArg),
			"ARG_FUNC_RET": uint64(KindFuncRet), "ARG_FUNC_STR": uint64(KindFuncStr),
		},
		"size_class": {
			"CLASS_ARGS0": uint64(ClassArgs0), "CLASS_ARGS1": uint64(ClassArgs1),
			"CLASS_ARGS2": uint64(ClassArgs2), "CLASS_ARGS6": uint64(ClassArgs6),
			"CLASS_ARGS12": uint64(ClassArgs12), "CLASS_ARGS12_STR4": uint64(ClassArgs12Str4),
		},
		"sample_flag": {"SAMPLE_STR_TRUNCATED": FlagStrTruncated, "SAMPLE_READ_FAULT": FlagReadFault},
		"spec_flag": {
			"SPEC_STACK_ENTRY": uint64(SpecStackEntry), "SPEC_KEEP_SELF": uint64(SpecKeepSelf),
			"SPEC_FILTER_COMM": uint64(SpecFilterComm), "SPEC_SELF_SWITCH": uint64(SpecSelfSwitch),
			"SPEC_RATE_LIMIT": uint64(SpecRateLimit),
		},
		"addr_flag": {"ADDR_NO_BASE": uint64(AddrNoBase), "ADDR_FS": uint64(AddrFS), "ADDR_GS": uint64(AddrGS)},
		"leaf_kind": {"LEAF_NONE": uint64(LeafNone), "LEAF_READ": uint64(LeafRead), "LEAF_ADDR": uint64(LeafAddr)},
		"leaf_flag": {"LEAF_SIGNED": uint64(LeafSigned), "LEAF_STR": uint64(LeafStr), "LEAF_USER": uint64(LeafUser)},
		"pred_kind": {
			"PRED_EQ": uint64(PredEq), "PRED_NE": uint64(PredNe), "PRED_LT": uint64(PredLt), "PRED_LE": uint64(PredLe),
			"PRED_GT": uint64(PredGt), "PRED_GE": uint64(PredGe), "PRED_AND": uint64(PredAnd), "PRED_OR": uint64(PredOr),
			"PRED_NOT": uint64(PredNot),
		},
		"pred_operand": {
			"OPND_FIELD": uint64(OperandField), "OPND_PID": uint64(OperandPID), "OPND_TID": uint64(OperandTID),
			"OPND_CPU": uint64(OperandCPU), "OPND_COMM": uint64(OperandComm),
		},
	}
	for name, want := range enums {
		var e *btf.Enum
		if err := spec.Types.TypeByName(name, &e); err != nil {
			t.Fatalf("enum %s: %v", name, err)
		}
		if len(e.Values) != len(want) {
			t.Errorf("enum %s has %d values, Go knows %d", name, len(e.Values), len(want))
		}
		for _, v := range e.Values {
			if w, ok := want[v.Name]; !ok || w != v.Value {
				t.Errorf("%s = %d in C, Go has %d (known: %v)", v.Name, v.Value, w, ok)
			}
		}
	}
}

// TestArchRegs checks each architecture's register table against the
// struct pt_regs its object was compiled with, on any host: the offsets
// ArgSpec.Reg carries are the ones the program's read_reg switch loads.
func TestArchRegs(t *testing.T) {
	for _, c := range []struct {
		arch   *Arch
		object string
		want   map[string]uint8 // pt_regs member: offset (arm64's pc and pstate: none)
		names  map[string]string
	}{
		{AMD64, "bpftape_x86_bpfel.o", map[string]uint8{
			"r15": RegR15, "r14": RegR14, "r13": RegR13, "r12": RegR12, "bp": RegBP, "bx": RegBX,
			"r11": RegR11, "r10": RegR10, "r9": RegR9, "r8": RegR8, "ax": RegAX, "cx": RegCX, "dx": RegDX,
			"si": RegSI, "di": RegDI, "orig_ax": RegOrigAX, "ip": RegIP, "cs": RegCS, "flags": RegFlags,
			"sp": RegSP, "ss": RegSS,
		}, map[string]string{"rdi": "di", "esi": "si", "r8d": "r8", "al": "ax", "rsp": "sp", "rip": "ip"}},
		{ARM64, "bpftape_arm64_bpfel.o", map[string]uint8{
			"regs": RegX(0), "sp": RegARM64SP, "pc": NoReg, "pstate": NoReg,
		}, map[string]string{"x0": "regs", "w0": "regs", "sp": "sp"}},
	} {
		spec, err := ebpf.LoadCollectionSpec(c.object)
		if err != nil {
			t.Fatal(err)
		}
		var regs *btf.Struct
		if err := spec.Types.TypeByName("pt_regs", &regs); err != nil {
			t.Fatalf("%s: %v", c.object, err)
		}
		if len(regs.Members) != len(c.want) {
			t.Errorf("%s: pt_regs has %d members, Go knows %d", c.object, len(regs.Members), len(c.want))
		}
		off := map[string]uint32{}
		for _, m := range regs.Members {
			off[m.Name] = m.Offset.Bytes()
			if w, ok := c.want[m.Name]; !ok || w != NoReg && uint32(w) != m.Offset.Bytes() || w == NoReg && m.Offset.Bytes() < 256 {
				t.Errorf("%s: register %s: C offset %d, Go %d (known: %v)", c.object, m.Name, m.Offset.Bytes(), w, ok)
			}
		}
		for name, member := range c.names {
			if r, ok := c.arch.Reg(name); !ok || uint32(r) != off[member] {
				t.Errorf("%s.Reg(%s) = %d, %v; C has %s at %d", c.arch, name, r, ok, member, off[member])
			}
		}
		for _, r := range c.arch.regs {
			if !c.arch.ValidReg(r) || uint32(r) >= regs.Size {
				t.Errorf("%s: register offset %d invalid or outside its pt_regs (%d bytes)", c.arch, r, regs.Size)
			}
		}
		if next := c.arch.LastReg + 8; next > c.arch.LastReg && c.arch.ValidReg(next) { // arm64's would wrap to 0
			t.Errorf("%s: offset %d past the last register is valid", c.arch, next)
		}
		for _, r := range append([]uint8{c.arch.Ret, c.arch.SP}, c.arch.Args...) {
			if r == NoReg || int(r)%8 != 0 || int(r) >= int(regs.Size) {
				t.Errorf("%s: register offset %d outside its pt_regs (%d bytes)", c.arch, r, regs.Size)
			}
		}
	}
	if x30, _ := ARM64.Reg("w30"); x30 != RegX(30) || ARM64.LR != RegX(30) || AMD64.LR != NoReg {
		t.Errorf("link registers: arm64 w30=%d LR=%d, amd64 LR=%d", x30, ARM64.LR, AMD64.LR)
	}
	if _, ok := ARM64.Reg("x31"); ok {
		t.Error("arm64 has no x31 (31 is sp or the zero register)")
	}
	for a, want := range map[*Arch]string{
		AMD64: "System V AMD64: arg0..arg5 in rdi..r9, retval in rax; user stacks by frame pointers (rbp)",
		ARM64: "AAPCS64: arg0..arg7 in x0..x7, retval in x0; user stacks by frame pointers (x29)",
	} {
		if got := a.Summary(); got != want {
			t.Errorf("%s.Summary() = %q, want %q", a, got, want)
		}
	}
	if a, err := ArchOf(elf.EM_AARCH64); a != ARM64 || err != nil {
		t.Errorf("ArchOf(EM_AARCH64) = %v, %v", a, err)
	}
	if _, err := ArchOf(elf.EM_RISCV); err == nil || !strings.Contains(err.Error(), "EM_RISCV") {
		t.Errorf("ArchOf(EM_RISCV) error = %v", err)
	}
}

func TestSampleSize(t *testing.T) {
	for class, want := range map[uint8]int{0: 24, 1: 32, 2: 40, 3: 72, 4: 120, 5: 376, 6: 0, ClassComm: 0} {
		if got := SampleSize(class); got != want {
			t.Errorf("SampleSize(%d) = %d, want %d", class, got, want)
		}
	}
}

func TestDecodeHeader(t *testing.T) {
	raw := make([]byte, SampleSize(ClassArgs12Str4))
	le := binary.LittleEndian
	le.PutUint64(raw[OffTime:], 123456789)
	le.PutUint32(raw[OffPID:], 42)
	le.PutUint32(raw[OffTID:], 43)
	le.PutUint16(raw[OffProbeID:], 7)
	le.PutUint16(raw[OffCPU:], 1)
	le.PutUint16(raw[OffNargs:], 3)
	le.PutUint16(raw[OffFlags:], FlagStrTruncated)
	le.PutUint64(raw[OffArgs+8*2:], ^uint64(0))
	copy(raw[OffStrs+StrSlotSize:], "abc\x00junk")

	h, err := DecodeHeader(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{Time: 123456789, PID: 42, TID: 43, ProbeID: 7, CPU: 1, Nargs: 3,
		Flags: FlagStrTruncated, Class: ClassArgs12Str4}
	if h != want {
		t.Errorf("got %+v, want %+v", h, want)
	}
	if int64(Arg(raw, 2)) != -1 {
		t.Errorf("arg 2 = %d", Arg(raw, 2))
	}
	if string(Str(raw, 1)) != "abc" || len(Str(raw, 0)) != 0 {
		t.Errorf("strs %q %q", Str(raw, 0), Str(raw, 1))
	}
	allocs := testing.AllocsPerRun(100, func() {
		h, _ = DecodeHeader(raw)
		_ = Arg(raw, 2)
		_ = Str(raw, 1)
	})
	if allocs != 0 {
		t.Errorf("decoding allocates %v times", allocs)
	}

	if _, err := DecodeHeader(raw[:100]); !errors.Is(err, ErrSampleSize) {
		t.Errorf("short sample: %v", err)
	}
	small := raw[:SampleSize(ClassArgs2)]
	if _, err := DecodeHeader(small); !errors.Is(err, ErrSampleNargs) {
		t.Errorf("3 args in a 2-arg sample: %v", err)
	}

	comm := make([]byte, CommRecordSize)
	le.PutUint64(comm[OffTime:], 5)
	le.PutUint32(comm[OffPID:], 42)
	le.PutUint32(comm[OffTID:], 44)
	le.PutUint16(comm[OffProbeID:], CommProbeID)
	le.PutUint16(comm[OffCPU:], 1)
	copy(comm[OffComm:], "worker-1")
	h, err = DecodeHeader(comm)
	if want := (Header{Time: 5, PID: 42, TID: 44, ProbeID: CommProbeID, CPU: 1, Class: ClassComm}); err != nil || h != want {
		t.Errorf("comm record: %+v, %v; want %+v", h, err, want)
	}
	if string(Comm(comm)) != "worker-1" {
		t.Errorf("Comm = %q", Comm(comm))
	}
	copy(comm[OffComm:], "0123456789abcdef")
	if string(Comm(comm)) != "0123456789abcdef" {
		t.Errorf("16-byte Comm = %q", Comm(comm))
	}
}

func TestValidate(t *testing.T) {
	reg := func(r, size uint8) ArgSpec { return ArgSpec{Kind: KindReg, Reg: r, Size: size} }
	str := func(slot uint8) ArgSpec { return ArgSpec{Kind: KindUserStr, Reg: RegDI, StrSlot: slot} }
	ok := []ProbeSpec{
		{Nargs: 2, SizeClass: ClassArgs2, Args: [MaxArgs]ArgSpec{reg(RegDI, 8), reg(RegSI, 1)}},
		{Nargs: 2, SizeClass: ClassArgs12Str4, Nstr: 2, Args: [MaxArgs]ArgSpec{str(0), str(3)}},
		{Nargs: 1, SizeClass: ClassArgs6, Args: [MaxArgs]ArgSpec{{Kind: KindSIB, Reg: RegDI, IndexReg: RegSI, Scale: 8, Size: 4}}},
		{Nargs: 2, SizeClass: ClassArgs2, Args: [MaxArgs]ArgSpec{
			{Kind: KindSIB, Flags: AddrNoBase | AddrFS, IndexReg: RegCX, Scale: 8, Size: 8, Off: -64},
			{Kind: KindRegDeref, Flags: AddrGS, Reg: RegDX, Size: 4}}},
		{Flags: SpecSelfSwitch | SpecKeepSelf, NextTidOff: 56},
	}
	for i, s := range ok {
		if err := s.Validate(); err != nil {
			t.Errorf("ok[%d]: %v", i, err)
		}
	}
	bad := map[string]ProbeSpec{
		"too many args":   {Nargs: 3, SizeClass: ClassArgs2},
		"bad class":       {SizeClass: numClasses},
		"probe id":        {ProbeId: MaxProbes},
		"bad size":        {Nargs: 1, Args: [MaxArgs]ArgSpec{reg(RegDI, 3)}},
		"bad reg":         {Nargs: 1, Args: [MaxArgs]ArgSpec{reg(RegSS+8, 8)}},
		"unaligned reg":   {Nargs: 1, Args: [MaxArgs]ArgSpec{reg(RegDI+1, 8)}},
		"bad kind":        {Nargs: 1, Args: [MaxArgs]ArgSpec{{Kind: numKinds}}},
		"str in class 2":  {Nargs: 1, SizeClass: ClassArgs12, Nstr: 1, Args: [MaxArgs]ArgSpec{str(0)}},
		"slot twice":      {Nargs: 2, SizeClass: ClassArgs12Str4, Nstr: 2, Args: [MaxArgs]ArgSpec{str(1), str(1)}},
		"slot range":      {Nargs: 1, SizeClass: ClassArgs12Str4, Nstr: 1, Args: [MaxArgs]ArgSpec{str(MaxStrs)}},
		"nstr":            {Nargs: 1, SizeClass: ClassArgs12Str4, Args: [MaxArgs]ArgSpec{str(0)}},
		"bad scale":       {Nargs: 1, Args: [MaxArgs]ArgSpec{{Kind: KindSIB, Reg: RegDI, IndexReg: RegSI, Scale: 3, Size: 4}}},
		"tp offset range": {Nargs: 1, Args: [MaxArgs]ArgSpec{{Kind: KindTPField, Off: 1 << 16, Size: 8}}},
		"next tid offset": {Flags: SpecSelfSwitch, NextTidOff: 58},
		"no next tid":     {Flags: SpecSelfSwitch},
		"flags on reg":    {Nargs: 1, Args: [MaxArgs]ArgSpec{{Kind: KindReg, Reg: RegDI, Size: 8, Flags: AddrFS}}},
		"unknown flag":    {Nargs: 1, Args: [MaxArgs]ArgSpec{{Kind: KindRegDeref, Reg: RegDI, Size: 8, Flags: 8}}},
		"fs and gs":       {Nargs: 1, Args: [MaxArgs]ArgSpec{{Kind: KindRegDeref, Reg: RegDI, Size: 8, Flags: AddrFS | AddrGS}}},
	}
	for name, s := range bad {
		if err := s.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestLoadOptions(t *testing.T) {
	if _, err := Load(Options{RingSize: 3 << 12}); err == nil || !strings.Contains(err.Error(), "power of two") {
		t.Errorf("ring size 12288: %v", err)
	}
	if _, err := Load(Options{RingSize: 1024}); err == nil {
		t.Errorf("ring size 1024: no error")
	}
}

// TestCheckFeatures: CheckFeatures must pass where the privileged tests
// are meant to run, which make test says by setting testutil.StrictEnv: a
// wrong "missing" there would turn every privileged test into a skip.
// Elsewhere the error must name what is missing.
func TestCheckFeatures(t *testing.T) {
	testutil.RequireRoot(t, "CheckFeatures")
	err := CheckFeatures()
	if err == nil {
		return
	}
	if !strings.Contains(err.Error(), "lacks") && !strings.Contains(err.Error(), "probe") {
		t.Errorf("error names nothing: %v", err)
	}
	if testutil.Strict() {
		t.Fatalf("CheckFeatures: %v (%s is set: this kernel must pass)", err, testutil.StrictEnv)
	}
	t.Logf("CheckFeatures: %v", err)
}

func describe(raw []byte) string {
	h, err := DecodeHeader(raw)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	if h.Class == ClassComm {
		return fmt.Sprintf("comm record pid %d tid %d cpu %d comm %q", h.PID, h.TID, h.CPU, Comm(raw))
	}
	fmt.Fprintf(&b, "probe %d pid %d tid %d cpu %d flags %#x args", h.ProbeID, h.PID, h.TID, h.CPU, h.Flags)
	for i := range int(h.Nargs) {
		fmt.Fprintf(&b, " %d", int64(Arg(raw, i)))
	}
	if h.Class == ClassArgs12Str4 {
		for i := range MaxStrs {
			fmt.Fprintf(&b, " %q", Str(raw, i))
		}
	}
	return b.String()
}

// TestPublishInterval: a ring publishes its consumer position at least
// every quarter of its size. With the fixed 256 KiB of before, a 256 KiB
// per-CPU ring (a host with 32 CPUs) freed no space until a pass ended.
func TestPublishInterval(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	for _, size := range []uint32{16 << 10, 256 << 10, 1 << 20, 4 << 20} {
		m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: size})
		if err != nil {
			t.Fatal(err)
		}
		rd, err := NewRing(m)
		if err != nil {
			t.Fatal(err)
		}
		got := rd.parts[0].every
		rd.Close()
		m.Close()
		if got > uint64(size)/4 || got > publishEvery || got == 0 {
			t.Errorf("ring of %d bytes publishes every %d bytes", size, got)
		}
	}
}

// TestRingWait: Drain waits parked in Go's poller until the ring's timer
// ends the wait (Ring.wait). With no record it returns at the end of its
// interval, not before; a Flush or a Close from another goroutine wakes it
// at once. (The record tests cover the wake-ups of the kernel's rings.)
func TestRingWait(t *testing.T) {
	testutil.RequireBPF(t, CheckFeatures)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rd, err := NewRing(m)
	if err != nil {
		t.Fatal(err)
	}
	none := func([]byte) error { return errors.New("a record in an empty ring") }

	start := time.Now()
	if err := rd.Drain(150*time.Millisecond, none); err != nil {
		t.Fatalf("Drain of an empty ring: %v", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
		t.Errorf("Drain(150ms) of an empty ring returned after %v", d)
	}

	for _, tc := range []struct {
		name string
		wake func() error
		want error
	}{{"Flush", rd.Flush, ErrRingFlushed}, {"Close", rd.Close, ErrRingClosed}} {
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- rd.Drain(time.Minute, none) }()
		time.Sleep(100 * time.Millisecond) // parked by now
		if err := tc.wake(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, tc.want) {
				t.Errorf("Drain woken by %s: %v, want %v", tc.name, err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Drain woken by %s returned after %v", tc.name, d)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not wake a parked Drain", tc.name)
		}
	}
}
