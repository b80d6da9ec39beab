// A semaphore-guarded USDT probe, guarded:fire: with _SDT_HAS_SEMAPHORES,
// sys/sdt.h records the address of guarded_fire_semaphore in the probe's
// note, and the tracer (the kernel, via the uprobe's ref_ctr_offset) raises
// it while the probe is attached. It lives in its own file because
// _SDT_HAS_SEMAPHORES applies to every probe of a translation unit, and the
// example's "usdt-examples" provider is no C identifier.
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

unsigned short guarded_fire_semaphore __attribute__((unused)) __attribute__((section(".probes")));

#define GUARDED_FIRE_ENABLED() __builtin_expect(guarded_fire_semaphore, 0)

__attribute__((noinline)) void guarded_fire(long n) {
	for (long i = 0; i < n; i++) {
		if (GUARDED_FIRE_ENABLED()) {
			DTRACE_PROBE2(guarded, fire, i, n);
		}
	}
}
