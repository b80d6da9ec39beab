// USDT workload for record/usdt's tests and the recorder's end-to-end tests.
//
// main() starts with the example from "Kernel and Userspace Tracing Using
// BCC" (usdt-examples:usdt1 ten times with x, then usdt-examples:usdt2 with x,
// "Hello!" and 5), then fires:
//
//   - usdt-examples:tick, a probe in an always-inlined helper called from an
//     unrolled loop and twice more, so it has several call sites whose
//     argument locations differ;
//   - usdt-examples:types, one arg of each width and signedness, a global
//     (a %rip-relative memory operand), a constant, and a pointer to the
//     string "str" on the stack;
//   - guarded:fire (usdt_guarded.c), a semaphore-guarded probe.
//
// Build: gcc -O2 -o usdt_example usdt_example.c usdt_guarded.c
#include <stdint.h>
#include <sys/sdt.h>

void guarded_fire(long n);

volatile int64_t usdt_global = -42;
volatile int usdt_sink;

static inline __attribute__((always_inline)) void tick(int i, long acc) {
	DTRACE_PROBE2(usdt-examples, tick, i, acc);
}

__attribute__((noinline)) void types(signed char c, unsigned char uc, short s, unsigned short us,
                                     int i, unsigned u, long l, const char *p) {
	DTRACE_PROBE10(usdt-examples, types, c, uc, s, us, i, u, l, usdt_global, -1, p);
}

int main(int argc, char **argv) {
	(void)argv;
	/* Read the literal once so its page is resident: a BPF program cannot
	 * fault pages in, and would record usdt2's string as a read fault. */
	const char *volatile hello = "Hello!";
	usdt_sink = hello[0];

	int x = 0;

	while (x < 1000000) {
		x++;
		if (x % 100000 == 0) {
			DTRACE_PROBE1(usdt-examples, usdt1, x);
		}
	}
	DTRACE_PROBE3(usdt-examples, usdt2, x, "Hello!", 5);

	long acc = argc;
#pragma GCC unroll 4
	for (int i = 0; i < 4; i++) {
		acc = acc * 31 + i;
		tick(i, acc);
	}
	tick(100, acc + 1);
	tick(argc, -acc);
	usdt_sink = (int)acc;

	char word[8] = "str";
	types(-5, 250, -1000, 60000, -70000, 4000000000u, -5000000000L, word);
	guarded_fire(3);
	return 0;
}
