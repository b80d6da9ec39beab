/*
 * Shared by the USDT torture workload's files: the values every probe
 * argument gets and how the ground truth is printed.
 *
 * Ground truth, one line per probe firing, on stdout:
 *
 *   P PROVIDER:NAME I V0 V1 ...
 *
 * I counts the probe's firings from 0 and Vk is what argument k must read:
 * a decimal integer, negative only for a signed argument.
 */
#ifndef TORTURE_H
#define TORTURE_H

#include <stdint.h>
#include <stdio.h>

/*
 * tval is argument k's value in iteration i: well mixed, with the top bit
 * of every byte set in half the cases and clear in the others, so that
 * each width is read both negative and positive.
 */
static inline uint64_t tval(uint64_t seed, long i, int k)
{
	uint64_t z = seed + (uint64_t)i * 0x9e3779b97f4a7c15ULL + (uint64_t)k * 0xc2b2ae3d27d4eb4fULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return ((i + k) & 1) ? z | 0x8080808080808080ULL : z & ~0x8080808080808080ULL;
}

/*
 * NOIPA keeps a function out of line and its callers from assuming
 * anything about it (gcc's noipa; clang has none, optnone comes closest).
 */
#ifdef __clang__
#define NOIPA __attribute__((noinline, optnone, used))
#else
#define NOIPA __attribute__((noipa, used))
#endif

static inline void pr_s(long long v) { printf(" %lld", v); }
static inline void pr_u(unsigned long long v) { printf(" %llu", v); }

/* PV prints a value as its type's signedness says. */
#define PV(x)                                                                              \
	_Generic((x), int8_t: pr_s, int16_t: pr_s, int32_t: pr_s, int64_t: pr_s,           \
		 long long: pr_s, uint8_t: pr_u, uint16_t: pr_u, uint32_t: pr_u,            \
		 uint64_t: pr_u, unsigned long long: pr_u)(x)

/* BEGIN and END bracket a truth line. */
#define BEGIN(probe, i) printf("P %s %ld", (probe), (long)(i))
#define END() putchar('\n')

#endif
