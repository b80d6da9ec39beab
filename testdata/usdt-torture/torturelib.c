/*
 * The USDT torture workload's shared library, libtorture.so: probes in a
 * library, one of them semaphore-guarded. Built with
 *
 *   gcc -O2 -fPIC -shared -o libtorture.so torturelib.c
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdint.h>
#include <sys/sdt.h>

#include "torture.h"

unsigned short torturelib_call_semaphore __attribute__((section(".probes"), used));
unsigned short torturelib_guarded_semaphore __attribute__((section(".probes"), used));

static int64_t lib_table[8];

void torturelib_fire(uint64_t seed, long i)
{
	static long guarded;
	int32_t a = (int32_t)tval(seed, i, 1100);
	uint16_t b = (uint16_t)tval(seed, i, 1101);
	long j = i & 7;

	for (int k = 0; k < 8; k++)
		lib_table[k] = (int64_t)tval(seed, i, 1110 + k);
	DTRACE_PROBE4(torturelib, call, a, b, lib_table[j], lib_table[1]);
	BEGIN("torturelib:call", i); PV(a); PV(b); PV(lib_table[j]); PV(lib_table[1]); END();
	if (__builtin_expect(torturelib_guarded_semaphore, 0)) {
		uint64_t c = tval(seed, i, 1102);

		DTRACE_PROBE2(torturelib, guarded, c, i);
		BEGIN("torturelib:guarded", guarded++); PV(c); PV((int64_t)i); END();
	}
}
