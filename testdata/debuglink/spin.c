// spin: the workload of the hostile-debuglink recording tests. It burns
// CPU in hot, called from main, for argv[1] seconds (default 30), so that
// a profile probe samples its stacks; built with frame pointers, then
// stripped with a .gnu_debuglink whose file the tests replace with a FIFO,
// a link or a directory.
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) void hot(void)
{
	for (int i = 0; i < 100000; i++)
		sink += i;
}

int main(int argc, char **argv)
{
	long secs = argc > 1 ? strtol(argv[1], 0, 0) : 30;
	struct timespec s, n;

	clock_gettime(CLOCK_MONOTONIC, &s);
	do {
		hot();
		clock_gettime(CLOCK_MONOTONIC, &n);
	} while (n.tv_sec - s.tv_sec < secs);
	return 0;
}
