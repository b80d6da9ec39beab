/*
 * The shared library of `make vmtest`'s USDT-in-a-library check: usdtlib.c
 * calls lib_fire, whose probe vmtest:lib has a semaphore.
 *
 *   gcc -O2 -fPIC -shared -o libvmusdt.so libvmusdt.c
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

unsigned short vmtest_lib_semaphore __attribute__((section(".probes"), used));

/* lib_fire fires vmtest:lib(i) when someone listens; returns whether it did. */
int lib_fire(long i)
{
	if (vmtest_lib_semaphore) {
		DTRACE_PROBE1(vmtest, lib, i);
		return 1;
	}
	return 0;
}
