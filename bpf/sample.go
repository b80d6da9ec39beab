package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Sample layout (struct sample in bpftape.c), little endian, fixed offsets.
// A ring record is a prefix of it whose length is SampleSize(class).
const (
	OffTime    = 0                   // u64 bpf_ktime_get_boot_ns (CLOCK_BOOTTIME)
	OffPID     = 8                   // u32 tgid, in the initial PID namespace
	OffTID     = 12                  // u32 thread id, in the initial PID namespace
	OffProbeID = 16                  // u16 ProbeSpec.ProbeId, or CommProbeID
	OffCPU     = 18                  // u16
	OffNargs   = 20                  // u16 number of valid args
	OffFlags   = 22                  // u16 Flag* bits
	OffArgs    = 24                  // u64 args[ClassArgs(class)]; args at index >= nargs are 0
	OffStrs    = OffArgs + 8*MaxArgs // char[MaxStrs][StrSlotSize], ClassArgs12Str4 only

	HeaderSize = OffArgs
)

// Comm records (struct comm_record in bpftape.c): a header whose probe id is
// CommProbeID, then the task's comm. Samples carry no comm: a comm record
// goes ahead of the samples of thread TID whenever the CPU that records them
// switched tasks or a comm may have changed, so the comm of a sample is that
// of the last comm record of its TID before it in the ring.
const (
	CommProbeID    = 0xffff
	OffComm        = HeaderSize // char[CommLen] task comm, NUL-padded
	CommLen        = 16
	CommRecordSize = OffComm + CommLen
)

// Stack records (struct stack_record in bpftape.c): the kernel or user
// stack of the sample that follows it in the ring, with the same TID and
// time. The header's probe id is StackProbeID and its Nargs the number of
// frames; the record is StackHeaderSize + 8*Nargs bytes.
const (
	StackProbeID    = 0xfffe
	OffStackProbe   = HeaderSize      // u16 the probe id of the sample it belongs to
	OffStackRetaddr = HeaderSize + 8  // u64 the word at the user stack pointer (StackRecRetaddr)
	OffStackFrames  = HeaderSize + 16 // u64 frames[Nargs], innermost first
	StackHeaderSize = OffStackFrames
	MaxStack        = 127 // frames a stack record holds at most
)

// Stack record flags (Header.Flags of a ClassStack record).
const (
	StackRecKernel  = 1 // a kernel stack; else a user stack
	StackRecRetaddr = 2 // the record has the return address at a function's entry
	StackRecFault   = 4 // the kernel gave no stack (bpf_get_stack failed)
)

// StackProbe returns the probe of the sample a raw stack record belongs to.
func StackProbe(raw []byte) uint16 { return binary.LittleEndian.Uint16(raw[OffStackProbe:]) }

// StackRetaddr returns the return address a raw stack record holds (see
// StackRecRetaddr).
func StackRetaddr(raw []byte) uint64 { return binary.LittleEndian.Uint64(raw[OffStackRetaddr:]) }

// StackFrame returns frame i of a raw stack record, innermost first. It
// panics if the record has no frame i.
func StackFrame(raw []byte, i int) uint64 {
	return binary.LittleEndian.Uint64(raw[OffStackFrames+8*i:])
}

// Sample flags (Header.Flags).
const (
	// FlagStrTruncated: a string was longer than its slot (or its char
	// array) holds; the slot has the first StrSlotSize-1 bytes.
	FlagStrTruncated = 1
	// FlagReadFault: a register or memory read failed (e.g. a bad pointer);
	// that arg is 0 and a string's slot is empty.
	FlagReadFault = 2
)

// Header is the fixed part of a sample.
type Header struct {
	Time    uint64 // CLOCK_BOOTTIME nanoseconds
	PID     uint32
	TID     uint32
	ProbeID uint16
	CPU     uint16
	Nargs   uint16
	Flags   uint16
	Class   uint8 // size class, from the record length; ClassComm for a comm record
}

// Comm returns the task name of a raw comm record (Header.Class ClassComm)
// without NUL padding; it aliases raw. It panics if raw is too short.
func Comm(raw []byte) []byte {
	c := raw[OffComm : OffComm+CommLen]
	if n := bytes.IndexByte(c, 0); n >= 0 {
		return c[:n]
	}
	return c
}

// Errors returned by DecodeHeader.
var (
	ErrSampleSize  = errors.New("bpf: sample length matches no size class")
	ErrSampleNargs = errors.New("bpf: sample nargs exceeds its size class")
)

// classOfLen maps a record length to its size class.
func classOfLen(n int) (uint8, bool) {
	switch n {
	case OffArgs:
		return ClassArgs0, true
	case OffArgs + 8:
		return ClassArgs1, true
	case OffArgs + 2*8:
		return ClassArgs2, true
	case OffArgs + 6*8:
		return ClassArgs6, true
	case OffArgs + 12*8:
		return ClassArgs12, true
	case OffStrs + MaxStrs*StrSlotSize:
		return ClassArgs12Str4, true
	}
	return 0, false
}

// DecodeHeader decodes the header of a raw ring buffer record and checks that
// the record is a well-formed sample, so that Arg(raw, i) for i < Nargs and,
// for ClassArgs12Str4, Str(raw, slot) are in bounds. It does not allocate.
func DecodeHeader(raw []byte) (Header, error) {
	var h Header
	err := h.Decode(raw)
	return h, err
}

// Decode is DecodeHeader into h, for loops that reuse one Header: returning
// the struct by value costs a copy whose wide loads stall on the narrow
// stores that filled it.
func (h *Header) Decode(raw []byte) error {
	if len(raw) < HeaderSize {
		*h = Header{}
		return ErrSampleSize
	}
	le := binary.LittleEndian
	h.Time = le.Uint64(raw[OffTime:])
	h.PID = le.Uint32(raw[OffPID:])
	h.TID = le.Uint32(raw[OffTID:])
	h.ProbeID = le.Uint16(raw[OffProbeID:])
	h.CPU = le.Uint16(raw[OffCPU:])
	h.Nargs = le.Uint16(raw[OffNargs:])
	h.Flags = le.Uint16(raw[OffFlags:])
	if len(raw) == CommRecordSize && h.ProbeID == CommProbeID {
		h.Nargs, h.Flags, h.Class = 0, 0, ClassComm
		return nil
	}
	if h.ProbeID == StackProbeID {
		h.Class = ClassStack
		if int(h.Nargs) > MaxStack || len(raw) != StackHeaderSize+8*int(h.Nargs) {
			return ErrSampleSize
		}
		return nil
	}
	class, ok := classOfLen(len(raw))
	h.Class = class
	if !ok {
		return ErrSampleSize
	}
	if int(h.Nargs) > ClassArgs(class) {
		return ErrSampleNargs
	}
	return nil
}

// Arg returns arg i of a raw sample. It panics if the record has no arg i.
func Arg(raw []byte, i int) uint64 {
	return binary.LittleEndian.Uint64(raw[OffArgs+8*i:])
}

// Str returns the string in slot of a raw ClassArgs12Str4 sample, without the
// NUL; it aliases raw. It panics if the record has no string slots.
func Str(raw []byte, slot int) []byte {
	s := raw[OffStrs+slot*StrSlotSize : OffStrs+(slot+1)*StrSlotSize]
	if n := bytes.IndexByte(s, 0); n >= 0 {
		return s[:n]
	}
	return s
}
