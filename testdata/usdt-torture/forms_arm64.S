/*
 * Hand-written USDT probes (provider torture_asm) whose notes hold every
 * arm64 operand form a tracer must read, written out exactly, so that
 * coverage does not depend on what a compiler happens to emit: every
 * general-purpose register x0..x30 and sp at every width through its
 * 64-bit name (xN) and its 32-bit one (wN, wsp), signed and unsigned and
 * without a size, the aliases fp and lr and the zero registers; [base],
 * [base, off] with positive, negative, "#" and hex offsets off sp, fp and
 * other registers; [base, index] and [base, index, lsl #n]; the low 12 bits
 * of a symbol's address after an adrp ([x1, #:lo12:sym]); immediates; and a
 * probe of 13 arguments, one more than a bpftape probe records. torture.c
 * calls these functions and prints what each argument must read.
 *
 * The PROBE macro writes the note as sys/sdt.h does (a nop, and a stapsdt
 * note with its address, .stapsdt.base and the semaphore), but takes the
 * argument string as written instead of letting the compiler choose the
 * operands. The arm64 counterpart of forms.S.
 */

	.macro PROBE provider, name, args
990:	nop
	.pushsection .note.stapsdt,"?","note"
	.balign 4
	.4byte 992f-991f, 994f-993f, 3
991:	.asciz "stapsdt"
992:	.balign 4
993:	.8byte 990b
	.8byte _.stapsdt.base
	.8byte 0
	.asciz "\provider"
	.asciz "\name"
	.asciz "\args"
994:	.balign 4
	.popsection
	.endm

	/* REGPROBE num: the probe reg_xNUM reads xNUM at every width, then wNUM. */
	.macro REGPROBE num
	PROBE torture_asm, reg_x\num, "8@x\num -8@x\num 4@x\num -4@x\num 2@x\num -2@x\num 1@x\num -1@x\num 4@w\num -4@w\num 8@w\num -8@w\num"
	.endm

	.text

/*
 * void forms_regs(const uint64_t in[31], uint64_t *sp_out)
 *
 * Stores sp at the probes in *sp_out, loads x0..x30 from in[0..30], and
 * fires one probe per register reading it at 8, 4, 2 and 1 bytes, unsigned
 * then signed, then through its 32-bit name; then sp, unsized operands,
 * aliases and the 13-argument probe. x18 and the callee-saved registers,
 * fp and lr included, are restored from the frame.
 */
	.globl forms_regs
	.type forms_regs, %function
forms_regs:
	stp x29, x30, [sp, #-112]!
	mov x29, sp
	stp x19, x20, [sp, #16]
	stp x21, x22, [sp, #32]
	stp x23, x24, [sp, #48]
	stp x25, x26, [sp, #64]
	stp x27, x28, [sp, #80]
	str x18, [sp, #96]
	mov x2, sp
	str x2, [x1]
	ldp x1, x2, [x0, #8]
	ldp x3, x4, [x0, #24]
	ldp x5, x6, [x0, #40]
	ldp x7, x8, [x0, #56]
	ldp x9, x10, [x0, #72]
	ldp x11, x12, [x0, #88]
	ldp x13, x14, [x0, #104]
	ldp x15, x16, [x0, #120]
	ldp x17, x18, [x0, #136]
	ldp x19, x20, [x0, #152]
	ldp x21, x22, [x0, #168]
	ldp x23, x24, [x0, #184]
	ldp x25, x26, [x0, #200]
	ldp x27, x28, [x0, #216]
	ldp x29, x30, [x0, #232]
	ldr x0, [x0]
	REGPROBE 0
	REGPROBE 1
	REGPROBE 2
	REGPROBE 3
	REGPROBE 4
	REGPROBE 5
	REGPROBE 6
	REGPROBE 7
	REGPROBE 8
	REGPROBE 9
	REGPROBE 10
	REGPROBE 11
	REGPROBE 12
	REGPROBE 13
	REGPROBE 14
	REGPROBE 15
	REGPROBE 16
	REGPROBE 17
	REGPROBE 18
	REGPROBE 19
	REGPROBE 20
	REGPROBE 21
	REGPROBE 22
	REGPROBE 23
	REGPROBE 24
	REGPROBE 25
	REGPROBE 26
	REGPROBE 27
	REGPROBE 28
	REGPROBE 29
	REGPROBE 30
	PROBE torture_asm, reg_sp, "8@sp -8@sp 4@sp -4@sp 2@sp -2@sp 1@sp -1@sp 4@wsp -4@wsp 8@wsp -8@wsp"
	/* Without N@ a register is as wide as its name, unsigned; xzr and wzr read 0. */
	PROBE torture_asm, reg_nosize, "x0 w1 x9 w17 sp wsp fp lr xzr wzr"
	PROBE torture_asm, reg_alias, "8@fp -8@lr -4@fp 2@lr -2@xzr 4@wzr"
	PROBE torture_asm, args13, "8@x0 8@x1 8@x2 8@x3 8@x4 8@x5 8@x6 8@x7 8@x8 8@x9 8@x10 8@x11 8@x12"
	ldr x18, [sp, #96]
	ldp x19, x20, [sp, #16]
	ldp x21, x22, [sp, #32]
	ldp x23, x24, [sp, #48]
	ldp x25, x26, [sp, #64]
	ldp x27, x28, [sp, #80]
	ldp x29, x30, [sp], #112
	ret
	.size forms_regs, .-forms_regs

/*
 * void forms_mem(const uint8_t buf[128])
 *
 * Copies buf into a 128-byte stack frame (buf[j] at [sp, j]) with fp at its
 * top (buf[128-N] at [fp, -N]), and reads it through sp and fp; then reads
 * buf itself through x0 = buf and x1 = buf + 16, and indexed with
 * x2 = 3, x3 = 5, x4 = 6 and x5 = -2.
 */
	.globl forms_mem
	.type forms_mem, %function
forms_mem:
	stp x29, x30, [sp, #-16]!
	sub sp, sp, #128
	mov x2, #0
1:	ldr x3, [x0, x2, lsl #3]
	str x3, [sp, x2, lsl #3]
	add x2, x2, #1
	cmp x2, #16
	b.ne 1b
	add x29, sp, #128
	add x1, x0, #16
	mov x2, #3
	mov x3, #5
	mov x4, #6
	mov x5, #-2
	PROBE torture_asm, mem_stack, "8@[sp] -4@[sp, 16] 8@[sp, #120] -2@[sp,114] 1@[x29, -93] -8@[x29, #-104] 4@[fp, -96] 2@[sp, 0x22]"
	PROBE torture_asm, mem_base, "-4@[x0, 8] 8@[x0] 2@[x1, #-2] -8@[x1, -16] 1@[x1] -1@[x0, #127] 4@[x1, 0x10] -2@[x0,#0]"
	PROBE torture_asm, mem_index, "-4@[x0, x2, lsl #2] 8@[x0, x2] 2@[x0, x3, lsl 1] -8@[x1, x4, lsl #3] 1@[x0, x2, lsl #0] 8@[x1, x5, lsl #3] -8@[x0,x4]"
	add sp, sp, #128
	ldp x29, x30, [sp], #16
	ret
	.size forms_mem, .-forms_mem

/*
 * void forms_sym(void)
 *
 * Reads the global int64_t torture_glob[8] as compilers address globals:
 * adrp puts the symbol's 4 KiB page in a register, and the operand adds
 * the low 12 bits of its address (plus an addend). Position-independent:
 * the same in a PIE.
 */
	.globl forms_sym
	.type forms_sym, %function
forms_sym:
	adrp x1, torture_glob
	adrp x2, torture_glob+22
	PROBE torture_asm, mem_lo12, "-4@[x1, #:lo12:torture_glob] 8@[x1, :lo12:torture_glob+8] -2@[x2, #:lo12:torture_glob+22]"
	ret
	.size forms_sym, .-forms_sym

/* void forms_consts(void): immediates of every size and sign. */
	.globl forms_consts
	.type forms_consts, %function
forms_consts:
	PROBE torture_asm, consts, "8@5 -4@-1 -1@-128 1@255 -2@-32768 2@65535 -8@-9223372036854775808 8@18446744073709551615 4@0x7fffffff 42 1@-56 -4@#-7"
	ret
	.size forms_consts, .-forms_consts

	.ifndef _.stapsdt.base
	.pushsection .stapsdt.base,"aG","progbits",.stapsdt.base,comdat
	.weak _.stapsdt.base
	.hidden _.stapsdt.base
_.stapsdt.base:
	.space 1
	.size _.stapsdt.base, 1
	.popsection
	.endif

	.section .note.GNU-stack,"",%progbits
