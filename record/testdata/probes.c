/*
 * Test workload for package record's privileged tests, built at test time:
 *
 *   gcc -O2 -fno-omit-frame-pointer -fcf-protection=none -o probes probes.c
 *
 * Every mode prints its ground truth on stdout, one fact per line.
 *
 *   probes [-w] MODE ARGS...
 *
 *   -w            wait for a line on stdin first (attach with -p)
 *   burst N       call tick(i) for i = 1..N in a tight loop; prints
 *                 "burst N NS" (NS: nanoseconds the loop took)
 *   sizes N       fire USDT probe test:sizes N times with one argument of
 *                 each integer size and sign, and test:mixed with
 *                 register, memory and constant operands and a string;
 *                 prints "sizes I a0 .. a7" per firing
 *   sem N         fire test:guarded N times, counting the firings that saw
 *                 its semaphore set; prints "sem N SEEN"
 *   writes N      write(1, ...) N lines of growing length; prints nothing
 *                 else (the lines are the truth: "write I\n" padded)
 *   spin SECONDS  call tick() for SECONDS seconds, 1000 times per ms at
 *                 most; prints "spin CALLS"
 *   exit CODE     exit with CODE at once
 */
#define _GNU_SOURCE
#define _SDT_HAS_SEMAPHORES 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <time.h>
#include <unistd.h>

#define PROBED __attribute__((noipa, used))
#define FRAME volatile long frame_ = 0; (void)frame_

/*
 * With _SDT_HAS_SEMAPHORES every probe has a semaphore, which the kernel
 * increments while a uprobe with its ref_ctr_offset is attached; only
 * test:guarded is skipped when nobody listens.
 */
#define SEMAPHORE(name) unsigned short test_##name##_semaphore __attribute__((section(".probes"), used))
SEMAPHORE(guarded);
SEMAPHORE(sizes);
SEMAPHORE(mixed);

PROBED long tick(long i)
{
	FRAME;
	return i * 2;
}

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void mode_burst(long n)
{
	long t0 = now_ns(), sum = 0;

	for (long i = 1; i <= n; i++)
		sum += tick(i);
	printf("burst %ld %ld %ld\n", n, now_ns() - t0, sum);
}

struct rec {
	long a;
	int b;
	const char *name;
};

static void mode_sizes(long n)
{
	static const char *names[] = {"alpha", "", "a-longer-name-with-dashes"};
	/* volatile: keep the values in memory and registers, not constants. */
	volatile int8_t s8;
	volatile uint8_t u8;
	volatile int16_t s16;
	volatile uint16_t u16;
	volatile int32_t s32;
	volatile uint32_t u32;
	volatile int64_t s64;
	volatile uint64_t u64;
	struct rec r;

	for (long i = 0; i < n; i++) {
		s8 = (int8_t)(-100 + i);
		u8 = (uint8_t)(200 + i);
		s16 = (int16_t)(-30000 + i);
		u16 = (uint16_t)(60000 + i);
		s32 = (int32_t)(-2000000000 + i);
		u32 = (uint32_t)(4000000000u + i);
		s64 = (int64_t)(-5000000000000LL - i);
		u64 = (uint64_t)(18000000000000000000ULL + i);
		DTRACE_PROBE8(test, sizes, s8, u8, s16, u16, s32, u32, s64, u64);
		printf("sizes %ld %d %u %d %u %d %u %lld %llu\n", i, s8, u8, s16, u16, s32, u32,
		       (long long)s64, (unsigned long long)u64);
		r.a = -i;
		r.b = (int)(i * 1000);
		r.name = names[i % 3];
		DTRACE_PROBE4(test, mixed, r.a, r.b, r.name, 42);
		printf("mixed %ld %ld %d %s 42\n", i, r.a, r.b, r.name);
	}
}

static void mode_sem(long n)
{
	long seen = 0;

	for (long i = 0; i < n; i++) {
		if (test_guarded_semaphore) {
			seen++;
			DTRACE_PROBE1(test, guarded, i);
		}
	}
	printf("sem %ld %ld\n", n, seen);
}

static void mode_writes(long n)
{
	char line[256];

	for (long i = 0; i < n; i++) {
		int len = snprintf(line, sizeof(line), "write %ld %*s\n", i, (int)(i % 50), "");

		if (write(1, line, len) != len)
			exit(3);
	}
}

static void mode_spin(long secs)
{
	long end = now_ns() + secs * 1000000000L, calls = 0;
	struct timespec pause = {0, 1000000};

	while (now_ns() < end) {
		for (int k = 0; k < 1000; k++)
			tick(calls++);
		nanosleep(&pause, NULL);
	}
	printf("spin %ld\n", calls);
}

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
	long n = atol(argv[arg + 1]);
	if (!strcmp(argv[arg], "burst"))
		mode_burst(n);
	else if (!strcmp(argv[arg], "sizes"))
		mode_sizes(n);
	else if (!strcmp(argv[arg], "sem"))
		mode_sem(n);
	else if (!strcmp(argv[arg], "writes"))
		mode_writes(n);
	else if (!strcmp(argv[arg], "spin"))
		mode_spin(n);
	else if (!strcmp(argv[arg], "exit"))
		return (int)n;
	else
		return 1;
	return 0;
}
