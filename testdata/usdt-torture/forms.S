/*
 * Hand-written USDT probes (provider torture_asm) whose notes hold every
 * x86-64 operand form a tracer must read, written out exactly, so that
 * coverage does not depend on what a compiler happens to emit: every
 * general-purpose register at every width, signed and unsigned and without
 * a size; (%rsp), disp(%rsp), disp(%rbp); SIB with and without scale,
 * displacement or base; %rip-relative and absolute symbols; %fs: thread-local
 * operands; constants; and a probe of 13 arguments, one more than a
 * bpftape probe records. torture.c calls these functions and prints what
 * each argument must read.
 *
 * The PROBE macro writes the note as sys/sdt.h does (a nop, and a stapsdt
 * note with its address, .stapsdt.base and the semaphore), but takes the
 * argument string as written instead of letting gcc choose the operands.
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

	.text

/*
 * void forms_regs(const uint64_t in[16], uint64_t *rsp_out)
 *
 * Loads rax, rbx, rcx, rdx, rsi, rdi, rbp, r8..r15 from in[0..15] (in[7],
 * rsp's slot, is not used), stores %rsp at the probes in *rsp_out, and fires
 * one probe per register reading it at 8, 4, 2 and 1 bytes, unsigned then
 * signed; then unsized operands and the 13-argument probe.
 */
	.globl forms_regs
	.type forms_regs, @function
forms_regs:
	push %rbp
	mov %rsp, %rbp
	push %rbx
	push %r12
	push %r13
	push %r14
	push %r15
	sub $8, %rsp
	mov %rsp, (%rsi)
	mov 0(%rdi), %rax
	mov 8(%rdi), %rbx
	mov 16(%rdi), %rcx
	mov 24(%rdi), %rdx
	mov 32(%rdi), %rsi
	mov 48(%rdi), %rbp
	mov 64(%rdi), %r8
	mov 72(%rdi), %r9
	mov 80(%rdi), %r10
	mov 88(%rdi), %r11
	mov 96(%rdi), %r12
	mov 104(%rdi), %r13
	mov 112(%rdi), %r14
	mov 120(%rdi), %r15
	mov 40(%rdi), %rdi
	PROBE torture_asm, reg_rax, "8@%rax -8@%rax 4@%eax -4@%eax 2@%ax -2@%ax 1@%al -1@%al"
	PROBE torture_asm, reg_rbx, "8@%rbx -8@%rbx 4@%ebx -4@%ebx 2@%bx -2@%bx 1@%bl -1@%bl"
	PROBE torture_asm, reg_rcx, "8@%rcx -8@%rcx 4@%ecx -4@%ecx 2@%cx -2@%cx 1@%cl -1@%cl"
	PROBE torture_asm, reg_rdx, "8@%rdx -8@%rdx 4@%edx -4@%edx 2@%dx -2@%dx 1@%dl -1@%dl"
	PROBE torture_asm, reg_rsi, "8@%rsi -8@%rsi 4@%esi -4@%esi 2@%si -2@%si 1@%sil -1@%sil"
	PROBE torture_asm, reg_rdi, "8@%rdi -8@%rdi 4@%edi -4@%edi 2@%di -2@%di 1@%dil -1@%dil"
	PROBE torture_asm, reg_rbp, "8@%rbp -8@%rbp 4@%ebp -4@%ebp 2@%bp -2@%bp 1@%bpl -1@%bpl"
	PROBE torture_asm, reg_rsp, "8@%rsp -8@%rsp 4@%esp -4@%esp 2@%sp -2@%sp 1@%spl -1@%spl"
	PROBE torture_asm, reg_r8, "8@%r8 -8@%r8 4@%r8d -4@%r8d 2@%r8w -2@%r8w 1@%r8b -1@%r8b"
	PROBE torture_asm, reg_r9, "8@%r9 -8@%r9 4@%r9d -4@%r9d 2@%r9w -2@%r9w 1@%r9b -1@%r9b"
	PROBE torture_asm, reg_r10, "8@%r10 -8@%r10 4@%r10d -4@%r10d 2@%r10w -2@%r10w 1@%r10b -1@%r10b"
	PROBE torture_asm, reg_r11, "8@%r11 -8@%r11 4@%r11d -4@%r11d 2@%r11w -2@%r11w 1@%r11b -1@%r11b"
	PROBE torture_asm, reg_r12, "8@%r12 -8@%r12 4@%r12d -4@%r12d 2@%r12w -2@%r12w 1@%r12b -1@%r12b"
	PROBE torture_asm, reg_r13, "8@%r13 -8@%r13 4@%r13d -4@%r13d 2@%r13w -2@%r13w 1@%r13b -1@%r13b"
	PROBE torture_asm, reg_r14, "8@%r14 -8@%r14 4@%r14d -4@%r14d 2@%r14w -2@%r14w 1@%r14b -1@%r14b"
	PROBE torture_asm, reg_r15, "8@%r15 -8@%r15 4@%r15d -4@%r15d 2@%r15w -2@%r15w 1@%r15b -1@%r15b"
	/* Without N@ a register is as wide as its name, unsigned. */
	PROBE torture_asm, reg_nosize, "%rax %ebx %cx %dl %sil %r8d %r12 %r9w %r10b %rbp"
	PROBE torture_asm, args13, "8@%rax 8@%rbx 8@%rcx 8@%rdx 8@%rsi 8@%rdi 8@%r8 8@%r9 8@%r10 8@%r11 8@%r12 8@%r13 8@%r14"
	add $8, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	pop %rbp
	ret
	.size forms_regs, .-forms_regs

/*
 * void forms_mem(const uint8_t buf[128])
 *
 * Copies buf into a 128-byte stack frame (buf[j] at j(%rsp), so
 * -N(%rbp) is buf[128-N]) and buf[120..127] into the red zone at -8(%rsp),
 * and reads them through %rsp and %rbp, then reads
 * buf itself through SIB operands: rax = r9 = buf, rdx = 3, r8 = 5, r10 = 6.
 */
	.globl forms_mem
	.type forms_mem, @function
forms_mem:
	push %rbp
	mov %rsp, %rbp
	sub $128, %rsp
	xor %ecx, %ecx
1:	mov (%rdi,%rcx,8), %rax
	mov %rax, (%rsp,%rcx,8)
	inc %ecx
	cmp $16, %ecx
	jne 1b
	mov %rdi, %rax
	mov %rdi, %r9
	mov $3, %edx
	mov $5, %r8d
	mov $6, %r10d
	/* The red zone below %rsp, where clang -O2 keeps values: b[120..127]. */
	mov 120(%rsp), %r11
	mov %r11, -8(%rsp)
	PROBE torture_asm, mem_stack, "8@(%rsp) -4@16(%rsp) 8@-8(%rbp) -2@-14(%rbp) 1@-96(%rbp,%rdx,8) -8@(%rsp,%rdx,8) 4@0x20(%rsp) -8@-8(%rsp)"
	PROBE torture_asm, mem_sib, "-4@8(%rax,%rdx,4) (%rax,%rdx) 8@(%rax,%rdx) 2@-2(%rax,%r8,2) -8@(%r9,%r10,8) 1@(%rax,%rdx,1) -4@(%r9) 8@-0x10(%rax,%r10,8)"
	leave
	ret
	.size forms_mem, .-forms_mem

/*
 * void forms_sym(void)
 *
 * Reads the global int64_t torture_glob[8] through symbols: %rip-relative
 * always; without a base register (absolute, index-only SIB, $address)
 * only in a non-PIE build, where addresses are fixed at link time. rcx = 2.
 */
	.globl forms_sym
	.type forms_sym, @function
forms_sym:
	push %rbp
	mov %rsp, %rbp
	mov $2, %ecx
	PROBE torture_asm, mem_rip, "-4@torture_glob(%rip) 8@torture_glob+8(%rip) -2@torture_glob+6(%rip)"
#ifndef __PIE__
	PROBE torture_asm, mem_abs, "-4@torture_glob -8@torture_glob+16 -4@torture_glob(,%rcx,4) 8@$torture_glob 2@torture_glob+4(%rcx) 8@torture_glob+24(,%rcx,1)"
#endif
	pop %rbp
	ret
	.size forms_sym, .-forms_sym

/*
 * void forms_tls(void)
 *
 * Reads the thread-local int32_t torture_tls and int64_t torture_tls_arr[4]
 * through %fs: as gcc writes such operands: v@tpoff, v@tpoff(,%idx,s),
 * (%reg) holding the offset, and %fs:0, the thread pointer itself.
 * rdx = torture_tls@tpoff, rcx = 1.
 */
	.globl forms_tls
	.type forms_tls, @function
forms_tls:
	push %rbp
	mov %rsp, %rbp
	mov $torture_tls@tpoff, %rdx
	mov $1, %ecx
	PROBE torture_asm, tls, "-4@%fs:torture_tls@tpoff -8@%fs:torture_tls_arr@tpoff(,%rcx,8) -4@%fs:(%rdx) 8@%fs:0 -8@%fs:torture_tls_arr@tpoff+16"
	pop %rbp
	ret
	.size forms_tls, .-forms_tls

/* void forms_consts(void): immediates of every size and sign. */
	.globl forms_consts
	.type forms_consts, @function
forms_consts:
	push %rbp
	mov %rsp, %rbp
	PROBE torture_asm, consts, "8@$5 -4@$-1 -1@$-128 1@$255 -2@$-32768 2@$65535 -8@$-9223372036854775808 8@$18446744073709551615 4@$0x7fffffff $42 -4@$0x80000000"
	pop %rbp
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

	.section .note.GNU-stack,"",@progbits
