// slow SECONDS SLOW_AT [PERIOD_US]: calls f(i) every PERIOD_US (default
// 1000) µs for SECONDS, i = 0, 1, ...; the first call at or after SLOW_AT
// seconds takes 200 ms. It prints the slow call's i and when it started,
// and the number of calls: the flight recorder's tests check snapshots
// against them.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) int f(int i, int us)
{
	usleep(us);
	return i;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: slow SECONDS SLOW_AT [PERIOD_US]\n");
		return 2;
	}
	double secs = atof(argv[1]), slow = atof(argv[2]), t0 = now();
	int period = argc > 3 ? atoi(argv[3]) : 1000, i = 0, done = 0;
	while (now() - t0 < secs) {
		int us = period;
		if (!done && now() - t0 >= slow) {
			us = 200000;
			done = 1;
			printf("slow call %d at %.3f\n", i, now() - t0);
			fflush(stdout);
		}
		f(i++, us);
	}
	printf("calls %d\n", i);
	return 0;
}
