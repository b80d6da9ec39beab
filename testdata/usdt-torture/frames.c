/*
 * Probes on variables kept in the stack frame, for the USDT torture
 * workload. Compiled twice: with -O2 -fno-omit-frame-pointer and
 * -DFRAME_VARIANT=rbp, gcc reads them as -N(%rbp) and -N(%rbp,%idx,8);
 * with -Og -fomit-frame-pointer and -DFRAME_VARIANT=rsp, as N(%rsp),
 * (%rsp) and N(%rsp,%idx,8). clang -O0 writes -N(%rbp), clang -O2 -N(%rsp).
 */
#include <stdint.h>
#include <sys/sdt.h>

#include "torture.h"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STR_(a) #a
#define STR(a) STR_(a)
#define FN CAT(frames_, FRAME_VARIANT)
#define PROBE_NAME CAT(frame_, FRAME_VARIANT)

struct rec {
	int64_t a;
	int32_t b;
	int8_t c;
	uint16_t d;
};

/* Takes the frame's addresses, so the values must live in memory. */
NOIPA void CAT(frames_touch_, FRAME_VARIANT)(struct rec *r, int64_t *arr, volatile int32_t *v)
{
	(void)r;
	(void)arr;
	(void)v;
}

void FN(uint64_t seed, long i)
{
	volatile int32_t v = (int32_t)tval(seed, i, 900);
	int64_t arr[4];
	struct rec r = {(int64_t)tval(seed, i, 901), (int32_t)tval(seed, i, 902), (int8_t)tval(seed, i, 903),
			(uint16_t)tval(seed, i, 904)};
	long j = i & 3;

	for (int k = 0; k < 4; k++)
		arr[k] = (int64_t)tval(seed, i, 910 + k);
	CAT(frames_touch_, FRAME_VARIANT)(&r, arr, &v);
	DTRACE_PROBE6(torture, PROBE_NAME, v, arr[2], r.a, r.c, arr[j], r.d);
	BEGIN("torture:" STR(PROBE_NAME), i);
	PV((int32_t)v); PV(arr[2]); PV(r.a); PV(r.c); PV(arr[j]); PV(r.d);
	END();
}
