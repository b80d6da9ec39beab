/*
 * A semaphore-guarded probe for the USDT torture workload: torture:guarded
 * fires only while a tracer has raised torture_guarded_semaphore (the
 * kernel does, through the uprobe's ref_ctr_offset). With
 * _SDT_HAS_SEMAPHORES the note records the semaphore's address; it applies
 * to a whole translation unit, hence this file.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdint.h>
#include <sys/sdt.h>

#include "torture.h"

unsigned short torture_guarded_semaphore __attribute__((section(".probes"), used));

void torture_sem(uint64_t seed, long i)
{
	static long n;

	if (__builtin_expect(torture_guarded_semaphore, 0)) {
		int64_t a = (int64_t)tval(seed, i, 1000);
		uint32_t b = (uint32_t)tval(seed, i, 1001);

		DTRACE_PROBE3(torture, guarded, a, b, i);
		BEGIN("torture:guarded", n++); PV(a); PV(b); PV((int64_t)i); END();
	}
}
