/*
 * lockstep THREADS: THREADS threads call step_a, step_b and step_c in turn,
 * forever, so that over any interval the three functions' calls on a thread
 * differ by at most one. The capture window tests probe them (each starts
 * with push %rbp, which the kernel emulates: cheap uprobes).
 *
 * Each round ends with a short sleep. The check needs every event, and
 * without it 2 threads made 2.2M events/s under the 4 probes on a host
 * whose uprobes took ~0.25 us: the recorder, on the same 2 CPUs, lost 15%.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define PROBED __attribute__((noipa, used))
#define FRAME volatile long frame_ = 0; (void)frame_

PROBED long step_a(long x)
{
	FRAME;
	return x + 1;
}

PROBED long step_b(long x)
{
	FRAME;
	return x + 2;
}

PROBED long step_c(long x)
{
	FRAME;
	return x + 3;
}

static void *spin(void *arg)
{
	long x = 0;

	(void)arg;
	for (;;) {
		x = step_c(step_b(step_a(x)));
		usleep(10);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	pthread_t t;

	for (int i = 1; i < n; i++)
		if (pthread_create(&t, NULL, spin, NULL))
			return 1;
	spin(NULL);
	return 0;
}
