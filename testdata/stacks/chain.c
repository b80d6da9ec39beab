// chain: the stack workload. main calls top, top calls mid N times (argv[1],
// default 1000), mid calls leaf; it prints its ground truth, "leaf N", and
// then lingers argv[2] milliseconds (default LINGER_MS, 0 unless built with
// -DLINGER_MS=N) before it exits, so that a recorder on a busy one-CPU
// guest has read its mappings by then.
// Built -O0 -fno-omit-frame-pointer -fcf-protection=none: every function
// keeps a frame pointer and starts with `push %rbp`, which the kernel
// emulates for a uprobe (~0.7 µs) instead of single-stepping it. On arm64
// (aarch64-linux-gnu-gcc -O0 -fno-omit-frame-pointer) every function keeps
// its frame record {x29, x30}, and the return address of a function at its
// first instruction is in x30, not yet in a frame record.
//
// main marks the outermost frame: it zeroes the frame pointer (%rbp, x29)
// around its call to top, as _start does for the whole program, so that a
// frame-pointer walk ends at main instead of running on into libc's
// __libc_start_call_main, which is built without frame pointers (its
// frames would hold whatever the register held). The stack of every leaf
// call is then main;top;mid;leaf exactly.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef LINGER_MS
#define LINGER_MS 0
#endif

volatile unsigned long sink;

__attribute__((noinline)) void leaf(unsigned long i) { sink += i; }

__attribute__((noinline)) void mid(unsigned long i) { leaf(i); }

__attribute__((noinline)) void top(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		mid(i);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], 0, 0) : 1000;
	unsigned long arg = n;

#if defined(__aarch64__)
	/* x29 and x30 saved in 16 bytes keep sp aligned; x0 is top's n. */
	register unsigned long x0 asm("x0") = arg;

	asm volatile("stp x29, x30, [sp, #-16]!\n\t"
		     "mov x29, xzr\n\t"
		     "bl top\n\t"
		     "ldp x29, x30, [sp], #16"
		     : "+r"(x0)
		     :
		     : "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12",
		       "x13", "x14", "x15", "x16", "x17", "x18", "v0", "v1", "v2", "v3", "v4", "v5",
		       "v6", "v7", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24",
		       "v25", "v26", "v27", "v28", "v29", "v30", "v31", "memory", "cc");
#else
	/* 16 bytes pushed keep the stack aligned for the call. */
	asm volatile("push %%rbp\n\t"
		     "sub $8, %%rsp\n\t"
		     "xor %%ebp, %%ebp\n\t"
		     "call top\n\t"
		     "add $8, %%rsp\n\t"
		     "pop %%rbp"
		     : "+D"(arg)
		     :
		     : "rax", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "memory", "cc");
#endif
	printf("leaf %lu\n", n);
	fflush(stdout);
	unsigned long ms = argc > 2 ? strtoul(argv[2], 0, 0) : LINGER_MS;
	if (ms) {
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

		nanosleep(&ts, 0);
	}
	return 0;
}
