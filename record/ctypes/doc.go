// Package ctypes models C types from DWARF and BTF, finds where a
// function's parameters are at its entry, and turns a field path such as
// req->hdr.size or file->f_path.dentry->d_name.name into memory reads at
// fixed offsets: what a probe needs to record arguments by name and type.
//
// # Types
//
// Type is a small model of a C type: integers, bools, enums, floats,
// pointers, structs and unions with their members' offsets (and bitfields'
// bits), arrays, functions and void. Typedefs and qualifiers are resolved
// away, but String keeps the C spelling for messages ("size_t", "struct
// hrtimer_sleeper *"). A member lookup sees through anonymous struct and
// union members, as C does (struct sk_buff keeps dev in one).
//
// Binary reads DWARF with debug/dwarf, from the binary or, when it is
// stripped, from its separate debug file (found as record/elfsym finds
// it: by build id, then .gnu_debuglink); debug/elf decompresses .zdebug
// and SHF_COMPRESSED sections. A struct declared but not defined in one
// compilation unit (struct req; then struct req *r) is completed from the
// unit that defines it. BTF converts cilium/ebpf's btf types; both convert
// a pointer's target only when Type.Elem asks for it, and memoize, since
// the kernel's types are many and reach each other through pointers.
//
// # Functions
//
// Binary.Func finds a function's DIE, seeing through DW_AT_abstract_origin
// and DW_AT_specification: at -O2 gcc describes a function inlined
// somewhere and kept out of line as an abstract instance (names and types
// of the parameters) and concrete copies that refer to it. Of several
// DIEs with the name, the one at the address of the ELF symbol wins.
//
// # Where parameters are at entry
//
// Func.Params give each parameter's place at the function's first
// instruction by the calling convention of the code's architecture (Func.Arch:
// the binary's ELF machine; for kernel BTF, the host's), as bpftrace does
// for uprobe arguments, not by the parameter's DWARF location, which
// describes where the variable lives in the function's body. In the test
// workload (testdata/structs.c, gcc 12.2): at -O0 rx's req is DW_OP_fbreg
// -24, a stack slot the prologue fills from rdi after the entry; at -O2
// pass_pair's struct p is in rdi:rsi for its first 7 bytes of code only (a
// location list), after_stack's a is in rdi for 3 bytes and then only a
// DW_OP_entry_value, and pass_pair's s moves from rdx to rsi. The ABI,
// which every caller obeys, holds at the entry at any optimization level.
//
// On x86-64, the System V ABI (3.2.3): integers, enums, bools and
// pointers, and structs and unions of at most 16 bytes made of them, take
// one or two of rdi, rsi, rdx, rcx, r8 and r9 in order; when those run
// out, or for a struct over 16 bytes or with an unaligned member
// (MEMORY), the parameter is on the stack at rsp+8, rsp+16 and so on:
// eightbyte slots of an argument area that starts 16-byte aligned at
// rsp+8, above the return address (an __int128 after one eightbyte skips
// one). Floats and doubles go in xmm registers, which probes cannot read:
// ErrSSEParam. A function returning a MEMORY struct takes a hidden pointer
// in rdi, and returns it in rax. Values returned in registers are in rax,
// and rdx for the second eightbyte.
//
// On arm64, AAPCS64 (6.8): integers and pointers take x0 to x7 in order;
// a struct, union or array-holding struct of at most 16 bytes takes one or
// two consecutive x registers if that many are left (one aligned to 16
// bytes, as a struct holding an __int128 or a member aligned(16), starts
// at an even register, as an __int128 does), else it goes on the stack
// and so does every later integer argument; one over 16 bytes is copied
// by the caller and passed by reference: its register or stack slot holds
// the copy's address (Location.Indirect). Floats, doubles and homogeneous
// floating-point aggregates (up to four members of one floating-point
// type) go in v0 to v7, which probes cannot read (ErrSSEParam, "passed in
// v0"), and take no x register; once the v registers run out they go on
// the stack too. The stack arguments start at sp+0 at the function's first
// instruction, as the call leaves the return address in x30, each in a
// slot rounded up to 8 bytes and aligned to 8 (16 for a 16-byte aligned
// type). Values are returned in x0, or x0 and x1 for 9 to 16 bytes; a
// struct over 16 bytes is written to memory whose address the caller
// passes in x8, which the callee need not keep, so that at the return no
// register is known to hold it: its RetErr says so (ErrNoLocation).
// Floating-point values and aggregates are returned in v registers.
//
// On both, a variadic function's named parameters are placed as any
// others (Linux's arm64 ABI passes the unnamed ones as named ones too,
// unlike Apple's). The kernel is compiled for the host's convention, so a
// kprobe on a kernel function's entry (BTF.Func) sees its parameters in
// the same places. A function that gcc marks DW_CC_nocall (a calling
// convention of its own, after interprocedural optimization) is refused.
//
// # Paths
//
// Resolve turns a path of steps (.name, ->name, [n], *) from a value of a
// type into an Access: pointer loads at fixed offsets (at most MaxReads),
// then a leaf: the value itself, an integer read at an offset, or the
// address of an array (a char array is a string). Func.ParamAccess and
// RetAccess start the path from a parameter or return value where the ABI
// puts it: a register, the stack (the base is then sp+offset, the
// parameter's address), memory whose address a register or stack slot
// holds (a struct passed by reference: one more load), or a struct in one
// or two registers (a path to a member that fills a register).
//
// Errors are one line, and wrap a sentinel (ErrNoMember, ErrNotPointer,
// ErrTooDeep, ...) for errors.Is. Malformed debug info gives errors, not
// panics: the package recovers debug/dwarf's panics.
package ctypes
