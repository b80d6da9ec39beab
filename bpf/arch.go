package bpf

import (
	"debug/elf"
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// Arch is one architecture's register set as the programs read it: where
// each register is in the kernel's struct pt_regs of that architecture
// (ArgSpec.Reg and ArgSpec.IndexReg are such byte offsets), and which
// registers hold a function's integer arguments, its return value and the
// stack pointer at a uprobe or kprobe.
//
// The programs are compiled once per architecture (bpftape_x86_bpfel.o,
// bpftape_arm64_bpfel.o): HostArch is the one this build loads. The other
// values exist so that what reads a binary (USDT operands, debug info) can
// say exactly why a binary of another architecture cannot be traced here,
// and so that both tables are tested on any host.
type Arch struct {
	// Name is the architecture as GOARCH spells it: "amd64", "arm64".
	Name string
	// ABI names the calling convention the register roles follow.
	ABI string
	// FramePointer is the register user stacks are walked by.
	FramePointer uint8
	// Machine is the ELF machine of its binaries.
	Machine elf.Machine
	// Args are the integer argument registers, in order: Args[i] holds
	// argument i at a function's first instruction.
	Args []uint8
	// Ret holds an integer return value at a function's return.
	Ret uint8
	// SP is the stack pointer.
	SP uint8
	// LR is the link register, which holds the return address at a
	// function's first instruction (arm64's x30); NoReg where the call
	// pushes the return address on the stack (x86-64).
	LR uint8
	// LastReg is the offset of the last pt_regs word the programs' register
	// switch reads: a register offset is valid when it is a multiple of 8
	// up to it.
	LastReg uint8
	// regs maps a register's assembly names (every width) to its offset;
	// names holds each offset's full-width name.
	regs  map[string]uint8
	names map[uint8]string
}

// NoReg is an Arch register that the architecture does not have.
const NoReg uint8 = 0xff

// Reg returns the byte offset in struct pt_regs of the register an
// assembler names so ("rdi", "edi", "r8d" on x86-64; "x19", "w1", "sp" on
// arm64; no "%"). Narrower names map to the full register: the width is
// the operand's.
func (a *Arch) Reg(name string) (uint8, bool) {
	r, ok := a.regs[name]
	return r, ok
}

// ValidReg reports whether reg is the offset of a register of a's pt_regs
// that the programs read.
func (a *Arch) ValidReg(reg uint8) bool { return reg%8 == 0 && reg <= a.LastReg }

// RegName returns the full-width assembly name of the register at byte
// offset reg ("rdi", "x0"), or "" for none.
func (a *Arch) RegName(reg uint8) string { return a.names[reg] }

// Summary says in one line where this architecture's probes find a
// function's arguments and return value, and how user stacks are walked:
// what `bpftape doctor` reports.
func (a *Arch) Summary() string {
	return fmt.Sprintf("%s: arg0..arg%d in %s..%s, retval in %s; user stacks by frame pointers (%s)",
		a.ABI, len(a.Args)-1, a.RegName(a.Args[0]), a.RegName(a.Args[len(a.Args)-1]), a.RegName(a.Ret), a.RegName(a.FramePointer))
}

func (a *Arch) String() string { return a.Name }

// x86-64 registers, as byte offsets in its struct pt_regs
// (arch/x86/include/asm/ptrace.h).
const (
	RegR15    uint8 = 0
	RegR14    uint8 = 8
	RegR13    uint8 = 16
	RegR12    uint8 = 24
	RegBP     uint8 = 32
	RegBX     uint8 = 40
	RegR11    uint8 = 48
	RegR10    uint8 = 56
	RegR9     uint8 = 64
	RegR8     uint8 = 72
	RegAX     uint8 = 80
	RegCX     uint8 = 88
	RegDX     uint8 = 96
	RegSI     uint8 = 104
	RegDI     uint8 = 112
	RegOrigAX uint8 = 120
	RegIP     uint8 = 128
	RegCS     uint8 = 136
	RegFlags  uint8 = 144
	RegSP     uint8 = 152
	RegSS     uint8 = 160
)

// RegARM64SP is arm64's stack pointer, as a byte offset in its struct
// pt_regs, which starts with struct user_pt_regs
// (arch/arm64/include/uapi/asm/ptrace.h): x0 to x30, then sp, pc and
// pstate. RegX(n) is xn. pc and pstate, at 256 and 264, are past what
// ArgSpec.Reg holds; no operand names them.
const RegARM64SP uint8 = 31 * 8

// RegX returns the byte offset of arm64's xn (n 0 to 30).
func RegX(n int) uint8 { return uint8(8 * n) }

// AMD64 is x86-64 with the System V calling convention.
var AMD64 = &Arch{
	Name:         "amd64",
	ABI:          "System V AMD64",
	FramePointer: RegBP,
	Machine:      elf.EM_X86_64,
	Args:         []uint8{RegDI, RegSI, RegDX, RegCX, RegR8, RegR9},
	Ret:          RegAX,
	SP:           RegSP,
	LR:           NoReg,
	LastReg:      RegSS,
	regs: map[string]uint8{
		"rax": RegAX, "eax": RegAX, "ax": RegAX, "al": RegAX,
		"rbx": RegBX, "ebx": RegBX, "bx": RegBX, "bl": RegBX,
		"rcx": RegCX, "ecx": RegCX, "cx": RegCX, "cl": RegCX,
		"rdx": RegDX, "edx": RegDX, "dx": RegDX, "dl": RegDX,
		"rsi": RegSI, "esi": RegSI, "si": RegSI, "sil": RegSI,
		"rdi": RegDI, "edi": RegDI, "di": RegDI, "dil": RegDI,
		"rbp": RegBP, "ebp": RegBP, "bp": RegBP, "bpl": RegBP,
		"rsp": RegSP, "esp": RegSP, "sp": RegSP, "spl": RegSP,
		"rip": RegIP,
		"r8":  RegR8, "r8d": RegR8, "r8w": RegR8, "r8b": RegR8,
		"r9": RegR9, "r9d": RegR9, "r9w": RegR9, "r9b": RegR9,
		"r10": RegR10, "r10d": RegR10, "r10w": RegR10, "r10b": RegR10,
		"r11": RegR11, "r11d": RegR11, "r11w": RegR11, "r11b": RegR11,
		"r12": RegR12, "r12d": RegR12, "r12w": RegR12, "r12b": RegR12,
		"r13": RegR13, "r13d": RegR13, "r13w": RegR13, "r13b": RegR13,
		"r14": RegR14, "r14d": RegR14, "r14w": RegR14, "r14b": RegR14,
		"r15": RegR15, "r15d": RegR15, "r15w": RegR15, "r15b": RegR15,
	},
	names: map[uint8]string{
		RegAX: "rax", RegBX: "rbx", RegCX: "rcx", RegDX: "rdx", RegSI: "rsi", RegDI: "rdi",
		RegBP: "rbp", RegSP: "rsp", RegIP: "rip", RegR8: "r8", RegR9: "r9", RegR10: "r10",
		RegR11: "r11", RegR12: "r12", RegR13: "r13", RegR14: "r14", RegR15: "r15",
	},
}

// ARM64 is AArch64 with the AAPCS64 calling convention.
var ARM64 = &Arch{
	Name:         "arm64",
	ABI:          "AAPCS64",
	FramePointer: RegX(29),
	Machine:      elf.EM_AARCH64,
	Args:         []uint8{RegX(0), RegX(1), RegX(2), RegX(3), RegX(4), RegX(5), RegX(6), RegX(7)},
	Ret:          RegX(0),
	SP:           RegARM64SP,
	LR:           RegX(30),
	LastReg:      RegARM64SP,
	regs:         arm64Regs(),
	names:        arm64Names(),
}

func arm64Regs() map[string]uint8 {
	m := map[string]uint8{"sp": RegARM64SP, "wsp": RegARM64SP, "fp": RegX(29), "lr": RegX(30)}
	for n := range 31 {
		m["x"+strconv.Itoa(n)] = RegX(n)
		m["w"+strconv.Itoa(n)] = RegX(n)
	}
	return m
}

func arm64Names() map[uint8]string {
	m := map[uint8]string{RegARM64SP: "sp"}
	for n := range 31 {
		m[RegX(n)] = "x" + strconv.Itoa(n)
	}
	return m
}

// Arches are the architectures bpftape knows, HostArch's among them.
var Arches = []*Arch{AMD64, ARM64}

// HostArch returns the architecture this build's programs are compiled
// for, or nil when bpftape does not record on it.
func HostArch() *Arch {
	for _, a := range Arches {
		if a.Name == runtime.GOARCH {
			return a
		}
	}
	return nil
}

// ArchOf returns the architecture of an ELF machine, or an error naming
// the ones bpftape reads.
func ArchOf(m elf.Machine) (*Arch, error) {
	for _, a := range Arches {
		if a.Machine == m {
			return a, nil
		}
	}
	names := make([]string, len(Arches))
	for i, a := range Arches {
		names[i] = a.Machine.String()
	}
	return nil, fmt.Errorf("bpf: %v binaries are unsupported (bpftape reads %s)", m, strings.Join(names, " and "))
}

// HostBinary checks that a binary of ELF machine m can be probed by this
// build: its machine is the host's.
func HostBinary(m elf.Machine) error {
	a, err := ArchOf(m)
	if err != nil {
		return err
	}
	if h := HostArch(); h != a {
		host := runtime.GOARCH
		if h != nil {
			host = h.Name
		}
		return fmt.Errorf("bpf: it is an %s binary (%v), and this host is %s: uprobes run the host's machine code", a.Name, m, host)
	}
	return nil
}
