/*
 * Test workload for the bpf package's privileged tests. Built at test time:
 *
 *   gcc -O2 -fno-omit-frame-pointer -fcf-protection=none -o workload workload.c
 *
 * It first blocks reading one line from stdin, so the test can load and attach
 * its probes against a known PID, then runs one of the modes below and writes
 * its ground truth to stdout, one write(2) per line.
 *
 *   workload args        calls every probed function with known arguments,
 *                        then opens files, sets its oom_score_adj, renames
 *                        itself and execs /bin/true
 *   workload burst N     calls work() N times, then prints "burst N <ns>"
 *   workload rename      calls work(1, 0, 0), renames itself "renamed-task"
 *                        (prctl), calls work(2, 0, 0)
 *   workload hop N       two threads call work(T, I, 0) N times each (T the
 *                        thread's number, I counting up); thread 0 moves
 *                        to the next CPU every 50 calls, thread 1 stays on
 *                        the last CPU; prints "hop N <cpus>"
 *
 * The probed functions are noipa (no inlining, cloning or constant
 * propagation) and, built as above, start with push %rbp, which uprobes
 * emulate instead of single-stepping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define PROBED __attribute__((noipa, used))

struct pair {
	int x;		 /* offset 0 */
	short y;	 /* offset 4 */
	unsigned char z; /* offset 6 */
};

struct named {
	long id;	  /* offset 0 */
	const char *name; /* offset 8 */
};

/*
 * GCC 12 sets up no frame in a leaf that needs no stack, even with
 * -fno-omit-frame-pointer; the volatile local gives each probed function a
 * stack frame, hence a push %rbp prologue.
 */
#define FRAME volatile long frame_ = 0; (void)frame_

PROBED int work(long a, long b, long c)
{
	FRAME;
	return (int)(a * 3 - b + c);
}

PROBED long greet(const char *s, long n)
{
	FRAME;
	return (long)strlen(s) + n;
}

PROBED long deref(struct pair *p, long *arr, long idx, struct named *nm)
{
	FRAME;
	return p->x + p->y + p->z + arr[idx] + nm->id;
}

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void out(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(buf) || write(1, buf, n) != n)
		exit(3);
}

static void wait_go(void)
{
	char line[16];

	if (!fgets(line, sizeof(line), stdin))
		exit(2);
}

static void mode_args(void)
{
	/* volatile: keep the compiler from specialising the calls. */
	volatile long a, b, c;
	static long arr[4] = {11, -22, 33, -44};
	static char long_str[101];
	static char s63[64], s64[65];
	const char *strs[5];
	struct pair p;
	struct named nm;
	long r1, r2 = 0;
	int fd;

	for (int i = 0; i < 20; i++) {
		a = i * 7 - 60;			     /* negative, then positive */
		b = 0x12340 + i * 0x1111;	     /* wider than 16 bits */
		c = (i % 2 ? -1 : 1) * (0x170 + i * 3); /* low byte crosses 0x80 */
		out("work %ld %ld %ld %d\n", a, b, c, work(a, b, c));
	}

	memset(long_str, 'x', 100);
	memset(s63, 'y', 63);
	memset(s64, 'z', 64);
	strs[0] = "hello";
	strs[1] = "";
	strs[2] = long_str;
	strs[3] = s63;
	strs[4] = s64;
	for (int i = 0; i < 5; i++) {
		a = i - 2;
		out("greet %ld %ld %s\n", a, greet(strs[i], a), strs[i]);
	}

	for (int i = 0; i < 4; i++) {
		p.x = -100000 * (i + 1);
		p.y = (short)(-1000 * (i + 1));
		p.z = (unsigned char)(250 + i);
		nm.id = 1000 + i;
		nm.name = strs[i % 3];
		a = i;
		out("deref %d %d %u %ld %ld %ld %s\n", p.x, p.y, p.z, arr[i], nm.id,
		    deref(&p, arr, a, &nm), nm.name);
	}

	/* Tracepoint ground truth: sys_enter_openat, task_rename, sched_process_exec. */
	fd = open("/dev/null", O_RDONLY);
	if (fd < 0)
		exit(4);
	close(fd);
	/*
	 * Lowering oom_score_adj needs CAP_SYS_RESOURCE; without it the write
	 * fails (a negative sys_exit_write ret) and the workload raises it
	 * instead. The "oom" line tells which writes happened.
	 */
	fd = open("/proc/self/oom_score_adj", O_WRONLY);
	if (fd < 0)
		exit(5);
	r1 = write(fd, "-100", 4);
	r1 = r1 < 0 ? -errno : r1;
	if (r1 != 4)
		r2 = write(fd, "100", 3);
	close(fd);
	if (r1 != 4 && r2 != 3)
		exit(5);
	out("oom %d %ld %ld\n", r1 == 4 ? -100 : 100, r1, r2);
	if (prctl(PR_SET_NAME, "renamed-task") != 0)
		exit(6);
	execl("/bin/true", "true", (char *)NULL);
	exit(7);
}

static void mode_burst(long n)
{
	struct timespec t0, t1;
	volatile long a = 1, b = 2, c = 3;
	long sum = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		sum += work(a + i, b, c);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	out("burst %ld %ld %ld\n", n,
	    (long)((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec)), sum);
}

static long hop_n;
static int hop_cpus;

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		exit(8);
}

static void *hop_thread(void *arg)
{
	long t = (long)arg;

	if (t == 1)
		pin(hop_cpus - 1);
	for (long i = 0; i < hop_n; i++) {
		if (t == 0 && i % 50 == 0)
			pin((int)(i / 50) % hop_cpus);
		work(t, i, 0);
	}
	return NULL;
}

static void mode_hop(long n)
{
	pthread_t th;

	hop_n = n;
	hop_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (pthread_create(&th, NULL, hop_thread, (void *)1L) != 0)
		exit(9);
	hop_thread((void *)0L);
	pthread_join(th, NULL);
	out("hop %ld %d\n", n, hop_cpus);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 1;
	wait_go();
	if (!strcmp(argv[1], "args"))
		mode_args();
	else if (!strcmp(argv[1], "burst") && argc == 3)
		mode_burst(atol(argv[2]));
	else if (!strcmp(argv[1], "rename")) {
		work(1, 0, 0);
		if (prctl(PR_SET_NAME, "renamed-task") != 0)
			return 6;
		work(2, 0, 0);
	} else if (!strcmp(argv[1], "hop") && argc == 3)
		mode_hop(atol(argv[2]));
	else
		return 1;
	return 0;
}
