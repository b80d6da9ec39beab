// chain: the stack workload. main calls top, top calls mid N times (argv[1],
// default 1000), mid calls leaf; it prints its ground truth, "leaf N", and
// then lingers argv[2] milliseconds (default LINGER_MS, 0 unless built with
// -DLINGER_MS=N) before it exits, so that a recorder on a busy one-CPU
// guest has read its mappings by then.
// Built -O0 -fno-omit-frame-pointer -fcf-protection=none: every function
// keeps a frame pointer and starts with `push %rbp`, which the kernel
// emulates for a uprobe (~0.7 µs) instead of single-stepping it.
//
// main marks the outermost frame: it zeroes %rbp around its call to top,
// as _start does for the whole program, so that a frame-pointer walk ends
// at main instead of running on into libc's __libc_start_call_main, which
// is built without frame pointers (its frames would hold whatever %rbp
// held). The stack of every leaf call is then main;top;mid;leaf exactly.
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
	printf("leaf %lu\n", n);
	fflush(stdout);
	unsigned long ms = argc > 2 ? strtoul(argv[2], 0, 0) : LINGER_MS;
	if (ms) {
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

		nanosleep(&ts, 0);
	}
	return 0;
}
