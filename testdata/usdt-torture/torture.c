/*
 * USDT torture workload: probes whose notes hold every x86-64 or arm64
 * operand form gcc and clang emit (and, in forms.S and forms_arm64.S, every
 * form written by hand), each fired with known values that are printed as
 * ground truth (see torture.h). Built at test time (see
 * record/torture_test.go), e.g. with gcc:
 *
 *   gcc -O2 -fPIC -shared -o libtorture.so torturelib.c
 *   gcc -O2 -fno-omit-frame-pointer -DFRAME_VARIANT=rbp -c -o frames_rbp.o frames.c
 *   gcc -Og -fomit-frame-pointer -DFRAME_VARIANT=rsp -c -o frames_rsp.o frames.c
 *   gcc -O2 -fno-omit-frame-pointer -fcf-protection=none -no-pie -fno-pie -o torture \
 *       torture.c torture_sem.c frames_rbp.o frames_rsp.o forms.S -L. -ltorture -Wl,-rpath,$PWD
 *
 * For arm64 the same with aarch64-linux-gnu-gcc (or clang
 * --target=aarch64-linux-gnu), forms_arm64.S in place of forms.S and
 * without -fcf-protection; guestcheck.sh shows a static build.
 *
 *   torture [-w] N SEED
 *
 * runs N iterations of every probe; -w waits for a line on stdin first
 * (attach with -p). SEED makes the values unknown to the compiler.
 *
 * Probes (provider torture): args1..args12, 1 to 12 arguments cycling
 * through int8_t, uint8_t, ..., uint64_t; inlined, fired from several
 * inlined call sites; tls, thread-local operands (%fs: on x86-64); sib,
 * array elements; consts, immediates; negoff (arm64 only), elements before
 * a pointer; frame_rbp and frame_rsp (frames.c), variables in the stack
 * frame; guarded (torture_sem.c), behind a semaphore. Provider
 * torture_asm: forms.S (x86-64) or forms_arm64.S (arm64). Provider
 * torturelib: the shared library. The uprobe targets torture_func and
 * torture_static print "F NAME I ARG0 ARG1".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>

#include "torture.h"

#define PROBED NOIPA
/* A volatile local gives a leaf function a frame: push %rbp comes first. */
#define FRAME volatile long frame_ = 0; (void)frame_

int64_t torture_glob[8];
int32_t torture_glob32[16];
__thread int32_t torture_tls;
__thread int64_t torture_tls_arr[4];

#if defined(__x86_64__)
void forms_regs(const uint64_t in[16], uint64_t *rsp_out);
void forms_tls(void);
#elif defined(__aarch64__)
void forms_regs(const uint64_t in[31], uint64_t *sp_out);
#else
#error "the torture workload has hand-written probes (forms.S, forms_arm64.S) for x86-64 and arm64 only"
#endif
void forms_mem(const uint8_t buf[128]);
void forms_sym(void);
void forms_consts(void);
void frames_rbp(uint64_t seed, long i);
void frames_rsp(uint64_t seed, long i);
void torture_sem(uint64_t seed, long i);
void torturelib_fire(uint64_t seed, long i);

PROBED long torture_func(long a, long b)
{
	FRAME;
	return a * 7 + b;
}

PROBED static long torture_static(long a)
{
	FRAME;
	return a - 3;
}

#define D(k, T) T a##k = (T)tval(seed, i, k)

static void fire_args(uint64_t seed, long i)
{
	{
		D(0, uint8_t);
		DTRACE_PROBE1(torture, args1, a0);
		BEGIN("torture:args1", i); PV(a0); END();
	}
	{
		D(0, int16_t); D(1, uint16_t);
		DTRACE_PROBE2(torture, args2, a0, a1);
		BEGIN("torture:args2", i); PV(a0); PV(a1); END();
	}
	{
		D(0, uint16_t); D(1, int32_t); D(2, uint32_t);
		DTRACE_PROBE3(torture, args3, a0, a1, a2);
		BEGIN("torture:args3", i); PV(a0); PV(a1); PV(a2); END();
	}
	{
		D(0, int32_t); D(1, uint32_t); D(2, int64_t); D(3, uint64_t);
		DTRACE_PROBE4(torture, args4, a0, a1, a2, a3);
		BEGIN("torture:args4", i); PV(a0); PV(a1); PV(a2); PV(a3); END();
	}
	{
		D(0, uint32_t); D(1, int64_t); D(2, uint64_t); D(3, int8_t); D(4, uint8_t);
		DTRACE_PROBE5(torture, args5, a0, a1, a2, a3, a4);
		BEGIN("torture:args5", i); PV(a0); PV(a1); PV(a2); PV(a3); PV(a4); END();
	}
	{
		D(0, int64_t); D(1, uint64_t); D(2, int8_t); D(3, uint8_t); D(4, int16_t); D(5, uint16_t);
		DTRACE_PROBE6(torture, args6, a0, a1, a2, a3, a4, a5);
		BEGIN("torture:args6", i); PV(a0); PV(a1); PV(a2); PV(a3); PV(a4); PV(a5); END();
	}
	{
		D(0, uint64_t); D(1, int8_t); D(2, uint8_t); D(3, int16_t); D(4, uint16_t); D(5, int32_t);
		D(6, uint32_t);
		DTRACE_PROBE7(torture, args7, a0, a1, a2, a3, a4, a5, a6);
		BEGIN("torture:args7", i); PV(a0); PV(a1); PV(a2); PV(a3); PV(a4); PV(a5); PV(a6); END();
	}
	{
		D(0, int8_t); D(1, uint8_t); D(2, int16_t); D(3, uint16_t); D(4, int32_t); D(5, uint32_t);
		D(6, int64_t); D(7, uint64_t);
		DTRACE_PROBE8(torture, args8, a0, a1, a2, a3, a4, a5, a6, a7);
		BEGIN("torture:args8", i); PV(a0); PV(a1); PV(a2); PV(a3); PV(a4); PV(a5); PV(a6); PV(a7);
		END();
	}
	{
		D(0, uint8_t); D(1, int16_t); D(2, uint16_t); D(3, int32_t); D(4, uint32_t); D(5, int64_t);
		D(6, uint64_t); D(7, int8_t); D(8, uint8_t);
		DTRACE_PROBE9(torture, args9, a0, a1, a2, a3, a4, a5, a6, a7, a8);
		BEGIN("torture:args9", i); PV(a0); PV(a1); PV(a2); PV(a3); PV(a4); PV(a5); PV(a6); PV(a7);
		PV(a8); END();
	}
	{
		D(0, int16_t); D(1, uint16_t); D(2, int32_t); D(3, uint32_t); D(4, int64_t); D(5, uint64_t);
		D(6, int8_t); D(7, uint8_t); D(8, int16_t); D(9, uint16_t);
		DTRACE_PROBE10(torture, args10, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9);
		BEGIN("torture:args10", i); PV(a0); PV(a1); PV(a2); PV(a3); PV(a4); PV(a5); PV(a6); PV(a7);
		PV(a8); PV(a9); END();
	}
	{
		D(0, uint16_t); D(1, int32_t); D(2, uint32_t); D(3, int64_t); D(4, uint64_t); D(5, int8_t);
		D(6, uint8_t); D(7, int16_t); D(8, uint16_t); D(9, int32_t); D(10, uint32_t);
		DTRACE_PROBE11(torture, args11, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10);
		BEGIN("torture:args11", i); PV(a0); PV(a1); PV(a2); PV(a3); PV(a4); PV(a5); PV(a6); PV(a7);
		PV(a8); PV(a9); PV(a10); END();
	}
	{
		D(0, int32_t); D(1, uint32_t); D(2, int64_t); D(3, uint64_t); D(4, int8_t); D(5, uint8_t);
		D(6, int16_t); D(7, uint16_t); D(8, int32_t); D(9, uint32_t); D(10, int64_t); D(11, uint64_t);
		DTRACE_PROBE12(torture, args12, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11);
		BEGIN("torture:args12", i); PV(a0); PV(a1); PV(a2); PV(a3); PV(a4); PV(a5); PV(a6); PV(a7);
		PV(a8); PV(a9); PV(a10); PV(a11); END();
	}
}

static long inlined_n;

/* Fired from every place it is inlined into: one call site each. */
static inline __attribute__((always_inline)) void hot(int64_t x, uint16_t y)
{
	DTRACE_PROBE2(torture, inlined, x, y);
	BEGIN("torture:inlined", inlined_n++); PV(x); PV(y); END();
}

/* Thread-local operands: gcc -O2 reads them as %fs:v@tpoff(...). */
PROBED void tls_probe(long j)
{
	DTRACE_PROBE3(torture, tls, torture_tls, torture_tls_arr[j], j);
}

/* Array elements: SIB operands, base-less for the global in a non-PIE build. */
PROBED void sib_probe(const int32_t *arr, long j)
{
	DTRACE_PROBE3(torture, sib, arr[j], torture_glob32[j], j);
}

#if defined(__aarch64__)
/* Before a pointer: gcc -O2 reads these as [xN, -OFF] on arm64. */
PROBED void negoff_probe(const int64_t *p)
{
	DTRACE_PROBE3(torture, negoff, p[-1], p[-4], ((const int8_t *)p)[-3]);
}
#endif

PROBED void consts_probe(void)
{
	DTRACE_PROBE4(torture, consts, 5, -1, (uint64_t)1 << 63, (int8_t)-7);
}

static void pl(const uint8_t *p, int size, int sign)
{
	uint64_t v = 0;

	memcpy(&v, p, size);
	if (sign && size < 8 && (v >> (8 * size - 1)) & 1)
		v |= ~0ULL << (8 * size);
	if (sign)
		pr_s((long long)v);
	else
		pr_u(v);
}

#if defined(__x86_64__)
static const char *const regs[16] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
				     "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};

static void fire_forms(uint64_t seed, long i)
{
	uint64_t in[16], rsp = 0, words[16];
	const uint8_t *b = (const uint8_t *)words;
	char name[64];

	for (int r = 0; r < 16; r++)
		in[r] = tval(seed, i, 100 + r);
	forms_regs(in, &rsp);
	for (int r = 0; r < 16; r++) {
		uint64_t v = r == 7 ? rsp : in[r];

		snprintf(name, sizeof(name), "torture_asm:reg_%s", regs[r]);
		BEGIN(name, i);
		PV(v); PV((int64_t)v); PV((uint32_t)v); PV((int32_t)v);
		PV((uint16_t)v); PV((int16_t)v); PV((uint8_t)v); PV((int8_t)v);
		END();
	}
	BEGIN("torture_asm:reg_nosize", i);
	PV(in[0]); PV((uint32_t)in[1]); PV((uint16_t)in[2]); PV((uint8_t)in[3]); PV((uint8_t)in[4]);
	PV((uint32_t)in[8]); PV(in[12]); PV((uint16_t)in[9]); PV((uint8_t)in[10]); PV(in[6]);
	END();
	BEGIN("torture_asm:args13", i);
	for (int r = 0; r < 16; r++)
		if (r != 6 && r != 7 && r != 15)
			PV(in[r]);
	END();

	for (int w = 0; w < 16; w++)
		words[w] = tval(seed, i, 200 + w);
	forms_mem(b);
	/* The stack frame copy: j(%rsp) is b[j], -N(%rbp) is b[128-N]. */
	BEGIN("torture_asm:mem_stack", i);
	pl(b + 0, 8, 0); pl(b + 16, 4, 1); pl(b + 120, 8, 0); pl(b + 114, 2, 1);
	pl(b + 128 - 96 + 3 * 8, 1, 0); pl(b + 24, 8, 1); pl(b + 32, 4, 0); pl(b + 120, 8, 1);
	END();
	BEGIN("torture_asm:mem_sib", i);
	pl(b + 8 + 3 * 4, 4, 1); pl(b + 3, 8, 0); pl(b + 3, 8, 0); pl(b + 5 * 2 - 2, 2, 0);
	pl(b + 6 * 8, 8, 1); pl(b + 3, 1, 0); pl(b, 4, 1); pl(b + 6 * 8 - 16, 8, 0);
	END();

	for (int w = 0; w < 8; w++)
		torture_glob[w] = (int64_t)tval(seed, i, 300 + w);
	forms_sym();
	b = (const uint8_t *)torture_glob;
	BEGIN("torture_asm:mem_rip", i);
	pl(b, 4, 1); pl(b + 8, 8, 0); pl(b + 6, 2, 1);
	END();
#ifndef __PIE__
	BEGIN("torture_asm:mem_abs", i);
	pl(b, 4, 1); pl(b + 16, 8, 1); pl(b + 2 * 4, 4, 1); PV((uint64_t)(uintptr_t)torture_glob);
	pl(b + 2 + 4, 2, 0); pl(b + 24 + 2, 8, 0);
	END();
#endif

	uint64_t tp;

	__asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
	torture_tls = (int32_t)tval(seed, i, 400);
	for (int w = 0; w < 4; w++)
		torture_tls_arr[w] = (int64_t)tval(seed, i, 401 + w);
	forms_tls();
	BEGIN("torture_asm:tls", i);
	PV(torture_tls); PV(torture_tls_arr[1]); PV(torture_tls); PV(tp); PV(torture_tls_arr[2]);
	END();

	forms_consts();
	BEGIN("torture_asm:consts", i);
	printf(" 5 -1 -128 255 -32768 65535 -9223372036854775808 18446744073709551615 2147483647 42 -2147483648");
	END();
}
#elif defined(__aarch64__)
/* forms_arm64.S's probes, as fire_forms fires forms.S's on x86-64. */
static void fire_forms(uint64_t seed, long i)
{
	uint64_t in[31], sp = 0, words[16];
	const uint8_t *b = (const uint8_t *)words;
	char name[64];

	for (int r = 0; r < 31; r++)
		in[r] = tval(seed, i, 100 + r);
	forms_regs(in, &sp);
	/* reg_x0..reg_x30, then reg_sp: xN at each width, then wN. */
	for (int r = 0; r <= 31; r++) {
		uint64_t v = r == 31 ? sp : in[r];

		if (r == 31)
			snprintf(name, sizeof(name), "torture_asm:reg_sp");
		else
			snprintf(name, sizeof(name), "torture_asm:reg_x%d", r);
		BEGIN(name, i);
		PV(v); PV((int64_t)v); PV((uint32_t)v); PV((int32_t)v);
		PV((uint16_t)v); PV((int16_t)v); PV((uint8_t)v); PV((int8_t)v);
		/* A 32-bit register holds 32 bits, extended to an 8-byte operand. */
		PV((uint32_t)v); PV((int32_t)v); PV((uint64_t)(uint32_t)v); PV((int64_t)(int32_t)v);
		END();
	}
	BEGIN("torture_asm:reg_nosize", i);
	PV(in[0]); PV((uint32_t)in[1]); PV(in[9]); PV((uint32_t)in[17]); PV(sp); PV((uint32_t)sp);
	PV(in[29]); PV(in[30]); PV((uint64_t)0); PV((uint32_t)0);
	END();
	BEGIN("torture_asm:reg_alias", i);
	PV(in[29]); PV((int64_t)in[30]); PV((int32_t)in[29]); PV((uint16_t)in[30]); PV((int16_t)0);
	PV((uint32_t)0);
	END();
	BEGIN("torture_asm:args13", i);
	for (int r = 0; r < 13; r++)
		PV(in[r]);
	END();

	for (int w = 0; w < 16; w++)
		words[w] = tval(seed, i, 200 + w);
	forms_mem(b);
	/* The stack frame copy: [sp, j] is b[j], [fp, -N] is b[128-N]. */
	BEGIN("torture_asm:mem_stack", i);
	pl(b + 0, 8, 0); pl(b + 16, 4, 1); pl(b + 120, 8, 0); pl(b + 114, 2, 1);
	pl(b + 128 - 93, 1, 0); pl(b + 128 - 104, 8, 1); pl(b + 128 - 96, 4, 0); pl(b + 0x22, 2, 0);
	END();
	/* x0 = b, x1 = b + 16. */
	BEGIN("torture_asm:mem_base", i);
	pl(b + 8, 4, 1); pl(b, 8, 0); pl(b + 16 - 2, 2, 0); pl(b + 16 - 16, 8, 1);
	pl(b + 16, 1, 0); pl(b + 127, 1, 1); pl(b + 16 + 0x10, 4, 0); pl(b, 2, 1);
	END();
	/* x2 = 3, x3 = 5, x4 = 6, x5 = -2. */
	BEGIN("torture_asm:mem_index", i);
	pl(b + 3 * 4, 4, 1); pl(b + 3, 8, 0); pl(b + 5 * 2, 2, 0); pl(b + 16 + 6 * 8, 8, 1);
	pl(b + 3, 1, 0); pl(b + 16 - 2 * 8, 8, 0); pl(b + 6, 8, 1);
	END();

	for (int w = 0; w < 8; w++)
		torture_glob[w] = (int64_t)tval(seed, i, 300 + w);
	forms_sym();
	b = (const uint8_t *)torture_glob;
	BEGIN("torture_asm:mem_lo12", i);
	pl(b, 4, 1); pl(b + 8, 8, 0); pl(b + 22, 2, 1);
	END();

	forms_consts();
	BEGIN("torture_asm:consts", i);
	printf(" 5 -1 -128 255 -32768 65535 -9223372036854775808 18446744073709551615 2147483647 42 200 -7");
	END();
}
#endif

int main(int argc, char **argv)
{
	int arg = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (arg < argc && !strcmp(argv[arg], "-w")) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			return 2;
		arg++;
	}
	if (arg + 2 != argc)
		return 1;
	long n = atol(argv[arg]);
	uint64_t seed = strtoull(argv[arg + 1], NULL, 0);
	int32_t arr[16];

	for (long i = 0; i < n; i++) {
		fire_args(seed, i);
		fire_forms(seed, i);

		int64_t x = (int64_t)tval(seed, i, 500);
#pragma GCC unroll 3
		for (int k = 0; k < 3; k++)
			hot(x + k, (uint16_t)(x >> k));
		hot(-x, (uint16_t)i);
		if (x & 1)
			hot(x ^ 0x5555, 7);
		else
			hot(x * 3, 9);

		long j = i & 3;

		torture_tls = (int32_t)tval(seed, i, 600);
		torture_tls_arr[j] = (int64_t)tval(seed, i, 601);
		tls_probe(j);
		BEGIN("torture:tls", i); PV(torture_tls); PV(torture_tls_arr[j]); PV((int64_t)j); END();

		long s = (i * 5) & 15;

		for (int w = 0; w < 16; w++) {
			arr[w] = (int32_t)tval(seed, i, 700 + w);
			torture_glob32[w] = (int32_t)tval(seed, i, 720 + w);
		}
		sib_probe(arr, s);
		BEGIN("torture:sib", i); PV(arr[s]); PV(torture_glob32[s]); PV((int64_t)s); END();

		consts_probe();
		BEGIN("torture:consts", i); printf(" 5 -1 9223372036854775808 -7"); END();

#if defined(__aarch64__)
		int64_t neg[8];
		int8_t c;

		for (int w = 0; w < 8; w++)
			neg[w] = (int64_t)tval(seed, i, 740 + w);
		negoff_probe(neg + 5);
		memcpy(&c, (const char *)(neg + 5) - 3, 1);
		BEGIN("torture:negoff", i); PV(neg[4]); PV(neg[1]); PV(c); END();
#endif

		frames_rbp(seed, i);
		frames_rsp(seed, i);
		torture_sem(seed, i);
		torturelib_fire(seed, i);

		long a = (long)tval(seed, i, 800);

		torture_func(a, i);
		printf("F torture_func %ld %ld %ld\n", i, a, i);
		torture_static(a);
		printf("F torture_static %ld %ld\n", i, a);
	}
	return 0;
}
